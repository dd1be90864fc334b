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
  // A tensor-core schedule may opt in to this much: its large tiles need it, and its blocks are few
  // per multiprocessor anyway (on an H200, 128 x 128 bf16 tiles in 103 KiB: 443 us for a 4096^3
  // matmul, against 630 us for the best 64 x 128 tiles within 48 KiB).
  int64_t max_shared_bytes_tensor_core = 227 * 1024;
  // The most bytes the default schedule may keep in global memory beside its inputs and outputs
  // (a convolution's padded input, split-K partial sums between its two kernels); 0: no limit. A
  // model build sets it from its memory budget.
  int64_t max_scratch_bytes = 0;
  int64_t scratch_alignment = 1;  // each scratch buffer counted in whole lines of this many bytes
  // Hopper's warpgroup tensor-core operations (wgmma, sm_90): 16-bit contractions take them.
  bool warpgroup_mma = true;
  int multiprocessors = 132;  // how many blocks make one full wave
};

}  // namespace tessel
