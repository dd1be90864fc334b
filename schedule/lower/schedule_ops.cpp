#include "schedule/lower/schedule_ops.h"

#include <functional>

#include "schedule/lower/arith.h"
#include "schedule/lower/inject_predicates.h"
#include "schedule/lower/prefetch.h"
#include "schedule/te/error.h"

namespace tessel {

namespace {

ForKind for_kind(Annotation a) {
  switch (a) {
    case Annotation::None: return ForKind::Serial;
    case Annotation::Parallel: return ForKind::Parallel;
    case Annotation::Vectorize: return ForKind::Vectorized;
    case Annotation::Unroll: return ForKind::Unrolled;
    default: return ForKind::ThreadBound;
  }
}

Stmt guard(const std::vector<Expr>& conds, Stmt body) {
  if (conds.empty()) return body;
  Expr c = conds[0];
  for (size_t i = 1; i < conds.size(); ++i) c = logical_and(c, conds[i]);
  return make_if(c, body);
}

class NestBuilder {
 public:
  NestBuilder(const State& state, const StageInfoMap& infos) : state_(state), infos_(infos) {}

  Stmt build() {
    std::vector<Stmt> nests;
    std::vector<const Operation*> scratch;
    for (size_t i = 0; i < state_.ops().size(); ++i) {
      const Operation& op = state_.ops()[i];
      auto it = infos_.find(op.name);
      if (it == infos_.end() || it->second.stage.loc != ComputeLoc::Root) continue;
      nests.push_back(build_stage(op.name));
      if (!state_.is_output(op.name)) scratch.push_back(&op);
    }
    Stmt body = make_seq(nests);
    for (auto it = scratch.rbegin(); it != scratch.rend(); ++it)
      body = make_allocate((*it)->name, (*it)->dtype, (*it)->shape, infos_.at((*it)->name).stage.scope, body);
    return body;
  }

 private:
  // Reads of a computed-at tensor index its region, which starts at the region's base.
  Expr rebase_reads(const Expr& e) const {
    return rewrite(e, [&](const Expr& n) -> Expr {
      if (n->op != ExprOp::TensorRead) return nullptr;
      auto it = infos_.find(n->name);
      if (it == infos_.end() || it->second.stage.loc != ComputeLoc::At) return nullptr;
      std::vector<Expr> idx;
      for (size_t d = 0; d < n->args.size(); ++d)
        idx.push_back(simplify_expr(n->args[d] - it->second.root_base[d]));
      return make_tensor_read(n->name, idx, n->type);
    });
  }

  // The stages computed at `stage`'s loop `loop`, wrapped around `inner` with their buffers.
  Stmt with_attached(const std::string& stage, const std::string& loop, Stmt inner) {
    std::vector<const Operation*> here;
    for (const Operation& op : state_.ops()) {
      auto it = infos_.find(op.name);
      if (it != infos_.end() && it->second.stage.loc == ComputeLoc::At && it->second.stage.attach_stage == stage &&
          it->second.stage.attach_loop == loop)
        here.push_back(&op);
    }
    if (here.empty()) return inner;
    std::vector<Stmt> seq;
    for (const Operation* op : here) seq.push_back(build_stage(op->name));
    seq.push_back(inner);
    Stmt body = make_seq(seq);
    for (auto it = here.rbegin(); it != here.rend(); ++it) {
      const StageInfo& info = infos_.at((*it)->name);
      std::vector<int64_t> extents(info.root_extent.begin(), info.root_extent.begin() + (*it)->shape.size());
      body = make_allocate((*it)->name, (*it)->dtype, extents, info.stage.scope, body);
    }
    return body;
  }

  // The body of the stage's loop at `position`: the prefetches issued there, the stages computed
  // there, then `inner`. `body` is the stage's computation, whose reads the prefetches follow.
  Stmt loop_body(const StageInfo& info, const Expr& body, int position, Stmt inner) {
    const Stage& s = info.stage;
    std::vector<Stmt> seq;
    for (const PrefetchHint& hint : s.prefetches) {
      if (hint.loop != s.leaf(position).name) continue;
      std::vector<std::pair<std::string, int64_t>> inside;
      for (size_t q = position + 1; q < s.leaves.size(); ++q)
        inside.push_back({info.leaf_names[q], s.leaf(static_cast<int>(q)).extent});
      seq.push_back(prefetch_nest(hint.tensor, state_.op(hint.tensor).shape, body, info.leaf_names[position],
                                  hint.offset, inside));
    }
    seq.push_back(with_attached(s.name, s.leaf(position).name, inner));
    return make_seq(seq);
  }

  Stmt make_loop(const StageInfo& info, int position, Stmt body) {
    const Stage& s = info.stage;
    const IterVar& v = s.leaf(position);
    ForKind kind = for_kind(v.annotation);
    std::string tag = kind == ForKind::ThreadBound ? to_string(v.annotation) : "";
    int pragma = s.pragma_loop == v.name ? s.auto_unroll_max_step : 0;
    return make_for(info.leaf_names[position], make_int(0), make_int(v.extent), kind, body, tag, pragma);
  }

