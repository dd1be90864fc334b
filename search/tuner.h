// The tuning loop: tasks (workloads) on one target, searched round by round, every measured
// candidate recorded in the tuning log, which is also the session's memory. `trials` is the budget
// per (workload, target), counted over the trial records of the whole log: a restarted session reads
// each task's records, searches no further in tasks already done (it only settles their leaders),
// seeds its search and its model from the trials, never makes a trial of a schedule the log holds
// for that target, and measures only the remainder.
//
//   open:  every task reads what the log holds of it (search/tuning_task.h); the model learns from
//          the logged trials; tasks already done settle their leaders
//   model: with a shared budget (a model's tasks), each unmeasured task's default schedule first,
//          a trial each, so that the scheduler ranks tasks by measured time from the first round
//   loop:  task = scheduler.next(); run_round(task) (search/tuning_round.h: propose → build/run →
//          record → learn → re-time the leaders, search/leader_retiming.h); progress callback
//   end:   the time budget, or every task done; the model saved if asked
//
// Best and default latencies follow the ranking rule replay uses (database/schedule_ranking.h).
#pragma once

#include <string>
#include <vector>

#include "search/tuning_task.h"

namespace tessel {

// Runs the session on `machine`. Throws InputError for bad options, tasks that are the same
// workload, or a log whose timings of a task do not compare with this session's; Error for a log
// that cannot be used or a target that cannot be measured.
std::vector<TaskStatus> tune(const std::vector<TuneTask>& tasks, TuningLog& log, const TuneOptions& options,
                             TuningMachine& machine, const TuneCallbacks& callbacks = {});

// One worker of a tuning session that many processes share through the log (database/work_queue.h):
// the same tasks, options and budget as tune(), but each round is of a task this worker leases, and
// before each round the worker takes in what the others stored (its search and cost model learn from
// every worker's records). Workers start and stop at any time; the session ends when its tasks are
// done or its budget is spent, whoever measured them.
struct WorkerOptions {
  std::string session;     // the shared session's name
  std::string log_url;     // the log as the user named it (the lease keeper's own connection)
  double lease_s = 60;     // a lease not renewed for this long goes to another worker
  double idle_poll_s = 2;  // the wait while another worker holds every task still open
};
std::vector<TaskStatus> tune_as_worker(const std::vector<TuneTask>& tasks, TuningLog& log,
                                       const TuneOptions& options, TuningMachine& machine,
                                       const WorkerOptions& worker, const TuneCallbacks& callbacks = {});

}  // namespace tessel
