// Feature extraction: one walk over the lowered program collects its stores (merging the copies that
// unrolling made of one store), then each row is computed from the store's enclosing loops and the
// affine form of every access. The definitions follow Ansor's per-store features (Zheng et al.,
// OSDI 2020, and TVM's auto_scheduler/feature.cc) adapted to an IR whose vectorized and unrolled
// loops are already gone: vector lanes come from Ramp expressions, unrolling from merged copies.
#include "costmodel/features.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "costmodel/feature_layout.h"
#include "schedule/lower/lower.h"
#include "schedule/te/error.h"

namespace tessel {

using namespace feature;

namespace {

struct Loop {
  const StmtNode* node;
  int64_t extent;
  bool prefetch = false;  // a Prefetch statement opens this loop's body
};

struct Allocation {
  const StmtNode* node;
  double outer_prod;  // iterations of the loops around the Allocate
};

// Stores that are copies of one another (same buffer, same loops, same expression skeleton).
struct StoreGroup {
  std::vector<const StmtNode*> stores;
  std::vector<Loop> loops;
  std::vector<Allocation> allocs;
  int guards = 0;
  int kernel = 0;  // the top-level statement holding it (one GPU kernel each)
};

// What one GPU kernel asks of a multiprocessor. Extents are the printer's launch shape: each tag's
// largest extent in the kernel (a loop bound to fewer threads runs under a guard).
struct KernelFacts {
  double block_shape[3] = {0, 0, 0};  // threadIdx.x/y/z extents, 0 when unbound
  double threads = 0, blocks = 0;     // products of the threadIdx.* / blockIdx.* extents; 0 when unbound
  double shared_bytes = 0;            // its shared allocations and warp-combine arrays, as the printer lays them out
  double local_bytes = 0;             // its local (per-thread) allocations
};

// An access's index as constant + sum of coefficient x loop variable; the last coefficient belongs
// to the vector lane (a Ramp's stride). Floor division scales coefficients, other non-affine parts
// keep the coefficients of their first operand: good enough to tell strides and footprints apart.
struct AffineIndex {
  double constant = 0;
  std::vector<double> coef;  // loops outer to inner, then the lane
};

struct Access {
  const std::string* buffer;
  AffineIndex index;
  int lanes;
  int elem_bytes;
  bool write;
  int copy;  // which of the group's stores it belongs to
};

int64_t constant_extent(const Expr& e) {
  if (const int64_t* v = as_int(e)) return std::max<int64_t>(*v, 0);
  // A loop over a clamped region: min(c, expr) is at most c.
  if (e->op == ExprOp::Min) {
    for (const Expr& arg : e->args)
      if (const int64_t* v = as_int(arg)) return std::max<int64_t>(*v, 0);
  }
  return 1;
}

int bytes_of(DType t) {
  switch (t) {
    case DType::Float32: return 4;
    case DType::Int64: return 8;
    case DType::Bool: return 1;
  }
  return 4;
}

double log1p2(double x) { return std::log2(1.0 + std::max(x, 0.0)); }

// A count relative to the program's float operations: log2(count / float_ops), kNoCount for 0.
double per_float_op(double count, double float_ops) {
  return count > 0 ? std::log2(count / float_ops) : kNoCount;
}

// --- collecting stores ---------------------------------------------------------------------------

size_t mix(size_t h, size_t v) { return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)); }

// The shape of an expression without its indices and constants: unrolled copies share it.
size_t skeleton_hash(const Expr& e) {
  size_t h = mix(static_cast<size_t>(e->op), static_cast<size_t>(e->type.lanes));
  if (e->op == ExprOp::Load || e->op == ExprOp::TensorRead) return mix(h, std::hash<std::string>()(e->name));
  if (e->op == ExprOp::Call) h = mix(h, static_cast<size_t>(e->int_value));
  for (const Expr& a : e->args) h = mix(h, skeleton_hash(a));
  return h;
}

class StoreCollector {
 public:
  std::vector<StoreGroup> groups;

  // Walks `part` as kernel number `kernel`, inside the allocations `outer`.
  void walk_kernel(const Stmt& part, int kernel, const std::vector<Allocation>& outer) {
    kernel_ = kernel;
    allocs_ = outer;
    walk(part);
    allocs_.clear();
  }

