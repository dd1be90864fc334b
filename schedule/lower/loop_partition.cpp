#include "schedule/lower/loop_partition.h"

#include "schedule/lower/arith.h"

namespace tessel {

namespace {

constexpr int64_t kMinParallelToPeel = 16;

struct Guard {
  Expr cond;
  VarRanges ranges;  // ranges of the loops between the partitioned loop and the guard
};

void collect_guards(const Stmt& s, VarRanges& ranges, std::vector<Guard>& out) {
  switch (s->op) {
    case StmtOp::For: {
      const int64_t *lo = as_int(s->min), *n = as_int(s->extent);
      if (lo && n) ranges[s->var] = Interval{*lo, *lo + *n - 1};
      collect_guards(s->body[0], ranges, out);
      ranges.erase(s->var);
      return;
    }
    case StmtOp::IfThenElse:
      out.push_back(Guard{s->cond, ranges});
      for (const Stmt& b : s->body) collect_guards(b, ranges, out);
      return;
    default:
      for (const Stmt& b : s->body) collect_guards(b, ranges, out);
  }
}

// Splits a guard's conjunction so that each bound is judged on its own.
void conjuncts(const Expr& c, std::vector<Expr>& out) {
  if (c->op == ExprOp::And) {
    conjuncts(c->args[0], out);
    conjuncts(c->args[1], out);
  } else {
    out.push_back(c);
  }
}

class Partitioner {
 public:
  explicit Partitioner(int budget) : budget_(budget) {}

  Stmt run(const Stmt& s, VarRanges& outer) {
    if (s->op != StmtOp::For) {
      if (s->body.empty()) return s;
      std::vector<Stmt> body;
      for (const Stmt& b : s->body) body.push_back(run(b, outer));
      return with_body(s, body);
    }
    const int64_t *lo = as_int(s->min), *n = as_int(s->extent);
    // Peeling a short parallel loop would cost more parallelism than the guard costs time.
    bool can = lo && n && *n >= 2 && budget_ > 0 &&
               (s->for_kind == ForKind::Serial || (s->for_kind == ForKind::Parallel && *n >= kMinParallelToPeel));
    if (can && should_partition(s, outer, *lo, *n)) {
      --budget_;
      Stmt main = make_for(s->var, s->min, make_int(*n - 1), s->for_kind, s->body[0], s->thread_tag,
                           s->pragma_unroll_max_step);
      Expr last = make_int(*lo + *n - 1);
      Stmt tail = rewrite(s->body[0], [&](const Expr& e) -> Expr {
        return e->op == ExprOp::Var && e->name == s->var ? last : nullptr;
      }, nullptr);
      if (s->pragma_unroll_max_step)  // keep the pragma on the peeled iteration
        tail = make_for(s->var + ".tail", make_int(0), make_int(1), ForKind::Serial, tail, "", s->pragma_unroll_max_step);
      return make_seq({run(main, outer), run(tail, outer)});
    }
    if (lo && n) outer[s->var] = Interval{*lo, *lo + *n - 1};
    Stmt body = run(s->body[0], outer);
    outer.erase(s->var);
    return with_body(s, {body});
  }

 private:
  bool should_partition(const Stmt& loop, const VarRanges& outer, int64_t lo, int64_t n) {
    std::vector<Guard> guards;
    VarRanges inner;
    collect_guards(loop->body[0], inner, guards);
    for (const Guard& g : guards) {
      std::vector<Expr> parts;
      conjuncts(g.cond, parts);
      for (const Expr& c : parts) {
        if (!uses_var(c, loop->var)) continue;
        VarRanges r = outer;
        r.insert(g.ranges.begin(), g.ranges.end());
        r[loop->var] = Interval{lo, lo + n - 1};
        if (prove(c, r)) continue;  // already decided over the whole loop
        r[loop->var] = Interval{lo, lo + n - 2};
        auto p = prove(c, r);
        if (p && *p) return true;
      }
    }
    return false;
  }

  int budget_;
};

}  // namespace

Stmt loop_partition(const Stmt& s, int max_partitions) {
  VarRanges ranges;
  return Partitioner(max_partitions).run(s, ranges);
}

}  // namespace tessel
