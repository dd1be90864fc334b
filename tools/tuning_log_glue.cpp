#include "tools/tuning_log_glue.h"

#include <fstream>
#include <ostream>

namespace tessel {

std::vector<double> milliseconds(const std::vector<double>& seconds) {
  std::vector<double> ms;
  for (double s : seconds) ms.push_back(s * 1e3);
  return ms;
}

WorkloadInfo workload_info(const Workload& w) { return WorkloadInfo{w.dag.workload_key(), w.dag.to_text(), w.dag.flops()}; }

int64_t record_measurement(TuningLog& log, const Workload& w, const TargetInfo& target, const Trace& trace,
                           const Measurement& m) {
  log.begin_session(SessionInfo{"tessel run: " + w.name, m.settings_json, std::string("tessel ") + TESSEL_VERSION, "", ""});
  MeasureRecord r;
  r.workload = workload_info(w);
  r.target = target;
  r.trace_json = trace_to_json(trace);
  r.samples_s = m.samples_s;
  r.median_s = m.median_s;
  r.error = m.correct ? ErrorCode::Ok : ErrorCode::WrongAnswer;
  r.error_message = m.error_message.substr(0, 1000);
  r.build_s = m.build_s;
  r.run_s = m.run_s;
  r.settings_json = m.settings_json;
  // A schedule the log holds already for this target is measured again, not tried: a retime.
  if (log.holds(r.workload.key, target, r.trace_json)) r.purpose = RecordPurpose::Retime;
  return log.append({r}).at(0);
}

std::optional<Trace> best_recorded_trace(const std::string& db, const Workload& w, std::ostream& err,
                                         const TargetInfo& target) {
  // A log that cannot be used is bad input (DatabaseError): the caller asked for its schedule, and
  // running another one instead would answer a different question.
  TuningLog log = TuningLog::open(db, TuningLog::Mode::ReadOnly);
  // A schedule whose trace does not apply to this workload (an imported record, say) is passed
  // over for the next best, with a warning.
  RecordValidator applies = [&](const MeasureRecord& r) -> std::optional<std::string> {
    try {
      replay(w.dag, trace_from_json(r.trace_json, db + ": record " + std::to_string(r.id)));
      return std::nullopt;
    } catch (const std::exception& e) {
      err << "warning: skipping record " << r.id << " of " << db << ": " << e.what() << "\n";
      return std::string(e.what());
    }
  };
  std::optional<MeasureRecord> best = log.best(w.dag.workload_key(), target, applies);
  if (!best) {
    err << "warning: no tuned schedule for workload " << w.dag.workload_key() << " (" << w.name << ") on target "
        << target.kind << " " << target.arch << " in " << db << "; using the default schedule\n";
    return std::nullopt;
  }
  return trace_from_json(best->trace_json, db + ": record " + std::to_string(best->id));
}

}  // namespace tessel