  void walk(const Stmt& s) {
    switch (s->op) {
      case StmtOp::For: {
        size_t mark = signature_.size();
        signature_.push_back(mix(std::hash<std::string>()(s->var), static_cast<size_t>(constant_extent(s->extent))));
        signature_.back() = mix(signature_.back(), static_cast<size_t>(s->for_kind));
        loops_.push_back(Loop{s.get(), constant_extent(s->extent)});
        walk(s->body[0]);
        loops_.pop_back();
        signature_.resize(mark);
        return;
      }
      case StmtOp::Allocate:
        allocs_.push_back(Allocation{s.get(), outer_prod()});
        walk(s->body[0]);
        allocs_.pop_back();
        return;
      case StmtOp::IfThenElse:
        ++guards_;
        for (const Stmt& b : s->body)
          if (b) walk(b);
        --guards_;
        return;
      case StmtOp::Seq:
        for (const Stmt& b : s->body) walk(b);
        return;
      case StmtOp::Prefetch:
        if (!loops_.empty()) loops_.back().prefetch = true;
        return;
      case StmtOp::Store:
        add_store(s.get());
        return;
      case StmtOp::Provide:  // not in a lowered program; a Provide is a store all the same
        add_store(s.get());
        return;
      case StmtOp::Barrier:
      case StmtOp::AllReduce:  // a combine across threads: no store to memory of its own
        return;
    }
  }

 private:
  std::vector<Loop> loops_;
  std::vector<size_t> signature_;
  std::vector<Allocation> allocs_;
  int guards_ = 0;
  int kernel_ = 0;
  std::unordered_map<size_t, int> index_;

  double outer_prod() const {
    double p = 1;
    for (const Loop& l : loops_) p *= static_cast<double>(l.extent);
    return p;
  }

  void add_store(const StmtNode* s) {
    size_t key = mix(std::hash<std::string>()(s->buffer), s->value ? skeleton_hash(s->value) : 0);
    key = mix(mix(key, static_cast<size_t>(guards_)), static_cast<size_t>(kernel_));
    for (size_t h : signature_) key = mix(key, h);
    auto [it, inserted] = index_.emplace(key, static_cast<int>(groups.size()));
    if (inserted) groups.push_back(StoreGroup{{}, loops_, allocs_, guards_, kernel_});
    StoreGroup& g = groups[it->second];
    g.stores.push_back(s);
    // A copy may carry the prefetch mark its first sibling did not see yet.
    for (size_t i = 0; i < loops_.size() && i < g.loops.size(); ++i) g.loops[i].prefetch |= loops_[i].prefetch;
  }
};

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// The axis a binding tag names ("threadIdx.y": 1), -1 for none of x, y, z.
int tag_axis(const std::string& tag) {
  const int axis = tag.empty() ? -1 : tag.back() - 'x';
  return axis >= 0 && axis <= 2 ? axis : -1;
}

// Adds the allocations of one kernel's statements to `k`, each binding tag's largest extent to
// `tags`, and the thread counts of its reductions across threads to `allreduce_threads`.
void collect_kernel(const Stmt& s, KernelFacts& k, std::unordered_map<std::string, double>& tags,
                    std::vector<int64_t>& allreduce_threads) {
  if (s->op == StmtOp::For && s->for_kind == ForKind::ThreadBound) {
    double& extent = tags[s->thread_tag];
    extent = std::max(extent, static_cast<double>(constant_extent(s->extent)));
  }
  if (s->op == StmtOp::AllReduce) allreduce_threads.push_back(constant_extent(s->extent));
  if (s->op == StmtOp::Allocate) {
    if (s->scope == MemScope::Shared) k.shared_bytes += static_cast<double>(shared_allocation_bytes(s->dtype, s->extents));
    if (s->scope == MemScope::Local) {
      double elems = 1;
      for (int64_t e : s->extents) elems *= static_cast<double>(e);
      k.local_bytes += elems * bytes_of(s->dtype);
    }
  }
  for (const Stmt& b : s->body)
    if (b) collect_kernel(b, k, tags, allreduce_threads);
}

KernelFacts kernel_facts(const Stmt& kernel) {
  KernelFacts k;
  std::unordered_map<std::string, double> tags;
  std::vector<int64_t> allreduce_threads;
  collect_kernel(kernel, k, tags, allreduce_threads);
  for (const auto& [tag, extent] : tags) {
    if (starts_with(tag, "threadIdx.")) {
      if (tag_axis(tag) >= 0) k.block_shape[tag_axis(tag)] = extent;
      k.threads = std::max(k.threads, 1.0) * extent;
    }
    if (starts_with(tag, "blockIdx.")) k.blocks = std::max(k.blocks, 1.0) * extent;
  }
  // Each reduction across warps declares an array of its warps' values for every row of the block.
  const auto rows = static_cast<int64_t>(std::max(k.block_shape[1], 1.0) * std::max(k.block_shape[2], 1.0));
  for (int64_t n : allreduce_threads) k.shared_bytes += static_cast<double>(warp_combine_bytes(n, rows));
  return k;
}

