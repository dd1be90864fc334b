#include "schedule/lower/loop_partition.h"

#include <algorithm>
#include <set>

#include "schedule/lower/arith.h"

namespace tessel {

namespace {

constexpr int64_t kMinParallelToPeel = 16;

struct Guard {
  Expr cond;         // one conjunct
  VarRanges ranges;  // ranges of the loops between the partitioned loop and the guard
  bool select = false;  // of a Select (else of an IfThenElse)
};

// Splits a guard's conjunction so that each bound is judged on its own.
void conjuncts(const Expr& c, std::vector<Expr>& out) {
  if (c->op == ExprOp::And) {
    conjuncts(c->args[0], out);
    conjuncts(c->args[1], out);
  } else {
    out.push_back(c);
  }
}

void add_guard(const Expr& cond, const VarRanges& ranges, bool select, std::vector<Guard>& out) {
  std::vector<Expr> parts;
  conjuncts(cond, parts);
  for (const Expr& c : parts) out.push_back(Guard{c, ranges, select});
}

// The guards under `s`, and in `bound` every variable a loop under `s` defines.
void collect_guards(const Stmt& s, bool selects, VarRanges& ranges, std::vector<Guard>& out,
                    std::set<std::string>& bound) {
  if (selects) {
    auto scan = [&](const Expr& e) {
      if (!e) return;
      rewrite(e, [&](const Expr& x) -> Expr {
        // A condition on loaded values (an integer division's sign test) is for the data to
        // decide, not the loops.
        if (x->op == ExprOp::Select && x->args[0]->type.lanes == 1 && tensors_read(x->args[0]).empty())
          add_guard(x->args[0], ranges, true, out);
        return nullptr;
      });
    };
    scan(s->value);
    for (const Expr& i : s->indices) scan(i);
  }
  switch (s->op) {
    case StmtOp::For: {
      bound.insert(s->var);
      const int64_t *lo = as_int(s->min), *n = as_int(s->extent);
      if (lo && n) ranges[s->var] = Interval{*lo, *lo + *n - 1};
      collect_guards(s->body[0], selects, ranges, out, bound);
      ranges.erase(s->var);
      return;
    }
    case StmtOp::IfThenElse:
      add_guard(s->cond, ranges, false, out);
      [[fallthrough]];
    default:
      for (const Stmt& b : s->body) collect_guards(b, selects, ranges, out, bound);
  }
}

// s with every occurrence of the condition `c` replaced by `value`.
Stmt assume(const Stmt& s, const Expr& c, bool value) {
  return rewrite(s, [&](const Expr& e) -> Expr { return equal(e, c) ? make_bool(value) : nullptr; }, nullptr);
}

// The condition on the variables outside a loop under which guard `g` holds in every iteration of
// the loop and of the loops inside it (`bound`): `g` is an integer comparison whose linear form
// splits into terms of outer variables and terms of inner ones, and the inner terms are replaced by
// their least value over the inner loops' ranges. Null when `g` is no such comparison. A guard
// without inner variables is its own condition.
Expr hoisted_condition(const Guard& g, const std::set<std::string>& bound) {
  const Expr& c = g.cond;
  if (c->args.size() != 2 || c->args[0]->type != kInt64 || c->args[1]->type != kInt64) return nullptr;
  // The guard as form >= 0.
  const LinearForm a = linearize(c->args[0]), b = linearize(c->args[1]);
  LinearForm form;
  switch (c->op) {
    case ExprOp::GE: form = a.plus(b, -1); break;
    case ExprOp::GT: form = a.plus(b, -1); form.constant -= 1; break;
    case ExprOp::LE: form = b.plus(a, -1); break;
    case ExprOp::LT: form = b.plus(a, -1); form.constant -= 1; break;
    default: return nullptr;
  }
  LinearForm outer, inner;
  outer.constant = form.constant;
  for (const auto& [atom, coeff] : form.terms) {
    size_t inside = 0;
    const std::vector<std::string> vars = free_vars(atom);
    for (const std::string& v : vars) inside += bound.count(v);
    if (inside == 0) outer.add(atom, coeff);
    else if (inside == vars.size()) inner.add(atom, coeff);
    else return nullptr;  // an atom mixing both
  }
  if (inner.is_constant()) return c;
  const Interval range = bound_of(to_expr(inner), g.ranges);
  if (!range.lo) return nullptr;
  outer.constant += *range.lo;
  return make_binary(ExprOp::GE, to_expr(outer), make_int(0));
}

class Partitioner {
 public:
  explicit Partitioner(const LoopPartitionOptions& options) : options_(options), budget_(options.max_partitions) {}

