// Tuning log -> training samples.
#include "search/log_samples.h"

#include <optional>

#include "schedule/te/dag_parser.h"

namespace tessel {

LogSamples samples_from_log(const TuningLog& log, const LogSampleFilter& filter) {
  LogSamples out;
  const FeatureTarget target{filter.target_kind == "cuda"};
  for (const MeasureRecord& best : log.best_per_workload_target()) {
    const std::string& key = best.workload.key;
    if (best.target.kind != filter.target_kind) continue;
    if (!filter.only_workload.empty() && key != filter.only_workload) continue;
    if (!filter.exclude_workload.empty() && key == filter.exclude_workload) continue;
    const std::string group = key + "/" + filter.target_kind;
    std::optional<ComputeDAG> dag;
    try {
      dag = parse_dag_text(best.workload.text, "workload " + key);
    } catch (const Error& e) {
      out.skipped.push_back("workload " + key + ": " + e.what());
      continue;
    }
    for (const MeasureRecord& r : log.records(key, best.target)) {
      if (r.purpose != RecordPurpose::Trial) continue;  // a retime repeats a trial's schedule
      try {
        Trace trace = trace_from_json(r.trace_json, "record " + std::to_string(r.id));
        ProgramFeatures features = features_of_schedule(*dag, trace, target);
        double latency = r.error == ErrorCode::Ok ? r.median_s : 0.0;
        out.samples.push_back(TrainingSample{std::move(features), group, latency});
        out.workload_keys.push_back(key);
      } catch (const Error& e) {
        out.skipped.push_back("workload " + key + " record " + std::to_string(r.id) + ": " + e.what());
      }
    }
  }
  return out;
}

}  // namespace tessel
