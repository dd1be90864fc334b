// Lowering, second step: decides the loop variable names of every stage and, for each stage
// computed at a loop of its consumer, the region of its tensor that one iteration of that loop needs.
#pragma once

#include "schedule/lower/stage_info.h"

namespace tessel {

// For a stage P computed at loop L of consumer C: C's loops outside and including L are fixed, the
// loops inside L range over their extents. Each index P is read at (an affine function of C's root
// axes, which derive from C's loops through its splits and fuses) then spans an interval whose
// start is an expression of the fixed loops and whose length is a constant; that interval, clamped to
// P's shape, is P's region. Non-affine reads fall back to the whole dimension. Reduction axes are
// always computed whole. Throws ScheduleError when a computed-at stage is read by another stage.
// Regions of tensor-core stages (fragments, the memory their fragments load from, copies of an
// accumulator) are not clamped: a tile past the tensor's end is still a whole tile.
StageInfoMap infer_bounds(const State& state, const std::map<std::string, Expr>& bodies);

}  // namespace tessel
