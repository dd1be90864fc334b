#include "search/schedule_patterns.h"

#include <algorithm>

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

namespace {
bool node_uses_axis(const ExprNode& read, const std::string& axis) {
  for (const Expr& i : read.args)
    if (uses_var(i, axis)) return true;
  return false;
}
}  // namespace

bool read_uses_axis(const Expr& read, const std::string& axis) { return node_uses_axis(*read, axis); }

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

bool pads_reduction_input(const ComputeDAG& dag, const Operation& op) {
  if (op.is_placeholder || op.reduce != ReduceKind::None || op.body->op != ExprOp::Select) return false;
  for (const Operation& r : dag.ops()) {
    if (r.is_placeholder || r.reduce == ReduceKind::None) continue;
    for (const Expr& read : tensor_reads(r.body))
      if (read->name == op.name) return true;
  }
  return false;
}

namespace {
// The tensor read a product's operand is: the read itself, or the read of a 16-bit tensor widened
// to float32; nullptr for anything else.
const ExprNode* operand_read(const Expr& e) {
  const Expr& r = e->op == ExprOp::Cast && e->type.dtype == DType::Float32 ? e->args[0] : e;
  return r->op == ExprOp::TensorRead ? r.get() : nullptr;
}
}  // namespace

const Operation* find_contraction(const ComputeDAG& dag) {
  for (const Operation& op : dag.ops()) {
    if (op.reduce != ReduceKind::Sum || op.body->op != ExprOp::Mul) continue;
    const ExprNode *a = operand_read(op.body->args[0]), *b = operand_read(op.body->args[1]);
    if (!a || !b) continue;
    bool a_misses = false, b_misses = false;
    for (const Axis& axis : op.axes) {
      a_misses |= !node_uses_axis(*a, axis.name) && node_uses_axis(*b, axis.name);
      b_misses |= !node_uses_axis(*b, axis.name) && node_uses_axis(*a, axis.name);
    }
    if (a_misses && b_misses) return &op;
  }
  return nullptr;
}

const Operation* find_window_product(const ComputeDAG& dag) {
  for (const Operation& op : dag.ops()) {
    if (op.reduce != ReduceKind::Sum || op.body->op != ExprOp::Mul || op.axes.empty()) continue;
    const ExprNode *a = operand_read(op.body->args[0]), *b = operand_read(op.body->args[1]);
    if (!a || !b || a->args.empty() || b->args.empty()) continue;
    const std::string& last = op.axes.back().name;
    bool one_misses = false, last_innermost = false;
    for (const Axis& axis : op.axes)
      one_misses |= node_uses_axis(*a, axis.name) != node_uses_axis(*b, axis.name);
    for (const ExprNode* r : {a, b}) last_innermost |= uses_var(r->args.back(), last);
    if (one_misses && last_innermost) return &op;
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
  for (const Expr& r : reads) {
    if (!read_uses_axis(r, c.axes[ax.v].name)) continue;
    for (int a = ax.v - 1; a >= 0 && ax.w < 0; --a) {
      bool in_other = false;
      for (const Expr& o : reads)
        if (o != r && read_uses_axis(o, c.axes[a].name)) in_other = true;
      if (read_uses_axis(r, c.axes[a].name) && !in_other && a != ax.u) ax.w = a;
    }
    if (ax.w >= 0) break;
  }
  return ax;
}

void rfactor_into_vectors(TraceBuilder& b, const std::string& name, int64_t chains, int64_t lanes) {
  const Operation op = b.state().op(name);  // a copy: every applied step replaces the state
  if (op.reduce_axes.size() != 1) return;
  const std::string k = op.reduce_axes[0].name;
  if (!b.apply(split_step(name, k, {chains * lanes}))) return;
  if (!b.apply(rfactor_step(name, k + ".1", static_cast<int64_t>(op.axes.size())))) return;
  const std::string rf = rfactor_stage_name(name);
  std::vector<std::string> loops = b.state().stage(rf).leaf_names();  // [axes..., k.1, k.0(r)]
  std::vector<std::string> order(loops.begin(), loops.end() - 2);
  order.push_back(k + ".0");
  std::string vec = k + ".1";
  if (chains > 1 && b.apply(split_step(rf, vec, {lanes}))) {
    order.push_back(k + ".1.0");
    order.push_back(k + ".1.1");
    b.apply(reorder_step(rf, order));
    b.apply(annotate_step(rf, k + ".1.0", Annotation::Unroll));
    vec = k + ".1.1";
  } else {
    order.push_back(vec);
    b.apply(reorder_step(rf, order));
  }
  b.apply(annotate_step(rf, vec, Annotation::Vectorize));
  b.apply(compute_at_step(rf, name, b.state().stage(name).leaf_names()[0]));
}

void prefetch_rows_ahead(TraceBuilder& b, const Operation& input, const std::string& out, int64_t ahead_bytes,
                         int64_t min_bytes) {
  constexpr int64_t kCacheLineBytes = 64;
  if (input.shape.size() < 2 || ahead_bytes <= 0) return;
  const int64_t cols = input.shape.back(), row_bytes = 4 * cols;
  int64_t bytes = row_bytes;
  for (size_t d = 0; d + 1 < input.shape.size(); ++d) bytes *= input.shape[d];
  if (bytes < min_bytes) return;
  const State& state = b.state();
  std::string reader;
  for (const std::string& c : state.effective_consumers(input.name))
    if (c != out && (reader.empty() || state.stage_index(c) > state.stage_index(reader))) reader = c;
  if (reader.empty()) return;
  const Stage& s = state.stage(reader);
  int64_t per_iteration = 1;
  for (int p = static_cast<int>(s.leaves.size()) - 1; p >= 0; --p) {
    const IterVar& v = s.leaf(p);
    if (v.annotation == Annotation::Vectorize || v.annotation == Annotation::Unroll) {
      per_iteration *= v.extent;
      continue;
    }
    if (per_iteration * 4 < kCacheLineBytes || per_iteration > cols) return;
    int64_t rows_ahead = std::max<int64_t>(1, (ahead_bytes + row_bytes - 1) / row_bytes);
    b.apply(prefetch_step(reader, v.name, input.name, (rows_ahead * cols + per_iteration - 1) / per_iteration));
    return;
  }
}

}  // namespace tessel
