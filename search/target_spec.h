// What schedule generators need to know about the machine they schedule for.
#pragma once

namespace tessel {

struct CpuTargetSpec {
  int vector_lanes = 16;  // float lanes of the widest vector register (16 with AVX-512, 8 with AVX2)
  int num_threads = 1;    // worker threads the kernel will run on
};

}  // namespace tessel
