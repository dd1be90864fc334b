// Options of `tessel tune` and `tessel measure` that change what a session does, each checked by
// what ends up in the tuning log or by what the session's processes did: --time-budget-s, --all,
// repeated --case, --builders, --build-timeout, and --target cuda on a machine without a GPU.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "subprocess.h"
#include "tests/skip.h"

using tessel_test::export_records;
using tessel_test::RunResult;
using tessel_test::TempDir;
using tessel_test::tessel;

namespace {

using Args = std::vector<std::string>;

Args concat(Args a, const Args& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

const Args kTinyMatmul = {"--op", "matmul", "--param", "M=8", "--param", "N=8", "--param", "K=8"};

// Three cases that tune in a second each.
std::string tiny_suite(const TempDir& dir) {
  return dir.write("tiny.json", R"({"cases": [
    {"name": "mm_a", "op": "matmul", "params": {"M": 8, "N": 8, "K": 8}},
    {"name": "mm_b", "op": "matmul", "params": {"M": 8, "N": 4, "K": 8}},
    {"name": "ew_c", "op": "elementwise", "params": {"shape": "8x8", "inputs": 1, "expr": "x*2"}}
  ]})");
}

// The tensor expression of a suite case, as the log stores it with each record.
std::string case_text(const std::string& suite, const std::string& name) {
  RunResult r = tessel({"show", "--suite", suite, "--case", name, "--emit", "te"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return r.out;
}

bool is_trial(const nlohmann::json& record) { return record.value("purpose", "trial") == "trial"; }

// Trial records per workload text.
std::map<std::string, int> trials_per_workload(const std::string& db) {
  std::map<std::string, int> trials;
  for (const nlohmann::json& r : export_records(db))
    if (is_trial(r)) ++trials[r["workload"]["text"].get<std::string>()];
  return trials;
}

// Runs tessel to its end and returns the most builder processes it had at once, as seen by looking
// at its children over and over.
int most_builders_at_once(const Args& args, const std::string& output, int* exit_code) {
  pid_t pid = tessel_test::start_tessel(args, output);
  int most = 0;
  for (;;) {
    int status = 0;
    pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) {
      *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      return most;
    }
    int builders = 0;
    for (pid_t child : tessel_test::live_children_of(pid)) builders += tessel_test::is_builder(child);
    most = std::max(most, builders);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // a sampling pace, not a deadline
  }
}

}  // namespace

TEST_CASE("tune --time-budget-s stops after the round that passes the budget", "[cli][tune]") {
  TempDir dir;
  std::string db = dir.file("log.db");
  // 400 trials take minutes; the first round alone passes a budget of one second.
  RunResult r = tessel(
      concat({"tune", "--db", db, "--trials", "400", "--time-budget-s", "1", "--min-time-ms", "2"}, kTinyMatmul));
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::Contains("time budget"));
  int trials = 0;
  for (const nlohmann::json& record : export_records(db)) trials += is_trial(record);
  CHECK(trials > 0);
  CHECK(trials < 400);
  CHECK_THAT(r.out, Catch::Contains(std::to_string(trials) + " candidates measured this session"));
}

TEST_CASE("tune --case twice tunes those cases, --all then every case of the suite", "[cli][tune]") {
  TempDir dir;
  std::string db = dir.file("log.db");
  std::string suite = tiny_suite(dir);
  const std::string a = case_text(suite, "mm_a"), b = case_text(suite, "mm_b"), c = case_text(suite, "ew_c");
  REQUIRE(a != b);

  RunResult two = tessel({"tune", "--suite", suite, "--case", "mm_a", "--case", "ew_c", "--db", db, "--trials", "1",
                          "--min-time-ms", "2"});
  INFO(two.out << two.err);
  REQUIRE(two.exit_code == 0);
  CHECK(trials_per_workload(db) == std::map<std::string, int>{{a, 1}, {c, 1}});
  CHECK_THAT(two.out, Catch::Contains("mm_a") && Catch::Contains("ew_c"));
  CHECK_THAT(two.out, !Catch::Contains("mm_b"));

  // --all adds the case not tuned yet; the other two already have their trial in the log.
  RunResult all = tessel({"tune", "--suite", suite, "--all", "--db", db, "--trials", "1", "--min-time-ms", "2"});
  INFO(all.out << all.err);
  REQUIRE(all.exit_code == 0);
  CHECK(trials_per_workload(db) == std::map<std::string, int>{{a, 1}, {b, 1}, {c, 1}});
  CHECK_THAT(all.out, Catch::Contains("mm_a") && Catch::Contains("mm_b") && Catch::Contains("ew_c"));
}

