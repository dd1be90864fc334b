// Whether a workload's buffers fit in this machine's memory, asked before anything is allocated:
// the reference interpreter, `tessel check`, `run`, `measure` and `tune` refuse a workload that
// cannot fit with an InputError, instead of dying of std::bad_alloc (or thrashing) halfway.
#pragma once

#include <cstdint>
#include <string>

#include "schedule/te/dag.h"

namespace tessel {

// What running and checking one workload holds in host memory at once, by the layout the checks
// use: every input twice in its element type (the random values and the kernel's buffer) plus its
// float64 copy in the interpreter, and every computed tensor in float64 (the reference) plus its
// element type (the kernel's buffer or scratch). An estimate that errs high by the scratch a
// schedule leaves out.
struct HostMemoryNeed {
  int64_t total_bytes = 0;
  std::string largest;        // the tensor that takes most, e.g. "C[1000000, 16]"
  int64_t largest_bytes = 0;  // its share of total_bytes
};
// ComputeDAG has checked every tensor's size, so the sum cannot overflow for fewer than 2^13 tensors;
// beyond that it saturates at INT64_MAX.
HostMemoryNeed host_memory_need(const ComputeDAG& dag);

// This machine's physical memory in bytes (sysconf), or INT64_MAX when it cannot be told.
int64_t physical_memory_bytes();

// Throws InputError naming the total, the largest tensor and `available` (in GiB or TiB) when the
// workload's need exceeds `available`.
void require_host_memory(const ComputeDAG& dag, int64_t available = physical_memory_bytes());

}  // namespace tessel
