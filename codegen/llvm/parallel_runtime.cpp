// A persistent thread pool for tessel_parallel_for.
//
// One job at a time: the caller publishes (n, body, closure) and bumps a generation counter; each of
// the T-1 workers runs its static contiguous chunk [k*n/T, (k+1)*n/T) and the caller runs chunk 0.
// Workers spin briefly on the generation (kernels of ~10 us are launched back to back) before they
// sleep on a condition variable. Calls made from inside a parallel body run serially.
#include "codegen/llvm/parallel_runtime.h"

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <algorithm>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TESSEL_CPU_RELAX() _mm_pause()
#else
#define TESSEL_CPU_RELAX() ((void)0)
#endif

namespace tessel {
namespace {

using Body = void (*)(int64_t, void*);

thread_local bool t_inside_parallel = false;

constexpr int kSpinIterations = 2000;  // roughly 50 us before a waiting thread sleeps
constexpr int kPauseIterations = 100;  // the first spins pause; later ones yield the core, which
                                       // matters when the machine is oversubscribed

// One step of a spin wait.
inline void spin_wait_step(int spin) {
  if (spin < kPauseIterations)
    TESSEL_CPU_RELAX();
  else
    std::this_thread::yield();
}

// The CPUs this process may run on, in order.
std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

// Pins the calling thread to the k-th allowed CPU (wrapping around); false when it cannot.
bool pin_current_thread(const std::vector<int>& cpus, int k) {
  if (cpus.empty()) return false;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpus[static_cast<size_t>(k) % cpus.size()], &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

void run_range(Body body, void* closure, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) body(i, closure);
}

class ThreadPool {
 public:
  explicit ThreadPool(int threads) { start(threads); }

  int threads() const { return threads_; }

  void resize(int threads) {
    std::lock_guard<std::mutex> job_lock(job_mutex_);
    stop();
    start(threads);
  }

  // Pins the calling thread to the first allowed CPU and worker k to the k-th; restarts the workers.
  bool pin() {
    std::lock_guard<std::mutex> job_lock(job_mutex_);
    stop();
    pinned_cpus_ = allowed_cpus();
    bool ok = pin_current_thread(pinned_cpus_, 0);
    start(threads_);
    return ok;
  }

  void parallel_for(int64_t n, Body body, void* closure) {
    std::lock_guard<std::mutex> job_lock(job_mutex_);  // one job at a time across caller threads
    int t = threads_;
    if (t <= 1 || n <= 1) {
      run_serial(n, body, closure);
      return;
    }
    n_ = n;
    body_ = body;
    closure_ = closure;
    remaining_.store(t - 1, std::memory_order_relaxed);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();

    t_inside_parallel = true;
    run_range(body, closure, 0, n / t);
    t_inside_parallel = false;

    for (int spin = 0; remaining_.load(std::memory_order_acquire) != 0; ++spin) {
      if (spin < kSpinIterations) {
        spin_wait_step(spin);
      } else {
        std::unique_lock<std::mutex> lock(mutex_);
        done_.wait(lock, [&] { return remaining_.load(std::memory_order_acquire) == 0; });
      }
    }
  }

  static void run_serial(int64_t n, Body body, void* closure) {
    bool was_inside = t_inside_parallel;
    t_inside_parallel = true;
    run_range(body, closure, 0, n);
    t_inside_parallel = was_inside;
  }

 private:
  void start(int threads) {
    threads_ = threads < 1 ? 1 : threads;
    stopping_ = false;
    // Workers start from the current generation, so a job published before a worker first runs is
    // still seen as new.
    uint64_t generation = generation_.load(std::memory_order_acquire);
    for (int k = 1; k < threads_; ++k) workers_.emplace_back([this, k, generation] { worker_loop(k, generation); });
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    for (std::thread& w : workers_) w.join();
    workers_.clear();
  }

  void worker_loop(int k, uint64_t seen) {
    t_inside_parallel = true;
    if (!pinned_cpus_.empty()) pin_current_thread(pinned_cpus_, k);
    for (;;) {
      for (int spin = 0; spin < kSpinIterations && generation_.load(std::memory_order_acquire) == seen; ++spin)
        spin_wait_step(spin);
      if (generation_.load(std::memory_order_acquire) == seen) {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
      }
      seen = generation_.load(std::memory_order_acquire);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stopping_) return;
      }
      int64_t n = n_;
      int t = threads_;
      run_range(body_, closure_, n * k / t, n * (k + 1) / t);
      if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard<std::mutex> lock(mutex_);
        done_.notify_one();
      }
    }
  }

  std::mutex job_mutex_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> remaining_{0};
  bool stopping_ = false;
  int threads_ = 1;
  int64_t n_ = 0;
  Body body_ = nullptr;
  void* closure_ = nullptr;
  std::vector<std::thread> workers_;
  std::vector<int> pinned_cpus_;  // empty: threads float
};

int default_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? static_cast<int>(n) : 1;
}

// Created on first use and never destroyed: workers may still be asleep at process exit.
ThreadPool& pool() {
  static ThreadPool* instance = new ThreadPool(default_threads());
  return *instance;
}

}  // namespace

// More workers than this only adds scheduling overhead; it also bounds what a typo can spawn.
constexpr int kMaxThreads = 1024;

void set_num_threads(int n) { pool().resize(std::clamp(n, 1, kMaxThreads)); }
int num_threads() { return pool().threads(); }
bool pin_threads() { return pool().pin(); }

}  // namespace tessel

extern "C" void tessel_parallel_for(int64_t n, void (*body)(int64_t i, void* closure), void* closure) {
  if (n <= 0) return;
  if (tessel::t_inside_parallel) {
    tessel::ThreadPool::run_serial(n, body, closure);
    return;
  }
  tessel::pool().parallel_for(n, body, closure);
}
