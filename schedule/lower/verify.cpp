#include "schedule/lower/verify.h"

#include <algorithm>
#include <map>
#include <set>

#include "schedule/ir/warpgroup.h"
#include "schedule/te/error.h"
#include "schedule/te/tensor_size.h"

namespace tessel {

namespace {

class Verifier {
 public:
  Verifier(const LoweredFunc& f, LowerTarget target) : target_(target) {
    for (const BufferParam& p : f.params) buffers_.insert(p.name);
  }

  void run(const Stmt& s) {
    switch (s->op) {
      case StmtOp::For:
        if (s->for_kind == ForKind::Vectorized) fail("a vectorized loop survived vectorization: " + s->var);
        if (s->for_kind == ForKind::Parallel && target_ == LowerTarget::Gpu)
          throw ScheduleError(-1, "annotate(" + s->var + ", parallel)",
                              "loop " + s->var + " is parallel, which the GPU target does not have (bind it to a " +
                                  "thread, or make it serial)");
        if (s->for_kind == ForKind::ThreadBound && target_ == LowerTarget::Cpu)
          throw ScheduleError(-1, "annotate(" + s->var + ", " + s->thread_tag + ")",
                              "loop " + s->var + " is bound to " + s->thread_tag +
                                  ", which the CPU target does not have (use --target cuda)");
        check(s->min);
        check(s->extent);
        if (!vars_.insert(s->var).second) fail("loop variable " + s->var + " is bound twice");
        run(s->body[0]);
        vars_.erase(s->var);
        return;
      case StmtOp::Allocate:
        if (!buffers_.insert(s->buffer).second) fail("buffer " + s->buffer + " is allocated twice");
        // A warpgroup accumulator's registers are read one by one by the thread holding them.
        if (is_fragment(s->scope) && s->scope != MemScope::WgAccumulator) fragments_.insert(s->buffer);
        run(s->body[0]);
        buffers_.erase(s->buffer);
        fragments_.erase(s->buffer);
        return;
      case StmtOp::Matrix:
        if (target_ == LowerTarget::Cpu)
          throw ScheduleError(-1, "tensorize", "tensor-core operations need the GPU target (use --target cuda)");
        for (const MatrixOperand& o : s->operands) {
          if (!buffers_.count(o.buffer)) fail(std::string(to_string(s->matrix_op)) + " of unknown buffer " + o.buffer);
          for (const Expr& i : o.indices) check(i);
        }
        return;
      case StmtOp::Provide: fail("a tensor access survived storage flattening: " + s->buffer);
      case StmtOp::Store:
        if (!buffers_.count(s->buffer)) fail("store to unknown buffer " + s->buffer);
        if (s->async_copy && target_ == LowerTarget::Cpu) fail("asynchronous copy on the CPU target");
        if (fragments_.count(s->buffer)) fragment_access(s->buffer);
        check(s->indices[0]);
        check(s->value);
        return;
      case StmtOp::IfThenElse:
        check(s->cond);
        for (const Stmt& b : s->body) run(b);
        return;
      case StmtOp::Seq:
        for (const Stmt& b : s->body) run(b);
        return;
      case StmtOp::Barrier:
        if (target_ == LowerTarget::Cpu) fail("barrier on the CPU target");
        return;
      case StmtOp::CommitCopies:
        if (target_ == LowerTarget::Cpu) fail("asynchronous copies on the CPU target");
        return;
      case StmtOp::AllReduce:
        if (target_ == LowerTarget::Cpu)
          throw ScheduleError(-1, "annotate(" + s->buffer + ", threadIdx.x)",
                              "a reduction across threads needs the GPU target (use --target cuda)");
        if (!buffers_.count(s->buffer)) fail("allreduce of unknown buffer " + s->buffer);
        check(s->indices[0]);
        return;
      case StmtOp::Prefetch:
        if (target_ == LowerTarget::Gpu)
          throw ScheduleError(-1, "prefetch(" + s->buffer + ")",
                              "prefetch is a CPU cache hint, which the GPU target does not have (drop the step)");
        if (!buffers_.count(s->buffer)) fail("prefetch of unknown buffer " + s->buffer);
        if (!as_int(s->extent)) fail("prefetch of " + s->buffer + " has no constant element count");
        check(s->indices[0]);
        return;
    }
  }

