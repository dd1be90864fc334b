// rfactor: turns part of a reduction into a new spatial axis of a helper stage, so the partial
// reductions can run in parallel (or vectorized) and a short final reduction combines them.
//
// With k split as k = k.0 * f + k.1 and rfactor on k.1:
//   C.rf[i, k.1] = sum_{k.0} body(k.0 * f + k.1)      (guarded when f does not divide K)
//   C[i]        = sum_{k.1} C.rf[i, k.1]
#include "schedule/state/step_internal.h"

namespace tessel::step_internal {

void apply_rfactor(State& state, const Step& step) {
  Stage& s = schedulable_stage(state, step.stage);
  const Operation original = state.op(step.stage);
  if (original.reduce == ReduceKind::None) reject("stage " + s.name + " is not a reduction");
  int pos = leaf_position(s, step.loop);
  int var = s.leaves[pos];
  if (s.vars[var].kind != IterKind::Reduce) reject("loop '" + step.loop + "' is not a reduction loop");
  if (s.relations.size() != 1 || s.relations[0].kind != Relation::Kind::Split ||
      s.relations[0].children.size() != 2 || s.relations[0].parents[0] >= s.num_roots)
    reject("rfactor needs the stage's only loop transformation to be one two-way split of a reduction axis");
  require_nothing_attached(state, s.name, "rfactor would move its loops");
  const Relation& split = s.relations[0];
  int root = split.parents[0];
  int kept = split.children[0] == var ? split.children[1] : split.children[0];
  int64_t factor_axis = step.value;
  if (factor_axis < 0 || factor_axis > static_cast<int64_t>(original.axes.size()))
    reject("factor axis " + std::to_string(factor_axis) + " is outside [0, " + std::to_string(original.axes.size()) + "]");
  std::string name = rfactor_stage_name(s.name);
  if (state.stage_index(name) >= 0) reject("stage " + name + " already exists");

  const std::string root_name = s.vars[root].name;
  const std::string outer = s.vars[split.children[0]].name, inner = s.vars[split.children[1]].name;
  const int64_t f = split.lengths[0], extent = s.vars[root].extent;
  Expr k = make_var(outer) * make_int(f) + make_var(inner);
  Expr body = substitute(original.body, root_name, k);
  if (((extent + f - 1) / f) * f != extent)
    body = make_select(k < make_int(extent), body, make_float(reduce_init(original.reduce)));

  Operation rf;
  rf.name = name;
  rf.dtype = original.dtype;
  rf.axes = original.axes;
  rf.axes.insert(rf.axes.begin() + factor_axis, Axis{s.vars[var].name, s.vars[var].extent});
  for (const Axis& a : rf.axes) rf.shape.push_back(a.extent);
  rf.reduce = original.reduce;
  rf.reduce_axes.push_back(Axis{s.vars[kept].name, s.vars[kept].extent});
  for (const Axis& a : original.reduce_axes)
    if (a.name != root_name) rf.reduce_axes.push_back(a);
  rf.body = body;

  Operation& final_op = state.mutable_op(step.stage);
  std::vector<Expr> indices;
  for (const Axis& a : original.axes) indices.push_back(make_var(a.name));
  indices.insert(indices.begin() + factor_axis, make_var(s.vars[var].name));
  final_op.reduce_axes = {Axis{s.vars[var].name, s.vars[var].extent}};
  final_op.body = make_tensor_read(name, indices, original.body->type);

  Stage fresh = make_stage(final_op);
  fresh.loc = s.loc;
  fresh.attach_stage = s.attach_stage;
  fresh.attach_loop = s.attach_loop;
  s = fresh;
  state.insert_stage(state.stage_index(step.stage), rf, make_stage(rf));
}

}  // namespace tessel::step_internal
