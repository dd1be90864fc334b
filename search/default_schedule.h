// The schedule a user gets without tuning: for each op template's structure (contraction, row
// reduction, elementwise) a tiled, vectorized, parallel schedule built from the same steps the
// search uses.
#pragma once

#include "schedule/state/trace.h"
#include "search/target_spec.h"

namespace tessel {

Trace default_schedule(const ComputeDAG& dag, const CpuTargetSpec& target);

}  // namespace tessel
