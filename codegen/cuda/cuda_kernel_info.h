// What one CUDA kernel needs before it is printed (internal to the CUDA printer): its launch
// dimensions, its shared memory and which buffers it writes, checked against the device limits.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "codegen/cuda/cuda_backend.h"
#include "schedule/ir/stmt.h"

namespace tessel::cuda_detail {

// The slot of a binding tag in KernelInfo::extent (blockIdx.xyz, then threadIdx.xyz); -1 for another tag.
int tag_slot(const std::string& tag);
bool is_vthread(const std::string& tag);

// What one kernel needs before it is printed: launch dimensions, shared memory and which buffers
// it writes.
struct KernelInfo {
  int64_t extent[6] = {1, 1, 1, 1, 1, 1};  // blockIdx.xyz, threadIdx.xyz
  bool bound[6] = {};
  bool dynamic_shared = false;
  bool swizzled = false;   // holds swizzled shared tiles: dynamic shared memory, its start 1024-aligned
  bool warpgroup = false;  // holds warpgroup (wgmma) operations
  bool index32 = false;    // every index fits in 32 bits: loop variables and index arithmetic are ints
  int64_t static_shared_bytes = 0;         // declared where they are used (reductions across warps)
  std::vector<int64_t> allreduce_threads;  // the thread count of each reduction across threads
  int64_t shared_bytes = 0;
  std::map<const StmtNode*, int64_t> shared_offset;  // dynamic shared: offset of each allocation
  std::set<std::string> stored;
};

// Whether every integer expression of `kernel` that involves a loop or thread variable provably
// stays within the 32-bit range, given the loops' ranges: the kernel's index arithmetic can then be
// printed in ints, which the GPU computes in one instruction where 64 bits take two or more (and
// twice the registers). An expression that mixes such variables with loaded or converted values is
// not bounded, and keeps the kernel at 64 bits.
bool indices_fit_in_32_bits(const Stmt& kernel);

// The launch shape and shared memory of `kernel` (named `kernel_name` in messages). Throws
// CompileError naming the loop or buffer when it cannot run as one kernel within `limits`.
KernelInfo analyze_kernel(const Stmt& kernel, const std::string& kernel_name, const CudaDeviceInfo& limits);

}  // namespace tessel::cuda_detail
