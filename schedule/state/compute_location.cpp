// compute_at, compute_inline and compute_root: where a stage is computed.
#include "schedule/state/step_internal.h"

namespace tessel::step_internal {

namespace {

void require_not_output(const State& state, const std::string& stage, const char* step) {
  if (state.is_output(stage)) reject("'" + stage + "' is an output of the DAG; " + step + " needs an intermediate stage");
}

}  // namespace

bool computed_within(const State& state, const std::string& stage, const std::string& target, const std::string& loop) {
  const Stage& t = state.stage(target);
  int pos = t.leaf_position(loop);
  std::string walk = stage;
  for (size_t depth = 0; depth <= state.stages().size(); ++depth) {
    const Stage& s = state.stage(walk);
    if (s.loc != ComputeLoc::At) return false;
    if (s.attach_stage == target) return pos >= 0 && t.leaf_position(s.attach_loop) >= pos;
    walk = s.attach_stage;
  }
  return false;
}

void apply_compute_at(State& state, const Step& step) {
  schedulable_stage(state, step.stage);
  require_not_output(state, step.stage, "compute_at");
  Stage& target = schedulable_stage(state, step.target_stage);
  int pos = leaf_position(target, step.target_loop);
  // Every reader must be the target, or be computed (possibly through other computed-at stages) at
  // this loop of the target or a loop inside it: then it runs after this stage, inside the same
  // iteration.
  std::vector<std::string> consumers = state.effective_consumers(step.stage);
  bool reads_in_target = false;
  for (const std::string& c : consumers) {
    if (c == step.target_stage) {
      reads_in_target = true;
      continue;
    }
    if (!computed_within(state, c, step.target_stage, step.target_loop))
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
