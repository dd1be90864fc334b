// What schedule generators need to know about the machine they schedule for.
#pragma once

namespace tessel {

struct CpuTargetSpec {
  int vector_lanes = 16;  // float lanes of the widest vector register (16 with AVX-512, 8 with AVX2)
  int num_threads = 1;    // worker threads the kernel will run on
};

// Shape parameters of GPU schedules (the defaults suit an H100).
struct GpuTargetSpec {
  int max_threads_per_block = 1024;
  int64_t max_shared_bytes = 48 * 1024;  // what a schedule may use without the opt-in
};

}  // namespace tessel
