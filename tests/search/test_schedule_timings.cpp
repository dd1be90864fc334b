// ScheduleTimings: the tuner's view of each schedule's timings — best and default latencies by the
// replay rule, and which leaders it re-times, how often, in which order.
#include "search/schedule_timings.h"

#include <catch2/catch.hpp>

using namespace tessel;

namespace {

Trace named(const std::string& name) {
  Trace t;
  t.sketch = name;
  return t;
}

// Adds a record of schedule `name` (its JSON is its name here).
void add(ScheduleTimings& timings, const std::string& name, double ms, ErrorCode error = ErrorCode::Ok) {
  timings.add(named(name), name, error, ms * 1e-3);
}

std::vector<std::string> names(const std::vector<ScheduleTimings::Retime>& list) {
  std::vector<std::string> out;
  for (const auto& r : list) {
    CHECK(r.trace.sketch == r.json);  // the trace travels with its JSON
    out.push_back(r.json);
  }
  return out;
}

}  // namespace

TEST_CASE("schedule timings: best and default by the upper median and ruled-out schedules never best",
          "[search][retime]") {
  ScheduleTimings t("default");
  CHECK_FALSE(t.latencies().best_s.has_value());
  add(t, "default", 2.0);
  add(t, "lucky", 1.0);
  add(t, "steady", 1.5);
  CHECK(t.latencies().best_json == "lucky");
  add(t, "lucky", 2.2);  // two timings: the slower counts
  CHECK(t.latencies().best_json == "steady");
  CHECK(t.latencies().best_s == Approx(1.5e-3));
  CHECK(t.latencies().default_s == Approx(2.0e-3));
  add(t, "steady", 0, ErrorCode::RunTimeout);  // tried, no timing, not ruled out
  CHECK(t.latencies().best_json == "steady");
  add(t, "steady", 0, ErrorCode::WrongAnswer);
  CHECK(t.latencies().best_json == "default");  // lucky: upper median of {1.0, 2.2} = 2.2
  add(t, "default", 0, ErrorCode::RuntimeError);
  CHECK_FALSE(t.latencies().default_s.has_value());
  CHECK(t.latencies().best_json == "lucky");
}

TEST_CASE("schedule timings: the leaders and the default are re-timed in turns up to the wanted count",
          "[search][retime]") {
  ScheduleTimings t("default");
  for (auto [name, ms] : {std::pair{"a", 1.0}, {"b", 1.1}, {"c", 1.2}, {"d", 1.3}, {"default", 3.0}}) add(t, name, ms);
  CHECK(t.retime_list(0, 3).empty());
  CHECK(t.retime_list(3, 1).empty());  // one timing wanted: every schedule has it
  // The 3 fastest and the default, 2 more timings each, taking turns.
  CHECK(names(t.retime_list(3, 3)) == std::vector<std::string>{"a", "b", "c", "default", "a", "b", "c", "default"});
  // A timing tried counts even when it failed: a leader that keeps timing out is not listed forever.
  add(t, "a", 0, ErrorCode::RunTimeout);
  add(t, "a", 0, ErrorCode::BuildTimeout);
  add(t, "b", 1.1);
  CHECK(names(t.retime_list(3, 3)) == std::vector<std::string>{"b", "c", "default", "c", "default"});
  // A ruled-out schedule is no leader; the next one takes its place.
  add(t, "c", 0, ErrorCode::WrongAnswer);
  CHECK(names(t.retime_list(3, 3)) == std::vector<std::string>{"b", "d", "default", "d", "default"});
  // The default among the leaders is listed once.
  ScheduleTimings u("default");
  add(u, "default", 1.0);
  add(u, "x", 2.0);
  CHECK(names(u.retime_list(3, 2)) == std::vector<std::string>{"default", "x"});
}

TEST_CASE("schedule timings: spread, a schedule gets one timing a round, none in its trial's round",
          "[search][retime]") {
  ScheduleTimings t("default");
  t.next_round();
  for (auto [name, ms] : {std::pair{"a", 1.0}, {"b", 1.1}, {"default", 3.0}}) add(t, name, ms);
  // All timed in this round (their trials): nothing now, unless all at once.
  CHECK(t.retime_list(3, 3, true).empty());
  CHECK(names(t.retime_list(3, 3)) == std::vector<std::string>{"a", "b", "default", "a", "b", "default"});
  t.next_round();
  add(t, "c", 0.9);  // this round's trial leads
  CHECK(names(t.retime_list(3, 3, true)) == std::vector<std::string>{"a", "b", "default"});
  add(t, "a", 1.0);
  add(t, "b", 1.1);
  add(t, "default", 3.0);
  CHECK(t.retime_list(3, 3, true).empty());  // every leader has had its timing of the round
  t.next_round();
  // c's second timing; a, b and the default their third (fastest first).
  CHECK(names(t.retime_list(3, 3, true)) == std::vector<std::string>{"c", "a", "b", "default"});
  add(t, "a", 1.0);
  add(t, "b", 1.1);
  add(t, "c", 2.0);  // c was lucky: upper median of {0.9, 2.0} = 2.0
  add(t, "default", 3.0);
  t.next_round();
  CHECK(t.latencies().best_json == "a");
  // c is no leader now; the leaders a and b and the default have their three.
  CHECK(t.retime_list(2, 3, true).empty());
  CHECK(names(t.retime_list(3, 3, true)) == std::vector<std::string>{"c"});
}