 private:
  void check(const Expr& e) {
    switch (e->op) {
      case ExprOp::Var:
        if (!vars_.count(e->name)) fail("variable " + e->name + " is used outside its loop");
        break;
      case ExprOp::TensorRead: fail("a tensor read survived storage flattening: " + e->name);
      case ExprOp::Load:
        if (!buffers_.count(e->name)) fail("load from unknown buffer " + e->name);
        if (fragments_.count(e->name)) fragment_access(e->name);
        break;
      default: break;
    }
    for (const Expr& a : e->args) check(a);
  }

  [[noreturn]] void fail(const std::string& why) { throw CompileError("lowered code is invalid: " + why); }
  [[noreturn]] static void fragment_access(const std::string& buffer) {
    throw ScheduleError(-1, "tensorize", "fragment " + buffer + " is read or written element by element; only " +
                                             "tensorized stages (loads, products, stores of tiles) can touch it");
  }

  LowerTarget target_;
  std::set<std::string> buffers_;
  std::set<std::string> fragments_;
  std::set<std::string> vars_;
};

}  // namespace

namespace {

// Launch-shape checks of one GPU kernel.
class KernelChecker {
 public:
  explicit KernelChecker(const GpuLimits& limits) : limits_(limits) {}

  void run(const Stmt& s, bool under_thread_condition) {
    switch (s->op) {
      case StmtOp::For: {
        if (s->for_kind == ForKind::ThreadBound && s->thread_tag != "vthread") {
          const int64_t* n = as_int(s->extent);
          if (!n) fail("bind(" + s->var + ")", "loop " + s->var + " bound to " + s->thread_tag + " has no constant extent");
          auto [it, fresh] = extents_.emplace(s->thread_tag, *n);
          if (!fresh && it->second != *n)
            fail("bind(" + s->var + ", " + s->thread_tag + ")",
                 s->thread_tag + " is bound to loops of extents " + std::to_string(it->second) + " and " +
                     std::to_string(*n) + " in one kernel; loops sharing a thread index need equal extents");
          if (s->thread_tag.rfind("threadIdx", 0) == 0) thread_vars_.insert(s->var);
        }
        if (s->thread_tag == "threadIdx.x") ++lane_loops_;
        run(s->body[0], under_thread_condition);
        if (s->thread_tag == "threadIdx.x") --lane_loops_;
        return;
      }
      case StmtOp::Matrix: {
        // Warp-collective: all 32 lanes of threadIdx.x run it together (a warpgroup's 128).
        const bool warpgroup = is_warpgroup_op(s->matrix_op) || (s->matrix_op == MatrixOpKind::FillZero &&
                                                                 wg_accumulators_.count(s->operands[0].buffer));
        if (lane_loops_ > 0)
          fail("tensorize", std::string("a tensor-core operation runs on a whole ") + (warpgroup ? "warpgroup" : "warp") +
                                "; it cannot sit inside a loop bound to threadIdx.x (bind " +
                                (warpgroup ? "warpgroups" : "warps") + " to threadIdx.y / threadIdx.z)");
        (warpgroup ? has_warpgroup_ : has_matrix_) = true;
        return;
      }
      case StmtOp::Allocate:
        if (s->scope == MemScope::Global)
          fail("set_scope(" + s->buffer + ")", "stage " + s->buffer +
                                                   " is in global memory but computed inside a GPU kernel; give it the " +
                                                   "shared or local scope, or compute it at the root");
        if (s->scope == MemScope::Shared) {
          shared_bytes_ = shared_allocation_start(shared_bytes_, s->swizzle_cols > 0) +
                          shared_allocation_bytes(s->dtype, s->extents, s->swizzle_cols > 0);
          swizzled_ |= s->swizzle_cols > 0;
        }
        if (s->scope == MemScope::WgAccumulator) wg_accumulators_.insert(s->buffer);
        run(s->body[0], under_thread_condition);
        return;
      case StmtOp::IfThenElse: {
        bool depends = under_thread_condition;
        for (const std::string& v : free_vars(s->cond)) depends |= thread_vars_.count(v) > 0;
        for (const Stmt& b : s->body) run(b, depends);
        return;
      }
      case StmtOp::Barrier:
        if (under_thread_condition)
          throw CompileError("lowered code is invalid: a barrier under a condition on the thread index would hang");
        return;
      case StmtOp::AllReduce:
        if (under_thread_condition)
          throw CompileError("lowered code is invalid: a reduction across threads under a condition on the thread "
                             "index would hang");
        allreduces_.push_back(s.get());
        return;
      default:
        for (const Stmt& b : s->body) run(b, under_thread_condition);
    }
  }