  Stmt build_stage(const std::string& name) {
    const StageInfo& info = infos_.at(name);
    const Operation& op = state_.op(name);
    const Stage& s = info.stage;
    std::vector<Expr> values = var_values(s, info.leaf_names);

    Expr body = info.body;
    std::vector<Expr> index;
    for (int r = 0; r < s.num_roots; ++r) {
      Expr local = simplify_expr(values[r]);
      Expr absolute = simplify_expr(info.root_base[r] + local);
      const std::string& axis = r < s.num_spatial_roots ? op.axes[r].name : op.reduce_axes[r - s.num_spatial_roots].name;
      body = substitute(body, axis, absolute);
      if (r < s.num_spatial_roots) index.push_back(local);
    }
    body = rebase_reads(body);

    Stmt update, init;
    int first_reduce = static_cast<int>(s.leaves.size());
    std::vector<Expr> all_preds = stage_predicates(info, op.shape, values, false);
    // The accumulator starts at -inf / +inf and only ever takes non-NaN values, so fmax(acc, x)
    // is exactly select(x > acc, x, acc): one vector max instead of a NaN-aware sequence.
    auto combine = [&](const Expr& acc) {
      return op.reduce == ReduceKind::Sum   ? acc + body
             : op.reduce == ReduceKind::Max ? make_select(body > acc, body, acc)
                                            : make_select(body < acc, body, acc);
    };
    if (op.reduce != ReduceKind::None) {
      for (size_t i = 0; i < s.leaves.size(); ++i)
        if (s.leaf(static_cast<int>(i)).kind == IterKind::Reduce) {
          first_reduce = static_cast<int>(i);
          break;
        }
      for (size_t i = first_reduce; i < s.leaves.size(); ++i)
        if (s.leaf(static_cast<int>(i)).kind == IterKind::Reduce && s.leaf(static_cast<int>(i)).annotation == Annotation::ThreadX)
          return cross_thread_reduction(info, op, body, index, values, first_reduce, static_cast<int>(i), combine);
      Expr acc = make_tensor_read(name, index, body->type);
      update = guard(all_preds, make_provide(name, index, combine(acc)));
      init = guard(stage_predicates(info, op.shape, values, true),
                   make_provide(name, index, make_float(reduce_init(op.reduce))));
    } else {
      update = guard(all_preds, make_provide(name, index, body));
    }

    Stmt nest = update;
    for (int p = static_cast<int>(s.leaves.size()) - 1; p >= first_reduce; --p)
      nest = make_loop(info, p, loop_body(info, body, p, nest));
    if (init) {
      Stmt init_nest = init;
      for (int p = static_cast<int>(s.leaves.size()) - 1; p >= first_reduce; --p)
        if (s.leaf(p).kind == IterKind::Spatial) init_nest = make_loop(info, p, init_nest);
      nest = make_seq({init_nest, nest});
    }
    for (int p = first_reduce - 1; p >= 0; --p) nest = make_loop(info, p, loop_body(info, body, p, nest));
    return nest;
  }

  // A reduction with a loop bound to threadIdx.x: each thread folds its share (the other reduction
  // loops) into a register, the threads combine their registers (AllReduce: warp shuffles), and
  // the result is stored once per output element. The combine is a collective every thread of the
  // block reaches, so only the stores sit under the stage's predicates.
  Stmt cross_thread_reduction(const StageInfo& info, const Operation& op, const Expr& body,
                              const std::vector<Expr>& index, const std::vector<Expr>& values, int first_reduce,
                              int thread_leaf, const std::function<Expr(const Expr&)>& combine) {
    const Stage& s = info.stage;
    for (int p = first_reduce; p < static_cast<int>(s.leaves.size()); ++p)
      if (s.leaf(p).kind == IterKind::Spatial)
        throw ScheduleError(-1, "annotate(" + s.name + ", " + s.leaf(thread_leaf).name + ", threadIdx.x)",
                            "a reduction across threads needs every spatial loop of " + s.name +
                                " outside its reduction loops; loop '" + s.leaf(p).name + "' is inside");
    const std::string partial = s.name + ".partial";
    const std::vector<Expr> cell{make_int(0)};
    Expr acc = make_tensor_read(partial, cell, body->type);
    Stmt nest = guard(stage_predicates(info, op.shape, values, false), make_provide(partial, cell, combine(acc)));
    for (int p = static_cast<int>(s.leaves.size()) - 1; p >= first_reduce; --p)
      nest = make_loop(info, p, loop_body(info, body, p, nest));
    ExprOp combiner = op.reduce == ReduceKind::Sum ? ExprOp::Add : op.reduce == ReduceKind::Max ? ExprOp::Max : ExprOp::Min;
    nest = make_seq({make_provide(partial, cell, make_float(reduce_init(op.reduce))), nest,
                     make_allreduce(partial, cell, combiner, "threadIdx.x", s.leaf(thread_leaf).extent),
                     guard(stage_predicates(info, op.shape, values, true), make_provide(s.name, index, acc))});
    nest = make_allocate(partial, op.dtype, {1}, MemScope::Local, nest);
    for (int p = first_reduce - 1; p >= 0; --p) nest = make_loop(info, p, loop_body(info, body, p, nest));
    return nest;
  }

  const State& state_;
  const StageInfoMap& infos_;
};

}  // namespace

Stmt schedule_ops(const State& state, const StageInfoMap& infos) { return NestBuilder(state, infos).build(); }

}  // namespace tessel
