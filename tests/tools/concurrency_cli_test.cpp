// Two tessel sessions writing one tuning log at the same time (e.g. two tuning jobs sharing a --db):
// both finish, neither loses a record, each has its own session, and the file stays sound.
#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "subprocess.h"

using tessel_test::export_records;
using tessel_test::read_text;
using tessel_test::RunResult;
using tessel_test::start_tessel;
using tessel_test::TempDir;
using tessel_test::tessel;
using tessel_test::wait_for;

TEST_CASE("two sessions on one new --db at once both record everything", "[cli][db][concurrency]") {
  TempDir dir;
  std::string db = dir.file("shared.db");  // created by whichever session gets there first
  const std::vector<std::string> tune = {"tune", "--op", "matmul", "--param",  "M=8", "--param",       "N=8", "--param",
                                         "K=8",  "--db", db,       "--trials", "12",  "--min-time-ms", "2"};
  // --batch 1 commits each candidate on its own, so the two sessions' commits interleave.
  const std::vector<std::string> measure = {
      "measure", "--op",    "matmul", "--param",       "M=8", "--param",
      "N=4",     "--param", "K=8",    "--db",          db,    "--random-schedules",
      "24",      "--batch", "1",      "--min-time-ms", "2"};
  pid_t tuner = start_tessel(tune, dir.file("tune.txt"));
  pid_t measurer = start_tessel(measure, dir.file("measure.txt"));
  int tune_exit = wait_for(tuner);
  int measure_exit = wait_for(measurer);
  INFO("tune:\n" << read_text(dir.file("tune.txt")) << "\nmeasure:\n" << read_text(dir.file("measure.txt")));
  REQUIRE(tune_exit == 0);
  REQUIRE(measure_exit == 0);

  RunResult check = tessel({"db", "check", "--db", db});
  CHECK(check.exit_code == 0);
  CHECK(check.out == "ok\n");

  std::vector<nlohmann::json> records = export_records(db);
  std::map<std::string, int> trials;  // per session
  std::set<std::string> workloads;
  for (const nlohmann::json& r : records) {
    workloads.insert(r["workload"]["key"].get<std::string>());
    if (r.value("purpose", "trial") == "trial")
      ++trials[r["session"]["label"].get<std::string>() + " " + r["session"]["start_time"].get<std::string>()];
  }
  CHECK(workloads.size() == 2);
  REQUIRE(trials.size() == 2);  // two sessions, each with its own records
  std::multiset<int> counts;
  for (const auto& [session, count] : trials) counts.insert(count);
  CHECK(counts == std::multiset<int>{12, 24});  // the tuner's trials and the measurer's candidates
  nlohmann::json info = nlohmann::json::parse(tessel({"db", "info", "--db", db, "--json"}).out);
  CHECK(info["sessions"] == 2);
  CHECK(info["records"] == records.size());
}
