// The timings of each schedule a tuning task has measured — its trial and its retimes — and what
// the tuner reads from them: the best and default latencies (by latency_estimate over scaled_latency,
// the rule replay uses) and which leaders to re-time next (see "re-timing the leaders" in search/tuner.h).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "database/tuning_log.h"
#include "schedule/state/trace.h"

namespace tessel {

class ScheduleTimings {
 public:
  // `default_json`: the default schedule's trace JSON as the log stores it.
  explicit ScheduleTimings(std::string default_json = "") : default_json_(std::move(default_json)) {}
  void set_default(std::string json) { default_json_ = std::move(json); }
  // Starts a new round: records added from now on belong to it (see retime_list's `spread`).
  void next_round() { ++round_; }

  // One record of the schedule `json` (its trace JSON as stored). An Ok record adds a timing; any
  // record counts as a timing tried; one that disqualifies() rules the schedule out. `reference_s`:
  // the record's yardstick (MeasureRecord::reference_s; 0: none).
  void add(const Trace& trace, const std::string& json, ErrorCode error, double median_s, double reference_s = 0,
           RecordPurpose purpose = RecordPurpose::Trial);

  struct Latencies {
    double best_s = 0;  // lowest estimate of a schedule not ruled out (0: none)
    std::string best_json;
    double default_s = 0;  // the default's estimate (0: no Ok timing, or ruled out)
  };
  Latencies latencies() const;

  struct Retime {
    std::string json;
    Trace trace;
  };
  // What to measure again now: the `leaders` fastest schedules and the default (when leaders > 0),
  // those of them with fewer than `wanted` timings tried, each as often as it lacks them, the
  // schedules taking turns (A B C A B C ...), so that every one meets the machine's states alike.
  // With `spread`, each of them once at most, and none timed in this round already: a leader's
  // timings then lie rounds apart, in different states of a shared machine, not seconds apart in one.
  // With `own_round` too, a schedule whose trial is this round's is re-timed now (none re-timed in
  // this round already): under the yardstick a retime is relative to the default beside it, so one
  // taken seconds after the trial is no less telling, and a lucky trial is found out a round sooner.
  std::vector<Retime> retime_list(int leaders, int wanted, bool spread = false, bool own_round = false) const;
  // The default schedule as the yardstick of retimes (see "re-timing the leaders" in search/tuner.h),
  // once it has an Ok timing and is not ruled out.
  std::optional<Retime> yardstick() const;

 private:
  struct Timing {
    double median_s, reference_s;
  };
  struct Entry {
    Trace trace;
    std::vector<Timing> timings;  // of the Ok records
    int tried = 0;                // records, failed ones included (a timeout is a timing tried)
    int round = 0;                // the round of its latest record
    int retime_round = -1;        // the round of its latest retime
    int order = 0;                // when it was first added: ties go to the schedule recorded first
    bool ruled_out = false;
  };
  bool rankable(const Entry& e) const { return !e.ruled_out && !e.timings.empty(); }
  // latency_estimate over the entry's scaled_latency at `level` (that of references_), as replay ranks
  // it: over its referenced timings alone when it has any (see scaled_latency).
  static double estimate(const Entry& e, double level);

  std::map<std::string, Entry> entries_;  // by trace JSON
  std::vector<double> references_;  // every Ok record's yardstick
  std::string default_json_;
  int round_ = 0;
};

}  // namespace tessel
