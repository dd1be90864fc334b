#include "schedule/lower/vectorize.h"

#include "schedule/lower/arith.h"

namespace tessel {

namespace {

bool is_straight_line(const Stmt& s) {
  if (s->op == StmtOp::Store) return true;
  if (s->op != StmtOp::Seq) return false;
  for (const Stmt& b : s->body)
    if (!is_straight_line(b)) return false;
  return true;
}

// Keeps ramps and broadcasts in their simplest form after an operand became a vector.
Expr fold_vector(const Expr& e) {
  if (e->type.lanes == 1 || e->args.size() != 2) return nullptr;
  const Expr &a = e->args[0], &b = e->args[1];
  int lanes = e->type.lanes;
  auto is = [](const Expr& x, ExprOp op) { return x->op == op; };
  switch (e->op) {
    case ExprOp::Add: case ExprOp::Sub: {
      if (!e->type.is_int()) break;
      bool sub = e->op == ExprOp::Sub;
      auto combine = [&](const Expr& x, const Expr& y) { return sub ? x - y : x + y; };
      if (is(a, ExprOp::Ramp) && is(b, ExprOp::Broadcast))
        return make_ramp(simplify_expr(combine(a->args[0], b->args[0])), a->args[1], lanes);
      if (is(a, ExprOp::Broadcast) && is(b, ExprOp::Ramp)) {
        Expr stride = sub ? simplify_expr(make_int(0) - b->args[1]) : b->args[1];
        return make_ramp(simplify_expr(combine(a->args[0], b->args[0])), stride, lanes);
      }
      if (is(a, ExprOp::Ramp) && is(b, ExprOp::Ramp))
        return make_ramp(simplify_expr(combine(a->args[0], b->args[0])),
                         simplify_expr(combine(a->args[1], b->args[1])), lanes);
      if (is(a, ExprOp::Broadcast) && is(b, ExprOp::Broadcast))
        return make_broadcast(simplify_expr(combine(a->args[0], b->args[0])), lanes);
      break;
    }
    case ExprOp::Mul: {
      if (!e->type.is_int()) break;
      if (is(a, ExprOp::Ramp) && is(b, ExprOp::Broadcast))
        return make_ramp(simplify_expr(a->args[0] * b->args[0]), simplify_expr(a->args[1] * b->args[0]), lanes);
      if (is(a, ExprOp::Broadcast) && is(b, ExprOp::Ramp))
        return make_ramp(simplify_expr(a->args[0] * b->args[0]), simplify_expr(a->args[0] * b->args[1]), lanes);
      if (is(a, ExprOp::Broadcast) && is(b, ExprOp::Broadcast))
        return make_broadcast(simplify_expr(a->args[0] * b->args[0]), lanes);
      break;
    }
    case ExprOp::LT: case ExprOp::GE: case ExprOp::And: case ExprOp::Or: {
      // A unit ramp starting at a multiple of `lanes` stays on one side of a multiple of `lanes`:
      // r + l < c for every lane l exactly when r < c. The comparison is uniform across lanes.
      bool compare = e->op == ExprOp::LT || e->op == ExprOp::GE;
      if (compare && a->op == ExprOp::Ramp && is_int_value(a->args[1], 1) && b->op == ExprOp::Broadcast &&
          is_multiple_of(a->args[0], lanes) && is_multiple_of(b->args[0], lanes))
        return make_broadcast(simplify_expr(make_binary(e->op, a->args[0], b->args[0])), lanes);
      if (a->op == ExprOp::Broadcast && b->op == ExprOp::Broadcast)
        return make_broadcast(simplify_expr(make_binary(e->op, a->args[0], b->args[0])), lanes);
      break;
    }
    case ExprOp::FloorDiv: case ExprOp::FloorMod: {
      if (a->op == ExprOp::Broadcast && b->op == ExprOp::Broadcast)  // a quotient of a quotient (fused rows)
        return make_broadcast(simplify_expr(make_binary(e->op, a->args[0], b->args[0])), lanes);
      // A unit ramp that starts at a multiple of `lanes` never crosses a multiple of c when c is a
      // multiple of lanes: the quotient is uniform and the remainder stays a ramp.
      const int64_t* c = b->op == ExprOp::Broadcast ? as_int(b->args[0]) : nullptr;
      if (!c || *c <= 0 || *c % lanes != 0 || a->op != ExprOp::Ramp || !is_int_value(a->args[1], 1)) break;
      if (!is_multiple_of(a->args[0], lanes)) break;
      if (e->op == ExprOp::FloorDiv) return make_broadcast(simplify_expr(a->args[0] / b->args[0]), lanes);
      return make_ramp(simplify_expr(a->args[0] % b->args[0]), make_int(1), lanes);
    }
    default: break;
  }
  return nullptr;
}

// `e` with `var` replaced by the ramp of the vectorized loop, folded into ramps and broadcasts.
Expr to_vector(const Expr& e, const std::string& var, const Expr& min, int lanes) {
  Expr ramp = make_ramp(min, make_int(1), lanes);
  return rewrite(e, [&](const Expr& x) -> Expr {
    if (x->op == ExprOp::Var && x->name == var) return ramp;
    return fold_vector(x);
  });
}

Stmt vectorize_body(const Stmt& body, const std::string& var, const Expr& min, int lanes) {
  return rewrite(body, nullptr, [&](const Stmt& s) -> Stmt {
    if (s->op != StmtOp::Store) return nullptr;
    Expr index = to_vector(s->indices[0], var, min, lanes);
    Expr value = to_vector(s->value, var, min, lanes);
    if (index->type.lanes == 1) index = make_ramp(index, make_int(0), lanes);  // cannot happen for spatial loops
    if (value->type.lanes == 1) value = make_broadcast(value, lanes);
    return make_store(s->buffer, index, value);
  });
}

}  // namespace

Stmt vectorize_loops(const Stmt& s) {
  return rewrite(s, nullptr, [](const Stmt& n) -> Stmt {
    if (n->op != StmtOp::For || n->for_kind != ForKind::Vectorized) return nullptr;
    const int64_t* lanes = as_int(n->extent);
    if (!lanes || *lanes < 2) return make_for(n->var, n->min, n->extent, ForKind::Serial, n->body[0]);
    int l = static_cast<int>(*lanes);
    const Stmt& body = n->body[0];
    if (is_straight_line(body)) return vectorize_body(body, n->var, n->min, l);
    // A guard that holds for all lanes or for none (a tail predicate at a multiple of the lane
    // count, as a cooperative fetch of a tile smaller than its threads has) moves outside the loop.
    if (body->op == StmtOp::IfThenElse && body->body.size() == 1 && is_straight_line(body->body[0])) {
      Expr cond = to_vector(body->cond, n->var, n->min, l);
      if (cond->op == ExprOp::Broadcast)
        return make_if(cond->args[0], vectorize_body(body->body[0], n->var, n->min, l));
    }
    return make_for(n->var, n->min, n->extent, ForKind::Serial, body);
  });
}

}  // namespace tessel
