#include "tools/tuning_log_glue.h"

#include <fstream>
#include <ostream>

#include "codegen/llvm/llvm_backend.h"

namespace tessel {

namespace {

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  return "";
}

}  // namespace

TargetInfo host_llvm_target() {
  const HostTarget& host = host_target();
  TargetInfo t;
  t.kind = "llvm";
  t.arch = host.cpu;
  t.device_name = cpu_model_name();
  t.toolkit_version = "LLVM 19";
  t.cpu_features = host.features;
  return t;
}

WorkloadInfo workload_info(const Workload& w) { return WorkloadInfo{w.dag.workload_key(), w.dag.to_text(), w.dag.flops()}; }

std::optional<Trace> best_recorded_trace(const std::string& db, const Workload& w, std::ostream& err) {
  TargetInfo target = host_llvm_target();
  try {
    TuningLog log = TuningLog::open(db, TuningLog::Mode::ReadOnly);
    std::optional<MeasureRecord> best = log.best(w.dag.workload_key(), target);
    if (!best) {
      err << "warning: no tuned schedule for workload " << w.dag.workload_key() << " (" << w.name << ") on target "
          << target.kind << " " << target.arch << " in " << db << "; using the default schedule\n";
      return std::nullopt;
    }
    return trace_from_json(best->trace_json, db + ": record " + std::to_string(best->id));
  } catch (const Error& e) {
    err << "error: cannot use tuning log " << db << ": " << e.what() << "; using the default schedule\n";
    return std::nullopt;
  }
}

}  // namespace tessel
