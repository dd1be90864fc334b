// Collecting a lowered program's stores for feature extraction: copies of one store (same buffer,
// loops, guards, kernel and expression skeleton) are found by hashing, so that unrolling does not
// multiply the rows.
#include "costmodel/store_collector.h"

#include <algorithm>

#include "schedule/lower/verify.h"
#include "schedule/te/error.h"
#include "schedule/te/tensor_size.h"

namespace tessel::feature {

namespace {

size_t mix(size_t h, size_t v) { return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)); }

// The shape of an expression without its indices and constants: unrolled copies share it.
size_t skeleton_hash(const Expr& e) {
  size_t h = mix(static_cast<size_t>(e->op), static_cast<size_t>(e->type.lanes));
  if (e->op == ExprOp::Load || e->op == ExprOp::TensorRead) return mix(h, std::hash<std::string>()(e->name));
  if (e->op == ExprOp::Call) h = mix(h, static_cast<size_t>(e->int_value));
  for (const Expr& a : e->args) h = mix(h, skeleton_hash(a));
  return h;
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
    if (s->scope == MemScope::Shared)
      k.shared_bytes += static_cast<double>(shared_allocation_bytes(s->dtype, s->extents));
    if (s->scope == MemScope::Local || is_fragment(s->scope)) {
      double elems = 1;
      for (int64_t e : s->extents) elems *= static_cast<double>(e);
      k.local_bytes += elems * bytes_of(s->dtype);
    }
  }
  for (const Stmt& b : s->body)
    if (b) collect_kernel(b, k, tags, allreduce_threads);
}

}  // namespace

int64_t constant_extent(const Expr& e) {
  if (const int64_t* v = as_int(e)) return std::max<int64_t>(*v, 0);
  // A loop over a clamped region: min(c, expr) is at most c.
  if (e->op == ExprOp::Min) {
    for (const Expr& arg : e->args)
      if (const int64_t* v = as_int(arg)) return std::max<int64_t>(*v, 0);
  }
  return 1;
}

int bytes_of(DType t) { return static_cast<int>(dtype_bytes(t)); }

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

int tag_axis(const std::string& tag) {
  const int axis = tag.empty() ? -1 : tag.back() - 'x';
  return axis >= 0 && axis <= 2 ? axis : -1;
}

void StoreCollector::walk_kernel(const Stmt& part, int kernel, const std::vector<Allocation>& outer) {
  kernel_ = kernel;
  allocs_ = outer;
  walk(part);
  allocs_.clear();
}

void StoreCollector::walk(const Stmt& s) {
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
    case StmtOp::CommitCopies:
      return;
    case StmtOp::Matrix:
      if (s->matrix_op == MatrixOpKind::WgmmaFence || s->matrix_op == MatrixOpKind::WgmmaCommit ||
          s->matrix_op == MatrixOpKind::WgmmaWait)
        return;  // ordering only
      add_store(matrix_as_store(*s));
      return;
  }
}

// A tensor-core operation as the store one lane of its warp does: 8 consecutive elements of the
// destination tile (a fragment holds 256 values over 32 lanes), computed from the sources' tiles.
// A product is 128 multiply-adds per lane, written as 64-lane arithmetic (the width the feature
// rows count operations in). Kept alive by the collector, as the groups point to it.
const StmtNode* StoreCollector::matrix_as_store(const StmtNode& m) {
  constexpr int kLanes = 8, kProductLanes = 64;
  auto elem = [&](const MatrixOperand& o, DType t, int lanes) {
    return make_load(o.buffer, make_ramp(o.indices.at(0) * make_int(lanes), make_int(1), lanes), Type{t, lanes});
  };
  const std::vector<MatrixOperand>& o = m.operands;
  Stmt s;
  switch (m.matrix_op) {
    case MatrixOpKind::FillZero:
      s = make_store(o[0].buffer, make_ramp(o[0].indices.at(0) * make_int(kLanes), make_int(1), kLanes),
                     make_broadcast(make_float(0), kLanes));
      break;
    case MatrixOpKind::LoadA:
    case MatrixOpKind::LoadB:
      // The 16-bit type is unknown here (no allocation in view); the copy's width is what matters.
      s = make_store(o[0].buffer, make_ramp(o[0].indices.at(0) * make_int(kLanes), make_int(1), kLanes),
                     make_load(o[1].buffer, make_ramp(o[1].indices.at(0), make_int(1), kLanes),
                               Type{DType::Float16, kLanes}));
      break;
    case MatrixOpKind::MmaSync: {
      Expr product = make_cast(Type{DType::Float32, kProductLanes}, elem(o[1], DType::Float16, kProductLanes)) *
                     make_cast(Type{DType::Float32, kProductLanes}, elem(o[2], DType::Float16, kProductLanes));
      s = make_store(o[0].buffer, make_ramp(o[0].indices.at(0) * make_int(kProductLanes), make_int(1), kProductLanes),
                     elem(o[0], DType::Float32, kProductLanes) + product);
      break;
    }
    case MatrixOpKind::Store:
      s = make_store(o[0].buffer, make_ramp(o[0].indices.at(0), make_int(1), kLanes),
                     elem(o[1], DType::Float32, kLanes));
      break;
    case MatrixOpKind::WgmmaMma: {
      // One thread's share of a 64 x N x 16 product: 8 N multiply-adds, as 64-lane arithmetic
      // repeated N / 8 times over its N / 2 accumulators (the acc operand's `stride`).
      const int64_t regs = std::max<int64_t>(o[0].stride, 1);
      Expr product = make_cast(Type{DType::Float32, kProductLanes}, elem(o[1], DType::Float16, kProductLanes)) *
                     make_cast(Type{DType::Float32, kProductLanes}, elem(o[2], DType::Float16, kProductLanes));
      Expr sum = elem(o[0], DType::Float32, kProductLanes);
      for (int64_t i = 0; i < regs / 4; ++i) sum = sum + product;
      s = make_store(o[0].buffer, make_ramp(o[0].indices.at(0) * make_int(kProductLanes), make_int(1), kProductLanes),
                     sum);
      break;
    }
    case MatrixOpKind::WgmmaFence:
    case MatrixOpKind::WgmmaCommit:
    case MatrixOpKind::WgmmaWait:
      TESSEL_CHECK(false, "a warpgroup synchronization is not a store");
  }
  synthesized_.push_back(s);
  return s.get();
}

double StoreCollector::outer_prod() const {
  double p = 1;
  for (const Loop& l : loops_) p *= static_cast<double>(l.extent);
  return p;
}

void StoreCollector::add_store(const StmtNode* s) {
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

}  // namespace tessel::feature
