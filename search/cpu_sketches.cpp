// CPU sketch rules. Each DAG structure gets the loop structure that suits it, with every length,
// depth and location left to the Decider:
//  - contraction (matmul, dense, batch_matmul, conv2d; and depthwise convolution, as window tiling
//    beside the row-reduction sketch): multi-level tiling SSRSRS with consumer
//    fusion. The output (or the contraction's cache_write local stage's consumer) is tiled twice per
//    spatial axis (S S), its outer levels fused and run in parallel; the contraction is computed
//    inside an output tile and tiled again (S R S R S: outer spatial, outer reduction, register
//    rows, inner reduction, register tile innermost, vectorized). Optionally the operand read along
//    the vectorized axis (matmul's B[k, j]) is packed: copied into a contiguous local tile once per
//    outer tile of the axes it uses, reused across the outer tiles of the others (as BLAS packs its
//    panels; unpacked, a 16-float strip of B[k, j] steps 4 KiB a row and every row lands in the
//    same L1 set). Elementwise epilogues are inlined into the output; padding is inlined, computed
//    up front, or computed per output tile beside the contraction.
//  - row reduction (softmax, layernorm, rmsnorm, reduce_sum ...): rows in parallel in groups, each
//    reduction vectorized through rfactor into chains x lanes partial results (or left serial),
//    the row's producers computed per row group, expensive shared stages inlined or computed once,
//    large inputs optionally prefetched ahead.
//  - elementwise: everything inlined into the output, its axes fused, split into parallel chunks,
//    unrolled vectors.
#include <algorithm>

#include "search/sketch.h"

namespace tessel {

namespace {

// auto_unroll_max_step values (Ansor also tries 512 on the CPU; here it mostly buys compile time).
const std::vector<int64_t> kUnrollSteps = {0, 16, 64};
constexpr int64_t kMaxUnrolledTile = 32;  // register tile rows unrolled around the vector loop
constexpr int64_t kMaxPackBytes = 256 << 10;  // a packed operand tile stays within a core's L2

bool is_expensive(const Expr& e) {
  if (e->op == ExprOp::Call && e->math_fn() != MathFn::Abs && e->math_fn() != MathFn::Sqrt) return true;
  for (const Expr& a : e->args)
    if (is_expensive(a)) return true;
  return false;
}

bool has_reduction(const ComputeDAG& dag) {
  for (const Operation& op : dag.ops())
    if (op.reduce != ReduceKind::None) return true;
  return false;
}

// The steps of one sketch under construction: the trace builder plus the decider.
class SketchSteps {
 public:
  SketchSteps(const ComputeDAG& dag, const CpuTargetSpec& target, Decider& d, TraceBuilder& b)
      : dag_(dag), lanes_(std::max(1, target.vector_lanes)), d_(d), b_(b) {}

