// One round of a tuning task:
//
//   propose (the default first, then the search's best-ranked new schedules) → build and run them →
//   record every result in the log (one transaction) → tell the search and the cost model →
//   re-time the leaders
//
// A round whose search has no new schedule left settles the task's leaders and ends the task.
#pragma once

#include "search/tuning_task.h"

namespace tessel {

// Runs one round of at most `trials_left` trials (what the budget leaves: the task's, or the
// session's when it is shared); false when there was nothing left to measure (the task is then
// done). `index`: the task's place in the session, for the build-progress callback.
bool run_round(TuningTask& task, const SessionContext& session, size_t index, int64_t trials_left);

// A round of one trial, the task's default schedule, for a task whose default the log lacks: recorded and
// learned from like any trial, but it neither ends the task nor re-times leaders (the default is
// re-timed with the task's leaders in its later rounds). False when the default was not owed.
bool run_default_round(TuningTask& task, const SessionContext& session, size_t index);

}  // namespace tessel
