// tensorize: the innermost 16 x 16 (x 16) loops of a stage become one tensor-core operation of a
// warp, or a warpgroup's 64 x N (x 16) loops one warpgroup operation (schedule/ir/warpgroup.h).
// What the operation is follows from the stage: a copy into a matrix_a / matrix_b fragment is a
// load, a sum in an accumulator fragment is a product (its initialization a fill), a copy out of
// an accumulator is a store; a sum in a wg_accumulator is a warpgroup product, and a stage reading
// a wg_accumulator computes on each thread's accumulators. Lowering checks the rest (tile extents
// after bound inference, the operands' layouts and alignment).
#include "schedule/ir/warpgroup.h"
#include "schedule/state/step_internal.h"

namespace tessel::step_internal {

namespace {

// Whether `e` reads a stage in the wg_accumulator scope, directly or through inlined stages.
bool reads_wg_accumulator(const State& state, const Expr& e, int depth = 0) {
  for (const std::string& t : tensors_read(e)) {
    int i = state.stage_index(t);
    if (i < 0) continue;
    const Stage& s = state.stages()[i];
    if (s.scope == MemScope::WgAccumulator) return true;
    const Operation& op = state.ops()[i];
    if (s.loc == ComputeLoc::Inline && !op.is_placeholder && depth < 64 && reads_wg_accumulator(state, op.body, depth + 1))
      return true;
  }
  return false;
}

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

  // Each tile loop: its kind and the extents it may have.
  struct TileLoop {
    IterKind kind;
    bool warpgroup_cols;  // 8 to 256 in steps of 8 (a warpgroup tile's columns), else exactly the fixed extent
    int64_t extent;
  };
  const TileLoop row16{IterKind::Spatial, false, kMatrixTile}, col16 = row16;
  const TileLoop k16{IterKind::Reduce, false, kMatrixTile};
  const TileLoop wg_rows{IterKind::Spatial, false, kWarpgroupTileRows}, wg_cols{IterKind::Spatial, true, 0};
  const TileLoop wg_k{IterKind::Reduce, false, kWarpgroupTileK};
  std::vector<TileLoop> want;
  const Stage* source = copied_stage(state, op);
  const bool reads_wg = !op.is_placeholder && reads_wg_accumulator(state, op.body);
  if (s.scope == MemScope::MatrixA || s.scope == MemScope::MatrixB) {
    if (!source) reject("a " + std::string(to_string(s.scope)) + " fragment is loaded by a copy; " + s.name +
                        " computes something else (make it with cache_read)");
    want = {row16, col16};
  } else if (s.scope == MemScope::Accumulator) {
    if (op.reduce != ReduceKind::Sum) reject("an accumulator fragment is tensorized as a sum of products");
    want = {row16, col16, k16};
  } else if (s.scope == MemScope::WgAccumulator) {
    if (op.reduce != ReduceKind::Sum) reject("a warpgroup accumulator is tensorized as a sum of products");
    want = {wg_rows, wg_cols, wg_k};
  } else if (source && source->scope == MemScope::Accumulator) {
    if (is_fragment(s.scope)) reject("an accumulator is stored to shared or global memory, not a fragment");
    want = {row16, col16};
  } else if (reads_wg) {
    // The epilogue of a warpgroup product: each thread computes it on the accumulators it holds.
    if (op.reduce != ReduceKind::None) reject("the reader of a warpgroup accumulator computes element by element");
    if (is_fragment(s.scope)) reject("a warpgroup accumulator is read into shared, local or global memory");
    want = {wg_rows, wg_cols};
  } else {
    reject("stage " + s.name + " is neither a fragment (matrix_a, matrix_b, accumulator, wg_accumulator), a copy of "
           "an accumulator, nor a reader of a warpgroup accumulator");
  }
  if (s.leaves.size() - pos != want.size())
    reject("tensorize takes the innermost " + std::to_string(want.size()) + " loops of " + s.name + "; loop '" +
           step.loop + "' has " + std::to_string(s.leaves.size() - pos - 1) + " inside it");
  for (size_t i = 0; i < want.size(); ++i) {
    const IterVar& v = s.leaf(pos + static_cast<int>(i));
    if (v.kind != want[i].kind)
      reject("loop '" + v.name + "' of " + s.name + " must be " +
             (want[i].kind == IterKind::Spatial ? "a spatial loop" : "a reduction loop") + " (order: rows, columns" +
             (want.size() == 3 ? ", reduction)" : ")"));
    if (want[i].warpgroup_cols) {
      if (v.extent < 8 || v.extent > kWarpgroupMaxCols || v.extent % 8)
        reject("loop '" + v.name + "' of " + s.name + " has extent " + std::to_string(v.extent) +
               "; a warpgroup tile has 8 to " + std::to_string(kWarpgroupMaxCols) + " columns, a multiple of 8");
    } else if (v.extent != want[i].extent) {
      reject("loop '" + v.name + "' of " + s.name + " has extent " + std::to_string(v.extent) + "; the tile needs " +
             std::to_string(want[i].extent) + " (split it by " + std::to_string(want[i].extent) + ")");
    }
    if (v.annotation != Annotation::None)
      reject("loop '" + v.name + "' of " + s.name + " is annotated " + to_string(v.annotation));
    for (const Stage& other : state.stages())
      if (other.loc == ComputeLoc::At && other.attach_stage == s.name && other.attach_loop == v.name)
        reject("stage " + other.name + " is computed inside loop '" + v.name + "'");
  }
  s.tensorize_loop = step.loop;
}

}  // namespace tessel::step_internal