  void contraction() {
    const Operation* c = find_contraction(dag_);
    if (!c) c = find_window_product(dag_);
    const Operation& out = dag_.ops().back();
    std::string compute = c->name;
    if (c->name == out.name) {
      apply(cache_write_step(out.name, MemScope::Local));
      compute = cache_stage_name(out.name, MemScope::Local);
    }
    // The other stages: epilogues inlined; padding computed once up front (0), inlined as a bounds
    // test in the inner loop (1), or computed per output tile just before the contraction reads it
    // (2), where the padded copy of a tile's window stays in cache instead of a whole padded input
    // going through memory.
    std::vector<std::string> tile_pads;
    for (const Operation& op : dag_.ops()) {
      if (op.is_placeholder || op.name == out.name || op.name == c->name || op.reduce != ReduceKind::None) continue;
      const int64_t where =
          op.body->op == ExprOp::Select ? d_.choose(op.name + ".inline", {0, 1, 2}, DecisionKind::Structure) : 1;
      if (where == 0)
        elementwise(op.name);
      else if (where == 2)
        tile_pads.push_back(op.name);
      else
        apply(compute_inline_step(op.name));
    }
    // The output: S S per spatial axis, then the inner tile.
    std::vector<std::string> axes = leaves(out.name);
    std::vector<std::string> outer, middle, inner;
    std::vector<int64_t> region;  // per axis: the output tile's length at each attach level
    std::vector<int64_t> middle_region;
    for (const std::string& ax : axes) {
      int64_t n = extent(out.name, ax);
      std::vector<int64_t> t = d_.tile(out.name + "/" + ax, n, 2, DecisionKind::Tile,
                                       ax == axes.back() ? std::vector<int64_t>{lanes_, 2 * lanes_} : std::vector<int64_t>{});
      if (n > 1 && apply(split_step(out.name, ax, t))) {
        outer.push_back(ax + ".0");
        middle.push_back(ax + ".1");
        inner.push_back(ax + ".2");
        region.push_back(std::min(n, t[0] * t[1]));
        middle_region.push_back(std::min(n, t[1]));
      } else {
        outer.push_back(ax);
        region.push_back(1);
        middle_region.push_back(1);
      }
    }
    std::vector<std::string> order = outer;
    order.insert(order.end(), middle.begin(), middle.end());
    order.insert(order.end(), inner.begin(), inner.end());
    apply(reorder_step(out.name, order));
    // Parallel granularity: the outer tiles, or the outer and middle ones, fused into one loop.
    bool fine = d_.choose(out.name + ".parallel", {0, 1}, DecisionKind::Parallel) == 1;
    std::vector<std::string> par = outer;
    if (fine) par.insert(par.end(), middle.begin(), middle.end());
    std::string par_loop = fuse(out.name, par);
    apply(annotate_step(out.name, par_loop, Annotation::Parallel));
    if (!inner.empty()) apply(annotate_step(out.name, inner.back(), Annotation::Vectorize));
    // Compute location: per outer tile or per middle tile.
    bool at_middle = !fine && !middle.empty() &&
                     d_.choose(compute + ".at", {0, 1}, DecisionKind::ComputeLocation) == 1;
    const std::string at_loop = at_middle ? middle.back() : par_loop;
    apply(compute_at_step(compute, out.name, at_loop));
    if (at_middle || fine) region = middle_region;
    tile_contraction(compute, region);
    for (const std::string& pad : tile_pads) {
      apply(compute_at_step(pad, out.name, at_loop));
      // A block of channels as the last axis (NCHWc) is a whole vector in every tile.
      const std::string last = leaves(pad).back();
      const int64_t n = extent(pad, last);
      if (n == lanes_ || n == lanes_ / 2) apply(annotate_step(pad, last, Annotation::Vectorize));
    }
  }

  void row_reduction() {
    const Operation& out = dag_.ops().back();
    for (const Operation& op : dag_.ops()) {
      if (op.is_placeholder || op.name == out.name || op.reduce != ReduceKind::None) continue;
      // An expensive stage read twice (softmax's exp): recomputed per read, or computed once per row.
      if (is_expensive(op.body) && dag_.consumers(op.name).size() > 1 &&
          d_.choose(op.name + ".inline", {0, 1}, DecisionKind::Structure) == 0)
        continue;
      apply(compute_inline_step(op.name));
    }
    const std::string row = out.axes[0].name;
    std::string row_loop = row;
    if (out.reduce != ReduceKind::None) {
      vectorize_reduction(out.name);
      row_loop = group_rows(out.name);
    } else {
      std::vector<std::string> loops = leaves(out.name);
      if (loops.size() > 2) fuse(out.name, std::vector<std::string>(loops.begin(), loops.end() - 1));
      row_loop = group_rows(out.name);
      std::string col = leaves(out.name).back();
      int64_t vec = d_.choose(out.name + ".vector", {lanes_ / 2, lanes_, 2 * lanes_}, DecisionKind::Vector);
      int64_t unroll = d_.choose(out.name + ".unroll", {1, 2, 4}, DecisionKind::Unroll);
      if (unroll > 1 && apply(split_step(out.name, col, {unroll, vec}))) {
        apply(annotate_step(out.name, col + ".1", Annotation::Unroll));
        apply(annotate_step(out.name, col + ".2", Annotation::Vectorize));
      } else if (apply(split_step(out.name, col, {vec}))) {
        apply(annotate_step(out.name, col + ".1", Annotation::Vectorize));
      }
    }
    // Producers, consumers first, each computed per row group of the output (or at the root).
    for (size_t i = dag_.ops().size(); i-- > 0;) {
      const Operation& op = dag_.ops()[i];
      if (op.is_placeholder || op.name == out.name || b_.state().stage(op.name).loc == ComputeLoc::Inline) continue;
      if (op.reduce != ReduceKind::None) {
        vectorize_reduction(op.name);
      } else if (op.shape.size() >= 2) {
        std::string col = leaves(op.name).back();
        int64_t vec = d_.choose(op.name + ".vector", {lanes_ / 2, lanes_, 2 * lanes_}, DecisionKind::Vector);
        if (apply(split_step(op.name, col, {vec}))) apply(annotate_step(op.name, col + ".1", Annotation::Vectorize));
      }
      if (!apply(compute_at_step(op.name, out.name, row_loop))) {
        std::vector<std::string> consumers = b_.state().effective_consumers(op.name);
        if (consumers.size() == 1) apply(compute_at_step(op.name, consumers[0], leaves(consumers[0])[0]));
      }
    }
    for (const Operation& op : dag_.ops())
      if (op.is_placeholder) prefetch(op, out.name);
    apply(pragma_step(out.name, leaves(out.name)[0], "auto_unroll_max_step",
                      d_.choose(out.name + ".auto_unroll", kUnrollSteps, DecisionKind::Unroll)));
  }

