// Tuning log -> training samples.
#include "search/log_samples.h"

#include <memory>
#include <optional>

#include "schedule/te/dag_parser.h"
#include "schedule/te/parallel.h"

namespace tessel {

namespace {

// One trial record to turn into a sample, with its workload's program: only what the sample needs
// of the record (a log's records carry their code and settings too).
struct Pending {
  const ComputeDAG* dag;
  const std::string* key;
  int64_t id;
  std::string trace_json;
  double latency;  // 0 for a failed record
};

}  // namespace

LogSamples samples_from_log(const TuningLog& log, const LogSampleFilter& filter) {
  LogSamples out;
  const FeatureTarget target{filter.target == TargetKind::Cuda};
  // The log is read here, one workload after another; the features, the slow part, on every core.
  std::vector<std::unique_ptr<ComputeDAG>> dags;
  std::vector<std::unique_ptr<std::string>> keys;  // stable addresses for Pending::key
  std::vector<Pending> pending;
  for (const MeasureRecord& best : log.best_per_workload_target()) {
    const std::string& key = best.workload.key;
    if (best.target.kind != target_kind_name(filter.target)) continue;
    if (!filter.only_workloads.empty() && filter.only_workloads.count(key) == 0) continue;
    if (filter.exclude_workloads.count(key) != 0) continue;
    try {
      dags.push_back(std::make_unique<ComputeDAG>(parse_dag_text(best.workload.text, "workload " + key)));
    } catch (const Error& e) {
      out.skipped.push_back("workload " + key + ": " + e.what());
      continue;
    }
    keys.push_back(std::make_unique<std::string>(key));
    for (MeasureRecord& r : log.records(key, best.target))
      if (r.purpose == RecordPurpose::Trial)  // a retime repeats a trial's schedule
        pending.push_back(Pending{dags.back().get(), keys.back().get(), r.id, std::move(r.trace_json),
                                  r.error == ErrorCode::Ok ? r.median_s : 0.0});
  }

  std::vector<std::optional<ProgramFeatures>> features(pending.size());
  std::vector<std::string> why(pending.size());
  parallel_indices(pending.size(), [&](size_t i) {
    Pending& p = pending[i];
    try {
      Trace trace = trace_from_json(p.trace_json, "record " + std::to_string(p.id));
      features[i] = features_of_schedule(*p.dag, trace, target);
    } catch (const Error& e) {
      why[i] = "workload " + *p.key + " record " + std::to_string(p.id) + ": " + e.what();
    }
    std::string().swap(p.trace_json);  // done with it
  });
  for (size_t i = 0; i < pending.size(); ++i) {
    if (!features[i]) {
      out.skipped.push_back(std::move(why[i]));
      continue;
    }
    const std::string& key = *pending[i].key;
    out.samples.push_back(TrainingSample{std::move(*features[i]), key + "/" + target_kind_name(filter.target), pending[i].latency});
    out.workload_keys.push_back(key);
  }
  return out;
}

}  // namespace tessel
