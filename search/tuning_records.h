// What a search writes to the tuning log, and the one check it makes of the log before it adds to it.
#pragma once

#include <string>

#include "database/tuning_log.h"
#include "measure/measurer.h"
#include "schedule/state/trace.h"

namespace tessel {

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

}  // namespace tessel
