#include "schedule/lower/unroll.h"

#include <algorithm>

namespace tessel {

namespace {

// What unrolling copies: stores, prefetches and tensor-core operations.
int64_t count_statements(const Stmt& s) {
  int64_t n = 0;
  visit(s, [&](const Stmt& x) {
    n += x->op == StmtOp::Store || x->op == StmtOp::Provide || x->op == StmtOp::Prefetch || x->op == StmtOp::Matrix;
  });
  return n;
}

Stmt unroll_one(const Stmt& loop) {
  int64_t lo = *as_int(loop->min), n = *as_int(loop->extent);
  std::vector<Stmt> copies;
  for (int64_t i = 0; i < n; ++i) {
    Expr value = make_int(lo + i);
    copies.push_back(rewrite(loop->body[0], [&](const Expr& e) -> Expr {
      return e->op == ExprOp::Var && e->name == loop->var ? value : nullptr;
    }, nullptr));
  }
  return make_seq(copies);
}

bool unrollable(const Stmt& s) {
  return s->op == StmtOp::For && as_int(s->min) && as_int(s->extent) &&
         (s->for_kind == ForKind::Serial || s->for_kind == ForKind::Unrolled);
}

// Unrolls, bottom-up, loops whose unrolled body stays within `budget` statements.
Stmt auto_unroll(const Stmt& s, int64_t budget) {
  return rewrite(s, nullptr, [&](const Stmt& n) -> Stmt {
    if (!unrollable(n)) return nullptr;
    const int64_t statements = std::max<int64_t>(1, count_statements(n->body[0]));
    if (*as_int(n->extent) > budget / statements) return nullptr;  // extent * statements > budget, without overflow
    return unroll_one(n);
  });
}

}  // namespace

Stmt unroll_loops(const Stmt& s) {
  return rewrite(s, nullptr, [](const Stmt& n) -> Stmt {
    if (n->op != StmtOp::For) return nullptr;
    Stmt loop = n;
    if (loop->pragma_unroll_max_step > 0)
      loop = make_for(loop->var, loop->min, loop->extent, loop->for_kind,
                      auto_unroll(loop->body[0], loop->pragma_unroll_max_step), loop->thread_tag, 0);
    if (loop->for_kind != ForKind::Unrolled) return loop == n ? nullptr : loop;
    if (unrollable(loop) && *as_int(loop->extent) <= kMaxExplicitUnroll &&
        *as_int(loop->extent) * count_statements(loop->body[0]) <= kMaxUnrolledStatements)  // both bounded
      return unroll_one(loop);
    // Too large to unroll: a plain loop (asking LLVM to unroll it fully would only stall it).
    return make_for(loop->var, loop->min, loop->extent, ForKind::Serial, loop->body[0], loop->thread_tag, 0);
  });
}

}  // namespace tessel
