#include "search/tuning_task.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "schedule/te/error.h"
#include "search/default_schedule.h"
#include "search/gpu_schedule.h"
#include "search/tuning_records.h"

namespace tessel {
namespace {

// A candidate this much slower than the default schedule will not win: its run is cut off (recorded
// as run_timeout) instead of costing the session seconds per sample.
constexpr double kSlowerThanDefault = 10;
constexpr double kMinRunTimeout_s = 0.5;

bool ok(const MeasureRecord& r) { return is_timing(r.error, r.median_s); }

Trace default_trace_of(const ComputeDAG& dag, const TuneOptions& options) {
  return options.target == TargetKind::Cuda ? default_gpu_schedule(dag, options.gpu)
                                            : default_schedule(dag, options.cpu);
}

}  // namespace

TimeSplit& TimeSplit::operator+=(const TimeSplit& o) {
  setup_s += o.setup_s;
  search_s += o.search_s;
  measure_s += o.measure_s;
  learn_s += o.learn_s;
  retime_s += o.retime_s;
  return *this;
}

TuningTask::TuningTask(const TuneTask& task, size_t index, const TuneOptions& options)
    : task(task),
      policy(task.dag, search_target(options), options.search, options.seed * 1000003 + index),
      default_trace(default_trace_of(task.dag, options)),
      options_(options),
      index_(index) {
  adopt_default();
  status.name = task.name;
  status.workload_key = task.dag.workload_key();
  status.budget = options.trials;
  status.weight = task.weight;
}

void TuningTask::retarget() {
  TESSEL_CHECK(status.trials == 0 && !had_round, "a task is retargeted before it takes in any trial");
  policy = SearchPolicy(task.dag, search_target(options_), options_.search, options_.seed * 1000003 + index_);
  default_trace = default_trace_of(task.dag, options_);
  timings = ScheduleTimings{};
  adopt_default();
}

void TuningTask::adopt_default() {
  default_steps_key_ = trace_steps_key(default_trace);
  policy.reserve(default_trace);  // measured first, by the tuner; never proposed
  timings.set_default(trace_to_json(default_trace));
}

TuningTask::LoggedTrials TuningTask::resume(const SessionContext& session) {
  check_flush_matches(session.log, status.workload_key, session.target, options_.measure.run.flush, task.name);
  LoggedTrials logged;
  for (const MeasureRecord& r : session.log.records(status.workload_key, session.target)) absorb(r, session, logged);
  refresh_latencies();
  status.trials_at_start = status.trials;
  status.done = !options_.shared_budget && status.trials >= status.budget;  // a shared budget: the tuner's call
  return logged;
}

void TuningTask::absorb(const MeasureRecord& r, const SessionContext& session, LoggedTrials& logged) {
  last_record_id = std::max(last_record_id, r.id);
  const bool trial = r.purpose == RecordPurpose::Trial;
  if (trial)
    ++status.trials;
  else
    ++status.retimes;
  if (trial && !ok(r)) ++status.errors;
  Trace trace;
  try {
    trace = trace_from_json(r.trace_json, "log record " + std::to_string(r.id));
  } catch (const Error& e) {  // a trace that does not parse, or no longer applies
    session.note(std::string("skipping a record the search cannot read: ") + e.what());
    return;
  }
  timings.add(trace, r.trace_json, r.error, r.median_s, r.reference_s, r.purpose);
  if (!trial) return;  // a retime repeats a schedule the search was told of already
  const double latency = ok(r) ? r.median_s : std::nan("");
  policy.tell(trace, latency);
  if (!status.default_measured && trace_steps_key(trace) == default_steps_key_) {
    status.default_measured = true;
    timings.set_default(r.trace_json);  // as stored: its decisions may differ from today's default's
  }
  logged.traces.push_back(std::move(trace));
  logged.latencies_s.push_back(latency);
}

CandidateMeasurer& TuningTask::measurer(const SessionContext& session) {
  if (!measurer_) {
    const auto start = std::chrono::steady_clock::now();
    measurer_ = session.machine.measurer(task.dag, measure_options(options_));
    measurer_setup_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  if (status.default_s)
    measurer_->set_run_timeout(
        std::min(options_.measure.run_timeout_s, std::max(kMinRunTimeout_s, kSlowerThanDefault * *status.default_s)));
  return *measurer_;
}

WorkloadInfo TuningTask::workload() const {
  return WorkloadInfo{status.workload_key, task.dag.to_text(), task.dag.flops()};
}

void TuningTask::refresh_latencies() {
  ScheduleTimings::Latencies l = timings.latencies();
  status.best_s = l.best_s;
  status.best_trace_json = l.best_json;
  status.default_s = l.default_s;
}

}  // namespace tessel
