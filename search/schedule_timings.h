// The timings of each schedule a tuning task has measured — its trial and its retimes — and what
// the tuner reads from them: the best and default latencies (by the ranking rule replay uses,
// database/schedule_ranking.h) and which leaders to re-time next (see search/leader_retiming.h).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "database/schedule_ranking.h"
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

  // One record of the schedule `json` (its trace JSON as stored), in the log's order. Any record
  // counts as a timing tried. `reference_s`: the record's yardstick (MeasureRecord::reference_s; 0:
  // none).
  void add(const Trace& trace, const std::string& json, ErrorCode error, double median_s, double reference_s = 0,
           RecordPurpose purpose = RecordPurpose::Trial);

  struct Latencies {
    std::optional<double> best_s;  // the best ranked schedule's estimate
    std::string best_json;
    std::optional<double> default_s;  // the default's estimate, when it is ranked
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
  // The default schedule as the yardstick of retimes, once it is ranked (a correct timing, never
  // ruled out).
  std::optional<Retime> yardstick() const;

 private:
  struct Entry {
    Trace trace;
    int tried = 0;          // records, failed ones included (a timeout is a timing tried)
    int round = 0;          // the round of its latest record
    int retime_round = -1;  // the round of its latest retime
  };

  ScheduleRanking ranking_;
  std::map<std::string, Entry> entries_;  // by trace JSON
  std::string default_json_;
  int round_ = 0;
};

}  // namespace tessel
