#include "schedule/lower/simplify.h"

namespace tessel {

namespace {

Stmt run(const Stmt& s, VarRanges& ranges) {
  auto simp = [&](const Expr& e) { return e ? simplify_expr(e, ranges) : e; };
  switch (s->op) {
    case StmtOp::For: {
      Expr min = simp(s->min), extent = simp(s->extent);
      const int64_t *lo = as_int(min), *n = as_int(extent);
      if (n && *n <= 0) return nullptr;
      if (n && *n == 1 && s->for_kind != ForKind::ThreadBound && !s->pragma_unroll_max_step) {
        Stmt body = rewrite(s->body[0], [&](const Expr& e) -> Expr {
          return e->op == ExprOp::Var && e->name == s->var ? min : nullptr;
        }, nullptr);
        return run(body, ranges);
      }
      auto saved = ranges.find(s->var) != ranges.end() ? std::optional(ranges[s->var]) : std::nullopt;
      Interval r;
      if (lo) r.lo = *lo;
      if (lo && n) r.hi = *lo + *n - 1;
      ranges[s->var] = r;
      Stmt body = run(s->body[0], ranges);
      if (saved) ranges[s->var] = *saved;
      else ranges.erase(s->var);
      if (!body) return nullptr;
      return make_for(s->var, min, extent, s->for_kind, body, s->thread_tag, s->pragma_unroll_max_step);
    }
    case StmtOp::IfThenElse: {
      Expr cond = simp(s->cond);
      if (auto p = prove(cond, ranges)) {
        if (*p) return run(s->body[0], ranges);
        return s->body.size() > 1 ? run(s->body[1], ranges) : nullptr;
      }
      Stmt then_case = run(s->body[0], ranges);
      Stmt else_case = s->body.size() > 1 ? run(s->body[1], ranges) : nullptr;
      if (!then_case && !else_case) return nullptr;
      if (!then_case) return make_if(make_not(cond), else_case);
      return make_if(cond, then_case, else_case);
    }
    case StmtOp::Seq: {
      std::vector<Stmt> body;
      for (const Stmt& b : s->body)
        if (Stmt r = run(b, ranges)) body.push_back(r);
      if (body.empty()) return nullptr;
      return make_seq(body);
    }
    case StmtOp::Allocate: {
      Stmt body = run(s->body[0], ranges);
      return body ? with_body(s, {body}) : nullptr;
    }
    case StmtOp::Store: return make_store(s->buffer, simp(s->indices[0]), simp(s->value));
    case StmtOp::Provide: {
      std::vector<Expr> idx;
      for (const Expr& i : s->indices) idx.push_back(simp(i));
      return make_provide(s->buffer, idx, simp(s->value));
    }
    case StmtOp::Barrier:
    case StmtOp::CommitCopies: return s;
    case StmtOp::AllReduce: {
      std::vector<Expr> idx;
      for (const Expr& i : s->indices) idx.push_back(simp(i));
      return make_allreduce(s->buffer, idx, s->combiner, s->thread_tag, *as_int(s->extent));
    }
    case StmtOp::Prefetch: return make_prefetch(s->buffer, simp(s->indices[0]), *as_int(s->extent));
    case StmtOp::Matrix: {
      std::vector<MatrixOperand> ops = s->operands;
      for (MatrixOperand& o : ops)
        for (Expr& i : o.indices) i = simp(i);
      StmtNode m = *s;
      m.operands = ops;
      return std::make_shared<const StmtNode>(std::move(m));
    }
  }
  return s;
}

}  // namespace

Stmt simplify(const Stmt& s, const VarRanges& outer) {
  VarRanges ranges = outer;
  Stmt r = run(s, ranges);
  return r ? r : make_seq({});
}

}  // namespace tessel