  Stmt run(const Stmt& s, VarRanges& outer, bool hoist = true) {
    if (s->op != StmtOp::For) {
      if (s->body.empty()) return s;
      std::vector<Stmt> body;
      for (const Stmt& b : s->body) body.push_back(b ? run(b, outer) : b);
      return with_body(s, body);
    }
    const int64_t *lo = as_int(s->min), *n = as_int(s->extent);
    const bool hoisting = hoist && options_.selects && budget_ > 0;
    // Peeling a short parallel loop would cost more parallelism than the guard costs time.
    const bool can = lo && n && *n >= 2 && budget_ > 0 &&
                     (s->for_kind == ForKind::Serial || (s->for_kind == ForKind::Parallel && *n >= kMinParallelToPeel));
    std::vector<Guard> guards;
    std::set<std::string> bound;
    VarRanges inner;
    if (hoisting || can) collect_guards(s, options_.selects, inner, guards, bound);
    if (hoisting) {
      for (const Guard& g : guards) {
        if (!g.select) continue;  // a non-divisible split's guard: its last tile is peeled instead
        Expr c = hoisted_condition(g, bound);
        if (!c || prove(c, outer) || declined(c)) continue;
        // Where c holds the guard is true throughout the loop; elsewhere the loop stays as it was
        // (or, for a guard of outer variables only, with the guard false), and c is not asked
        // again inside it.
        --budget_;
        Stmt then_case = run(assume(s, g.cond, true), outer);
        if (c == g.cond) return make_if(c, then_case, run(assume(s, g.cond, false), outer));
        declined_.push_back(c);
        Stmt otherwise = run(s, outer, false);
        declined_.pop_back();
        return make_if(c, then_case, otherwise);
      }
    }
    const Peel peel = can ? peel_for(s, guards, outer, *lo, *n) : Peel::None;
    if (peel != Peel::None) {
      --budget_;
      const bool last = peel == Peel::Last;
      Stmt main = make_for(s->var, last ? s->min : make_int(*lo + 1), make_int(*n - 1), s->for_kind, s->body[0],
                           s->thread_tag, s->pragma_unroll_max_step);
      const Expr at = make_int(last ? *lo + *n - 1 : *lo);
      Stmt one = rewrite(s->body[0], [&](const Expr& e) -> Expr {
        return e->op == ExprOp::Var && e->name == s->var ? at : nullptr;
      }, nullptr);
      if (s->pragma_unroll_max_step)  // keep the pragma on the peeled iteration
        one = make_for(s->var + (last ? ".tail" : ".head"), make_int(0), make_int(1), ForKind::Serial, one, "",
                       s->pragma_unroll_max_step);
      return last ? make_seq({run(main, outer), run(one, outer)}) : make_seq({run(one, outer), run(main, outer)});
    }
    if (lo && n) outer[s->var] = Interval{*lo, *lo + *n - 1};
    Stmt body = run(s->body[0], outer);
    outer.erase(s->var);
    return with_body(s, {body});
  }

 private:
  enum class Peel { None, First, Last };

  // Which iteration of `loop` to peel so that a guard is true in all the others: the last one, or
  // with `selects` the first one (a window's first row or column, the only one reading padding).
  Peel peel_for(const Stmt& loop, const std::vector<Guard>& guards, const VarRanges& outer, int64_t lo,
                int64_t n) const {
    Peel found = Peel::None;
    for (const Guard& g : guards) {
      if (!uses_var(g.cond, loop->var)) continue;
      VarRanges r = outer;
      r.insert(g.ranges.begin(), g.ranges.end());
      r[loop->var] = Interval{lo, lo + n - 1};
      if (prove(g.cond, r)) continue;  // already decided over the whole loop
      r[loop->var] = Interval{lo, lo + n - 2};
      auto p = prove(g.cond, r);
      if (p && *p) return Peel::Last;
      if (!g.select || found != Peel::None) continue;
      r[loop->var] = Interval{lo + 1, lo + n - 1};
      p = prove(g.cond, r);
      if (p && *p) found = Peel::First;
    }
    return found;
  }

  bool declined(const Expr& c) const {
    return std::any_of(declined_.begin(), declined_.end(), [&](const Expr& d) { return equal(c, d); });
  }

  LoopPartitionOptions options_;
  int budget_;
  std::vector<Expr> declined_;  // conditions found false on the way here
};

}  // namespace

Stmt loop_partition(const Stmt& s, const LoopPartitionOptions& options) {
  VarRanges ranges;
  return Partitioner(options).run(s, ranges);
}

}  // namespace tessel