  // All axes fused, split into [parallel chunks, unrolled, vector].
  void elementwise(const std::string& name) {
    std::string flat = fuse(name, leaves(name));
    int64_t n = extent(name, flat);
    int64_t vec = d_.choose(name + ".vector", {lanes_ / 2, lanes_, 2 * lanes_, 4 * lanes_}, DecisionKind::Vector);
    int64_t unroll = d_.choose(name + ".unroll", {1, 2, 4, 8}, DecisionKind::Unroll);
    if (n < vec * unroll) unroll = 1;
    if (unroll > 1 && apply(split_step(name, flat, {unroll, vec}))) {
      apply(annotate_step(name, flat + ".0", Annotation::Parallel));
      apply(annotate_step(name, flat + ".1", Annotation::Unroll));
      apply(annotate_step(name, flat + ".2", Annotation::Vectorize));
    } else if (apply(split_step(name, flat, {vec}))) {
      apply(annotate_step(name, flat + ".0", Annotation::Parallel));
      apply(annotate_step(name, flat + ".1", Annotation::Vectorize));
    } else {
      apply(annotate_step(name, flat, Annotation::Parallel));
    }
  }

  void inline_all_but(const std::string& keep) {
    for (const Operation& op : dag_.ops())
      if (!op.is_placeholder && op.name != keep && op.reduce == ReduceKind::None) apply(compute_inline_step(op.name));
  }

 private:
  bool apply(const Step& step) { return b_.apply(step); }
  std::vector<std::string> leaves(const std::string& stage) const { return b_.state().stage(stage).leaf_names(); }
  int64_t extent(const std::string& stage, const std::string& loop) const {
    const Stage& s = b_.state().stage(stage);
    return s.vars[s.find_var(loop)].extent;
  }

  // Fuses consecutive loops; returns the fused loop (or the only one).
  std::string fuse(const std::string& stage, const std::vector<std::string>& loops) {
    if (loops.empty()) return leaves(stage)[0];
    if (loops.size() == 1) return loops[0];
    int pos = b_.state().stage(stage).leaf_position(loops[0]);
    if (apply(fuse_step(stage, loops))) return leaves(stage)[static_cast<size_t>(pos)];
    return loops[0];
  }