  void check_limits() const {
    int64_t threads = 1;
    static const char* dims[3] = {"x", "y", "z"};
    for (int d = 0; d < 3; ++d) {
      auto t = extents_.find(std::string("threadIdx.") + dims[d]);
      if (t != extents_.end()) {
        threads *= t->second;
        if (t->second > limits_.max_block[d])
          fail("bind threadIdx." + std::string(dims[d]), "block dimension " + std::string(dims[d]) + " is " +
                   std::to_string(t->second) + ", over the device limit " + std::to_string(limits_.max_block[d]));
      }
      auto b = extents_.find(std::string("blockIdx.") + dims[d]);
      if (b != extents_.end() && b->second > limits_.max_grid[d])
        fail("bind blockIdx." + std::string(dims[d]), "grid dimension " + std::string(dims[d]) + " is " +
                 std::to_string(b->second) + ", over the device limit " + std::to_string(limits_.max_grid[d]));
    }
    if (has_matrix_ && has_warpgroup_)
      fail("tensorize", "a kernel runs either warp (wmma) or warpgroup (wgmma) tensor-core operations, not both");
    if (has_matrix_ || has_warpgroup_) {
      auto x = extents_.find("threadIdx.x");
      const int64_t want = has_matrix_ ? 32 : kWarpgroupThreads;
      if (x == extents_.end() || x->second != want)
        fail("tensorize", "a kernel with " + std::string(has_matrix_ ? "warp" : "warpgroup") +
                              " tensor-core operations needs threadIdx.x = " + std::to_string(want) + " (one " +
                              (has_matrix_ ? "warp's lanes" : "warpgroup's threads") + "), not " +
                              (x == extents_.end() ? std::string("unbound") : std::to_string(x->second)));
    }
    for (const StmtNode* r : allreduces_) {
      auto t = extents_.find(r->thread_tag);
      int64_t n = *as_int(r->extent);
      std::string step = "annotate(" + r->buffer + ", " + r->thread_tag + ")";
      if (t == extents_.end() || t->second != n)
        fail(step, "a reduction across " + std::to_string(n) + " threads needs " + r->thread_tag + " = " +
                       std::to_string(n) + " in its kernel, not " +
                       (t == extents_.end() ? std::string("unbound") : std::to_string(t->second)));
      if (n <= 32 ? (n & (n - 1)) != 0 : n % 32 != 0)
        fail(step, "a reduction across " + std::to_string(n) + " threads needs a power of two up to 32 threads or "
                       "a multiple of 32 (whole warps)");
    }
    if (threads > limits_.max_threads_per_block)
      fail("bind threadIdx", "a block of " + std::to_string(threads) + " threads is over the device limit of " +
                                 std::to_string(limits_.max_threads_per_block) + " threads per block");
    // A reduction across more than one warp combines the warps' values through a shared array of
    // its own (one float per warp of each row of the block; see the CUDA printer's AllReduce).
    int64_t combine_bytes = 0;
    for (const StmtNode* r : allreduces_) {
      int64_t rows = 1;
      for (const char* d : {"threadIdx.y", "threadIdx.z"})
        if (auto t = extents_.find(d); t != extents_.end()) rows *= t->second;
      combine_bytes += warp_combine_bytes(*as_int(r->extent), rows);
    }
    // Swizzled tiles need 1024-byte alignment, which the start of dynamic shared memory may lack.
    const int64_t shared_bytes = shared_bytes_ + combine_bytes + (swizzled_ ? kSwizzleAlignment : 0);
    if (shared_bytes > limits_.max_shared_bytes)
      fail("cache_read shared",
           "the kernel needs " + std::to_string(shared_bytes) + " bytes of shared memory" +
               (combine_bytes ? " (" + std::to_string(combine_bytes) + " of them to combine reductions across warps)"
                              : std::string()) +
               ", over the device limit of " + std::to_string(limits_.max_shared_bytes) + " bytes per block");
  }

