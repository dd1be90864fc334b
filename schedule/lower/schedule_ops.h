// Lowering, third step: builds the loop nest of every stage from its loops, annotations and compute
// location, nesting computed-at stages inside their consumers' loops. Tensors are still N-d here
// (Provide / TensorRead); a computed-at stage's tensor covers only its region and is read rebased.
#pragma once

#include "schedule/ir/stmt.h"
#include "schedule/lower/stage_info.h"

namespace tessel {

Stmt schedule_ops(const State& state, const StageInfoMap& infos);

}  // namespace tessel
