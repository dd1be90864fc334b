// Training samples for the cost model from a tuning log: every measured record of one target kind,
// its program rebuilt from the workload text the log stores and its features extracted.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "costmodel/cost_model.h"
#include "database/tuning_log.h"
#include "schedule/target_kind.h"

namespace tessel {

struct LogSampleFilter {
  TargetKind target = TargetKind::Llvm;
  std::set<std::string> only_workloads;     // non-empty: only records of these workload keys
  std::set<std::string> exclude_workloads;  // every workload but these
};

struct LogSamples {
  std::vector<TrainingSample> samples;
  std::vector<std::string> workload_keys;  // per sample
  std::vector<std::string> skipped;        // "workload K record N: why" for records that gave no sample
};

// Every trial record (not the retimes) of every (workload, target) of the filter's kind, in the
// log's order. The group of a sample is "<workload key>/<target kind>"; failed records become
// samples with latency 0 (throughput 0). A record whose workload text no longer parses, whose trace
// no longer parses, applies or lowers goes to `skipped` with the reason. Only pairs that replay has
// a schedule for are visited (the log enumerates pairs through best_per_workload_target).
LogSamples samples_from_log(const TuningLog& log, const LogSampleFilter& filter);

}  // namespace tessel
