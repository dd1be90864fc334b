#include "schedule/lower/bound_inference.h"

#include <set>

#include "schedule/lower/arith.h"
#include "schedule/te/error.h"

namespace tessel {

namespace {

struct Range {
  Expr base;
  int64_t extent;
};

// Loop names unique across the function: a name several stages use is prefixed by its stage.
void assign_leaf_names(StageInfoMap& infos) {
  std::map<std::string, int> uses;
  for (auto& [name, info] : infos)
    for (int l : info.stage.leaves) ++uses[info.stage.vars[l].name];
  for (auto& [name, info] : infos) {
    info.leaf_names.clear();
    for (int l : info.stage.leaves) {
      const std::string& v = info.stage.vars[l].name;
      info.leaf_names.push_back(uses[v] > 1 ? name + "." + v : v);
    }
  }
}

bool is_thread_loop(Annotation a) { return a >= Annotation::VThread; }

// The range of every root axis of consumer `c` while its loops up to `attach_pos` are fixed. A
// buffer in shared memory serves every thread of a block, so for it the consumer's thread-bound
// loops count as free even outside the attach point (`relax_threads`). A padded consumer (a
// tensor-core tile) reads whole tiles past the end of a split loop.
std::vector<Range> consumer_root_ranges(const StageInfo& c, int attach_pos, bool relax_threads) {
  const Stage& s = c.stage;
  std::vector<Range> r(s.vars.size());
  for (size_t i = 0; i < s.leaves.size(); ++i) {
    int v = s.leaves[i];
    bool fixed = static_cast<int>(i) <= attach_pos && !(relax_threads && is_thread_loop(s.vars[v].annotation));
    r[v] = fixed ? Range{make_var(c.leaf_names[i]), 1} : Range{make_int(0), s.vars[v].extent};
  }
  // The fused loop at one value `base`, in units of `stride` values of parent `count - 1`: parents
  // [0, count) each at one value, its quotient by the extents inside it, and (but the outermost)
  // modulo its own extent.
  auto point_values = [&](const Relation& rel, const Expr& base, size_t count, int64_t stride) {
    for (size_t k = count; k-- > 0;) {
      const int64_t e = s.vars[rel.parents[k]].extent;
      const Expr q = stride == 1 ? base : base / make_int(stride);
      r[rel.parents[k]] = Range{simplify_expr(k == 0 ? q : q % make_int(e)), 1};
      stride *= e;
    }
  };
  for (auto it = s.relations.rbegin(); it != s.relations.rend(); ++it) {
    const Relation& rel = *it;
    if (rel.kind == Relation::Kind::Split) {
      Expr base = r[rel.children[0]].base;
      int64_t span = r[rel.children[0]].extent - 1;
      for (size_t k = 0; k < rel.lengths.size(); ++k) {
        const Range& child = r[rel.children[k + 1]];
        base = base * make_int(rel.lengths[k]) + child.base;
        span = span * rel.lengths[k] + (child.extent - 1);
      }
      int64_t extent = span + 1;
      Expr simple = simplify_expr(base);
      if (is_int_value(simple, 0) && !c.padded) extent = std::min(extent, s.vars[rel.parents[0]].extent);
      r[rel.parents[0]] = Range{simple, extent};
    } else if (r[rel.children[0]].extent == 1) {
      point_values(rel, r[rel.children[0]].base, rel.parents.size(), 1);
    } else {
      // A range of the fused loop that starts at a multiple of an inner parent's extent and spans
      // whole multiples of it covers that parent in full and the parents outside it exactly (a
      // block's 64 rows of [sequence, batch 8]: 8 positions of the sequence, the whole batch).
      // One that starts at a multiple of its own extent, which divides the parent's, lies within
      // one value of every parent outside (a thread's 4 rows: one position, 4 of the batch). Past
      // the first parent that neither holds, every parent in full.
      LinearForm base = linearize(r[rel.children[0]].base);
      int64_t extent = r[rel.children[0]].extent;
      auto multiple_of = [](const LinearForm& f, int64_t m) {
        bool all = f.constant % m == 0;
        for (const auto& term : f.terms) all = all && term.second % m == 0;
        return all;
      };
      bool exact = true;
      for (size_t k = rel.parents.size(); k-- > 0;) {
        const int64_t e = s.vars[rel.parents[k]].extent;
        if (k == 0 && exact) {
          r[rel.parents[k]] = Range{simplify_expr(to_expr(base)), std::min(extent, e)};
          break;
        }
        r[rel.parents[k]] = Range{make_int(0), e};
        if (exact && e % extent == 0 && multiple_of(base, extent)) {
          const Expr b = to_expr(base);
          r[rel.parents[k]] = Range{simplify_expr(b % make_int(e)), extent};
          point_values(rel, b, k, e);
          break;
        }
        const bool divides = exact && extent % e == 0 && multiple_of(base, e);
        if (!divides) {
          exact = false;
          continue;
        }
        LinearForm quotient;
        quotient.constant = base.constant / e;
        for (const auto& [atom, coeff] : base.terms) quotient.add(atom, coeff / e);
        base = quotient;
        extent /= e;
      }
    }
  }
  std::vector<Range> roots;
  for (int i = 0; i < s.num_roots; ++i)
    roots.push_back(Range{simplify_expr(c.root_base[i] + r[i].base), r[i].extent});
  return roots;
}

// The interval one index expression of a read spans, or nullopt when it is not affine in the axes.
// `free_loops` are loops of stages between the reader and the attach point: they run in full inside
// one iteration of the attach loop, so the region covers every value they take.
std::optional<Range> index_range(const Expr& index, const std::map<std::string, Range>& axes,
                                 const std::map<std::string, int64_t>& free_loops) {
  LinearForm f = linearize(index);
  LinearForm min;
  min.constant = f.constant;
  int64_t span = 0;
  for (const auto& [atom, coeff] : f.terms) {
    if (atom->op != ExprOp::Var || !axes.count(atom->name)) return std::nullopt;
    const Range& a = axes.at(atom->name);
    LinearForm base = linearize(a.base);
    if (coeff > 0) {
      min = min.plus(base.scaled(coeff));
    } else {
      min = min.plus(base.scaled(coeff));
      min.constant += coeff * (a.extent - 1);
    }
    span += (coeff > 0 ? coeff : -coeff) * (a.extent - 1);
  }
  LinearForm fixed;
  fixed.constant = min.constant;
  for (const auto& [atom, coeff] : min.terms) {
    // A free loop inside a non-linear term (a block's rows spanning two images: floordiv(row, rows
    // per image)) gives no interval of constant length: the caller takes the whole dimension.
    if (atom->op != ExprOp::Var)
      for (const std::string& v : free_vars(atom))
        if (free_loops.count(v)) return std::nullopt;
    auto it = atom->op == ExprOp::Var ? free_loops.find(atom->name) : free_loops.end();
    if (it == free_loops.end()) {
      fixed.add(atom, coeff);
      continue;
    }
    if (coeff < 0) fixed.constant += coeff * (it->second - 1);
    span += (coeff > 0 ? coeff : -coeff) * (it->second - 1);
  }
  return Range{to_expr(fixed), span + 1};
}

// Whether `stage` is computed at `target`.`loop` (or a loop inside it) through a chain of
// computed-at stages; the loops that run in full inside one iteration of `loop` -- those of the
// stages in between and the target's loops between `loop` and the chain's attach loop -- are added
// to `free_loops`.
bool within(const StageInfoMap& infos, const std::string& stage, const std::string& target, const std::string& loop,
            std::map<std::string, int64_t>& free_loops) {
  std::map<std::string, int64_t> chain;
  auto add_leaves = [&](const StageInfo& s, int from, int to) {
    for (int i = from; i < to; ++i) chain[s.leaf_names[i]] = s.stage.vars[s.stage.leaves[i]].extent;
  };
  const StageInfo& t = infos.at(target);
  int pos = t.stage.leaf_position(loop);
  std::string walk = stage;
  for (size_t depth = 0; depth <= infos.size(); ++depth) {
    const StageInfo& s = infos.at(walk);
    if (s.stage.loc != ComputeLoc::At) return false;
    if (s.stage.attach_stage == target) {
      int at = t.stage.leaf_position(s.stage.attach_loop);
      if (pos < 0 || at < pos) return false;
      add_leaves(t, pos + 1, at + 1);
      free_loops.insert(chain.begin(), chain.end());
      return true;
    }
    const StageInfo& parent = infos.at(s.stage.attach_stage);
    add_leaves(parent, 0, static_cast<int>(parent.stage.leaves.size()));
    walk = s.stage.attach_stage;
  }
  return false;
}

// See StageInfo::padded: a fragment, a copy out of an accumulator (or a warpgroup accumulator's
// tensorized reader), or a tensor a fragment loads (or a warpgroup product reads).
void mark_padded(const State& state, StageInfoMap& infos) {
  for (auto& [name, info] : infos) {
    const Operation& op = state.op(name);
    bool copy_of_accumulator = false;
    if (op.reduce == ReduceKind::None && op.body->op == ExprOp::TensorRead) {
      int i = state.stage_index(op.body->name);
      copy_of_accumulator = i >= 0 && state.stages()[i].scope == MemScope::Accumulator;
    }
    // A tensorized reader of a warpgroup accumulator covers its tiles whole (its stores guarded).
    if (op.reduce == ReduceKind::None && !info.stage.tensorize_loop.empty())
      for (const std::string& t : tensors_read(info.body)) {  // inlined stages substituted
        int i = state.stage_index(t);
        copy_of_accumulator |= i >= 0 && state.stages()[i].scope == MemScope::WgAccumulator;
      }
    bool loaded = false;
    for (const std::string& reader : state.consumers(name)) {
      MemScope scope = state.stage(reader).scope;
      loaded |= scope == MemScope::MatrixA || scope == MemScope::MatrixB || scope == MemScope::WgAccumulator;
    }
    info.padded = is_fragment(info.stage.scope) || copy_of_accumulator || loaded;
    info.zero_fill = loaded;
  }
}


}  // namespace

StageInfoMap infer_bounds(const State& state, const std::map<std::string, Expr>& bodies) {
  StageInfoMap infos;
  for (size_t i = 0; i < state.ops().size(); ++i) {
    const Operation& op = state.ops()[i];
    const Stage& s = state.stages()[i];
    if (op.is_placeholder || s.loc == ComputeLoc::Inline) continue;
    StageInfo info{s, bodies.at(op.name)};
    for (int r = 0; r < s.num_roots; ++r) {
      info.root_base.push_back(make_int(0));
      info.root_extent.push_back(s.vars[r].extent);
    }
    infos.emplace(op.name, std::move(info));
  }
  assign_leaf_names(infos);
  mark_padded(state, infos);

  // Consumers come after their producers in op order, so walking backwards sees a consumer's
  // region before its producers need it.
  for (size_t i = state.ops().size(); i-- > 0;) {
    const Operation& op = state.ops()[i];
    auto it = infos.find(op.name);
    if (it == infos.end() || it->second.stage.loc != ComputeLoc::At) continue;
    StageInfo& p = it->second;
    const std::string step = "compute_at(" + op.name + ", " + p.stage.attach_stage + ", " + p.stage.attach_loop + ")";
    auto c_it = infos.find(p.stage.attach_stage);
    if (c_it == infos.end()) throw ScheduleError(-1, step, "stage " + p.stage.attach_stage + " is inlined");
    const StageInfo& c = c_it->second;
    int pos = c.stage.leaf_position(p.stage.attach_loop);
    if (pos < 0) throw ScheduleError(-1, step, "stage " + c.stage.name + " has no loop " + p.stage.attach_loop);

    // Every reader: the consumer with its loops up to the attach loop fixed, or a stage computed at
    // the same loop, which covers its whole (already inferred) region.
    std::vector<std::pair<std::vector<Expr>, std::map<std::string, Range>>> readers;
    std::map<std::string, int64_t> free_loops;
    if (p.stage.scope == MemScope::Shared) {
      // The thread-bound loops of the attach stage and of the stages it is nested in appear in
      // the regions of the readers (a row staged for a block of several rows: threadIdx.y picks
      // each reader's row); the shared buffer must cover all of their values too.
      for (std::string up = c.stage.name;;) {
        const StageInfo& a = infos.at(up);
        for (size_t i = 0; i < a.stage.leaves.size(); ++i)
          if (is_thread_loop(a.stage.vars[a.stage.leaves[i]].annotation))
            free_loops[a.leaf_names[i]] = a.stage.vars[a.stage.leaves[i]].extent;
        if (a.stage.loc != ComputeLoc::At) break;
        up = a.stage.attach_stage;
      }
    }
    for (const auto& [name, info] : infos) {
      std::vector<Expr> reads = reads_of(info.body, op.name);
      if (reads.empty()) continue;
      std::map<std::string, Range> axes;
      if (name == c.stage.name) {
        std::vector<Range> roots = consumer_root_ranges(c, pos, p.stage.scope == MemScope::Shared);
        for (int r = 0; r < c.stage.num_roots; ++r) axes.emplace(c.stage.vars[r].name, roots[r]);
      } else if (info.stage.loc == ComputeLoc::At && within(infos, name, c.stage.name, p.stage.attach_loop, free_loops)) {
        const Operation& reader = state.op(name);
        for (int r = 0; r < info.stage.num_roots; ++r) {
          const std::string& axis = r < info.stage.num_spatial_roots
                                        ? reader.axes[r].name
                                        : reader.reduce_axes[r - info.stage.num_spatial_roots].name;
          axes.emplace(axis, Range{info.root_base[r], info.root_extent[r]});
        }
      } else {
        throw ScheduleError(-1, step, "stage " + name + " also reads " + op.name + " but is not computed at " +
                                          c.stage.name + "." + p.stage.attach_loop);
      }
      readers.emplace_back(std::move(reads), std::move(axes));
    }
    if (readers.empty()) throw ScheduleError(-1, step, "stage " + c.stage.name + " does not read " + op.name);

    for (size_t d = 0; d < op.shape.size(); ++d) {
      std::optional<Range> region;
      bool first = true, failed = false;
      for (const auto& [reads, axes] : readers)
        for (const Expr& read : reads) {
          if (failed) break;
          std::optional<Range> r = index_range(read->args[d], axes, free_loops);
          if (!r) {
            failed = true;
            break;
          }
          if (first) {
            region = r;
            first = false;
            continue;
          }
          LinearForm diff = linearize(r->base).plus(linearize(region->base), -1);
          if (!diff.is_constant()) {
            failed = true;
            break;
          }
          int64_t lo = std::min<int64_t>(0, diff.constant);
          int64_t hi = std::max(region->extent, diff.constant + r->extent);
          region = Range{lo < 0 ? r->base : region->base, hi - lo};
        }
      if (failed) region.reset();
      Range full{make_int(0), op.shape[d]};
      Range chosen = region && (p.padded || region->extent < op.shape[d]) ? *region : full;
      chosen.base = simplify_expr(chosen.base);
      if (const int64_t* b = as_int(chosen.base); b && !p.padded) {
        int64_t lo = std::max<int64_t>(*b, 0), hi = std::min(*b + chosen.extent, op.shape[d]);
        chosen = Range{make_int(lo), std::max<int64_t>(hi - lo, 1)};
      }
      p.root_base[d] = chosen.base;
      p.root_extent[d] = chosen.extent;
    }
    derive_extents(p.stage, p.root_extent);
  }
  return infos;
}

}  // namespace tessel
