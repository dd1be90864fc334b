#include "search/leader_retiming.h"

#include <algorithm>

#include "search/tuning_records.h"

namespace tessel {
namespace {

// With the yardstick: D A D B D (the default owing no timing of its own then).
std::vector<ScheduleTimings::Retime> around_yardstick(const std::vector<ScheduleTimings::Retime>& leaders,
                                                      const ScheduleTimings::Retime& yard) {
  std::vector<ScheduleTimings::Retime> order{yard};
  for (const ScheduleTimings::Retime& r : leaders) {
    if (r.json == yard.json) continue;
    order.push_back(r);
    order.push_back(yard);
  }
  return order;
}

// The records of one retime batch. With the yardstick, the batch alternates default and leader: a
// leader's reference is the lower of its neighbouring default timings that ran (a moment's load only
// slows a timing), and the default's own record carries its own median, so that it counts at the
// level too.
std::vector<MeasureRecord> retime_records(const TuningTask& task, const SessionContext& session,
                                          const std::vector<ScheduleTimings::Retime>& order,
                                          const std::vector<Candidate>& candidates,
                                          const std::vector<MeasureResult>& results, const std::string& settings_json,
                                          bool yardstick) {
  auto ok_median = [&](size_t k) { return results[k].error == ErrorCode::Ok ? results[k].median_s : 0.0; };
  const WorkloadInfo workload = task.workload();
  std::vector<MeasureRecord> records;
  for (size_t k = 0; k < results.size(); ++k) {
    MeasureRecord r = make_record(workload, session.target, candidates[k].trace, results[k], settings_json);
    r.trace_json = order[k].json;  // the string its trial is stored under
    r.purpose = RecordPurpose::Retime;
    if (yardstick && k % 2 == 0) r.reference_s = ok_median(k);
    if (yardstick && k % 2 == 1) {
      const double before = ok_median(k - 1), after = k + 1 < results.size() ? ok_median(k + 1) : 0.0;
      r.reference_s = before > 0 && after > 0 ? std::min(before, after) : std::max(before, after);
    }
    records.push_back(std::move(r));
  }
  return records;
}

}  // namespace

void retime_leaders(TuningTask& task, const SessionContext& session, bool spread) {
  const LeaderOptions& o = session.options.leaders;
  const bool yardstick = resolved_yardstick(session.options);
  // Each pass can reveal a leader that was lucky, which lets the next schedule in; a few passes settle
  // it (settling without `spread` goes on until the leaders hold their timings, at most 4 passes per
  // leader: a pass re-times only schedules still owed timings).
  const int passes = spread ? o.leaders : 4 * o.leaders;
  for (int pass = 0; pass < passes; ++pass) {
    const std::optional<ScheduleTimings::Retime> yard = yardstick ? task.timings.yardstick() : std::nullopt;
    std::vector<ScheduleTimings::Retime> order =
        task.timings.retime_list(o.leaders, o.timings, spread, yard.has_value());
    if (order.empty()) break;
    if (yard) order = around_yardstick(order, *yard);
    CandidateMeasurer& measurer = task.measurer(session);
    std::vector<Candidate> candidates;
    for (const ScheduleTimings::Retime& r : order) candidates.push_back(Candidate{r.trace, Fault::None});
    std::vector<MeasureResult> results = measurer.measure(candidates);
    std::vector<MeasureRecord> records =
        retime_records(task, session, order, candidates, results, measurer.settings_json(), yard.has_value());
    session.log.append(records);
    for (size_t k = 0; k < results.size(); ++k) {
      task.timings.add(order[k].trace, order[k].json, results[k].error, results[k].median_s, records[k].reference_s,
                       RecordPurpose::Retime);
      ++task.status.retimes;
    }
  }
  task.refresh_latencies();
}

}  // namespace tessel
