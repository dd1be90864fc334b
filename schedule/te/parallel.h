// Threads for the host-side work that splits into independent items (feature extraction, builds):
// how many CPUs this process may use, and a loop over item indices on that many threads.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace tessel {

// The CPUs this process may run on (taskset and cgroups can leave fewer than the machine has); at least 1.
int available_cores();

// f(i) for every i in [0, n), on up to available_cores() threads (the caller's among them), items handed
// out one at a time. The first exception f throws stops the hand-out and is rethrown once the threads
// have stopped.
template <typename F>
void parallel_indices(size_t n, F f) {
  std::atomic<size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto worker = [&] {
    try {
      for (size_t i; (i = next++) < n;) f(i);
    } catch (...) {
      std::lock_guard<std::mutex> lock(failure_mutex);
      if (!failure) failure = std::current_exception();
      next = n;
    }
  };
  const size_t threads = std::min(n, static_cast<size_t>(available_cores()));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace tessel
