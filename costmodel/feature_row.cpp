// The scalar columns of a feature row (arithmetic, vectorization, loops and bindings, the stored
// buffer's allocation, the GPU kernel's occupancy) and its arithmetic-intensity curve, after
// Ansor's per-store features; and the affine form of the row's accesses that every column reads.
#include "costmodel/feature_row.h"

#include <algorithm>
#include <cmath>

namespace tessel::feature {

namespace {

bool block_or_thread(const StmtNode* loop) {
  return loop->for_kind == ForKind::ThreadBound &&
         (starts_with(loop->thread_tag, "threadIdx") || starts_with(loop->thread_tag, "blockIdx"));
}

}  // namespace

double log1p2(double x) { return std::log2(1.0 + std::max(x, 0.0)); }

RowBuilder::RowBuilder(const StoreGroup& group, const KernelFacts& kernel, const LoweredFunc& func,
                       const FeatureTarget& target, float* row, double* counts)
    : g_(group), kernel_(kernel), func_(func), target_(target), row_(row), counts_(counts) {
  nloops_ = static_cast<int>(g_.loops.size());
  for (const Loop& l : g_.loops) prod_ *= static_cast<double>(l.extent);
}

void RowBuilder::build() {
  // Copies share the first one's operations (up to constant offsets); their accesses all count.
  const StmtNode* first = g_.stores.front();
  if (first->value) count_ops(first->value);
  for (const Expr& idx : first->indices) count_ops(idx);
  for (double& n : ops_) n *= static_cast<double>(g_.stores.size());
  for (const StmtNode* s : g_.stores) {
    ++copy_;
    int lanes = s->value ? s->value->type.lanes : 1;
    if (s->value) {
      collect_loads(s->value);
      vec_len_ = std::max(vec_len_, lanes);
    }
    for (const Expr& idx : s->indices) collect_loads(idx);
    const Expr& index = s->indices.empty() ? make_int(0) : s->indices[0];
    if (index->op == ExprOp::Ramp && is_int_value(index->args[1], 1)) contiguous_ = true;
    add_access(s->buffer, index, lanes, s->value ? s->value->type.dtype : DType::Float32, true);
  }
  arithmetic();
  loops_and_bindings();
  allocation();
  if (target_.gpu) gpu_kernel();
  buffers();
  curve();
}

// Counts the operations of e, each weighted by its lane count.
void RowBuilder::count_ops(const Expr& e) {
  const double lanes = e->type.lanes;
  const bool fl = e->type.is_float();
  switch (e->op) {
    case ExprOp::Add:
    case ExprOp::Sub:
      ops_[fl ? kFloatAddSub : kIntAddSub] += lanes;
      break;
    case ExprOp::Mul:
      ops_[fl ? kFloatMul : kIntMul] += lanes;
      break;
    case ExprOp::Div:
      ops_[fl ? kFloatDiv : kIntDivMod] += lanes;
      break;
    case ExprOp::FloorDiv:
    case ExprOp::FloorMod:
      ops_[kIntDivMod] += lanes;
      break;
    case ExprOp::Min:
    case ExprOp::Max:
      ops_[fl ? kFloatMinMaxAbs : kIntMinMax] += lanes;
      break;
    case ExprOp::EQ:
    case ExprOp::NE:
    case ExprOp::LT:
    case ExprOp::LE:
    case ExprOp::GT:
    case ExprOp::GE:
      ops_[e->args[0]->type.is_float() ? kFloatCmp : kIntCmp] += lanes;
      break;
    case ExprOp::And:
    case ExprOp::Or:
    case ExprOp::Not:
      ops_[kBoolLogic] += lanes;
      break;
    case ExprOp::Select:
      ops_[fl ? kFloatSelect : kIntSelect] += lanes;
      break;
    case ExprOp::Cast:
      ops_[kCast] += lanes;
      break;
    case ExprOp::Call:
      switch (e->math_fn()) {
        case MathFn::Exp:
        case MathFn::Log:
        case MathFn::Pow:
          ops_[kFloatExpLog] += lanes;
          break;
        case MathFn::Sqrt:
        case MathFn::Rsqrt:
          ops_[kFloatSqrt] += lanes;
          break;
        case MathFn::Tanh:
        case MathFn::Sigmoid:
        case MathFn::Erf:
          ops_[kFloatAct] += lanes;
          break;
        case MathFn::Abs:
          ops_[kFloatMinMaxAbs] += lanes;
          break;
      }
      break;
    default:
      break;
  }
  for (const Expr& a : e->args) count_ops(a);
}

void RowBuilder::collect_loads(const Expr& e) {
  if (e->op == ExprOp::Load) {
    load_lanes_ = std::max(load_lanes_, e->type.lanes);
    add_access(e->name, e->args[0], e->type.lanes, e->type.dtype, false);
  }
  for (const Expr& a : e->args) collect_loads(a);
}

int RowBuilder::loop_of(const std::string& var) const {
  for (int i = nloops_ - 1; i >= 0; --i)
    if (g_.loops[i].node->var == var) return i;
  return -1;
}

void RowBuilder::affine(const Expr& e, double scale, AffineIndex& out) const {
  switch (e->op) {
    case ExprOp::IntImm:
      out.constant += scale * static_cast<double>(e->int_value);
      return;
    case ExprOp::Var: {
      int i = loop_of(e->name);
      if (i >= 0) out.coef[i] += scale;
      return;
    }
    case ExprOp::Add:
      affine(e->args[0], scale, out);
      affine(e->args[1], scale, out);
      return;
    case ExprOp::Sub:
      affine(e->args[0], scale, out);
      affine(e->args[1], -scale, out);
      return;
    case ExprOp::Mul:
      if (const int64_t* c = as_int(e->args[1])) return affine(e->args[0], scale * static_cast<double>(*c), out);
      if (const int64_t* c = as_int(e->args[0])) return affine(e->args[1], scale * static_cast<double>(*c), out);
      return affine(e->args[0], scale, out);
    case ExprOp::FloorDiv:
      if (const int64_t* c = as_int(e->args[1]); c && *c > 0)
        return affine(e->args[0], scale / static_cast<double>(*c), out);
      return affine(e->args[0], scale, out);
    case ExprOp::FloorMod:
    case ExprOp::Min:
    case ExprOp::Max:
    case ExprOp::Cast:
    case ExprOp::Broadcast:
      return affine(e->args[0], scale, out);
    case ExprOp::Ramp: {
      affine(e->args[0], scale, out);
      const int64_t* stride = as_int(e->args[1]);
      out.coef[nloops_] += scale * (stride ? static_cast<double>(*stride) : 1.0);
      return;
    }
    default:
      return;  // a load or select inside an index: treated as constant
  }
}

void RowBuilder::add_access(const std::string& buffer, const Expr& index, int lanes, DType dtype, bool write) {
  Access a{&buffer, AffineIndex{0, std::vector<double>(nloops_ + 1, 0.0)}, lanes, bytes_of(dtype), write, copy_};
  affine(index, 1.0, a.index);
  accesses_.push_back(std::move(a));
}

double RowBuilder::extent_at(int i, int lanes) const {
  return i < nloops_ ? static_cast<double>(g_.loops[i].extent) : static_cast<double>(lanes);
}

// Distinct elements an access touches over loops [from, nloops] (the lane included).
double RowBuilder::footprint(const Access& a, int from) const {
  double prod = 1, span = 1;
  for (int i = from; i <= nloops_; ++i) {
    double c = std::fabs(a.index.coef[i]);
    double e = extent_at(i, a.lanes);
    if (c == 0 || e <= 1) continue;
    prod *= e;
    span += c * (e - 1);
  }
  return std::max(1.0, std::min(prod, std::floor(span)));
}

// The raw counts of the arithmetic columns and of outer_prod; extract_rows turns them into counts
// per float operation of the whole program once every row is known.
void RowBuilder::arithmetic() {
  for (int c = kFloatAddSub; c <= kCast; ++c) counts_[c] = ops_[c] * prod_;
}

void RowBuilder::loops_and_bindings() {
  set(kVecLen, vec_len_);
  set(kVecContiguous, contiguous_ ? 1 : 0);
  set(kVecLoadLanes, load_lanes_);
  set(kUnrollCopies, log1p2(static_cast<double>(g_.stores.size())));

  // Products of bound extents start at 0, "not bound", so that an unbound axis reads 0.
  auto bind = [](double& prod, double extent) { prod = std::max(prod, 1.0) * extent; };
  int parallel_num = 0, parallel_depth = 0, reduce_loops = 0, prefetch_loops = 0;
  double parallel_prod = 0, block[3] = {0, 0, 0}, thread[3] = {0, 0, 0}, vthread = 0;
  const Access& store = accesses_.front();
  for (int i = 0; i < nloops_; ++i) {
    const StmtNode* l = g_.loops[i].node;
    const double e = static_cast<double>(g_.loops[i].extent);
    if (l->for_kind == ForKind::Parallel) {
      if (parallel_num++ == 0) parallel_depth = i + 1;
      bind(parallel_prod, e);
    }
    if (l->for_kind == ForKind::ThreadBound) {
      const std::string& tag = l->thread_tag;
      const int axis = std::max(tag_axis(tag), 0);
      if (starts_with(tag, "blockIdx"))
        bind(block[axis], e);
      else if (starts_with(tag, "threadIdx"))
        bind(thread[axis], e);
      else
        bind(vthread, e);
    }
    if (e > 1 && store.index.coef[i] == 0) ++reduce_loops;
    if (g_.loops[i].prefetch) ++prefetch_loops;
  }
  set(kParallelNum, parallel_num);
  set(kParallelProd, log1p2(parallel_prod));
  set(kParallelDepth, parallel_depth);
  set(kIsGpu, target_.gpu ? 1 : 0);
  set(kBlockX, log1p2(block[0]));
  set(kBlockY, log1p2(block[1]));
  set(kBlockZ, log1p2(block[2]));
  set(kThreadX, log1p2(thread[0]));
  set(kThreadY, log1p2(thread[1]));
  set(kThreadZ, log1p2(thread[2]));
  set(kVThread, log1p2(vthread));
  auto total = [](const double* p) {
    return p[0] + p[1] + p[2] > 0 ? std::max(p[0], 1.0) * std::max(p[1], 1.0) * std::max(p[2], 1.0) : 0.0;
  };
  set(kThreadsPerBlock, log1p2(total(thread)));
  set(kBlocks, log1p2(total(block)));

  counts_[kCast + 1] = prod_;  // raw: see arithmetic()
  set(kNumLoops, nloops_);
  set(kNumReduceLoops, reduce_loops);
  set(kInnerExtent, log1p2(nloops_ ? static_cast<double>(g_.loops.back().extent) : 1.0));
  set(kNumGuards, g_.guards);
  set(kPrefetchLoops, prefetch_loops);
}

const StmtNode* RowBuilder::allocation_of(const std::string& buffer, double* outer_prod) const {
  for (auto it = g_.allocs.rbegin(); it != g_.allocs.rend(); ++it)
    if (it->node->buffer == buffer) {
      if (outer_prod) *outer_prod = it->outer_prod;
      return it->node;
    }
  return nullptr;
}

void RowBuilder::allocation() {
  const std::string& buffer = g_.stores.front()->buffer;
  double outer = 1;
  if (const StmtNode* a = allocation_of(buffer, &outer)) {
    double elems = 1;
    for (int64_t e : a->extents) elems *= static_cast<double>(e);
    set(kAllocSize, log1p2(elems * bytes_of(a->dtype)));
    set(kAllocShared, a->scope == MemScope::Shared ? 1 : 0);
    set(kAllocLocal, a->scope == MemScope::Local || is_fragment(a->scope) ? 1 : 0);
    set(kAllocOuterProd, log1p2(outer));
    return;
  }
  for (const BufferParam& p : func_.params)
    if (p.name == buffer) {
      set(kAllocSize, log1p2(static_cast<double>(num_elements(p)) * bytes_of(p.dtype)));
      set(kStoreIsOutput, p.is_output ? 1 : 0);
    }
}

// How the store's kernel fills the reference multiprocessor: resident blocks (by threads, shared
// memory and an estimate of registers from the local allocations), occupancy and waves of blocks.
void RowBuilder::gpu_kernel() {
  double serial = static_cast<double>(g_.stores.size());
  for (const Loop& l : g_.loops)
    if (!block_or_thread(l.node)) serial *= static_cast<double>(l.extent);
  set(kThreadIters, log1p2(serial));
  set(kSharedPerBlock, log1p2(kernel_.shared_bytes));
  set(kLocalPerThread, log1p2(kernel_.local_bytes));

  const SmModel& sm = target_.sm;
  const double warps = std::ceil(std::max(kernel_.threads, 1.0) / 32.0);
  const double max_warps = sm.max_threads / 32.0;
  // Registers per thread: a base for addresses and loop counters plus the local arrays, in the
  // hardware's steps of 8, at most 255.
  const double regs = std::min(255.0, 8.0 * std::ceil((24.0 + kernel_.local_bytes / 4.0) / 8.0));
  double resident = std::min<double>(sm.max_blocks, std::floor(max_warps / warps));
  if (kernel_.shared_bytes > 0)
    resident =
        std::min(resident, std::floor(static_cast<double>(sm.shared_bytes) /
                                      (kernel_.shared_bytes + static_cast<double>(sm.shared_reserved_per_block))));
  resident = std::max(1.0, std::min(resident, std::floor(sm.registers / (regs * warps * 32.0))));
  const double blocks = std::max(kernel_.blocks, 1.0);
  const double capacity = sm.sm_count * resident;
  set(kBlocksPerSm, resident);
  set(kOccupancy, resident * warps / max_warps);
  set(kSmFill, std::min(1.0, blocks / sm.sm_count));
  set(kWaves, log1p2(blocks / capacity));
  set(kWaveEfficiency, blocks / (std::ceil(blocks / capacity) * capacity));
}

// Arithmetic intensity (float ops / distinct bytes) of the work inside the j innermost loops, for
// j = 0 (one execution of a store) to all loops, sampled at kCurvePoints evenly spaced depths
// (linear interpolation between depths).
void RowBuilder::curve() {
  double flops_once = 0;  // of one store (the copies are alike)
  for (int c = kFloatAddSub; c <= kFloatAct; ++c) flops_once += ops_[c];
  flops_once /= static_cast<double>(g_.stores.size());
  std::vector<double> intensity(nloops_ + 1);
  double iterations = 1;
  for (int j = 0; j <= nloops_; ++j) {
    int from = nloops_ - j;  // loops [from, nloops) are inside
    if (j > 0) iterations *= static_cast<double>(g_.loops[from].extent);
    double bytes = 0;
    for (const Access& a : accesses_)
      if (a.copy == 0) bytes += footprint(a, from) * a.elem_bytes;
    intensity[j] = flops_once * iterations / std::max(bytes, 1.0);
  }
  for (int p = 0; p < kCurvePoints; ++p) {
    double x = static_cast<double>(p) * nloops_ / (kCurvePoints - 1);
    int lo = static_cast<int>(std::floor(x));
    int hi = std::min(lo + 1, nloops_);
    double t = x - lo;
    set(kCurveBase + p, intensity[lo] * (1 - t) + intensity[hi] * t);
  }
}

}  // namespace tessel::feature