TEST_CASE("tune and measure with --builders 1 never build two candidates at once", "[cli][tune][measure]") {
  TempDir dir;
  int exit_code = -1;
  // Without the option this machine builds on every core; with it, one builder at a time.
  SECTION("tune") {
    int most = most_builders_at_once(
        concat({"tune", "--db", dir.file("tune.db"), "--trials", "8", "--min-time-ms", "2", "--builders", "1"},
               kTinyMatmul),
        dir.file("tune.txt"), &exit_code);
    INFO(tessel_test::read_text(dir.file("tune.txt")));
    REQUIRE(exit_code == 0);
    CHECK(most <= 1);
  }
  SECTION("measure") {
    int most = most_builders_at_once(concat({"measure", "--db", dir.file("measure.db"), "--random-schedules", "8",
                                             "--min-time-ms", "2", "--builders", "1"},
                                            kTinyMatmul),
                                     dir.file("measure.txt"), &exit_code);
    INFO(tessel_test::read_text(dir.file("measure.txt")));
    REQUIRE(exit_code == 0);
    CHECK(most <= 1);
  }
}

TEST_CASE("measure --build-timeout records a build over it as build_timeout", "[cli][measure]") {
  TempDir dir;
  std::string db = dir.file("log.db");
  // No build (a fork, lowering, LLVM and a link) finishes within a millisecond.
  RunResult r = tessel(
      concat({"measure", "--db", db, "--random-schedules", "2", "--min-time-ms", "2", "--build-timeout", "0.001"},
             kTinyMatmul));
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  std::vector<nlohmann::json> records = export_records(db);
  REQUIRE(records.size() == 2);
  for (const nlohmann::json& record : records) {
    CHECK(record["error"] == "build_timeout");
    CHECK(nlohmann::json::parse(record["settings_json"].get<std::string>())["build_timeout_s"] == 0.001);
  }
}

TEST_CASE("tune --target cuda without a GPU is bad input that says so and leaves the log alone", "[cli][tune][cuda]") {
  RunResult probe = tessel(concat({"run", "--target", "cuda", "--min-time", "0.01"}, kTinyMatmul));
  if (probe.exit_code == 0) {
    tessel_test::skip_test("a CUDA device is present; this checks the message on a machine without one");
    return;
  }
  TempDir dir;
  std::string db = dir.file("log.db");
  RunResult seed = tessel(concat({"measure", "--db", db, "--schedule", "default", "--min-time-ms", "2"}, kTinyMatmul));
  REQUIRE(seed.exit_code == 0);
  const std::vector<nlohmann::json> before = export_records(db);
  const std::string info_before = tessel({"db", "info", "--db", db}).out;

  RunResult r = tessel(concat({"tune", "--target", "cuda", "--db", db, "--trials", "4"}, kTinyMatmul));
  INFO(r.out << r.err);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("error:") && Catch::Contains("no CUDA device"));
  CHECK(export_records(db) == before);
  CHECK(tessel({"db", "info", "--db", db}).out == info_before);  // no session either
}

TEST_CASE("gpu: tune --target cuda tunes on the GPU and records correct trials", "[cli][tune][gpu]") {
  RunResult probe = tessel(concat({"run", "--target", "cuda", "--min-time", "0.01"}, kTinyMatmul));
  if (probe.exit_code != 0) {
    tessel_test::skip_test("no usable CUDA device: " + probe.err);
    return;
  }
  TempDir dir;
  std::string db = dir.file("log.db");
  RunResult r = tessel(concat({"tune", "--target", "cuda", "--db", db, "--trials", "6", "--seed", "2"}, kTinyMatmul));
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  int trials = 0;
  for (const nlohmann::json& record : export_records(db)) {
    CHECK(record["target"]["kind"] == "cuda");
    if (!is_trial(record)) continue;
    ++trials;
    CHECK(record["error"] == "ok");  // each checked against the reference before it was timed
  }
  CHECK(trials == 6);
  RunResult best = tessel(concat({"run", "--target", "cuda", "--db", db, "--best", "--check", "--min-time", "0.01"},
                                 kTinyMatmul));
  INFO(best.out << best.err);
  CHECK(best.exit_code == 0);
}
