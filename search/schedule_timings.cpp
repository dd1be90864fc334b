#include "search/schedule_timings.h"

#include <algorithm>
#include <tuple>

namespace tessel {

void ScheduleTimings::add(const Trace& trace, const std::string& json, ErrorCode error, double median_s,
                          double reference_s, RecordPurpose purpose) {
  auto [it, inserted] = entries_.try_emplace(json);
  Entry& e = it->second;
  if (inserted) {
    e.trace = trace;
    e.order = static_cast<int>(entries_.size());
  }
  ++e.tried;
  e.round = round_;
  if (purpose == RecordPurpose::Retime) e.retime_round = round_;
  if (error == ErrorCode::Ok && median_s > 0) {
    e.timings.push_back({median_s, reference_s});
    if (reference_s > 0) references_.push_back(reference_s);
  }
  if (disqualifies(error)) e.ruled_out = true;
}

double ScheduleTimings::estimate(const Entry& e, double level) {
  std::vector<double> medians, references;
  for (const Timing& t : e.timings) {
    medians.push_back(t.median_s);
    references.push_back(t.reference_s);
  }
  return schedule_estimate(medians, references, level);
}

ScheduleTimings::Latencies ScheduleTimings::latencies() const {
  Latencies out;
  const double level = latency_estimate(references_);
  int best_order = 0;
  for (const auto& [json, e] : entries_) {
    if (!rankable(e)) continue;
    double latency = estimate(e, level);
    if (out.best_s == 0 || latency < out.best_s || (latency == out.best_s && e.order < best_order)) {
      out.best_s = latency;
      out.best_json = json;
      best_order = e.order;
    }
    if (json == default_json_) out.default_s = latency;
  }
  return out;
}

std::vector<ScheduleTimings::Retime> ScheduleTimings::retime_list(int leaders, int wanted, bool spread,
                                                                  bool own_round) const {
  if (leaders <= 0) return {};
  std::vector<std::tuple<double, int, const std::string*>> ranked;  // estimate, then first added
  const double level = latency_estimate(references_);
  for (const auto& [json, e] : entries_)
    if (rankable(e)) ranked.emplace_back(estimate(e, level), e.order, &json);
  std::sort(ranked.begin(), ranked.end());
  std::vector<const std::string*> chosen;
  for (size_t i = 0; i < ranked.size() && i < static_cast<size_t>(leaders); ++i) chosen.push_back(std::get<2>(ranked[i]));
  auto def = entries_.find(default_json_);
  if (def != entries_.end() && rankable(def->second) &&
      std::find(chosen.begin(), chosen.end(), &def->first) == chosen.end())
    chosen.push_back(&def->first);
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
  auto def = entries_.find(default_json_);
  if (def == entries_.end() || !rankable(def->second)) return std::nullopt;
  return Retime{def->first, def->second.trace};
}

}  // namespace tessel
