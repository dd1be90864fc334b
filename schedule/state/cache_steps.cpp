// cache_read and cache_write: stages that copy a tensor into (or out of) a faster memory scope.
#include <algorithm>

#include "schedule/state/step_internal.h"

namespace tessel::step_internal {

namespace {

std::vector<Expr> axis_vars(const Operation& op) {
  std::vector<Expr> v;
  for (const Axis& a : op.axes) v.push_back(make_var(a.name));
  return v;
}

// Replaces every read of `from` in `body` by a read of `to` at the same indices.
Expr rename_reads(const Expr& body, const std::string& from, const std::string& to) {
  return rewrite(body, [&](const Expr& e) -> Expr {
    if (e->op == ExprOp::TensorRead && e->name == from) return make_tensor_read(to, e->args, e->type);
    return nullptr;
  });
}

}  // namespace

void apply_cache_read(State& state, const Step& step) {
  int index = state.stage_index(step.stage);
  if (index < 0) reject("no tensor named '" + step.stage + "'");
  if (state.stages()[index].loc == ComputeLoc::Inline) reject("tensor " + step.stage + " is inlined");
  if (step.loops.empty()) reject("cache_read needs at least one reader");
  std::vector<std::string> consumers = state.consumers(step.stage);
  for (const std::string& reader : step.loops) {
    if (std::find(consumers.begin(), consumers.end(), reader) == consumers.end())
      reject("stage '" + reader + "' does not read " + step.stage);
    if (state.stage(reader).loc == ComputeLoc::Inline) reject("reader " + reader + " is inlined");
  }
  std::string name = cache_stage_name(step.stage, step.scope);
  if (state.stage_index(name) >= 0) reject("stage " + name + " already exists");

  const Operation& source = state.ops()[index];
  Operation copy;
  copy.name = name;
  copy.dtype = source.dtype;
  copy.shape = source.shape;
  std::vector<Expr> indices;
  for (size_t d = 0; d < source.shape.size(); ++d) {
    copy.axes.push_back(Axis{"ax" + std::to_string(d), source.shape[d]});
    indices.push_back(make_var(copy.axes.back().name));
  }
  copy.body = make_tensor_read(step.stage, indices, Type{source.dtype, 1});
  for (const std::string& reader : step.loops) {
    Operation& r = state.mutable_op(reader);
    r.body = rename_reads(r.body, step.stage, name);
  }
  Stage stage = make_stage(copy);
  stage.scope = step.scope;
  state.insert_stage(index + 1, std::move(copy), std::move(stage));
}

void apply_cache_write(State& state, const Step& step) {
  Stage& s = schedulable_stage(state, step.stage);
  if (!s.relations.empty()) reject("cache_write must come before the loops of " + s.name + " are split or fused");
  require_nothing_attached(state, s.name, "cache_write would move its loops");
  std::string name = cache_stage_name(step.stage, step.scope);
  if (state.stage_index(name) >= 0) reject("stage " + name + " already exists");

  Operation compute = state.op(step.stage);
  compute.name = name;
  Operation& copy = state.mutable_op(step.stage);
  copy.reduce = ReduceKind::None;
  copy.reduce_axes.clear();
  copy.body = make_tensor_read(name, axis_vars(copy), compute.body->type);

  Stage fresh = make_stage(copy);
  fresh.loc = s.loc;
  fresh.attach_stage = s.attach_stage;
  fresh.attach_loop = s.attach_loop;
  s = fresh;

  Stage stage = make_stage(compute);
  stage.scope = step.scope;
  state.insert_stage(state.stage_index(step.stage), std::move(compute), std::move(stage));
}

}  // namespace tessel::step_internal
