// tensorize: the innermost 16 x 16 (x 16) loops of a stage become one tensor-core operation of a
// warp. What the operation is follows from the stage: a copy into a matrix_a / matrix_b fragment is
// a load, a sum in an accumulator fragment is a product (its initialization a fill), a copy out of
// an accumulator is a store. Lowering checks the rest (tile extents after bound inference, the
// operands' layouts and alignment).
#include "schedule/state/step_internal.h"

namespace tessel::step_internal {

namespace {

// The stage that a copy `op` reads from, or null when `op` is not a plain copy.
const Stage* copied_stage(const State& state, const Operation& op) {
  if (op.reduce != ReduceKind::None || op.body->op != ExprOp::TensorRead) return nullptr;
  int i = state.stage_index(op.body->name);
  return i < 0 ? nullptr : &state.stages()[i];
}

}  // namespace

void apply_tensorize(State& state, const Step& step) {
  Stage& s = schedulable_stage(state, step.stage);
  const Operation& op = state.op(step.stage);
  int pos = leaf_position(s, step.loop);
  if (!s.tensorize_loop.empty()) reject("stage " + s.name + " is already tensorized at " + s.tensorize_loop);

  std::vector<IterKind> want;
  const Stage* source = copied_stage(state, op);
  if (s.scope == MemScope::MatrixA || s.scope == MemScope::MatrixB) {
    if (!source) reject("a " + std::string(to_string(s.scope)) + " fragment is loaded by a copy; " + s.name +
                        " computes something else (make it with cache_read)");
    want = {IterKind::Spatial, IterKind::Spatial};
  } else if (s.scope == MemScope::Accumulator) {
    if (op.reduce != ReduceKind::Sum) reject("an accumulator fragment is tensorized as a sum of products");
    want = {IterKind::Spatial, IterKind::Spatial, IterKind::Reduce};
  } else if (source && source->scope == MemScope::Accumulator) {
    if (is_fragment(s.scope)) reject("an accumulator is stored to shared or global memory, not a fragment");
    want = {IterKind::Spatial, IterKind::Spatial};
  } else {
    reject("stage " + s.name + " is neither a fragment (matrix_a, matrix_b, accumulator) nor a copy of an accumulator");
  }
  if (s.leaves.size() - pos != want.size())
    reject("tensorize takes the innermost " + std::to_string(want.size()) + " loops of " + s.name + "; loop '" +
           step.loop + "' has " + std::to_string(s.leaves.size() - pos - 1) + " inside it");
  for (size_t i = 0; i < want.size(); ++i) {
    const IterVar& v = s.leaf(pos + static_cast<int>(i));
    if (v.kind != want[i])
      reject("loop '" + v.name + "' of " + s.name + " must be " +
             (want[i] == IterKind::Spatial ? "a spatial loop" : "a reduction loop") + " (order: rows, columns" +
             (want.size() == 3 ? ", reduction)" : ")"));
    if (v.extent != kMatrixTile)
      reject("loop '" + v.name + "' of " + s.name + " has extent " + std::to_string(v.extent) + "; a tensor-core tile is " +
             std::to_string(kMatrixTile) + " (split it by " + std::to_string(kMatrixTile) + ")");
    if (v.annotation != Annotation::None)
      reject("loop '" + v.name + "' of " + s.name + " is annotated " + to_string(v.annotation));
    for (const Stage& other : state.stages())
      if (other.loc == ComputeLoc::At && other.attach_stage == s.name && other.attach_loop == v.name)
        reject("stage " + other.name + " is computed inside loop '" + v.name + "'");
  }
  s.tensorize_loop = step.loop;
}

}  // namespace tessel::step_internal
