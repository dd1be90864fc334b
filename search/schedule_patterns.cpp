#include "search/schedule_patterns.h"

#include "schedule/te/error.h"

namespace tessel {

bool TraceBuilder::apply(const Step& step) {
  try {
    apply_step(state_, step, static_cast<int>(trace_.steps.size()));
  } catch (const ScheduleError&) {
    return false;
  }
  trace_.steps.push_back(step);
  return true;
}

bool read_uses_axis(const Expr& read, const std::string& axis) {
  for (const Expr& i : read->args)
    if (uses_var(i, axis)) return true;
  return false;
}

namespace {
void collect(const Expr& e, std::vector<Expr>& out) {
  if (e->op == ExprOp::TensorRead) out.push_back(e);
  for (const Expr& a : e->args) collect(a, out);
}
}  // namespace

std::vector<Expr> tensor_reads(const Expr& e) {
  std::vector<Expr> out;
  collect(e, out);
  return out;
}

const Operation* find_contraction(const ComputeDAG& dag) {
  for (const Operation& op : dag.ops()) {
    if (op.reduce != ReduceKind::Sum || op.body->op != ExprOp::Mul) continue;
    const Expr &a = op.body->args[0], &b = op.body->args[1];
    if (a->op != ExprOp::TensorRead || b->op != ExprOp::TensorRead) continue;
    bool a_misses = false, b_misses = false;
    for (const Axis& axis : op.axes) {
      a_misses |= !read_uses_axis(a, axis.name) && read_uses_axis(b, axis.name);
      b_misses |= !read_uses_axis(b, axis.name) && read_uses_axis(a, axis.name);
    }
    if (a_misses && b_misses) return &op;
  }
  return nullptr;
}

ContractionAxes contraction_axes(const Operation& c) {
  std::vector<Expr> reads = tensor_reads(c.body);
  ContractionAxes ax;
  ax.v = static_cast<int>(c.axes.size()) - 1;
  for (const Expr& r : reads) {
    if (read_uses_axis(r, c.axes[ax.v].name)) continue;
    for (int a = ax.v - 1; a >= 0 && ax.u < 0; --a) {
      bool in_other = false;
      for (const Expr& o : reads)
        if (o != r && read_uses_axis(o, c.axes[a].name)) in_other = true;
      if (read_uses_axis(r, c.axes[a].name) && !in_other) ax.u = a;
    }
    if (ax.u >= 0) break;
  }
  return ax;
}

}  // namespace tessel
