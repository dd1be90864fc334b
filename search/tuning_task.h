// One task of a tuning session — a workload on the session's target — and what the parts of the
// session share. A task holds its search, its schedules' timings and where it stands; on resume it
// reads everything the log holds of it first.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "database/tuning_log.h"
#include "search/schedule_timings.h"
#include "search/search_policy.h"
#include "search/tune_options.h"
#include "search/tuning_machine.h"

namespace tessel {

struct TuneTask {
  std::string name;
  ComputeDAG dag;
  double weight = 1;  // occurrences in the model (1 for a suite case)
};

// Where a task's time in rounds went, in seconds: starting its measurer (the runner, the inputs and
// their reference results, once per task and session; counted in its first round), proposing
// candidates (evolution ranked by the cost model), building and running them, updating the cost
// model, re-timing the leaders.
struct TimeSplit {
  double setup_s = 0, search_s = 0, measure_s = 0, learn_s = 0, retime_s = 0;
  TimeSplit& operator+=(const TimeSplit& o);
};

// Where a task stands, for the progress display and the final table.
struct TaskStatus {
  std::string name;
  std::string workload_key;
  int64_t trials = 0;  // in the log, for this target
  int64_t trials_at_start = 0;      // of `trials`, those this process did not measure (resumed, other workers)
  int64_t budget = 0;               // this task's, or the whole session's when the budget is shared
  double weight = 1;                // occurrences in the model
  int64_t errors = 0;               // error records among `trials`
  int64_t retimes = 0;              // retime records in the log, for this target (not trials)
  std::optional<double> default_s;  // the default schedule's latency estimate (unset: no correct timing)
  bool default_measured = false;
  std::optional<double> best_s;  // the best schedule's latency estimate (unset: none ran correctly)
  std::string best_trace_json;
  double seconds = 0;    // wall time spent on the task this session
  TimeSplit time;        // that time by phase, summed over the session's rounds
  TimeSplit last_round;  // the latest round's
  bool done = false;     // budget reached, space exhausted or no longer improving
};

// What a session tells its caller as it goes (the CLI's progress display).
struct TuneCallbacks {
  std::function<void(const std::vector<TaskStatus>&, size_t current)> on_round;  // after each round
  std::function<void(size_t task, size_t built, size_t total)> on_build;         // within a round
  std::function<void(const std::string&)> on_note;                               // one-off messages
};

// What the parts of a session share.
struct SessionContext {
  const TuneOptions& options;
  TuningLog& log;
  TuningMachine& machine;
  TargetInfo target;
  CostModel& model;
  const TuneCallbacks& callbacks;
  // Where a round's records go instead of the log's append (a worker of a shared session stores
  // them under its lease): the new record ids, 0 for a trial the budget had no room for.
  std::function<std::vector<int64_t>(const std::vector<MeasureRecord>&)> store = nullptr;
  void note(const std::string& text) const {
    if (callbacks.on_note) callbacks.on_note(text);
  }
};

class TuningTask {
 public:
  TuningTask(const TuneTask& task, size_t index, const TuneOptions& options);

  // The trials of the log the cost model can learn from (their traces and latencies, NaN for a
  // failure), gathered by resume().
  struct LoggedTrials {
    std::vector<Trace> traces;
    std::vector<double> latencies_s;
  };
  // Reads every record the log holds of the task on `target`: trials count against the budget and
  // are told to the search, every record's timing ranks its schedule. A record whose trace no longer
  // parses is skipped with a note. Throws InputError when the log's timings of the task were taken
  // with the other cache-flush setting (check_flush_matches).
  LoggedTrials resume(const SessionContext& session);
  // Takes in one record of the task from the log (resume's step; a worker of a shared session takes
  // in the records other workers stored since). Trials go into `logged`.
  void absorb(const MeasureRecord& record, const SessionContext& session, LoggedTrials& logged);

  // The task's measurer, made on first use; a candidate far slower than the default is cut off.
  CandidateMeasurer& measurer(const SessionContext& session);
  // Makes the measurer now (the session's first task, whose measurer names the target).
  void start_measurer(const SessionContext& session) { measurer(session); }
  // Makes the search space and the default schedule again from the options (the GPU's description
  // updated from the device the session measures on). Before resume(): the search knows nothing yet.
  void retarget();
  WorkloadInfo workload() const;
  // The status's best and default from the timings (the ranking rule replay uses).
  void refresh_latencies();
  // "workload key/target kind": the cost model compares programs within one group.
  std::string group(const TargetInfo& target) const { return status.workload_key + "/" + target.kind; }

  const TuneTask& task;
  SearchPolicy policy;
  Trace default_trace;
  ScheduleTimings timings;
  TaskStatus status;
  double measurer_setup_s = 0;  // a measurer started before the rounds: counted in the first one's setup
  bool had_round = false;       // in this session
  int64_t last_record_id = 0;   // the newest record of the task taken in from the log

 private:
  // The search and the timings told of the default trace.
  void adopt_default();

  std::unique_ptr<CandidateMeasurer> measurer_;
  const TuneOptions& options_;
  size_t index_;                   // among the session's tasks: seeds its search
  std::string default_steps_key_;  // the default's steps, to know its trial in the log
};

}  // namespace tessel
