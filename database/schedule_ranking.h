// The one rule that decides which schedule of a (workload, target) is the best: replay
// (TuningLog::best, `tessel run --best`, `tessel db best`), the tuner's leaders and its progress, and
// the model build all rank through ScheduleRanking.
//
// A schedule's records are its trial and its retimes (RecordPurpose). A record with a timing is one
// whose error is Ok and whose median is finite and positive. The rule:
//   - a schedule with a record that disqualifies() it (a wrong answer, a crash) is never ranked;
//   - a schedule without a timing is not ranked;
//   - the others are ranked by their estimate, lowest first; equal estimates go to the schedule
//     added first (the log's order), so the answer does not depend on how records are grouped.
// The estimate is latency_estimate (the upper median) over the schedule's counted latencies: with
// the yardstick (MeasureRecord::reference_s), a record's counted latency is its median scaled to the
// pair's usual speed (scaled_latency), and a schedule with referenced records counts those alone —
// its trial made it a leader by being fast, luck included, and only its retimes are free of that pick.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "measure/error_code.h"

namespace tessel {

// The upper median of `medians` (for two values, the larger); 0 for none.
double latency_estimate(std::vector<double> medians);

// A record timed against the yardstick (reference_s > 0) counts as median_s * level / reference_s:
// what it would have read with the machine as fast as it usually is for this (workload, target),
// `level` being the latency_estimate of every reference of the pair's timed records. A record without
// a reference, or a pair without any (level 0), counts as its median.
double scaled_latency(double median_s, double reference_s, double level);

// Whether a record with this outcome rules its schedule out, whatever its other records say: it
// computed a wrong answer or crashed at least once. (A timeout or a failed build of a schedule that
// also ran correctly says more about the machine at the time.)
bool disqualifies(ErrorCode error);

// Whether a record with this outcome and median is a timing the ranking counts.
bool is_timing(ErrorCode error, double median_s);

class ScheduleRanking {
 public:
  // One record of the schedule `trace_json` (its trace as stored). `record_id` names it in
  // representative(). Records are added in the log's order.
  void add(const std::string& trace_json, ErrorCode error, double median_s, double reference_s, int64_t record_id = 0);

  struct Ranked {
    const std::string* trace_json;
    double estimate_s;
  };
  // Every ranked schedule, lowest estimate first (ties: the schedule added first).
  std::vector<Ranked> ranked() const;
  std::optional<Ranked> best() const;
  // The schedule's estimate; nullopt when it is not ranked (ruled out, no timing, never added).
  std::optional<double> estimate(const std::string& trace_json) const;
  // The record whose counted latency is the schedule's estimate (the first such one, among its
  // referenced records when it has any); nullopt when the schedule is not ranked.
  std::optional<int64_t> representative(const std::string& trace_json) const;

 private:
  struct Timing {
    double median_s, reference_s;
    int64_t record_id;
  };
  struct Schedule {
    std::vector<Timing> timings;
    bool ruled_out = false;
  };
  double level() const;
  bool referenced(const Schedule& s) const;
  double estimate_of(const Schedule& s, double level) const;

  std::unordered_map<std::string, Schedule> schedules_;
  std::vector<const std::string*> order_;  // keys of schedules_, in the order first added
  std::vector<double> references_;         // every timing's yardstick (those above 0)
};

}  // namespace tessel
