// A persistent thread pool for tessel_parallel_for.
//
// One job at a time: the caller publishes (n, body, closure) and bumps a generation counter. The
// iterations are cut into one contiguous chunk per thread, [k*n/T, (k+1)*n/T); thread k (the caller
// is thread 0) claims chunk k first, so a kernel's tiles land on the same cores run after run, as
// they did when the tuner timed it. A thread that has finished its own chunk then claims any chunk
// still unclaimed: its owner has not even started after a whole chunk's time (asleep, or its core
// taken by another process or, on a virtual machine, by the hypervisor), so running it now finishes
// no later than the owner would. Without that, every kernel waited for its slowest thread to be
// scheduled, milliseconds a kernel on a busy host. A chunk is claimed by one compare-and-swap of a
// word holding the job's generation, so a thread that wakes late, after its job has finished,
// claims nothing and leaves; the caller waits only for the chunks claimed, never for an idle
// thread.
//
// A model launches its kernels back to back, tens of microseconds apart, so the hot path takes no
// lock and makes no system call: workers spin on the generation (pausing, then yielding the core)
// for a while after their last job before they sleep on it (a futex, through std::atomic's wait),
// and a notify with no sleeper is a load. No mutex is taken on the way: a condition variable's woken
// threads take its mutex one after another, and on a virtual machine's idle cores each such
// hand-over is a wake-up (16 threads took over a millisecond to start after a pause). Calls made
// from inside a parallel body run serially.
#include "codegen/llvm/parallel_runtime.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <system_error>
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

// More workers than this only adds scheduling overhead; it also bounds what a typo can spawn.
constexpr int kMaxThreads = 1024;

using Body = void (*)(int64_t, void*);
using Clock = std::chrono::steady_clock;

thread_local bool t_inside_parallel = false;

// How long an idle thread spins before it sleeps: longer than the gap between two kernels of a
// model, short enough that the pool gives its cores back soon after a run.
constexpr auto kSpinTime = std::chrono::microseconds(2000);
constexpr int kPauseIterations = 64;  // the first spins pause; later ones yield the core, which
                                      // matters when the machine is oversubscribed