  // The contraction inside its output tile: S R S R S, register tile innermost.
  void tile_contraction(const std::string& compute, const std::vector<int64_t>& region) {
    const Stage& cs = b_.state().stage(compute);
    std::vector<std::string> spatial, reduce;
    std::vector<int64_t> extents;
    for (int a = 0; a < cs.num_roots; ++a) {
      (a < cs.num_spatial_roots ? spatial : reduce).push_back(cs.vars[a].name);
      extents.push_back(a < cs.num_spatial_roots && a < static_cast<int>(region.size()) ? region[a] : cs.vars[a].extent);
    }
    std::vector<std::string> s0, s1, s2, r0, r1;
    for (size_t a = 0; a < spatial.size(); ++a) {
      const std::string& ax = spatial[a];
      bool last = a + 1 == spatial.size();
      std::vector<int64_t> t = d_.tile(compute + "/" + ax, extents[a], 2, DecisionKind::Tile,
                                       last ? std::vector<int64_t>{lanes_, 2 * lanes_} : std::vector<int64_t>{});
      if (extents[a] > 1 && apply(split_step(compute, ax, t))) {
        s0.push_back(ax + ".0");
        s1.push_back(ax + ".1");
        s2.push_back(ax + ".2");
      } else {
        s2.push_back(ax);
      }
    }
    for (size_t r = 0; r < reduce.size(); ++r) {
      const std::string& ax = reduce[r];
      int64_t n = extents[spatial.size() + r];
      std::vector<int64_t> t = d_.tile(compute + "/" + ax, n, 1);
      if (n > 1 && apply(split_step(compute, ax, t))) {
        r0.push_back(ax + ".0");
        r1.push_back(ax + ".1");
      } else {
        r0.push_back(ax);
      }
    }
    order_register_tile(compute, spatial, s2);
    // Packing reorders the outer spatial tiles: the packed operand's axes first, it is packed at
    // the last of them, and the other axes' tiles below reuse the packed copy.
    std::string packed, pack_loop;
    if (d_.choose(compute + ".pack", {0, 1}, DecisionKind::Structure) == 1)
      choose_packing(compute, spatial, reduce, extents, s0, packed, pack_loop);
    std::vector<std::string> order;
    for (auto* group : {&s0, &r0, &s1, &r1, &s2}) order.insert(order.end(), group->begin(), group->end());
    apply(reorder_step(compute, order));
    if (!packed.empty() && apply(cache_read_step(packed, MemScope::Local, {compute})))
      apply(compute_at_step(cache_stage_name(packed, MemScope::Local), compute, pack_loop));
    // The register tile's outer loops unrolled, when the unrolled body stays small.
    int64_t unrolled = 1;
    for (size_t k = 0; k + 1 < s2.size(); ++k) unrolled *= extent(compute, s2[k]);
    if (d_.choose(compute + ".unroll_tile", {0, 1}, DecisionKind::Unroll) && unrolled <= kMaxUnrolledTile)
      for (size_t k = 0; k + 1 < s2.size(); ++k) apply(annotate_step(compute, s2[k], Annotation::Unroll));
    apply(annotate_step(compute, s2.back(), Annotation::Vectorize));
    apply(pragma_step(compute, order.front(), "auto_unroll_max_step",
                      d_.choose(compute + ".auto_unroll", kUnrollSteps, DecisionKind::Unroll)));
  }

  // The register tile's loops (`s2`, one per spatial axis, the vector axis last) in the order that
  // keeps the fewest operand vectors live. Inside a tile [A, B, vector] each FMA takes one vector
  // of the operand read along the vector axis (a convolution's weights, selected by B's axes when
  // they are its axes) and one broadcast of the other (an input pixel, selected by A's): the inner
  // group's values stay live across the outer group's iterations, one of the outer's at a time. So
  // the group with the smaller tile goes inside: with 16 vector registers (AVX2) a tile of 6 pixels
  // by 2 blocks of output channels then holds 12 accumulators, 2 weight vectors and a broadcast,
  // where the pixels inside kept 6 broadcasts live and spilled (a 1x1 convolution of 1024 to 256
  // channels at 14x14 ran 1.1x slower on two cores).
  void order_register_tile(const std::string& compute, const std::vector<std::string>& spatial,
                           std::vector<std::string>& s2) const {
    if (s2.size() < 3 || s2.size() != spatial.size()) return;
    const Operation& op = b_.state().op(compute);
    Expr vector_operand;
    for (const Expr& read : tensor_reads(op.body))
      if (read_uses_axis(read, spatial.back())) vector_operand = read;
    if (!vector_operand) return;
    std::vector<std::string> theirs, others;  // the vector operand's axes, the rest
    int64_t their_tile = 1, other_tile = 1;
    for (size_t a = 0; a + 1 < s2.size(); ++a) {
      const bool uses = read_uses_axis(vector_operand, spatial[a]);
      (uses ? theirs : others).push_back(s2[a]);
      (uses ? their_tile : other_tile) *= extent(compute, s2[a]);
    }
    std::vector<std::string> ordered = their_tile <= other_tile ? others : theirs;
    const std::vector<std::string>& inside = their_tile <= other_tile ? theirs : others;
    ordered.insert(ordered.end(), inside.begin(), inside.end());
    ordered.push_back(s2.back());
    s2 = ordered;
  }

