// Shared by the step implementations (one file per primitive): the rejection type apply_step turns
// into a ScheduleError, and the common validity checks.
#pragma once

#include <string>

#include "schedule/state/step.h"

namespace tessel::step_internal {

struct Rejected {
  std::string reason;
};
[[noreturn]] inline void reject(const std::string& reason) { throw Rejected{reason}; }

// The stage named `name`, which must be a compute stage that is not inlined.
Stage& schedulable_stage(State& state, const std::string& name);
// Position of loop `loop` among `stage`'s leaves; rejects with a helpful reason if it is not one.
int leaf_position(const Stage& stage, const std::string& loop);
// A var name not used by `stage` yet, starting from `base`.
std::string fresh_var_name(const Stage& stage, const std::string& base);
// Rejects if another stage is computed at one of `stage`'s loops.
void require_nothing_attached(const State& state, const std::string& stage, const std::string& why);

// Rejects if a prefetch of `stage` is issued in loop `loop`.
void require_no_prefetch_in(const Stage& stage, const std::string& loop, const std::string& why);

// Whether `stage` is computed at `target`.`loop` or a loop inside it, directly or through a chain of
// computed-at stages.
bool computed_within(const State& state, const std::string& stage, const std::string& target, const std::string& loop);

void apply_split(State& state, const Step& step);
void apply_fuse(State& state, const Step& step);
void apply_reorder(State& state, const Step& step);
void apply_compute_at(State& state, const Step& step);
void apply_compute_inline(State& state, const Step& step);
void apply_compute_root(State& state, const Step& step);
void apply_cache_read(State& state, const Step& step);
void apply_cache_write(State& state, const Step& step);
void apply_rfactor(State& state, const Step& step);
void apply_annotate(State& state, const Step& step);
void apply_pragma(State& state, const Step& step);
void apply_storage_align(State& state, const Step& step);
void apply_set_scope(State& state, const Step& step);
void apply_prefetch(State& state, const Step& step);
void apply_tensorize(State& state, const Step& step);
void apply_storage_swizzle(State& state, const Step& step);

}  // namespace tessel::step_internal
