// A seeded generator of random valid schedules: multi-level splits (non-divisible factors included),
// reorders, inlining, cache_write, rfactor, compute_at positions and parallel / vectorize / unroll
// annotations. Every choice it makes is recorded in the trace's step fields, so the same seed gives
// the same trace and a mutation is a changed field replayed. It feeds the test oracle and seeds the
// search.
#pragma once

#include <cstdint>

#include "schedule/state/trace.h"
#include "search/target_spec.h"

namespace tessel {

// Every step of the result applies; the result also lowers (candidates that fail bound inference
// are resampled).
Trace random_schedule(const ComputeDAG& dag, uint64_t seed, const CpuTargetSpec& target);

}  // namespace tessel
