// The tuning loop: tasks (workloads) on one target, searched round by round, every measured
// candidate recorded in the tuning log, which is also the session's memory. `trials` is the budget
// per (workload, target), counted over the trial records of the whole log: a restarted session reads
// each task's records, searches no further in tasks already done (it only settles their leaders, see
// below), seeds its search and its model from the trials, never makes a trial of a schedule the log
// holds for that target, and measures only the remainder.
//
//   per round: task = scheduler.next(); batch = search[task].ask(model); measure; append to the log
//              (one transaction); search[task].tell(results); model.update(results);
//              re-time the leaders
//
// Re-timing the leaders: on a noisy machine one timing can make a schedule look 30% faster than it
// is, and the search would then report (and replay would deploy) a lucky schedule. After each round
// the task's `retime_leaders` fastest schedules and its default, where they have fewer than
// `retime_timings` timings, are measured again (interleaved, in one batch) and recorded as retimes
// (RecordPurpose::Retime): they are not trials, do not count against the budget, and train nothing.
// With `retime_spread` (the default) a schedule gets at most one retime a round and none in the round
// of its trial, so that its timings lie rounds apart; the round that ends a task, and a session's end
// by its time budget (for the tasks that had a round in it), bring the leaders' timings up to the
// count at once.
// The yardstick: a shared CPU's speed swings from one moment to the next by more than its schedules
// differ (on a 2-core host, one kernel timed 1.5 ms in one second and 2.9 ms a few seconds later).
// With `yardstick` "default", a retime batch times the default schedule before, between and after
// the leaders (D A D B D), and each leader's record keeps the lower of its two neighbouring default
// medians as its reference (MeasureRecord::reference_s); the default's own timings are retimes too.
// A schedule with referenced retimes is ranked by them alone (schedule_estimate): its trial made it a
// leader by being fast, luck included. And a round's new leaders are re-timed in that round (still
// one timing a round each), so that a lucky trial is found out before the next round reports it.
// Best and default latencies are then schedule_estimate() over each schedule's timings, the same
// rule replay (TuningLog::best) uses.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "database/tuning_log.h"
#include "measure/measurer.h"
#include "search/search_policy.h"

namespace tessel {

struct TuneTask {
  std::string name;
  ComputeDAG dag;
  double weight = 1;  // occurrences in the model (1 for a suite case)
};

// Every option of a tuning session (saved with the session in the log).
struct TuneOptions {
  std::string target = "llvm";      // "llvm" or "cuda"
  int64_t trials = 200;             // per task, counted over the whole log
  int batch = 0;                    // candidates per round; 0: 32 (llvm) or 64 (cuda)
  uint64_t seed = 0;
  double time_budget_s = 0;         // stop after the round that passes it (then settle leaders); 0: none
  std::string model = "xgboost";    // "xgboost" or "random" (no model: ablations)
  std::string objective = "rank";   // a new XGBoost model's loss: "rank" or "packsum" (a loaded model keeps its own;
                                    // the saved session names the one used, "none" without a model)
  std::string model_input;          // a new XGBoost model's input: "rows", "programs", or "" (programs on cuda,
                                    // rows on llvm); the saved session names the one used
  double mlp_weight = -1;           // a new programs model's neural-ranker weight (below 0: the default); the
                                    // saved session names the one used
  std::string mlp_network;          // a new programs model's neural ranker: "summary" (when empty) or "deepsets"
                                    // (mlp_network_options); the saved session names the one used
  std::string model_path;           // a pre-trained XGBoost model to start from
  std::string save_model_path;      // where to save the model at the end ("" : not saved)
  int retime_leaders = 3;           // fastest schedules re-timed after each round (0: none)
  int retime_timings = 3;           // timings (the trial's included) a leader is brought up to
  bool retime_spread = true;        // one timing a round per schedule (false: all at once)
  std::string yardstick;            // "default": retimes are timed between timings of the default schedule;
                                    // "none"; "" : default on llvm, none on cuda (the saved session names it)
  SearchOptions search;
  MeasureOptions measure;
  SearchTarget search_target;
};

std::string tune_options_json(const TuneOptions& options);
// The yardstick a session uses: TuneOptions::yardstick, or for "" the target's default ("default"
// on llvm, "none" on cuda).
std::string resolved_yardstick(const TuneOptions& options);

// Where a task's time in rounds went, in seconds: starting its measurer (the runner, the inputs and
// their reference results, once per task and session; counted in its first round), proposing candidates (evolution ranked by
// the cost model), building and running them, updating the cost model, re-timing the leaders.
struct TimeSplit {
  double setup_s = 0, search_s = 0, measure_s = 0, learn_s = 0, retime_s = 0;
  TimeSplit& operator+=(const TimeSplit& o);
};

// Where a task stands, for the live display and the final table.
struct TaskStatus {
  std::string name;
  std::string workload_key;
  int64_t trials = 0;          // in the log, for this target
  int64_t trials_at_start = 0;
  int64_t budget = 0;
  int64_t errors = 0;          // error records among `trials`
  int64_t retimes = 0;         // retime records in the log, for this target (not trials)
  double default_s = 0;        // the default schedule's latency estimate (0: not measured or failed)
  bool default_measured = false;
  double best_s = 0;           // lowest latency estimate of a schedule (0: none ran)
  double seconds = 0;          // wall time spent on the task this session
  TimeSplit time;              // that time by phase, summed over the session's rounds
  TimeSplit last_round;        // the latest round's
  bool done = false;           // budget reached or space exhausted
  std::string best_trace_json;
};

struct TuneCallbacks {
  std::function<void(const std::vector<TaskStatus>&, size_t current)> on_round;  // after each round
  std::function<void(size_t task, size_t built, size_t total)> on_build;          // within a round
  std::function<void(const std::string&)> on_note;                               // one-off messages
};

// The tuning-log record of one measured candidate.
MeasureRecord make_record(const WorkloadInfo& workload, const TargetInfo& target, const Trace& trace,
                          const MeasureResult& result, const std::string& settings_json);

// A log holds timings of one kind per (workload, target): all taken with a cache flush before every
// sample, or all without (measure/measurer.h, settings_flush). Throws InputError naming the workload,
// the target and a record when the log's records of the pair hold a timing of the other kind than
// `flush` (one query on their settings; the records are not read). Records that do not say are
// taken as either.
void check_flush_matches(const TuningLog& log, const std::string& workload_key, const TargetInfo& target, bool flush,
                         const std::string& workload_name);

// Throws InputError naming the first bad option (also done by tune(), before anything starts).
void check_tune_options(const TuneOptions& options);

// Runs the session. `target_of` names the target of records from a task's Measurer (the GPU's
// name and driver, or this CPU). Throws Error for bad options or a log that cannot be used.
std::vector<TaskStatus> tune(const std::vector<TuneTask>& tasks, TuningLog& log, const TuneOptions& options,
                             const std::function<TargetInfo(const Measurer&)>& target_of,
                             const TuneCallbacks& callbacks = {});

}  // namespace tessel
