// Re-timing the leaders. On a noisy machine one timing can make a schedule look 30% faster than it
// is, and the search would then report (and replay would deploy) a lucky schedule. After each round
// the task's `leaders` fastest schedules and its default, where they have fewer than `timings`
// timings, are measured again (interleaved, in one batch) and recorded as retimes
// (RecordPurpose::Retime): they are not trials, do not count against the budget, and train nothing.
// With `spread` (the default) a schedule gets at most one retime a round and none in the round of
// its trial, so that its timings lie rounds apart; the round that ends a task, and a session's end
// by its time budget (for the tasks that had a round in it), bring the leaders' timings up to the
// count at once.
//
// The yardstick: a shared CPU's speed swings from one moment to the next by more than its schedules
// differ (on a 2-core host, one kernel timed 1.5 ms in one second and 2.9 ms a few seconds later).
// With the yardstick, a retime batch times the default schedule before, between and after the
// leaders (D A D B D), and each leader's record keeps the lower of its two neighbouring default
// medians as its reference (MeasureRecord::reference_s); the default's own timings are retimes too.
// A schedule with referenced retimes is ranked by them alone (database/schedule_ranking.h). And a
// round's new leaders are re-timed in that round (still one timing a round each), so that a lucky
// trial is found out before the next round reports it.
#pragma once

#include "search/tuning_task.h"

namespace tessel {

// Brings the task's leaders (and its default) up to the wanted timings, or with `spread` one timing
// nearer; records every retime in the log and refreshes the task's latencies.
void retime_leaders(TuningTask& task, const SessionContext& session, bool spread);

}  // namespace tessel
