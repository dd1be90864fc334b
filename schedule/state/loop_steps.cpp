// split, fuse and reorder: the steps that reshape one stage's loop nest.
#include <algorithm>
#include <optional>
#include <set>

#include "schedule/state/schedule_limits.h"
#include "schedule/state/step_internal.h"
#include "schedule/te/checked_math.h"

namespace tessel::step_internal {

void apply_split(State& state, const Step& step) {
  Stage& s = schedulable_stage(state, step.stage);
  int pos = leaf_position(s, step.loop);
  if (step.factors.empty()) reject("split needs at least one factor");
  if (static_cast<int64_t>(step.factors.size()) > kMaxSplitFactors)
    reject("split has " + std::to_string(step.factors.size()) + " factors; at most " +
           std::to_string(kMaxSplitFactors) + " are allowed");
  for (int64_t f : step.factors)
    if (f < 1) reject("split factor " + std::to_string(f) + " is not positive");
  // The product of the factors, checked: beyond the padding limit (schedule_limits.h) long before
  // it overflows, but it must not wrap on the way there.
  int64_t inner = 1;
  for (int64_t f : step.factors) {
    std::optional<int64_t> next = checked_mul(inner, f);
    if (!next)
      reject("the product of the split factors is beyond the int64 range; it may exceed the loop's extent " +
             std::to_string(s.vars[s.leaves[pos]].extent) + " only by the padding a schedule is allowed");
    inner = *next;
  }
  int parent = s.leaves[pos];
  if (s.vars[parent].annotation != Annotation::None)
    reject("loop '" + step.loop + "' is annotated " + to_string(s.vars[parent].annotation) +
           "; split it before annotating");
  require_no_prefetch_in(s, step.loop, "split it before the prefetch (whose offset counts its iterations)");
  Relation r{Relation::Kind::Split, {parent}, {}, step.factors};
  std::vector<int> children;
  for (size_t k = 0; k <= step.factors.size(); ++k) {
    IterVar v{fresh_var_name(s, step.loop + "." + std::to_string(k)), s.vars[parent].kind};
    s.vars.push_back(v);
    children.push_back(static_cast<int>(s.vars.size()) - 1);
  }
  r.children = children;
  const int64_t extent = s.vars[parent].extent;
  s.vars[children[0]].extent = extent / inner + (extent % inner != 0 ? 1 : 0);
  for (size_t k = 0; k < step.factors.size(); ++k) s.vars[children[k + 1]].extent = step.factors[k];
  s.relations.push_back(r);
  s.leaves.erase(s.leaves.begin() + pos);
  s.leaves.insert(s.leaves.begin() + pos, children.begin(), children.end());
  // A stage computed at the split loop stays computed once per value of it: at the innermost part.
  const std::string innermost = s.vars[children.back()].name;
  const std::string stage_name = s.name;
  for (size_t i = 0; i < state.stages().size(); ++i) {
    Stage& other = state.mutable_stage(state.stages()[i].name);
    if (other.loc == ComputeLoc::At && other.attach_stage == stage_name && other.attach_loop == step.loop)
      other.attach_loop = innermost;
  }
}

void apply_fuse(State& state, const Step& step) {
  Stage& s = schedulable_stage(state, step.stage);
  if (step.loops.size() < 2) reject("fuse needs at least two loops");
  std::vector<int> positions;
  for (const std::string& l : step.loops) positions.push_back(leaf_position(s, l));
  for (size_t k = 1; k < positions.size(); ++k)
    if (positions[k] != positions[k - 1] + 1)
      reject("loops to fuse must be adjacent and in nest order; '" + step.loops[k] + "' does not follow '" +
             step.loops[k - 1] + "'");
  IterKind kind = s.leaf(positions[0]).kind;
  std::string name;
  int64_t extent = 1;
  Relation r{Relation::Kind::Fuse};
  for (int p : positions) {
    const IterVar& v = s.leaf(p);
    if (v.kind != kind) reject("cannot fuse a reduction loop with a spatial loop");
    if (v.annotation != Annotation::None)
      reject("loop '" + v.name + "' is annotated " + to_string(v.annotation) + "; fuse before annotating");
    require_no_prefetch_in(s, v.name, "fuse before the prefetch (whose offset counts its iterations)");
    name += (name.empty() ? "" : "@") + v.name;
    std::optional<int64_t> product = checked_mul(extent, v.extent);
    if (!product) reject("the fused loop's extent is beyond the int64 range");
    extent = *product;
    r.parents.push_back(s.leaves[p]);
  }
  // Stages computed at a loop that disappears would lose their place.
  for (const Stage& other : state.stages())
    if (other.loc == ComputeLoc::At && other.attach_stage == s.name)
      for (size_t k = 0; k + 1 < step.loops.size(); ++k)
        if (other.attach_loop == step.loops[k])
          reject("stage " + other.name + " is computed at loop '" + other.attach_loop + "', which the fuse removes");
  s.vars.push_back(IterVar{fresh_var_name(s, name), kind, extent});
  int fused = static_cast<int>(s.vars.size()) - 1;
  r.children = {fused};
  s.relations.push_back(r);
  s.leaves.erase(s.leaves.begin() + positions.front(), s.leaves.begin() + positions.back() + 1);
  s.leaves.insert(s.leaves.begin() + positions.front(), fused);
  // A stage attached at the innermost fused loop now sits at the fused loop.
  for (size_t i = 0; i < state.stages().size(); ++i) {
    Stage& other = state.mutable_stage(state.stages()[i].name);
    if (other.loc == ComputeLoc::At && other.attach_stage == s.name && other.attach_loop == step.loops.back())
      other.attach_loop = s.vars[fused].name;
  }
}

void apply_reorder(State& state, const Step& step) {
  Stage& s = schedulable_stage(state, step.stage);
  if (step.loops.size() != s.leaves.size())
    reject("reorder must list all " + std::to_string(s.leaves.size()) + " loops of stage " + s.name + ", got " +
           std::to_string(step.loops.size()));
  std::set<std::string> seen;
  std::vector<int> order;
  for (const std::string& l : step.loops) {
    if (!seen.insert(l).second) reject("loop '" + l + "' is listed twice");
    order.push_back(s.leaves[leaf_position(s, l)]);
  }
  // A vectorized loop must stay innermost.
  for (size_t k = 0; k + 1 < order.size(); ++k)
    if (s.vars[order[k]].annotation == Annotation::Vectorize)
      reject("vectorized loop '" + s.vars[order[k]].name + "' must stay innermost");
  s.leaves = order;
}

}  // namespace tessel::step_internal