// --- one row -------------------------------------------------------------------------------------

class RowBuilder {
 public:
  RowBuilder(const StoreGroup& group, const KernelFacts& kernel, const LoweredFunc& func, const FeatureTarget& target,
             float* row, double* counts)
      : g_(group), kernel_(kernel), func_(func), target_(target), row_(row), counts_(counts) {
    nloops_ = static_cast<int>(g_.loops.size());
    for (const Loop& l : g_.loops) prod_ *= static_cast<double>(l.extent);
  }

  void build() {
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

 private:
  const StoreGroup& g_;
  const KernelFacts& kernel_;
  const LoweredFunc& func_;
  const FeatureTarget& target_;
  float* row_;
  double* counts_;  // raw arithmetic counts (kFloatAddSub .. kCast), then the raw outer_prod
  int nloops_ = 0;
  double prod_ = 1;
  double ops_[kVecLen] = {};  // per execution of the group's stores (lanes counted)
  int vec_len_ = 1;
  int load_lanes_ = 1;
  bool contiguous_ = false;
  int copy_ = -1;  // the store being read, 0 for the first
  std::vector<Access> accesses_;

  void set(int col, double v) { row_[col] = static_cast<float>(v); }

  // Counts the operations of e, each weighted by its lane count.
  void count_ops(const Expr& e) {
    const double lanes = e->type.lanes;
    const bool fl = e->type.is_float();
    switch (e->op) {
      case ExprOp::Add: case ExprOp::Sub: ops_[fl ? kFloatAddSub : kIntAddSub] += lanes; break;
      case ExprOp::Mul: ops_[fl ? kFloatMul : kIntMul] += lanes; break;
      case ExprOp::Div: ops_[fl ? kFloatDiv : kIntDivMod] += lanes; break;
      case ExprOp::FloorDiv: case ExprOp::FloorMod: ops_[kIntDivMod] += lanes; break;
      case ExprOp::Min: case ExprOp::Max: ops_[fl ? kFloatMinMaxAbs : kIntMinMax] += lanes; break;
      case ExprOp::EQ: case ExprOp::NE: case ExprOp::LT: case ExprOp::LE: case ExprOp::GT: case ExprOp::GE:
        ops_[e->args[0]->type.is_float() ? kFloatCmp : kIntCmp] += lanes;
        break;
      case ExprOp::And: case ExprOp::Or: case ExprOp::Not: ops_[kBoolLogic] += lanes; break;
      case ExprOp::Select: ops_[fl ? kFloatSelect : kIntSelect] += lanes; break;
      case ExprOp::Cast: ops_[kCast] += lanes; break;
      case ExprOp::Call:
        switch (e->math_fn()) {
          case MathFn::Exp: case MathFn::Log: case MathFn::Pow: ops_[kFloatExpLog] += lanes; break;
          case MathFn::Sqrt: case MathFn::Rsqrt: ops_[kFloatSqrt] += lanes; break;
          case MathFn::Tanh: case MathFn::Sigmoid: case MathFn::Erf: ops_[kFloatAct] += lanes; break;
          case MathFn::Abs: ops_[kFloatMinMaxAbs] += lanes; break;
        }
        break;
      default: break;
    }
    for (const Expr& a : e->args) count_ops(a);
  }

  void collect_loads(const Expr& e) {
    if (e->op == ExprOp::Load) {
      load_lanes_ = std::max(load_lanes_, e->type.lanes);
      add_access(e->name, e->args[0], e->type.lanes, e->type.dtype, false);
    }
    for (const Expr& a : e->args) collect_loads(a);
  }

  int loop_of(const std::string& var) const {
    for (int i = nloops_ - 1; i >= 0; --i)
      if (g_.loops[i].node->var == var) return i;
    return -1;
  }

  void affine(const Expr& e, double scale, AffineIndex& out) const {
    switch (e->op) {
      case ExprOp::IntImm: out.constant += scale * static_cast<double>(e->int_value); return;
      case ExprOp::Var: {
        int i = loop_of(e->name);
        if (i >= 0) out.coef[i] += scale;
        return;
      }
      case ExprOp::Add: affine(e->args[0], scale, out); affine(e->args[1], scale, out); return;
      case ExprOp::Sub: affine(e->args[0], scale, out); affine(e->args[1], -scale, out); return;
      case ExprOp::Mul:
        if (const int64_t* c = as_int(e->args[1])) return affine(e->args[0], scale * static_cast<double>(*c), out);
        if (const int64_t* c = as_int(e->args[0])) return affine(e->args[1], scale * static_cast<double>(*c), out);
        return affine(e->args[0], scale, out);
      case ExprOp::FloorDiv:
        if (const int64_t* c = as_int(e->args[1]); c && *c > 0) return affine(e->args[0], scale / static_cast<double>(*c), out);
        return affine(e->args[0], scale, out);
      case ExprOp::FloorMod: case ExprOp::Min: case ExprOp::Max: case ExprOp::Cast: case ExprOp::Broadcast:
        return affine(e->args[0], scale, out);
      case ExprOp::Ramp: {
        affine(e->args[0], scale, out);
        const int64_t* stride = as_int(e->args[1]);
        out.coef[nloops_] += scale * (stride ? static_cast<double>(*stride) : 1.0);
        return;
      }
      default: return;  // a load or select inside an index: treated as constant
    }
  }

  void add_access(const std::string& buffer, const Expr& index, int lanes, DType dtype, bool write) {
    Access a{&buffer, AffineIndex{0, std::vector<double>(nloops_ + 1, 0.0)}, lanes, bytes_of(dtype), write, copy_};
    affine(index, 1.0, a.index);
    accesses_.push_back(std::move(a));
  }

  double extent_at(int i, int lanes) const {
    return i < nloops_ ? static_cast<double>(g_.loops[i].extent) : static_cast<double>(lanes);
  }

  // Distinct elements an access touches over loops [from, nloops] (the lane included).
  double footprint(const Access& a, int from) const {
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
  void arithmetic() {
    for (int c = kFloatAddSub; c <= kCast; ++c) counts_[c] = ops_[c] * prod_;
  }

  void loops_and_bindings() {
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
        if (starts_with(tag, "blockIdx")) bind(block[axis], e);
        else if (starts_with(tag, "threadIdx")) bind(thread[axis], e);
        else bind(vthread, e);
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
    auto total = [](const double* p) { return p[0] + p[1] + p[2] > 0 ? std::max(p[0], 1.0) * std::max(p[1], 1.0) * std::max(p[2], 1.0) : 0.0; };
    set(kThreadsPerBlock, log1p2(total(thread)));
    set(kBlocks, log1p2(total(block)));

    counts_[kCast + 1] = prod_;  // raw: see arithmetic()
    set(kNumLoops, nloops_);
    set(kNumReduceLoops, reduce_loops);
    set(kInnerExtent, log1p2(nloops_ ? static_cast<double>(g_.loops.back().extent) : 1.0));
    set(kNumGuards, g_.guards);
    set(kPrefetchLoops, prefetch_loops);
  }

  const StmtNode* allocation_of(const std::string& buffer, double* outer_prod) const {
    for (auto it = g_.allocs.rbegin(); it != g_.allocs.rend(); ++it)
      if (it->node->buffer == buffer) {
        if (outer_prod) *outer_prod = it->outer_prod;
        return it->node;
      }
    return nullptr;
  }

  void allocation() {
    const std::string& buffer = g_.stores.front()->buffer;
    double outer = 1;
    if (const StmtNode* a = allocation_of(buffer, &outer)) {
      double elems = 1;
      for (int64_t e : a->extents) elems *= static_cast<double>(e);
      set(kAllocSize, log1p2(elems * bytes_of(a->dtype)));
      set(kAllocShared, a->scope == MemScope::Shared ? 1 : 0);
      set(kAllocLocal, a->scope == MemScope::Local ? 1 : 0);
      set(kAllocOuterProd, log1p2(outer));
      return;
    }
    for (const BufferParam& p : func_.params)
      if (p.name == buffer) {
        set(kAllocSize, log1p2(static_cast<double>(num_elements(p)) * bytes_of(p.dtype)));
        set(kStoreIsOutput, p.is_output ? 1 : 0);
      }
  }

  static bool block_or_thread(const StmtNode* loop) {
    return loop->for_kind == ForKind::ThreadBound &&
           (starts_with(loop->thread_tag, "threadIdx") || starts_with(loop->thread_tag, "blockIdx"));
  }

  // How the store's kernel fills the reference multiprocessor: resident blocks (by threads, shared
  // memory and an estimate of registers from the local allocations), occupancy and waves of blocks.
  void gpu_kernel() {
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
      resident = std::min(resident, std::floor(static_cast<double>(sm.shared_bytes) /
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

  struct WarpAccess {
    double sectors = 0, efficiency = 0, bank_ways = 0;
  };

  // One warp executing access `a` once: the block's first 32 threads (threadIdx.x fastest, in the
  // kernel's launch shape), each at its thread-loop values and every other loop at 0; a thread past
  // the row's own (guarded) loop extent is idle. The index's constant counts, block offsets do not
  // (assumed aligned). Sectors are 32-byte global-memory transactions. Bank ways: the most distinct
  // 4-byte words one of the 32 banks serves in one request, per 128 bytes the request asks for; a
  // contiguous float2/float4 access is one request (as the CUDA printer emits it), any other vector
  // one request per lane.
  WarpAccess warp_access(const Access& a) const {
    int axis_loop[3] = {-1, -1, -1};
    for (int i = 0; i < nloops_; ++i) {
      const StmtNode* l = g_.loops[i].node;
      if (l->for_kind != ForKind::ThreadBound || !starts_with(l->thread_tag, "threadIdx.")) continue;
      if (tag_axis(l->thread_tag) >= 0) axis_loop[tag_axis(l->thread_tag)] = i;
    }
    WarpAccess w;
    if (axis_loop[0] < 0 && axis_loop[1] < 0 && axis_loop[2] < 0) return w;
    double shape[3];
    for (int axis = 0; axis < 3; ++axis) shape[axis] = std::max(kernel_.block_shape[axis], 1.0);
    const int threads = static_cast<int>(std::min(32.0, shape[0] * shape[1] * shape[2]));
    const double lane_coef = a.index.coef[nloops_];
    const bool wide = lane_coef == 1 && (a.lanes == 2 || a.lanes == 4);
    std::vector<int64_t> elements, sectors;
    std::vector<std::vector<int64_t>> requests(wide ? 1 : static_cast<size_t>(a.lanes));  // words
    for (int t = 0; t < threads; ++t) {
      const double id[3] = {std::fmod(t, shape[0]), std::fmod(std::floor(t / shape[0]), shape[1]),
                            std::floor(t / (shape[0] * shape[1]))};
      double base = a.index.constant;
      bool idle = false;
      for (int axis = 0; axis < 3; ++axis) {
        if (axis_loop[axis] < 0) continue;
        idle |= id[axis] >= static_cast<double>(g_.loops[axis_loop[axis]].extent);
        base += a.index.coef[axis_loop[axis]] * id[axis];
      }
      if (idle) continue;
      for (int lane = 0; lane < a.lanes; ++lane) {
        const double element = std::floor(base + lane_coef * lane);
        const double byte = element * a.elem_bytes;
        elements.push_back(static_cast<int64_t>(element));
        sectors.push_back(static_cast<int64_t>(std::floor(byte / 32.0)));
        requests[wide ? 0 : static_cast<size_t>(lane)].push_back(static_cast<int64_t>(std::floor(byte / 4.0)));
      }
    }
    if (elements.empty()) return w;
    auto distinct = [](std::vector<int64_t>& v) {
      std::sort(v.begin(), v.end());
      v.erase(std::unique(v.begin(), v.end()), v.end());
      return static_cast<double>(v.size());
    };
    w.sectors = distinct(sectors);
    w.efficiency = distinct(elements) * a.elem_bytes / (w.sectors * 32.0);
    const double request_bytes = static_cast<double>(threads) * (wide ? a.lanes : 1) * a.elem_bytes;
    const double phases = std::max(1.0, std::ceil(request_bytes / 128.0));
    for (std::vector<int64_t>& words : requests) {
      distinct(words);
      int per_bank[32] = {};
      for (int64_t word : words) ++per_bank[((word % 32) + 32) % 32];
      w.bank_ways = std::max(w.bank_ways, *std::max_element(per_bank, per_bank + 32) / phases);
    }
    w.bank_ways = std::max(w.bank_ways, 1.0);
    return w;
  }

  struct BufferStats {
    const std::string* name;
    bool read = false, write = false;
    double bytes = 0, unique_elems = 0, lines = 0, unique_lines = 0;
    double lo = 0, hi = 0;
    int elem_bytes = 4;
    int occurrences = 0;
    const Access* first = nullptr;
  };

  // Cache lines entered when running the nest in order: the innermost loop that moves the access
  // walks ceil(extent x stride / line) lines per run (one per iteration beyond a line's stride);
  // every loop outside it repeats the run.
  double lines_of(const Access& a, double line_elems) const {
    int k = -1;
    for (int i = nloops_; i >= 0; --i)
      if (a.index.coef[i] != 0 && extent_at(i, a.lanes) > 1) {
        k = i;
        break;
      }
    if (k < 0) return 1;
    double c = std::fabs(a.index.coef[k]), e = extent_at(k, a.lanes);
    double run = c < line_elems ? std::ceil(e * c / line_elems) : e;
    for (int i = 0; i < k; ++i) run *= extent_at(i, a.lanes);
    return std::max(run, 1.0);
  }

  void buffers() {
    const double line_bytes = target_.gpu ? 32.0 : static_cast<double>(std::max(target_.cache_line_bytes, 1));
    std::vector<BufferStats> stats;
    for (const Access& a : accesses_) {
      auto it = std::find_if(stats.begin(), stats.end(), [&](const BufferStats& s) { return *s.name == *a.buffer; });
      if (it == stats.end()) {
        stats.push_back(BufferStats{a.buffer});
        it = stats.end() - 1;
        it->first = &a;
        it->elem_bytes = a.elem_bytes;
      }
      BufferStats& s = *it;
      (a.write ? s.write : s.read) = true;
      if (a.copy == 0) ++s.occurrences;
      double line_elems = std::max(1.0, line_bytes / a.elem_bytes);
      double count = prod_ * a.lanes;
      double fp = footprint(a, 0);
      double min_stride = line_elems;
      double lo = a.index.constant, hi = a.index.constant;
      for (int i = 0; i <= nloops_; ++i) {
        double c = a.index.coef[i], e = extent_at(i, a.lanes);
        if (c == 0 || e <= 1) continue;
        min_stride = std::min(min_stride, std::fabs(c));
        (c > 0 ? hi : lo) += c * (e - 1);
      }
      min_stride = std::max(min_stride, 1.0);
      if (&a == s.first) s.lo = lo, s.hi = hi;
      s.lo = std::min(s.lo, lo);
      s.hi = std::max(s.hi, hi);
      s.bytes += count * a.elem_bytes;
      s.unique_elems += fp;
      s.lines += lines_of(a, line_elems);
      s.unique_lines += std::ceil(fp * min_stride / line_elems);
    }
    std::sort(stats.begin(), stats.end(), [](const BufferStats& a, const BufferStats& b) {
      return a.bytes != b.bytes ? a.bytes > b.bytes : *a.name < *b.name;
    });

    double bytes_per_iteration = 0;  // of all accesses of the row, one execution of its stores
    for (const Access& a : accesses_) bytes_per_iteration += static_cast<double>(a.lanes) * a.elem_bytes;

    for (int slot = 0; slot < kMaxBuffers && slot < static_cast<int>(stats.size()); ++slot) {
      const BufferStats& s = stats[slot];
      auto col = [&](BufferColumn c) { return buffer_column(slot, c); };
      set(col(kAccRead), s.read && !s.write ? 1 : 0);
      set(col(kAccWrite), s.write && !s.read ? 1 : 0);
      set(col(kAccReadWrite), s.read && s.write ? 1 : 0);
      double span = std::floor(s.hi - s.lo) + 1;
      double unique = std::min(s.unique_elems, std::max(span, 1.0));
      double line_elems = std::max(1.0, line_bytes / s.elem_bytes);
      set(col(kBytes), log1p2(s.bytes));
      set(col(kUniqueBytes), log1p2(unique * s.elem_bytes));
      set(col(kLines), log1p2(s.lines));
      set(col(kUniqueLines), log1p2(std::min(s.unique_lines, std::ceil(span / line_elems) + 1)));

      // Reuse: the innermost loop the access does not move with revisits the same data every
      // iteration; otherwise several accesses of one execution share it; otherwise none.
      const Access& a = *s.first;
      int reuse_loop = -1;
      for (int i = nloops_ - 1; i >= 0; --i)
        if (a.index.coef[i] == 0 && g_.loops[i].extent > 1) {
          reuse_loop = i;
          break;
        }
      if (reuse_loop >= 0) {
        double inner = 1;
        for (int i = reuse_loop + 1; i < nloops_; ++i) inner *= static_cast<double>(g_.loops[i].extent);
        set(col(kReuseLoop), 1);
        set(col(kReuseDistIter), log1p2(inner));
        set(col(kReuseDistBytes), log1p2(inner * bytes_per_iteration));
        set(col(kReuseCount), log1p2(static_cast<double>(g_.loops[reuse_loop].extent)));
      } else if (s.occurrences > 1) {
        set(col(kReuseSerial), 1);
        set(col(kReuseDistIter), log1p2(1));
        set(col(kReuseDistBytes), log1p2(bytes_per_iteration));
        set(col(kReuseCount), log1p2(s.occurrences - 1));
      } else {
        set(col(kReuseNone), 1);
      }
      double stride = 0;
      for (int i = nloops_; i >= 0; --i)
        if (a.index.coef[i] != 0 && extent_at(i, a.lanes) > 1) {
          stride = std::fabs(a.index.coef[i]);
          break;
        }
      set(col(kStride), log1p2(stride));
      const StmtNode* alloc = allocation_of(*s.name, nullptr);
      set(col(kScopeShared), alloc && alloc->scope == MemScope::Shared ? 1 : 0);
      set(col(kScopeLocal), alloc && alloc->scope == MemScope::Local ? 1 : 0);
      if (target_.gpu && !(alloc && alloc->scope == MemScope::Local)) {
        WarpAccess w = warp_access(a);
        set(col(kWarpSectors), log1p2(w.sectors));
        set(col(kWarpEfficiency), w.efficiency);
        if (alloc && alloc->scope == MemScope::Shared) set(col(kBankWays), w.bank_ways);
      }
    }
  }

  // Arithmetic intensity (float ops / distinct bytes) of the work inside the j innermost loops, for
  // j = 0 (one execution of a store) to all loops, sampled at kCurvePoints evenly spaced depths
  // (linear interpolation between depths).
  void curve() {
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
};

std::vector<std::string> make_names() {
  std::vector<std::string> names = {
      "float_addsub", "float_mul", "float_div", "float_minmax_abs", "float_cmp", "float_select",
      "float_exp_log", "float_sqrt", "float_act", "int_addsub", "int_mul", "int_divmod", "int_minmax",
      "int_cmp", "bool_logic", "int_select", "cast",
      "vec_len", "vec_contiguous", "vec_load_lanes", "unroll_copies",
      "parallel_num", "parallel_prod", "parallel_depth",
      "is_gpu", "blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z",
      "vthread", "threads_per_block", "blocks",
      "alloc_size", "alloc_shared", "alloc_local", "alloc_outer_prod", "store_is_output",
      "outer_prod", "num_loops", "num_reduce_loops", "inner_extent", "num_guards", "prefetch_loops",
      "auto_unroll_max_step",
      "thread_iters", "shared_per_block", "local_per_thread", "blocks_per_sm", "occupancy", "sm_fill", "waves",
      "wave_efficiency",
  };
  TESSEL_CHECK(static_cast<int>(names.size()) == kNumScalars, "feature names out of step with the layout");
  const char* buffer_columns[kBufferColumns] = {
      "acc_read", "acc_write", "acc_rw", "bytes", "unique_bytes", "lines", "unique_lines", "reuse_loop",
      "reuse_serial", "reuse_none", "reuse_dist_iter", "reuse_dist_bytes", "reuse_count", "stride",
      "scope_shared", "scope_local", "warp_sectors", "warp_efficiency", "bank_ways",
  };
  for (int b = 0; b < kMaxBuffers; ++b)
    for (const char* c : buffer_columns) names.push_back("B" + std::to_string(b) + "." + c);
  for (int p = 0; p < kCurvePoints; ++p) names.push_back("ai_curve." + std::to_string(p));
  TESSEL_CHECK(static_cast<int>(names.size()) == kWidth, "feature names out of step with the layout");
  return names;
}

// The rows of `func` and, per row, the buffer its stores write.
ProgramFeatures extract_rows(const LoweredFunc& func, const FeatureTarget& target, std::vector<std::string>* stored) {
  // On the GPU each kernel (split as the CUDA printer launches them) is walked on its own.
  StoreCollector collector;
  std::vector<KernelFacts> kernels;
  if (func.body) {
    std::vector<GpuKernel> parts = target.gpu ? split_gpu_kernels(func.body) : std::vector<GpuKernel>{{func.body, {}}};
    for (const GpuKernel& part : parts) {
      std::vector<Allocation> scratch;
      for (const StmtNode* a : part.scratch) scratch.push_back(Allocation{a, 1.0});
      kernels.push_back(target.gpu ? kernel_facts(part.body) : KernelFacts{});
      collector.walk_kernel(part.body, static_cast<int>(kernels.size()) - 1, scratch);
    }
  }
  ProgramFeatures out;
  out.rows = static_cast<int>(collector.groups.size());
  out.values.assign(static_cast<size_t>(out.rows) * kWidth, 0.0f);
  // Rows hold raw counts in the arithmetic and outer_prod columns until the program's float
  // operations are known (in double: float would round counts past 2^24).
  std::vector<double> raw(static_cast<size_t>(out.rows) * (kCast + 2), 0.0);
  double float_ops = 0;
  for (int r = 0; r < out.rows; ++r) {
    const StoreGroup& g = collector.groups[r];
    float* row = out.values.data() + static_cast<size_t>(r) * kWidth;
    double* counts = raw.data() + static_cast<size_t>(r) * (kCast + 2);
    RowBuilder(g, kernels[g.kernel], func, target, row, counts).build();
    for (int c = kFloatAddSub; c <= kFloatAct; ++c) float_ops += counts[c];
    if (stored) stored->push_back(g.stores.front()->buffer);
  }
  float_ops = std::max(float_ops, 1.0);
  for (int r = 0; r < out.rows; ++r) {
    float* row = out.values.data() + static_cast<size_t>(r) * kWidth;
    const double* counts = raw.data() + static_cast<size_t>(r) * (kCast + 2);
    for (int c = kFloatAddSub; c <= kCast; ++c) row[c] = static_cast<float>(per_float_op(counts[c], float_ops));
    row[kOuterProd] = static_cast<float>(per_float_op(counts[kCast + 1], float_ops));
  }
  return out;
}

}  // namespace

int feature_width() { return kWidth; }

const std::vector<std::string>& feature_names() {
  static const std::vector<std::string> names = make_names();
  return names;
}

int program_summary_width() { return 3 * kWidth + 1; }

std::vector<float> program_summary(const ProgramFeatures& features) {
  std::vector<float> out(static_cast<size_t>(program_summary_width()), 0.0f);
  if (features.rows == 0) return out;
  TESSEL_CHECK(features.values.size() == static_cast<size_t>(features.rows) * kWidth,
               "program_summary: features do not match the feature width");
  auto row = [&](int r) { return features.values.data() + static_cast<size_t>(r) * kWidth; };
  // The arithmetic columns are log2(count / F): 2^value adds the row's share of the float operations.
  auto work = [](const float* v) {
    double sum = 0;
    for (int c = kFloatAddSub; c <= kFloatAct; ++c) sum += std::exp2(static_cast<double>(v[c]));
    return sum;
  };
  const int bytes = buffer_column(0, kBytes);
  int heavy = 0;
  double heavy_work = work(row(0));
  for (int r = 1; r < features.rows; ++r) {
    const double w = work(row(r));
    // Equal within float rounding (the columns are rounded logs): a tie.
    const bool tie = std::abs(w - heavy_work) <= 1e-6 * std::max(w, heavy_work);
    if ((!tie && w > heavy_work) || (tie && row(r)[bytes] > row(heavy)[bytes])) heavy = r, heavy_work = w;
  }
  float* max = out.data() + kWidth;
  float* min = out.data() + 2 * kWidth;
  std::copy(row(heavy), row(heavy) + kWidth, out.begin());
  std::copy(row(0), row(0) + kWidth, max);
  std::copy(row(0), row(0) + kWidth, min);
  for (int r = 1; r < features.rows; ++r)
    for (int c = 0; c < kWidth; ++c) {
      max[c] = std::max(max[c], row(r)[c]);
      min[c] = std::min(min[c], row(r)[c]);
    }
  out.back() = static_cast<float>(features.rows);
  return out;
}

ProgramFeatures extract_features(const LoweredFunc& func, const FeatureTarget& target) {
  return extract_rows(func, target, nullptr);
}

ProgramFeatures features_of_schedule(const ComputeDAG& dag, const Trace& trace, const FeatureTarget& target) {
  State state = replay(dag, trace);
  LowerOptions options;
  options.target = target.gpu ? LowerTarget::Gpu : LowerTarget::Cpu;
  options.gpu_limits = target.gpu_limits;
  LoweredFunc func = lower(state, "features", options);
  std::vector<std::string> stored;
  ProgramFeatures features = extract_rows(func, target, &stored);
  // The unroll pass consumes auto_unroll_max_step pragmas, the trace still holds them. A row gets
  // the pragma of the stage it stores into, its cache stages included (C.local for C).
  for (const Step& step : trace.steps) {
    if (step.kind != StepKind::Pragma || step.pragma != "auto_unroll_max_step") continue;
    for (int r = 0; r < features.rows; ++r) {
      const std::string& buffer = stored[r];
      if (buffer == step.stage || buffer.rfind(step.stage + ".", 0) == 0)
        features.values[static_cast<size_t>(r) * kWidth + kAutoUnrollMaxStep] =
            static_cast<float>(log1p2(static_cast<double>(step.value)));
    }
  }
  return features;
}

}  // namespace tessel
