#include "search/tuning_records.h"

#include "schedule/te/error.h"

namespace tessel {

MeasureRecord make_record(const WorkloadInfo& workload, const TargetInfo& target, const Trace& trace,
                          const MeasureResult& result, const std::string& settings_json) {
  MeasureRecord rec;
  rec.workload = workload;
  rec.target = target;
  rec.trace_json = trace_to_json(trace);
  rec.samples_s = result.samples_s;
  rec.median_s = result.median_s;
  rec.error = result.error;
  rec.error_message = result.message;
  rec.build_s = result.build_s;
  rec.run_s = result.run_s;
  rec.settings_json = settings_json;
  return rec;
}

void check_flush_matches(const TuningLog& log, const std::string& workload_key, const TargetInfo& target, bool flush,
                         const std::string& workload_name) {
  for (const auto& [id, settings_json] : log.settings(workload_key, target)) {
    std::optional<bool> logged = settings_flush(settings_json);
    if (!logged || *logged == flush) continue;
    const bool gpu = target.kind == "cuda";
    throw InputError(
        "the tuning log holds timings of " + workload_name + " (workload " + workload_key + ") on " + target.kind +
        " " + target.arch + " taken " + (*logged ? "with " : "without ") + (gpu ? "an L2 flush" : "a cache flush") +
        " before every sample (record " + std::to_string(id) + "); this command times " +
        (flush ? "with one" : "without one") +
        ", and the two do not compare: use another --db, or time as the log did (" +
        (gpu ? "--no-flush-l2 times without" : "on the CPU only `tessel measure --flush-cache` times with one") + ")");
  }
}

}  // namespace tessel
