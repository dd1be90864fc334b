#include "search/tuning_round.h"

#include <chrono>
#include <cmath>

#include "search/leader_retiming.h"
#include "search/tuning_records.h"

namespace tessel {
namespace {

// The seconds since the previous lap (or since it was made).
class Stopwatch {
 public:
  double lap() {
    const auto now = std::chrono::steady_clock::now();
    const double elapsed = std::chrono::duration<double>(now - mark_).count();
    mark_ = now;
    return elapsed;
  }

 private:
  std::chrono::steady_clock::time_point mark_ = std::chrono::steady_clock::now();
};

struct Batch {
  std::vector<Trace> traces;
  std::vector<std::optional<ProgramFeatures>> features;  // what the model saw of each
};

// The default schedule first, until it has a trial (the baseline every speed-up is measured
// against), then what the search proposes, up to the round's share of the budget.
Batch propose(TuningTask& task, const SessionContext& session, int64_t trials_left) {
  const TaskStatus& s = task.status;
  const int64_t wanted = std::min<int64_t>(resolved_batch(session.options), trials_left);
  Batch batch;
  if (!s.default_measured) {
    batch.traces.push_back(task.default_trace);
    batch.features.push_back(task.policy.features(task.default_trace));
  }
  const int more = static_cast<int>(wanted - static_cast<int64_t>(batch.traces.size()));
  for (Proposal& p : task.policy.ask(more, session.model)) {
    batch.traces.push_back(std::move(p.trace));
    batch.features.push_back(std::move(p.features));
  }
  return batch;
}

struct Measured {
  std::vector<MeasureResult> results;
  std::vector<bool> stored;  // false: another tuner of the same log spent the budget first
};

// Builds and runs the batch, and commits its records before anything else counts the round. A budget
// per task is a property of the log: the commit stores only the trials that still fit, whatever other
// tuners of the same log have stored meanwhile.
Measured measure_and_record(TuningTask& task, const SessionContext& session, const Batch& batch, size_t index) {
  CandidateMeasurer& measurer = task.measurer(session);
  std::vector<Candidate> candidates;
  for (const Trace& trace : batch.traces) candidates.push_back(Candidate{trace, Fault::None});
  // The measurer outlives this round (leader re-timing uses it next): the callback holds nothing of
  // this frame, and is cleared once the batch is measured.
  const TuneCallbacks* callbacks = &session.callbacks;
  measurer.on_build_progress([callbacks, index](size_t built, size_t total) {
    if (callbacks->on_build) callbacks->on_build(index, built, total);
  });
  Measured m;
  m.results = measurer.measure(candidates);
  measurer.on_build_progress(nullptr);
  std::vector<MeasureRecord> records;
  const WorkloadInfo workload = task.workload();
  for (size_t k = 0; k < m.results.size(); ++k)
    records.push_back(make_record(workload, session.target, batch.traces[k], m.results[k],
                                  m.results[k].settings_json.empty() ? measurer.settings_json()
                                                                     : m.results[k].settings_json));
  const std::vector<int64_t> ids = session.store                  ? session.store(records)
                                   : session.options.shared_budget ? session.log.append(records)
                                   : session.log.append_within_budget(records, session.options.trials);
  for (int64_t id : ids) m.stored.push_back(id > 0);
  return m;
}

// Tells the search and the cost model what the batch measured.
void learn(TuningTask& task, const SessionContext& session, const Batch& batch, const Measured& measured) {
  TaskStatus& s = task.status;
  std::vector<TrainingSample> fresh;
  const std::string group = task.group(session.target);
  for (size_t k = 0; k < measured.results.size(); ++k) {
    if (!measured.stored[k]) {  // not a trial of the log: the task's budget is spent
      s.done = true;
      continue;
    }
    const MeasureResult& r = measured.results[k];
    const bool good = is_timing(r.error, r.median_s);
    const double latency = good ? r.median_s : std::nan("");
    task.policy.tell(batch.traces[k], latency);
    ++s.trials;
    if (!good) ++s.errors;
    task.timings.add(batch.traces[k], trace_to_json(batch.traces[k]), r.error, r.median_s);
    if (k == 0) s.default_measured = true;  // the default, if it was owed, came first
    if (batch.features[k]) fresh.push_back(TrainingSample{*batch.features[k], group, latency});
  }
  session.model.update(fresh);
}

}  // namespace

namespace {

// The steps of a round. A default-only round (`trials` 1, the default owed first) neither ends the
// task nor re-times leaders, and an empty one leaves no trace.
bool round_of(TuningTask& task, const SessionContext& session, size_t index, int64_t trials, bool default_only) {
  TaskStatus& s = task.status;
  task.timings.next_round();
  task.had_round = true;
  Stopwatch watch;
  TimeSplit split;
  task.measurer(session);  // the first time: the runner, the inputs and their reference
  split.setup_s = task.measurer_setup_s;
  task.measurer_setup_s = 0;
  watch.lap();
  const Batch batch = propose(task, session, trials);
  split.search_s = watch.lap();
  if (batch.traces.empty()) {
    if (default_only) return false;
    session.note(s.name + ": no new schedule left to try; stopping at " + std::to_string(s.trials) + " trials");
    retime_leaders(task, session, false);  // a resumed task can end here without a round
    split.retime_s = watch.lap();
    s.done = true;
  } else {
    const Measured measured = measure_and_record(task, session, batch, index);
    split.measure_s = watch.lap();
    learn(task, session, batch, measured);
    split.learn_s = watch.lap();
    if (default_only) {
      task.refresh_latencies();  // no re-timing here: the default's trial is its latency for now
    } else {
      const bool last = s.done || static_cast<int64_t>(measured.results.size()) >= trials;
      retime_leaders(task, session, session.options.leaders.spread && !last);  // the task's last round settles
      split.retime_s = watch.lap();
      s.done = last;
    }
  }
  s.seconds += split.setup_s + split.search_s + split.measure_s + split.learn_s + split.retime_s;
  s.last_round = split;
  s.time += split;
  return !batch.traces.empty();
}

}  // namespace

bool run_round(TuningTask& task, const SessionContext& session, size_t index, int64_t trials_left) {
  return round_of(task, session, index, trials_left, false);
}

bool run_default_round(TuningTask& task, const SessionContext& session, size_t index) {
  if (task.status.default_measured) return false;
  return round_of(task, session, index, 1, true);
}

}  // namespace tessel