 private:
  [[noreturn]] static void fail(const std::string& step, const std::string& why) { throw ScheduleError(-1, step, why); }

  const GpuLimits& limits_;
  std::map<std::string, int64_t> extents_;
  std::set<std::string> thread_vars_;
  std::vector<const StmtNode*> allreduces_;
  int64_t shared_bytes_ = 0;
  int lane_loops_ = 0;
  bool has_matrix_ = false, has_warpgroup_ = false, swizzled_ = false;
  std::set<std::string> wg_accumulators_;
};

}  // namespace

int64_t shared_allocation_start(int64_t used, bool swizzled) {
  return swizzled ? (used + kSwizzleAlignment - 1) / kSwizzleAlignment * kSwizzleAlignment : used;
}

int64_t shared_allocation_bytes(DType dtype, const std::vector<int64_t>& extents, bool swizzled) {
  // Tensor-core tiles start 32-byte aligned, swizzled ones 1024-byte aligned.
  const int64_t kAlignment = swizzled ? kSwizzleAlignment : 32;
  int64_t elements = 1;
  for (int64_t e : extents) elements *= std::max<int64_t>(e, 0);
  const int64_t size = dtype_bytes(dtype);
  const int64_t bytes = std::max<int64_t>(elements, 1) * size;
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

int64_t warp_combine_bytes(int64_t threads, int64_t rows) { return threads > 32 ? 4 * rows * (threads / 32) : 0; }

namespace {

void split_kernels(const Stmt& s, std::vector<const StmtNode*>& scratch, std::vector<GpuKernel>& kernels) {
  if (s->op == StmtOp::Seq) {
    for (const Stmt& child : s->body) split_kernels(child, scratch, kernels);
  } else if (s->op == StmtOp::Allocate && s->scope == MemScope::Global) {
    scratch.push_back(s.get());
    split_kernels(s->body[0], scratch, kernels);
    scratch.pop_back();
  } else {
    kernels.push_back(GpuKernel{s, scratch});
  }
}

}  // namespace

std::vector<GpuKernel> split_gpu_kernels(const Stmt& body) {
  std::vector<GpuKernel> kernels;
  std::vector<const StmtNode*> scratch;
  if (body) split_kernels(body, scratch, kernels);
  return kernels;
}

void verify_lowered(const LoweredFunc& func, LowerTarget target, const GpuLimits& limits) {
  Verifier(func, target).run(func.body);
  if (target != LowerTarget::Gpu) return;
  for (const GpuKernel& k : split_gpu_kernels(func.body)) {
    KernelChecker checker(limits);
    checker.run(k.body, false);
    checker.check_limits();
  }
}

}  // namespace tessel
