#include "database/schedule_ranking.h"

#include <algorithm>
#include <cmath>

namespace tessel {

double latency_estimate(std::vector<double> medians) {
  if (medians.empty()) return 0;
  auto upper = medians.begin() + medians.size() / 2;
  std::nth_element(medians.begin(), upper, medians.end());
  return *upper;
}

double scaled_latency(double median_s, double reference_s, double level) {
  return reference_s > 0 && level > 0 ? median_s * level / reference_s : median_s;
}

bool disqualifies(ErrorCode error) { return error == ErrorCode::WrongAnswer || error == ErrorCode::RuntimeError; }

bool is_timing(ErrorCode error, double median_s) {
  return error == ErrorCode::Ok && std::isfinite(median_s) && median_s > 0;
}

void ScheduleRanking::add(const std::string& trace_json, ErrorCode error, double median_s, double reference_s,
                          int64_t record_id) {
  auto [it, inserted] = schedules_.try_emplace(trace_json);
  Schedule& s = it->second;
  if (inserted) order_.push_back(&it->first);
  if (disqualifies(error)) s.ruled_out = true;
  if (!is_timing(error, median_s)) return;
  const double reference = std::isfinite(reference_s) && reference_s > 0 ? reference_s : 0;
  s.timings.push_back({median_s, reference, record_id});
  if (reference > 0) references_.push_back(reference);
}

double ScheduleRanking::level() const { return latency_estimate(references_); }

bool ScheduleRanking::referenced(const Schedule& s) const {
  return !references_.empty() &&
         std::any_of(s.timings.begin(), s.timings.end(), [](const Timing& t) { return t.reference_s > 0; });
}

double ScheduleRanking::estimate_of(const Schedule& s, double level) const {
  const bool only_referenced = level > 0 && referenced(s);
  std::vector<double> counted;
  for (const Timing& t : s.timings)
    if (!only_referenced || t.reference_s > 0) counted.push_back(scaled_latency(t.median_s, t.reference_s, level));
  return latency_estimate(std::move(counted));
}

std::vector<ScheduleRanking::Ranked> ScheduleRanking::ranked() const {
  const double lvl = level();
  std::vector<Ranked> out;  // in the order added, so that the stable sort gives ties to the first
  for (const std::string* key : order_) {
    const Schedule& s = schedules_.at(*key);
    if (!s.ruled_out && !s.timings.empty()) out.push_back(Ranked{key, estimate_of(s, lvl)});
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Ranked& a, const Ranked& b) { return a.estimate_s < b.estimate_s; });
  return out;
}

std::optional<ScheduleRanking::Ranked> ScheduleRanking::best() const {
  const double lvl = level();
  std::optional<Ranked> best;
  for (const std::string* key : order_) {
    const Schedule& s = schedules_.at(*key);
    if (s.ruled_out || s.timings.empty()) continue;
    const double e = estimate_of(s, lvl);
    if (!best || e < best->estimate_s) best = Ranked{key, e};
  }
  return best;
}

std::optional<double> ScheduleRanking::estimate(const std::string& trace_json) const {
  auto it = schedules_.find(trace_json);
  if (it == schedules_.end() || it->second.ruled_out || it->second.timings.empty()) return std::nullopt;
  return estimate_of(it->second, level());
}

std::optional<int64_t> ScheduleRanking::representative(const std::string& trace_json) const {
  auto it = schedules_.find(trace_json);
  if (it == schedules_.end() || it->second.ruled_out || it->second.timings.empty()) return std::nullopt;
  const Schedule& s = it->second;
  const double lvl = level();
  const double e = estimate_of(s, lvl);
  const bool only_referenced = lvl > 0 && referenced(s);
  for (const Timing& t : s.timings) {
    if (only_referenced && t.reference_s <= 0) continue;
    if (scaled_latency(t.median_s, t.reference_s, lvl) == e) return t.record_id;
  }
  return s.timings.front().record_id;
}

}  // namespace tessel
