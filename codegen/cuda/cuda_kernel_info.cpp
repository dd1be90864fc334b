// Kernel analysis for the CUDA printer: thread bindings become launch dimensions (a tag bound twice
// on one path must agree), shared allocations get their offsets in dynamic shared memory, and
// every limit of the device is checked before a line is printed.
#include "codegen/cuda/cuda_kernel_info.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <functional>

#include "schedule/ir/warpgroup.h"
#include "schedule/lower/arith.h"
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

// Value ranges for the 32-bit question: the loops' variables in scope, and what each integer node
// (scalar or vector, over all its lanes) can hold.
class IndexRanges {
 public:
  // Whether `e` and every integer node in it that involves a variable fits in 32 bits.
  bool fits(const Expr& e) {
    bool fits = true;
    visit(e, fits);
    return fits;
  }

  // The loop's variable ranges over [min, min + extent - 1]; false when that is not bounded.
  bool enter(const Stmt& loop) {
    const Interval v = loop_range(loop->min, loop->extent, ranges_);
    ranges_[loop->var] = v;
    // The printed loop compares with min + extent: one past the variable's last value.
    return fits(loop->min) && fits(loop->extent) && fits_32(v) && v.hi && *v.hi < kMax;
  }
  void leave(const Stmt& loop) { ranges_.erase(loop->var); }

 private:
  static constexpr int64_t kMax = INT32_MAX, kMin = INT32_MIN;

  static std::optional<int64_t> checked(int64_t v) {
    if (v > kMax * 4 || v < kMin * 4) return std::nullopt;  // well past 32 bits: unbounded is as good
    return v;
  }
  static bool fits_32(const Interval& r) { return r.lo && r.hi && *r.lo >= kMin && *r.hi <= kMax; }

  // What an integer node can hold; its operands are within 32 bits when this is asked.
  Interval range(const Expr& e) {
    if (e->type == kInt64) return bound_of(e, ranges_);
    const auto& a = e->args;
    switch (e->op) {
      case ExprOp::Broadcast: return range(a[0]);
      case ExprOp::Ramp: {
        Interval base = range(a[0]), stride = range(a[1]);
        if (!fits_32(base) || !fits_32(stride)) return {};
        const int64_t last = e->int_value - 1;
        return {checked(*base.lo + std::min<int64_t>(0, *stride.lo * last)),
                checked(*base.hi + std::max<int64_t>(0, *stride.hi * last))};
      }
      case ExprOp::Add: case ExprOp::Sub: case ExprOp::Mul: case ExprOp::Min: case ExprOp::Max: {
        Interval x = range(a[0]), y = range(a[1]);
        if (!fits_32(x) || !fits_32(y)) return {};
        int64_t c[4];
        for (int i = 0; i < 4; ++i) {
          const int64_t p = i < 2 ? *x.lo : *x.hi, q = i % 2 ? *y.hi : *y.lo;
          c[i] = e->op == ExprOp::Add ? p + q : e->op == ExprOp::Sub ? p - q : e->op == ExprOp::Mul ? p * q
                 : e->op == ExprOp::Min ? std::min(p, q) : std::max(p, q);
        }
        return {checked(*std::min_element(c, c + 4)), checked(*std::max_element(c, c + 4))};
      }
      case ExprOp::FloorDiv: case ExprOp::FloorMod: {
        Interval x = range(a[0]), y = range(a[1]);
        if (!fits_32(x) || !y.is_point() || *y.lo <= 0) return {};
        if (e->op == ExprOp::FloorMod) return {0, *y.lo - 1};
        return {floor_div(*x.lo, *y.lo), floor_div(*x.hi, *y.lo)};
      }
      default: return {};
    }
  }

  // Marks in `fits` a node that involves a variable and does not fit; returns (variable, data):
  // whether the node's value involves a loop variable, and whether it involves a loaded or
  // converted value (whose C type is its own, not the index type).
  std::pair<bool, bool> visit(const Expr& e, bool& fits) {
    bool var = e->op == ExprOp::Var, data = false;
    for (const Expr& arg : e->args) {
      auto [v, d] = visit(arg, fits);
      var |= v;
      data |= d;
    }
    const bool loaded = e->op == ExprOp::Load || e->op == ExprOp::TensorRead;
    if (loaded || (e->op == ExprOp::Cast && !e->args[0]->type.is_int())) return {false, true};
    if (fits && var && e->type.is_int() && (data || !fits_32(range(e)))) fits = false;
    return {var, data};
  }

  VarRanges ranges_;
};

}  // namespace

bool indices_fit_in_32_bits(const Stmt& kernel) {
  IndexRanges ranges;
  std::function<bool(const Stmt&)> walk = [&](const Stmt& s) {
    if (!s) return true;
    if (s->op == StmtOp::For) {
      if (!ranges.enter(s)) return false;
      const bool fits = walk(s->body[0]);
      ranges.leave(s);
      return fits;
    }
    for (const Expr* e : {&s->min, &s->extent, &s->value, &s->cond})
      if (*e && !ranges.fits(*e)) return false;
    for (const Expr& i : s->indices)
      if (!ranges.fits(i)) return false;
    for (const MatrixOperand& o : s->operands)
      for (const Expr& i : o.indices)
        if (!ranges.fits(i)) return false;
    for (const Stmt& child : s->body)
      if (!walk(child)) return false;
    return true;
  };
  return walk(kernel);
}

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
  info.index32 = indices_fit_in_32_bits(kernel);
  info.dynamic_shared = info.swizzled || info.shared_bytes + info.static_shared_bytes > kStaticSharedLimit;
  return info;
}

}  // namespace tessel::cuda_detail
