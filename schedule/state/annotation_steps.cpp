// annotate (parallel / vectorize / unroll / GPU bindings), pragma, storage_align, set_scope and
// prefetch: the steps that annotate a stage without changing its loops.
#include <algorithm>

#include "schedule/state/schedule_limits.h"
#include "schedule/state/step_internal.h"

namespace tessel::step_internal {

// Vector widths beyond this stop paying off and bloat the generated code.
constexpr int64_t kMaxVectorLanes = 64;

void apply_annotate(State& state, const Step& step) {
  Stage& s = schedulable_stage(state, step.stage);
  int pos = leaf_position(s, step.loop);
  IterVar& v = s.vars[s.leaves[pos]];
  if (step.annotation == Annotation::None) reject("annotation 'none' is not a step");
  if (v.annotation != Annotation::None && v.annotation != step.annotation)
    reject("loop '" + step.loop + "' is already annotated " + to_string(v.annotation));
  bool reduce = v.kind == IterKind::Reduce;
  switch (step.annotation) {
    case Annotation::Parallel:
      if (reduce) reject("reduction loop '" + step.loop + "' cannot run in parallel (its iterations accumulate into one element); use rfactor");
      break;
    case Annotation::Vectorize:
      if (reduce) reject("reduction loop '" + step.loop + "' cannot be vectorized; use rfactor");
      if (pos + 1 != static_cast<int>(s.leaves.size())) reject("only the innermost loop can be vectorized");
      if (v.extent > kMaxVectorLanes)
        reject("vectorized loop '" + step.loop + "' has extent " + std::to_string(v.extent) + "; at most " +
               std::to_string(kMaxVectorLanes) + " (split it first)");
      for (const Stage& other : state.stages())
        if (other.loc == ComputeLoc::At && other.attach_stage == s.name && other.attach_loop == step.loop)
          reject("stage " + other.name + " is computed inside loop '" + step.loop + "'");
      require_no_prefetch_in(s, step.loop, "a vectorized loop has no iterations to issue it in");
      break;
    case Annotation::Unroll:
      break;
    default:
      if (reduce && step.annotation != Annotation::VThread && step.annotation != Annotation::ThreadX)
        reject("reduction loop '" + step.loop + "' cannot be bound to " + to_string(step.annotation));
      break;
  }
  v.annotation = step.annotation;
}

void apply_pragma(State& state, const Step& step) {
  Stage& s = schedulable_stage(state, step.stage);
  leaf_position(s, step.loop);
  if (step.pragma == "double_buffer") {
    if (step.value != 0 && step.value != 1) reject("double_buffer is 1 (on) or 0 (off)");
    s.double_buffer_loop = step.value ? step.loop : "";
    s.pipeline_stages = 2;
    return;
  }
  if (step.pragma == "pipeline_stages") {
    if (step.value < 2 || step.value > kMaxPipelineStages)
      reject("pipeline_stages is 2 to " + std::to_string(kMaxPipelineStages) + " copies of the loop's shared tiles, not " +
             std::to_string(step.value));
    s.double_buffer_loop = step.loop;
    s.pipeline_stages = static_cast<int>(step.value);
    return;
  }
  if (step.pragma != "auto_unroll_max_step")
    reject("unknown pragma '" + step.pragma + "' (auto_unroll_max_step, double_buffer, pipeline_stages)");
  if (step.value < 0) reject("auto_unroll_max_step must not be negative");
  if (step.value > kMaxAutoUnrollStep)
    reject("auto_unroll_max_step " + std::to_string(step.value) + " is beyond the limit of " +
           std::to_string(kMaxAutoUnrollStep) + " unrolled statements");
  s.auto_unroll_max_step = static_cast<int>(step.value);
  s.pragma_loop = step.loop;
}

void apply_storage_align(State& state, const Step& step) {
  Stage& s = schedulable_stage(state, step.stage);
  const Operation& op = state.op(step.stage);
  if (state.is_output(step.stage)) reject("storage_align cannot change the layout of output " + step.stage);
  if (step.axis < 0 || step.axis >= static_cast<int>(op.shape.size()))
    reject("axis " + std::to_string(step.axis) + " is outside the rank " + std::to_string(op.shape.size()));
  if (step.value < 1) reject("alignment factor must be positive");
  if (step.value > kMaxStorageAlignFactor)
    reject("alignment factor " + std::to_string(step.value) + " is beyond the limit of " +
           std::to_string(kMaxStorageAlignFactor) + " elements");
  if (step.offset < 0 || step.offset >= step.value) reject("offset must be in [0, factor)");
  if (s.swizzle) reject("stage " + s.name + " is swizzled; its rows cannot also be padded");
  s.storage_align.push_back(StorageAlign{step.axis, step.value, step.offset});
}

void apply_storage_swizzle(State& state, const Step& step) {
  Stage& s = schedulable_stage(state, step.stage);
  const Operation& op = state.op(step.stage);
  if (s.scope != MemScope::Shared)
    reject("storage_swizzle lays out a shared buffer; " + s.name + " is in " + to_string(s.scope) + " memory");
  if (!Type{op.dtype, 1}.is_half())
    reject("storage_swizzle lays out 16-bit elements (64 to a 128-byte row); " + s.name + " holds " +
           to_string(op.dtype));
  if (!s.storage_align.empty()) reject("stage " + s.name + " has storage_align padding, which the swizzled rows replace");
  if (s.swizzle) reject("stage " + s.name + " is already swizzled");
  s.swizzle = true;
}

void apply_set_scope(State& state, const Step& step) {
  Stage& s = schedulable_stage(state, step.stage);
  if (step.scope != MemScope::Global && state.is_output(step.stage))
    reject("output " + step.stage + " lives in global memory; it cannot move to " + to_string(step.scope));
  s.scope = step.scope;
}

void apply_prefetch(State& state, const Step& step) {
  Stage& s = schedulable_stage(state, step.stage);
  int pos = leaf_position(s, step.loop);
  if (s.leaf(pos).annotation == Annotation::Vectorize)
    reject("loop '" + step.loop + "' is vectorized; prefetch in a loop outside it");
  int t = state.stage_index(step.tensor);
  if (t < 0) reject("no tensor named '" + step.tensor + "'");
  if (!state.ops()[t].is_placeholder)
    reject("'" + step.tensor + "' is computed, not an input; only inputs are prefetched");
  std::vector<std::string> readers = state.effective_consumers(step.tensor);
  if (std::find(readers.begin(), readers.end(), step.stage) == readers.end())
    reject("stage " + step.stage + " does not read " + step.tensor);
  if (step.value < 1) reject("prefetch offset must be at least one iteration ahead, not " + std::to_string(step.value));
  if (step.value > kMaxPrefetchOffset)
    reject("prefetch offset " + std::to_string(step.value) + " is beyond the limit of " +
           std::to_string(kMaxPrefetchOffset) + " iterations");
  for (const PrefetchHint& p : s.prefetches)
    if (p.loop == step.loop && p.tensor == step.tensor)
      reject(step.tensor + " is already prefetched in loop '" + step.loop + "'");
  s.prefetches.push_back(PrefetchHint{step.loop, step.tensor, step.value});
}

}  // namespace tessel::step_internal
