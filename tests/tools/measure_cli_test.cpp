// `tessel measure`: random search through the harness, every candidate recorded, faults contained.
#include <sys/prctl.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "subprocess.h"

using tessel_test::RunResult;
using tessel_test::TempDir;
using tessel_test::export_records;
using tessel_test::live_children;
using tessel_test::reap_exited_children;
using tessel_test::tessel;

namespace {

std::vector<std::string> measure_args(const std::string& db, std::vector<std::string> extra) {
  std::vector<std::string> args = {"measure", "--op", "matmul", "--param", "M=16", "--param", "N=16", "--param",
                                   "K=16",    "--db", db,       "--target", "llvm", "--min-time-ms", "5"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

}  // namespace

TEST_CASE("measure records every candidate with its code and leaves no process behind", "[cli][measure]") {
  // Orphans of the session would be re-parented to this process instead of init.
  REQUIRE(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);
  TempDir dir;
  std::string db = dir.file("log.db");
  RunResult r = tessel(measure_args(db, {"--random-schedules", "12", "--inject", "crash@3,wrong@7,oob@9"}));
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("12 candidates measured and recorded"));
  CHECK(r.err.find('\r') == std::string::npos);  // no progress line when stderr is not a terminal
  // tessel has exited: every runner and builder it started was reaped before, none was orphaned.
  CHECK(live_children().empty());
  reap_exited_children();

  // A candidate that never finishes costs one record. Its run timeout is short, so it runs alone:
  // a good candidate beside it would fail whenever the machine is slow enough.
  RunResult hung = tessel(measure_args(db, {"--random-schedules", "1", "--seed", "100", "--inject", "hang@0",
                                            "--run-timeout", "0.5"}));
  INFO(hung.out << hung.err);
  REQUIRE(hung.exit_code == 0);
  CHECK(live_children().empty());
  reap_exited_children();

  std::vector<nlohmann::json> records = export_records(db);
  REQUIRE(records.size() == 13);
  CHECK(records[3]["error"] == "runtime_error");
  CHECK(records[7]["error"] == "wrong_answer");
  CHECK((records[9]["error"] == "runtime_error" || records[9]["error"] == "wrong_answer"));
  CHECK(records[12]["error"] == "run_timeout");
  for (int i : {3, 7, 9, 12}) CHECK_THAT(records[i]["error_message"].get<std::string>(), Catch::Contains("injected"));
  int ok = 0;
  for (const auto& rec : records) ok += rec["error"] == "ok";
  CHECK(ok >= 6);

  RunResult best = tessel({"db", "best", "--db", db, "--json"});
  REQUIRE(best.exit_code == 0);
  nlohmann::json rows = nlohmann::json::parse(best.out);
  REQUIRE(rows.size() == 1);
  // A fresh log: candidate i is record i + 1.
  for (int i : {3, 7, 9, 12}) CHECK(rows[0]["record_id"] != i + 1);
}

TEST_CASE("measure rejects bad input before measuring anything", "[cli][measure]") {
  TempDir dir;
  std::string db = dir.file("log.db");
  struct Case {
    std::vector<std::string> extra;
    const char* says;
  };
  for (const Case& c : {Case{{"--random-schedules", "2", "--inject", "boom@1"}, "unknown fault kind 'boom'"},
                        Case{{"--random-schedules", "2", "--inject", "crash@5"}, "candidate 5 does not exist"},
                        Case{{}, "nothing to measure"},
                        Case{{"--random-schedules", "2", "--no-flush-l2"}, "--no-flush-l2 is for --target cuda"}}) {
    RunResult r = tessel(measure_args(db, c.extra));
    INFO(r.command << "\n" << r.err);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::StartsWith("error:") && Catch::Contains(c.says));
  }
  RunResult no_db = tessel({"measure", "--op", "matmul", "--param", "M=4", "--param", "N=4", "--param", "K=4",
                            "--random-schedules", "1"});
  CHECK(no_db.exit_code == 2);
  CHECK_THAT(no_db.err, Catch::Contains("--db"));
  CHECK_FALSE(std::filesystem::exists(db));
}
