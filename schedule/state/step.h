// Schedule steps: plain data that transform a State. A schedule is a Trace (an ordered list of steps);
// replaying a trace on its DAG rebuilds the State exactly. The fields marked "decision" are the
// choices the search samples and mutates (a mutation changes a decision and replays the trace).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schedule/state/state.h"

namespace tessel {

enum class StepKind : uint8_t {
  Split, Fuse, Reorder,
  ComputeAt, ComputeInline, ComputeRoot,
  CacheRead, CacheWrite, RFactor,
  Annotate, Pragma, StorageAlign, SetScope, Prefetch, Tensorize, StorageSwizzle,
};
const char* to_string(StepKind kind);

struct Step {
  StepKind kind = StepKind::Split;
  std::string stage;                // every step: the stage it acts on (CacheRead: the tensor read)
  std::string loop;                 // Split, Annotate, Pragma, RFactor, Prefetch, Tensorize: a loop of `stage`
  std::vector<std::string> loops;   // Fuse: consecutive loops; Reorder: the new order; CacheRead: readers
  std::vector<int64_t> factors;     // Split: inner lengths, outer to inner (decision)
  std::string target_stage;         // ComputeAt: the consumer (decision together with target_loop)
  std::string target_loop;          // ComputeAt (decision)
  Annotation annotation = Annotation::None;  // Annotate
  MemScope scope = MemScope::Local;          // CacheRead, CacheWrite, SetScope
  std::string pragma;               // Pragma: "auto_unroll_max_step"
  std::string tensor;               // Prefetch: the input it fetches
  int64_t value = 0;                // Pragma value, Prefetch offset in iterations (decisions); StorageAlign
                                    // factor; RFactor factor axis
  int axis = 0;                     // StorageAlign: the dimension
  int64_t offset = 0;               // StorageAlign

  // e.g. `split(C, i, [8, 4])`
  std::string describe() const;
};

// Convenience constructors (the names mirror the JSON "kind" values).
Step split_step(const std::string& stage, const std::string& loop, std::vector<int64_t> factors);
Step fuse_step(const std::string& stage, std::vector<std::string> loops);
Step reorder_step(const std::string& stage, std::vector<std::string> order);
Step compute_at_step(const std::string& stage, const std::string& target, const std::string& loop);
Step compute_inline_step(const std::string& stage);
Step compute_root_step(const std::string& stage);
Step cache_read_step(const std::string& tensor, MemScope scope, std::vector<std::string> readers);
Step cache_write_step(const std::string& stage, MemScope scope);
Step rfactor_step(const std::string& stage, const std::string& loop, int64_t factor_axis);
Step annotate_step(const std::string& stage, const std::string& loop, Annotation annotation);
Step pragma_step(const std::string& stage, const std::string& loop, const std::string& pragma, int64_t value);
Step storage_align_step(const std::string& stage, int axis, int64_t factor, int64_t offset);
Step set_scope_step(const std::string& stage, MemScope scope);
Step prefetch_step(const std::string& stage, const std::string& loop, const std::string& tensor, int64_t offset);
// `loop` and the loops inside it (16 x 16, or 16 x 16 x 16 for a product) become one tensor-core
// operation of a warp: a load into a matrix_a / matrix_b fragment, the product accumulated in an
// accumulator fragment (its initialization a fill), or the store of an accumulator.
Step tensorize_step(const std::string& stage, const std::string& loop);
// The shared buffer of `stage` (16-bit) laid out in 128-byte swizzled rows, as the warpgroup
// tensor cores read their operands (schedule/ir/warpgroup.h).
Step storage_swizzle_step(const std::string& stage);

// Applies `step` (the `index`-th of its trace) to `state`. Throws ScheduleError naming the step and
// the reason if it cannot be applied; `state` is then unchanged.
void apply_step(State& state, const Step& step, int index = -1);

// The names of the stages cache_read / cache_write / rfactor create.
std::string cache_stage_name(const std::string& tensor, MemScope scope);
std::string rfactor_stage_name(const std::string& stage);

}  // namespace tessel
