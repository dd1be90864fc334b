// Lowering pass, last: checks what every code generator relies on, and the target's limits. A
// schedule that does not fit the target (a GPU binding on the CPU) raises ScheduleError; anything
// else is a bug in tessel and raises CompileError.
#pragma once

#include "schedule/ir/stmt.h"

namespace tessel {

enum class LowerTarget : uint8_t { Cpu, Gpu };

// What a GPU allows one kernel (defaults: an H100, sm_90).
struct GpuLimits {
  int64_t max_threads_per_block = 1024;
  int64_t max_block[3] = {1024, 1024, 64};
  int64_t max_grid[3] = {2147483647, 65535, 65535};
  int64_t max_shared_bytes = 227 * 1024;  // with the opt-in above 48 KiB
};

// A kernel of a lowered GPU program and the global scratch allocations around it, outermost first.
struct GpuKernel {
  Stmt body;
  std::vector<const StmtNode*> scratch;
};
// The kernels of a lowered GPU program, as the CUDA printer launches them: the statements of the
// top-level sequence, looking through the global scratch allocations around it.
std::vector<GpuKernel> split_gpu_kernels(const Stmt& body);

// On the GPU every statement of the top-level sequence is one kernel: its thread bindings must fit
// `limits` (a ScheduleError names the limit), a binding tag keeps one extent within a kernel, and
// barriers must not sit under a condition that depends on the thread index.
void verify_lowered(const LoweredFunc& func, LowerTarget target, const GpuLimits& limits = {});

// Bytes of shared memory one GPU allocation takes, as the CUDA printer lays it out: its elements
// (at least one), rounded up to 16 bytes. The verifier counts with it, so that its total and the
// kernel's agree.
int64_t shared_allocation_bytes(DType dtype, const std::vector<int64_t>& extents, bool swizzled = false);
// Where the next shared allocation starts after `used` bytes: swizzled tiles at a multiple of 1024.
int64_t shared_allocation_start(int64_t used, bool swizzled);
// The static array a reduction across `threads` threads (whole warps when over 32) of `rows` rows
// of the block uses to combine its warps' values: none for a single warp.
int64_t warp_combine_bytes(int64_t threads, int64_t rows);

}  // namespace tessel
