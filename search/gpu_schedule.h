// GPU schedules: the default per op template structure, and seeded random ones built from the same
// patterns with sampled decisions (thread counts, tile sizes, vector widths, where stages live).
//  - elementwise: all axes fused, split into blocks x threads x vector lanes.
//  - row reduction: one block per row; each reduction rfactored into per-thread partial results,
//    combined across the block's threads (warp shuffles, then shared memory between warps; no
//    atomics).
//  - contraction: Ansor's GPU multi-level tiling: block tile (blockIdx) x thread tile (threadIdx)
//    x register tile (cache_write local), reduction split with both operands staged through shared
//    memory by a cooperative fetch of all the block's threads.
#pragma once

#include <cstdint>

#include "schedule/state/trace.h"
#include "search/target_spec.h"

namespace tessel {

Trace default_gpu_schedule(const ComputeDAG& dag, const GpuTargetSpec& target);

// The shared memory a schedule may use: more for one on the tensor cores (a tensorize step).
int64_t shared_limit(const GpuTargetSpec& target, const Trace& trace);

// Every step applies and the result lowers for the GPU within the target's limits (candidates that
// do not are resampled deterministically).
Trace random_gpu_schedule(const ComputeDAG& dag, uint64_t seed, const GpuTargetSpec& target);

}  // namespace tessel