  // The operand to pack: a read along the last spatial axis (the vectorized one) that misses
  // another axis with an outer tile (so the packed copy is reused), whose tile (its spatial axes'
  // inner lengths, its reduction axes whole) fits kMaxPackBytes. On success sets `tensor` and
  // `loop` and moves the read's outer tiles to the front of `s0`.
  void choose_packing(const std::string& compute, const std::vector<std::string>& spatial,
                      const std::vector<std::string>& reduce, const std::vector<int64_t>& extents,
                      std::vector<std::string>& s0, std::string& tensor, std::string& loop) const {
    if (spatial.empty()) return;
    const Operation& op = b_.state().op(compute);
    for (const Expr& read : tensor_reads(op.body)) {
      if (!read_uses_axis(read, spatial.back())) continue;
      std::vector<std::string> used, unused;  // the outer tiles (s0, in order) the read indexes, the others
      int64_t bytes = 4;
      for (size_t a = 0; a < extents.size(); ++a) {
        const bool is_spatial = a < spatial.size();
        const std::string& ax = is_spatial ? spatial[a] : reduce[a - spatial.size()];
        const bool outer = is_spatial && std::find(s0.begin(), s0.end(), ax + ".0") != s0.end();
        const bool uses = read_uses_axis(read, ax);
        if (outer) (uses ? used : unused).push_back(ax + ".0");
        if (uses) bytes *= outer ? extent(compute, ax + ".1") * extent(compute, ax + ".2") : extents[a];
      }
      if (used.empty() || unused.empty() || bytes > kMaxPackBytes) continue;
      tensor = read->name;
      loop = used.back();
      s0 = used;
      s0.insert(s0.end(), unused.begin(), unused.end());
      return;
    }
  }

  // Rows in parallel, `group` rows per task (the row loop split when group > 1); returns the loop
  // the row's producers are computed at.
  std::string group_rows(const std::string& name) {
    std::string row = leaves(name)[0];
    int64_t group = d_.choose(name + ".rows", {1, 2, 4, 8}, DecisionKind::Parallel);
    if (group > 1 && extent(name, row) > group && apply(split_step(name, row, {group}))) {
      apply(annotate_step(name, row + ".0", Annotation::Parallel));
      return row + ".1";
    }
    apply(annotate_step(name, row, Annotation::Parallel));
    return row;
  }

  // Each reduction vectorized through rfactor into chains x lanes partial results, or left serial.
  void vectorize_reduction(const std::string& name) {
    const Operation& op = b_.state().op(name);
    if (op.reduce_axes.size() != 1) return;
    int64_t chains = d_.choose(name + ".chains", {0, 1, 2, 4, 8}, DecisionKind::Vector);
    if (chains == 0 || op.reduce_axes[0].extent < chains * lanes_) return;
    rfactor_into_vectors(b_, name, chains, lanes_);
  }

  // A large input fetched ahead (0: not at all).
  void prefetch(const Operation& input, const std::string& out) {
    constexpr int64_t kMinBytes = int64_t(16) << 20;
    int64_t bytes = 4;
    for (int64_t e : input.shape) bytes *= e;
    if (input.shape.size() < 2 || bytes < kMinBytes) return;
    int64_t ahead = d_.choose(input.name + ".prefetch_kib", {0, 16, 64, 256}, DecisionKind::Structure) << 10;
    prefetch_rows_ahead(b_, input, out, ahead, kMinBytes);
  }

  const ComputeDAG& dag_;
  int64_t lanes_;
  Decider& d_;
  TraceBuilder& b_;
};

}  // namespace

std::vector<Sketch> cpu_sketches(const ComputeDAG& dag, const CpuTargetSpec& target) {
  // The lambdas own copies: a sketch outlives the call that made it.
  auto with_steps = [dag, target](void (*body)(SketchSteps&)) {
    return [dag, target, body](Decider& d, TraceBuilder& b) {
      SketchSteps steps(dag, target, d, b);
      body(steps);
    };
  };
  if (find_contraction(dag))
    return {Sketch{"cpu/multi_level_tiling", with_steps([](SketchSteps& s) { s.contraction(); })}};
  if (find_window_product(dag))
    return {Sketch{"cpu/window_tiling", with_steps([](SketchSteps& s) { s.contraction(); })},
            Sketch{"cpu/row_reduction", with_steps([](SketchSteps& s) { s.row_reduction(); })}};
  if (has_reduction(dag) && !dag.ops().back().axes.empty())
    return {Sketch{"cpu/row_reduction", with_steps([](SketchSteps& s) { s.row_reduction(); })}};
  return {Sketch{"cpu/elementwise", [dag, target](Decider& d, TraceBuilder& b) {
                   SketchSteps steps(dag, target, d, b);
                   const std::string out = dag.ops().back().name;
                   steps.inline_all_but(out);
                   steps.elementwise(out);
                 }}};
}

}  // namespace tessel
