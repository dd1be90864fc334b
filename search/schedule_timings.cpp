#include "search/schedule_timings.h"

#include <algorithm>

namespace tessel {

void ScheduleTimings::add(const Trace& trace, const std::string& json, ErrorCode error, double median_s,
                          double reference_s, RecordPurpose purpose) {
  auto [it, inserted] = entries_.try_emplace(json);
  Entry& e = it->second;
  if (inserted) e.trace = trace;
  ++e.tried;
  e.round = round_;
  if (purpose == RecordPurpose::Retime) e.retime_round = round_;
  ranking_.add(json, error, median_s, reference_s);
}

ScheduleTimings::Latencies ScheduleTimings::latencies() const {
  Latencies out;
  if (std::optional<ScheduleRanking::Ranked> best = ranking_.best()) {
    out.best_s = best->estimate_s;
    out.best_json = *best->trace_json;
  }
  out.default_s = ranking_.estimate(default_json_);
  return out;
}

std::vector<ScheduleTimings::Retime> ScheduleTimings::retime_list(int leaders, int wanted, bool spread,
                                                                  bool own_round) const {
  if (leaders <= 0) return {};
  std::vector<const std::string*> chosen;
  for (const ScheduleRanking::Ranked& r : ranking_.ranked()) {
    if (chosen.size() == static_cast<size_t>(leaders)) break;
    chosen.push_back(r.trace_json);
  }
  const bool default_chosen =
      std::any_of(chosen.begin(), chosen.end(), [&](const std::string* json) { return *json == default_json_; });
  if (ranking_.estimate(default_json_) && !default_chosen) chosen.push_back(&entries_.find(default_json_)->first);
  std::vector<Retime> order;
  for (int turn = 1; turn < wanted; ++turn)
    for (const std::string* json : chosen) {
      const Entry& e = entries_.at(*json);
      if (e.tried + turn > wanted) continue;
      if (spread && (turn > 1 || e.retime_round == round_ || (!own_round && e.round == round_))) continue;
      order.push_back(Retime{*json, e.trace});
    }
  return order;
}

std::optional<ScheduleTimings::Retime> ScheduleTimings::yardstick() const {
  if (!ranking_.estimate(default_json_)) return std::nullopt;
  return Retime{default_json_, entries_.at(default_json_).trace};
}

}  // namespace tessel
