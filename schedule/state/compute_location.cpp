// compute_at, compute_inline and compute_root: where a stage is computed.
#include "schedule/state/step_internal.h"

namespace tessel::step_internal {

namespace {

void require_not_output(const State& state, const std::string& stage, const char* step) {
  if (state.is_output(stage)) reject("'" + stage + "' is an output of the DAG; " + step + " needs an intermediate stage");
}

}  // namespace

void apply_compute_at(State& state, const Step& step) {
  schedulable_stage(state, step.stage);
  require_not_output(state, step.stage, "compute_at");
  Stage& target = schedulable_stage(state, step.target_stage);
  int pos = leaf_position(target, step.target_loop);
  // Every reader must be the target, or be computed at the same loop of the target (then it runs
  // right after this stage, inside the same iteration).
  std::vector<std::string> consumers = state.effective_consumers(step.stage);
  bool reads_in_target = false;
  for (const std::string& c : consumers) {
    if (c == step.target_stage) {
      reads_in_target = true;
      continue;
    }
    const Stage& other = state.stage(c);
    if (other.loc != ComputeLoc::At || other.attach_stage != step.target_stage || other.attach_loop != step.target_loop)
      reject("stage " + step.stage + " is also read by " + c + ", which is not computed at " + step.target_stage + "." +
             step.target_loop);
    reads_in_target = true;
  }
  if (!reads_in_target) reject("stage " + step.target_stage + " does not read " + step.stage);
  if (target.leaf(pos).annotation == Annotation::Vectorize)
    reject("cannot compute inside vectorized loop '" + step.target_loop + "'");
  // The target must not (transitively) be computed inside the stage itself.
  std::string walk = step.target_stage;
  while (true) {
    const Stage& w = state.stage(walk);
    if (w.loc != ComputeLoc::At) break;
    if (w.attach_stage == step.stage) reject("stage " + step.target_stage + " is computed inside " + step.stage);
    walk = w.attach_stage;
  }
  Stage& s = state.mutable_stage(step.stage);
  s.loc = ComputeLoc::At;
  s.attach_stage = step.target_stage;
  s.attach_loop = step.target_loop;
}

void apply_compute_inline(State& state, const Step& step) {
  schedulable_stage(state, step.stage);
  require_not_output(state, step.stage, "compute_inline");
  if (state.op(step.stage).reduce != ReduceKind::None)
    reject("stage " + step.stage + " is a reduction and cannot be inlined");
  require_nothing_attached(state, step.stage, "it cannot be inlined");
  Stage& s = state.mutable_stage(step.stage);
  s.loc = ComputeLoc::Inline;
  s.attach_stage.clear();
  s.attach_loop.clear();
}

void apply_compute_root(State& state, const Step& step) {
  Stage& s = schedulable_stage(state, step.stage);
  s.loc = ComputeLoc::Root;
  s.attach_stage.clear();
  s.attach_loop.clear();
}

}  // namespace tessel::step_internal