TEST_CASE("schedule timings: referenced timings rank relative to the default's level, as replay ranks them",
          "[search][retime]") {
  ScheduleTimings t("default");
  CHECK_FALSE(t.yardstick().has_value());  // no timing of the default yet
  add(t, "default", 2.0);
  REQUIRE(t.yardstick().has_value());
  CHECK(t.yardstick()->json == "default");
  // Raw, "calm" (timed in a fast moment) beats "busy" (timed in slow ones); beside the default at
  // the same moments, busy is the faster: 0.90 of it against calm's 0.96.
  add(t, "calm", 1.44);
  add(t, "busy", 2.7);
  CHECK(t.latencies().best_json == "calm");
  t.add(named("calm"), "calm", ErrorCode::Ok, 1.44e-3, 1.5e-3);
  t.add(named("busy"), "busy", ErrorCode::Ok, 2.7e-3, 3.0e-3);
  t.add(named("busy"), "busy", ErrorCode::Ok, 1.8e-3, 2.0e-3);
  t.add(named("calm"), "calm", ErrorCode::Ok, 1.46e-3, 1.5e-3);
  // Level: the upper median of the references {1.5, 3.0, 2.0, 1.5} = 2.0 ms. calm: its referenced
  // {1.92, 1.947} -> 1.947 (its raw trial no longer counts); busy: {1.8, 1.8} -> 1.8.
  CHECK(t.latencies().best_json == "busy");
  CHECK(t.latencies().best_s == Approx(1.8e-3));
  CHECK(t.latencies().default_s == Approx(2.0e-3));
  // A trial that only its luck made a leader: one raw timing, then one beside the default.
  add(t, "lucky", 1.0);
  CHECK(t.latencies().best_json == "lucky");
  t.add(named("lucky"), "lucky", ErrorCode::Ok, 2.1e-3, 2.0e-3, RecordPurpose::Retime);
  CHECK(t.latencies().best_json == "busy");  // 2.1 relative to the default at 2.0: its trial no longer counts
  std::vector<std::string> leaders = names(t.retime_list(1, 4));
  CHECK(leaders == std::vector<std::string>{"busy", "default", "default", "default"});
  add(t, "default", 0, ErrorCode::WrongAnswer);
  CHECK_FALSE(t.yardstick().has_value());  // ruled out: no yardstick
}

TEST_CASE("schedule timings: with own_round a schedule is re-timed in its trial's round, once", "[search][retime]") {
  ScheduleTimings t("default");
  for (double ms : {2.0, 2.1, 1.9}) add(t, "default", ms);  // owes no timing
  t.next_round();
  add(t, "a", 1.0);  // this round's trials
  add(t, "b", 1.5);
  CHECK(names(t.retime_list(2, 3, true)) == std::vector<std::string>{});  // spread: not in its own round
  CHECK(names(t.retime_list(2, 3, true, true)) == std::vector<std::string>{"a", "b"});
  t.add(named("a"), "a", ErrorCode::Ok, 1.1e-3, 2.0e-3, RecordPurpose::Retime);
  t.add(named("b"), "b", ErrorCode::Ok, 1.6e-3, 2.0e-3, RecordPurpose::Retime);
  CHECK(names(t.retime_list(2, 3, true, true)).empty());  // re-timed in this round already
  t.next_round();
  CHECK(names(t.retime_list(2, 3, true, true)) == std::vector<std::string>{"a", "b"});
}

TEST_CASE("schedule timings: equal estimates go to the schedule added first, as replay breaks ties",
          "[search][retime]") {
  ScheduleTimings t("default");
  add(t, "zz", 1.0);
  add(t, "aa", 1.0);
  CHECK(t.latencies().best_json == "zz");
  CHECK(names(t.retime_list(1, 2)) == std::vector<std::string>{"zz"});
}
