// Features of a lowered program for the cost model: one fixed-width row per buffer store (a Store
// statement of the lowered, flattened program; the copies unrolling made of one store share a row),
// so that a program is a small matrix whose rows the model scores and sums (or summarizes first:
// program_summary). Every field is documented in docs/costmodel_features.md; the layout is
// versioned: a model trained on one version refuses features of another.
#pragma once

#include <string>
#include <vector>

#include "schedule/ir/stmt.h"
#include "schedule/lower/verify.h"
#include "schedule/state/trace.h"

namespace tessel {

// 2: the arithmetic counts and outer_prod are relative to the program's float operations.
// 3: GPU kernel occupancy and waves, work per thread, and each buffer's warp-level access.
constexpr int kFeatureVersion = 3;

// The multiprocessor the GPU columns (occupancy, waves) are computed against. Features are a
// program's description for ranking schedules, so one fixed machine (an H100 SXM's figures) serves
// every log: a log and a model agree on it whatever GPU measured them.
struct SmModel {
  int sm_count = 132;
  int max_threads = 2048;
  int max_blocks = 32;
  int registers = 65536;
  int64_t shared_bytes = 228 * 1024;
  int64_t shared_reserved_per_block = 1024;
};

// What the features need to know of the machine the program runs on.
struct FeatureTarget {
  bool gpu = false;
  int cache_line_bytes = 64;  // CPU cache line; GPU: 32-byte sectors are used instead
  GpuLimits gpu_limits;       // features_of_schedule lowers within these (a GPU target's limits)
  SmModel sm;
};

// rows x feature_width() values, row-major; one row per buffer store.
struct ProgramFeatures {
  int rows = 0;
  std::vector<float> values;
};

int feature_width();
// One name per column, e.g. "float_mul", "vec_len", "B0.bytes" (documented in docs/costmodel_features.md).
const std::vector<std::string>& feature_names();

// A program's rows summarized as one vector of program_summary_width() = 3 x feature_width() + 1
// values, for a model that scores a program whole: its heaviest row (the most float operations; ties:
// the most bytes in its first buffer block, then the first), each column's maximum over the rows,
// each column's minimum, and the number of rows. A program without rows gives zeros.
int program_summary_width();
std::vector<float> program_summary(const ProgramFeatures& features);

// Features of `func` (lowered for `target`). Never throws for a program lowering accepted. The
// `auto_unroll_max_step` column stays 0 here (lowering consumed the pragma); features_of_schedule
// fills it from the trace, so train and predict through the same function.
ProgramFeatures extract_features(const LoweredFunc& func, const FeatureTarget& target);

// Replays `trace` on `dag`, lowers it for the target and extracts its features. Throws ScheduleError
// when the trace does not apply or lower.
ProgramFeatures features_of_schedule(const ComputeDAG& dag, const Trace& trace, const FeatureTarget& target);

}  // namespace tessel