// Spins until ready() holds or kSpinTime has passed; returns ready().
template <typename Ready>
bool spin_until(Ready ready) {
  Clock::time_point deadline{};
  for (int spin = 0;; ++spin) {
    if (ready()) return true;
    if (spin < kPauseIterations) {
      TESSEL_CPU_RELAX();
      continue;
    }
    Clock::time_point now = Clock::now();
    if (spin == kPauseIterations) deadline = now + kSpinTime;
    else if (now >= deadline) return ready();
    std::this_thread::yield();
  }
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

// Chunk k of n iterations over t threads.
int64_t chunk_begin(int64_t n, int k, int t) { return n * k / t; }

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
    const int t = threads_;
    if (t <= 1 || n <= 1) {
      run_serial(n, body, closure);
      return;
    }
    const int chunks = static_cast<int>(std::min<int64_t>(t, n));
    const uint32_t generation = generation_.load(std::memory_order_relaxed) + 1;
    n_.store(n, std::memory_order_relaxed);
    body_.store(body, std::memory_order_relaxed);
    closure_.store(closure, std::memory_order_relaxed);
    chunks_.store(chunks, std::memory_order_relaxed);
    for (int k = 0; k < chunks; ++k) chunk_state_[k].store(unclaimed(generation), std::memory_order_relaxed);
    pending_.store(chunks, std::memory_order_relaxed);
    generation_.store(generation, std::memory_order_seq_cst);  // publishes the job's fields above
    generation_.notify_all();

    t_inside_parallel = true;
    run_chunks(generation, 0, n, body, closure, chunks);
    t_inside_parallel = false;

    if (spin_until([&] { return pending_.load(std::memory_order_acquire) == 0; })) return;
    for (int left; (left = pending_.load(std::memory_order_acquire)) != 0;) pending_.wait(left);
  }

  static void run_serial(int64_t n, Body body, void* closure) {
    bool was_inside = t_inside_parallel;
    t_inside_parallel = true;
    run_range(body, closure, 0, n);
    t_inside_parallel = was_inside;
  }

 private:
  // Starts up to threads - 1 workers; where the system refuses one, the pool runs with those it has
  // (threads_ counts them, and a job is cut into no more chunks than that).
  void start(int threads) {
    stopping_.store(false, std::memory_order_relaxed);
    chunk_state_ = std::make_unique<std::atomic<uint64_t>[]>(static_cast<size_t>(threads));
    // Workers start from the current generation, so a job published before a worker first runs is
    // still seen as new.
    uint32_t generation = generation_.load(std::memory_order_acquire);
    for (int k = 1; k < threads; ++k) {
      try {
        workers_.emplace_back([this, k, generation] { worker_loop(k, generation); });
      } catch (const std::system_error&) {
        break;
      }
    }
    threads_ = 1 + static_cast<int>(workers_.size());
  }

  void stop() {
    stopping_.store(true, std::memory_order_seq_cst);
    generation_.fetch_add(1, std::memory_order_seq_cst);
    generation_.notify_all();
    for (std::thread& w : workers_) w.join();
    workers_.clear();
  }

  // Waits for a generation other than `seen`: spins, then sleeps. Returns the new generation.
  uint32_t wait_for_job(uint32_t seen) {
    if (!spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; }))
      generation_.wait(seen, std::memory_order_acquire);  // returns once the value differs
    return generation_.load(std::memory_order_acquire);
  }

  void worker_loop(int k, uint32_t seen) {
    t_inside_parallel = true;
    if (!pinned_cpus_.empty()) pin_current_thread(pinned_cpus_, k);
    for (;;) {
      seen = wait_for_job(seen);
      if (stopping_.load(std::memory_order_acquire)) return;
      // Read after the generation: this job's fields, unless it has finished already and the next
      // is being written; then no chunk of `seen` is left to claim, and none of them is used.
      run_chunks(seen, k, n_.load(std::memory_order_relaxed), body_.load(std::memory_order_relaxed),
                 closure_.load(std::memory_order_relaxed), chunks_.load(std::memory_order_relaxed));
    }
  }

  // A chunk's state: the generation of the job it belongs to, and whether it has been claimed.
  static uint64_t unclaimed(uint32_t generation) { return uint64_t{generation} << 1; }
  static uint64_t claimed(uint32_t generation) { return unclaimed(generation) | 1; }

  // Runs chunk `own` of job `generation` if no thread has claimed it, then every other chunk still
  // unclaimed, from the next one on. A thread with no chunk of its own (fewer iterations than
  // threads) takes none: the owners finish theirs at the same time.
  void run_chunks(uint32_t generation, int own, int64_t n, Body body, void* closure, int chunks) {
    if (own >= chunks) return;
    for (int i = 0; i < chunks; ++i) {
      const int k = (own + i) % chunks;
      uint64_t state = chunk_state_[k].load(std::memory_order_relaxed);
      if (state != unclaimed(generation) ||
          !chunk_state_[k].compare_exchange_strong(state, claimed(generation), std::memory_order_acquire))
        continue;
      run_range(body, closure, chunk_begin(n, k, chunks), chunk_begin(n, k + 1, chunks));
      if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
    }
  }

  std::mutex job_mutex_;
  // 32 bits: the width a futex waits on directly. A worker that missed jobs while it slept only
  // needs a value other than its last; a chunk's state pairs it with a job, and a worker would have
  // to sleep through 2^32 jobs to mistake an old job for the current one.
  alignas(64) std::atomic<uint32_t> generation_{0};
  std::atomic<bool> stopping_{false};
  int threads_ = 1;
  // The current job. Atomic (relaxed) only because a worker waking after its job has finished may
  // read them while the next job's are written; it then claims no chunk with what it read.
  std::atomic<int64_t> n_{0};
  std::atomic<Body> body_{nullptr};
  std::atomic<void*> closure_{nullptr};
  std::atomic<int> chunks_{0};
  std::unique_ptr<std::atomic<uint64_t>[]> chunk_state_;  // per chunk: unclaimed / claimed
  alignas(64) std::atomic<int> pending_{0};  // chunks of the current job not yet finished
  std::vector<std::thread> workers_;
  std::vector<int> pinned_cpus_;  // empty: threads float
};

// TESSEL_NUM_THREADS when it is a whole number of at least 1 (at most kMaxThreads are started), else
// the CPUs that the thread creating the pool may run on: a taskset's or cpuset's share, not the
// machine's count (a CPU-time quota is not seen), else the machine's count.
int default_threads() {
  long n = 0;
  if (const char* env = std::getenv("TESSEL_NUM_THREADS")) {
    char* end = nullptr;
    n = std::strtol(env, &end, 10);
    if (end == env || *end != '\0' || n < 1) n = 0;
  }
  if (n == 0) n = static_cast<long>(allowed_cpus().size());
  if (n == 0) n = static_cast<long>(std::thread::hardware_concurrency());
  return static_cast<int>(std::clamp<long>(n, 1, kMaxThreads));
}

// Created on first use and never destroyed: workers may still be asleep at process exit.
ThreadPool& pool() {
  static ThreadPool* instance = new ThreadPool(default_threads());
  return *instance;
}

}  // namespace

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
