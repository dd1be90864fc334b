// The thread pool behind parallel loops. Generated code calls tessel_parallel_for with an outlined
// loop body; iterations [0, n) are split into contiguous chunks, one per thread, each run by its
// own thread unless another finishes first and finds it not yet started.
#pragma once

#include <cstdint>

extern "C" {
// Runs body(i, closure) for every i in [0, n), concurrently on the pool, and returns when all are done.
// Nested calls run serially in the calling thread.
void tessel_parallel_for(int64_t n, void (*body)(int64_t i, void* closure), void* closure);
}

namespace tessel {
// Number of worker threads, counting the caller (default: TESSEL_NUM_THREADS, else the CPUs the
// thread that first runs a parallel loop may run on); set before the first parallel loop or between
// loops. 1 disables threading. Fewer run where the system refuses to start more.
void set_num_threads(int n);
int num_threads();
// Pins the calling thread (which runs chunk 0 of every parallel loop) to the first CPU this process
// may use and worker k to the k-th, so timings do not depend on the OS moving threads around.
// Returns false when the affinity could not be set.
bool pin_threads();
}  // namespace tessel
