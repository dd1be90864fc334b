// The checks of schedule_limits.h that look at a whole State.
#include "schedule/state/schedule_limits.h"

#include <algorithm>
#include <map>
#include <optional>

#include "schedule/te/checked_math.h"
#include "schedule/te/tensor_size.h"

namespace tessel {

namespace {

// The product of `extents`, or nullopt beyond int64.
std::optional<int64_t> product(const std::vector<int64_t>& extents) {
  int64_t p = 1;
  for (int64_t e : extents) {
    std::optional<int64_t> next = checked_mul(p, e);
    if (!next) return std::nullopt;
    p = *next;
  }
  return p;
}

std::string padding_violation(const Stage& s) {
  std::vector<int64_t> roots, leaves;
  for (int i = 0; i < s.num_roots; ++i) roots.push_back(s.vars[i].extent);
  for (int l : s.leaves) leaves.push_back(s.vars[l].extent);
  const int64_t needed = product(roots).value_or(kMaxIterations);
  const int64_t allowed =
      std::min(std::max(checked_mul(needed, kMaxPadding).value_or(kMaxIterations), kPaddedIterationsAllowance),
               kMaxIterations);
  const std::optional<int64_t> padded = product(leaves);
  if (padded && *padded <= allowed) return "";
  std::string spelled;
  for (size_t i = 0; i < s.leaves.size(); ++i)
    spelled += (i ? " x " : "") + std::to_string(leaves[i]);
  return "the loops of stage " + s.name + " would iterate " + spelled + " = " +
         (padded ? std::to_string(*padded) : std::string("more than 2^63")) + " times for the " +
         std::to_string(needed) + " iterations it needs; a schedule may pad a stage's loops (split factors beyond "
         "the extent) at most " + std::to_string(kMaxPadding) + "-fold, or to " +
         std::to_string(kPaddedIterationsAllowance) + " iterations";
}

}  // namespace

std::string state_limit_violation(const State& state) {
  const std::vector<Stage>& stages = state.stages();
  for (const Stage& s : stages) {
    if (static_cast<int64_t>(s.leaves.size()) > kMaxStageLoops)
      return "stage " + s.name + " would have " + std::to_string(s.leaves.size()) + " loops; at most " +
             std::to_string(kMaxStageLoops) + " are allowed";
    if (static_cast<int64_t>(s.vars.size()) > kMaxStageLoopVars)
      return "stage " + s.name + " would have made " + std::to_string(s.vars.size()) +
             " loop variables (every split and fuse makes new ones); at most " + std::to_string(kMaxStageLoopVars) +
             " are allowed";
    if (std::string padding = padding_violation(s); !padding.empty()) return padding;
  }
  // The loop nest depth of each stage: its loops plus the loops enclosing its attach point. Attach
  // chains are acyclic (compute_at refuses a cycle); the walk is bounded by the stage count anyway.
  for (const Stage& s : stages) {
    int64_t depth = static_cast<int64_t>(s.leaves.size());
    const Stage* walk = &s;
    for (size_t hops = 0; walk->loc == ComputeLoc::At && hops < stages.size(); ++hops) {
      const int index = state.stage_index(walk->attach_stage);
      if (index < 0) break;
      const Stage& outer = stages[static_cast<size_t>(index)];
      depth += outer.leaf_position(walk->attach_loop) + 1;
      walk = &outer;
    }
    if (depth > kMaxLoopNestDepth)
      return "stage " + s.name + " would sit " + std::to_string(depth) + " loops deep; at most " +
             std::to_string(kMaxLoopNestDepth) + " are allowed";
  }
  return "";
}

}  // namespace tessel
