// Kernel analysis for the CUDA printer: thread bindings become launch dimensions (a tag bound twice
// on one path must agree), shared allocations get their offsets in dynamic shared memory, and
// every limit of the device is checked before a line is printed.
#include "codegen/cuda/cuda_kernel_info.h"

#include <algorithm>
#include <functional>

#include "schedule/ir/warpgroup.h"
#include "schedule/lower/verify.h"
#include "schedule/te/error.h"

namespace tessel::cuda_detail {

namespace {

constexpr int64_t kStaticSharedLimit = 48 * 1024;

const char* kThreadTags[6] = {"blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z"};

// A barrier, or a reduction across threads (shuffles and a barrier): every thread must reach it.
bool contains_barrier(const Stmt& s) {
  bool found = false;
  visit(s, [&](const Stmt& n) { found = found || n->op == StmtOp::Barrier || n->op == StmtOp::AllReduce; });
  return found;
}

}  // namespace

int tag_slot(const std::string& tag) {
  for (int i = 0; i < 6; ++i)
    if (tag == kThreadTags[i]) return i;
  return -1;
}

bool is_vthread(const std::string& tag) { return tag.rfind("vthread", 0) == 0; }

KernelInfo analyze_kernel(const Stmt& kernel, const std::string& kernel_name, const CudaDeviceInfo& limits) {
  KernelInfo info;
  int64_t active[6] = {};  // extent of the enclosing loop bound to each index, 0 when none
  std::vector<Stmt> bound_loops;
  std::function<void(const Stmt&)> walk = [&](const Stmt& s) {
    if (!s) return;
    int slot = -1;
    switch (s->op) {
      case StmtOp::For:
        if (s->for_kind == ForKind::Parallel || s->for_kind == ForKind::Vectorized)
          throw CompileError("cuda codegen: loop '" + s->var + "' is " + to_string(s->for_kind) +
                             ", which the GPU target cannot run (bind it to a thread or make it serial)");
        if (s->for_kind == ForKind::ThreadBound && !is_vthread(s->thread_tag)) {
          slot = tag_slot(s->thread_tag);
          if (slot < 0)
            throw CompileError("cuda codegen: loop '" + s->var + "' has unknown thread tag '" + s->thread_tag + "'");
          const int64_t* n = as_int(s->extent);
          if (!n || *n <= 0)
            throw CompileError("cuda codegen: loop '" + s->var + "' bound to " + s->thread_tag +
                               " needs a positive constant extent, not " + to_string(s->extent));
          // Re-binding an index inside a loop bound to it names the same hardware index again (a
          // cooperative fetch inside a thread tile): fine when the extents agree.
          if (active[slot] && active[slot] != *n)
            throw CompileError("cuda codegen: " + s->thread_tag + " is bound to extents " +
                               std::to_string(active[slot]) + " and " + std::to_string(*n) + " on one path in " +
                               kernel_name + " (loop '" + s->var + "')");
          if (active[slot]) {
            for (const Stmt& child : s->body) walk(child);
            return;
          }
          bound_loops.push_back(s);
          info.extent[slot] = info.bound[slot] ? std::max(info.extent[slot], *n) : *n;
          info.bound[slot] = true;
          active[slot] = *n;
        }
        break;
      case StmtOp::Allocate:
        if (s->scope == MemScope::Global)
          throw CompileError("cuda codegen: global buffer '" + s->buffer + "' is allocated inside " + kernel_name +
                             " (global allocations must enclose whole kernels)");
        if (s->scope == MemScope::Shared) {  // placed as verify counts them
          const bool swizzled = s->swizzle_cols > 0;
          info.swizzled |= swizzled;
          info.shared_bytes = shared_allocation_start(info.shared_bytes, swizzled);
          info.shared_offset[s.get()] = info.shared_bytes;
          info.shared_bytes += shared_allocation_bytes(s->dtype, s->extents, swizzled);
        }
        break;
      case StmtOp::Store:
        info.stored.insert(s->buffer);
        break;
      case StmtOp::Matrix:
        if (s->matrix_op == MatrixOpKind::Store) info.stored.insert(s->operands[0].buffer);
        info.warpgroup |= is_warpgroup_op(s->matrix_op);
        break;
      case StmtOp::AllReduce:
        info.allreduce_threads.push_back(*as_int(s->extent));
        break;
      default:
        break;
    }
    for (const Stmt& child : s->body) walk(child);
    if (slot >= 0) active[slot] = 0;
  };
  walk(kernel);
  // A loop bound to fewer threads than its siblings runs under a guard, which must not hide a
  // barrier from the other threads of the block.
  for (const Stmt& s : bound_loops) {
    int slot = tag_slot(s->thread_tag);
    if (slot >= 3 && *as_int(s->extent) < info.extent[slot] && contains_barrier(s->body[0]))
      throw CompileError("cuda codegen: loop '" + s->var + "' is bound to " + s->thread_tag + " with extent " +
                         to_string(s->extent) + ", less than its siblings' " + std::to_string(info.extent[slot]) +
                         ", and contains a barrier");
  }

  static const char* kDimNames[3] = {"x", "y", "z"};
  int64_t threads = 1;
  for (int d = 0; d < 3; ++d) {
    if (info.extent[d] > limits.max_grid[d])
      throw CompileError("cuda codegen: " + kernel_name + " needs gridDim." + kDimNames[d] + " = " +
                         std::to_string(info.extent[d]) + ", over the device limit " +
                         std::to_string(limits.max_grid[d]));
    if (info.extent[3 + d] > limits.max_block[d])
      throw CompileError("cuda codegen: " + kernel_name + " needs blockDim." + kDimNames[d] + " = " +
                         std::to_string(info.extent[3 + d]) + ", over the device limit " +
                         std::to_string(limits.max_block[d]));
    threads *= info.extent[3 + d];
  }
  if (threads > limits.max_threads_per_block)
    throw CompileError("cuda codegen: " + kernel_name + " needs " + std::to_string(threads) +
                       " threads per block, over the device limit " + std::to_string(limits.max_threads_per_block));
  // Each reduction across warps declares its own array of the warps' values of every row.
  for (int64_t n : info.allreduce_threads)
    info.static_shared_bytes += warp_combine_bytes(n, info.extent[4] * info.extent[5]);
  // Swizzled tiles sit in dynamic shared memory, whose start the kernel rounds up to 1024 bytes.
  const int64_t alignment_slack = info.swizzled ? kSwizzleAlignment : 0;
  if (info.shared_bytes + info.static_shared_bytes + alignment_slack > limits.max_shared_per_block_optin)
    throw CompileError(
        "cuda codegen: " + kernel_name + " needs " +
        std::to_string(info.shared_bytes + info.static_shared_bytes + alignment_slack) +
        " bytes of shared memory, over the device limit " + std::to_string(limits.max_shared_per_block_optin));
  info.dynamic_shared = info.swizzled || info.shared_bytes + info.static_shared_bytes > kStaticSharedLimit;
  return info;
}

}  // namespace tessel::cuda_detail
