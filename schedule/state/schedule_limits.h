// The limits every schedule stays within, so that replaying and lowering any trace -- a hand-written
// file, a record of a tuning log, a mutant of the search -- takes bounded time and memory and no size
// arithmetic overflows. A trace beyond them is refused where it is read (trace_from_json) or at the
// step that crosses one (apply_step, as a ScheduleError naming the step).
//
// The search stays far inside: its traces hold tens of steps (about a hundred for a GPU schedule),
// split a loop into at most five parts and give a stage at most about 30 loops.
#pragma once

#include <cstdint>
#include <string>

#include "schedule/state/state.h"

namespace tessel {

constexpr int64_t kMaxTraceSteps = 1000;
constexpr int64_t kMaxSplitFactors = 16;
// Loops of one stage at a time, and every loop variable it ever had (roots, split and fuse products):
// the cost of lowering grows with the square of both (index expressions over every loop).
constexpr int64_t kMaxStageLoops = 64;
constexpr int64_t kMaxStageLoopVars = 256;
// The depth of the loop nest a stage sits in (its loops plus those of the stages it is computed
// inside): the lowering passes recurse once per loop. (The stages themselves need no limit of their
// own: a step adds at most one, so a trace adds at most kMaxTraceSteps.)
constexpr int64_t kMaxLoopNestDepth = 256;
// A split whose factors exceed the loop's extent pads the loop: its iterations past the end are
// masked. Padding is what non-divisible tiles and fixed thread counts need (a GPU tile of 64 rows
// over a one-row matrix pads 64-fold), but a factor of 2^62 would make a 64-long loop run 2^62
// times. A stage's loops may therefore iterate at most kMaxPadding times as often as its operation
// needs, or kPaddedIterationsAllowance times in all (a few thread blocks over a tiny tensor),
// whichever is more -- and never beyond kMaxIterations (tensor_size.h). With every root padded at
// most 1024-fold, a flat index stays below 2^58 and int64 index arithmetic keeps its headroom.
constexpr int64_t kMaxPadding = 1024;
constexpr int64_t kPaddedIterationsAllowance = int64_t{1} << 20;
// storage_align factors (a bank or cache line is 32 to 128 elements), prefetch offsets (in
// iterations of the loop), and the auto_unroll_max_step pragma (unrolled statements).
constexpr int64_t kMaxStorageAlignFactor = 4096;
// Copies of a pipelined loop's shared tiles (pragma pipeline_stages).
constexpr int64_t kMaxPipelineStages = 8;
constexpr int64_t kMaxPrefetchOffset = int64_t{1} << 30;
constexpr int64_t kMaxAutoUnrollStep = int64_t{1} << 16;

// Why `state` is beyond one of the limits above (the stage, the numbers and the limit), or "" when
// it is within all of them. apply_step checks every state a step produces.
std::string state_limit_violation(const State& state);

}  // namespace tessel
