// What the CLI records in and replays from the tuning log for CPU runs.
#pragma once

#include <optional>
#include <string>

#include "codegen/cuda/cuda_backend.h"
#include "database/tuning_log.h"
#include "schedule/state/trace.h"
#include "search/tuning_machine.h"  // host_llvm_target, cuda_target
#include "tools/workload.h"

namespace tessel {

WorkloadInfo workload_info(const Workload& w);

// Appends one measurement (after checking) in its own session; returns the record id once the
// commit has returned.
struct Measurement {
  std::vector<double> samples_s;
  double median_s = 0;
  bool correct = true;
  std::string error_message;
  double build_s = 0, run_s = 0;
  std::string settings_json;
};
// Seconds as milliseconds, for the JSON `tessel run` prints.
std::vector<double> milliseconds(const std::vector<double>& seconds);

int64_t record_measurement(TuningLog& log, const Workload& w, const TargetInfo& target, const Trace& trace,
                           const Measurement& m);

// The best recorded schedule for `w` on `target` whose trace replays on `w`, or nullopt after a
// warning on `err` that the default schedule is used instead (the log holds none). Throws
// DatabaseError when the log cannot be used (missing, damaged, not a tessel log).
std::optional<Trace> best_recorded_trace(const std::string& db, const Workload& w, std::ostream& err,
                                         const TargetInfo& target = host_llvm_target());

}  // namespace tessel
