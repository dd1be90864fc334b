// `tessel demo`: the model flow on the built-in CNN (import, build untuned, tune, build tuned, check
// each tuned kernel in the whole model, run both), with a temporary folder that it removes, or the
// tuning log the user names.
#include <catch2/catch.hpp>
#include <filesystem>
#include <regex>
#include <sstream>
#include <string>

#include "subprocess.h"

using tessel_test::export_records;
using tessel_test::RunResult;
using tessel_test::TempDir;
using tessel_test::tessel;

namespace {

// The largest difference between the two builds' outputs the demo reports, or -1 when the line is
// missing.
double reported_difference(const std::string& out) {
  std::smatch m;
  if (!std::regex_search(out, m, std::regex("differ by at most ([0-9.e+-]+)"))) return -1;
  return std::stod(m[1].str());
}

}  // namespace

TEST_CASE("demo builds, tunes, rebuilds and runs the built-in model, and removes its folder", "[cli][demo]") {
  TempDir temporary;  // the demo's temporary directory (TMPDIR): its model, log, builds and the measurer's files
  RunResult r = tessel({"demo", "--trials", "6", "--time-budget-s", "60"}, {{"TMPDIR", temporary.path().string()}});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::StartsWith("tessel demo: a small CNN"));
  CHECK_THAT(r.out, Catch::Contains("before tuning (default schedules)"));
  CHECK_THAT(r.out, Catch::Contains("after tuning"));
  CHECK_THAT(r.out, Catch::Contains("speed-up") && Catch::Contains("5 rounds:"));
  // Each tuned kernel that is not its default was tried in the whole model, and the verdict said.
  CHECK_THAT(r.out, Catch::Contains("checking each tuned kernel inside the whole model"));
  const std::regex checked("in the model [0-9.]+x its default -> (tuned schedule kept|default kept)");
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);)
    if (line.find("in the model") != std::string::npos) CHECK(std::regex_search(line, checked));
  // The speed-up in words: faster, slower, or within the rounds' spread.
  CHECK_THAT(r.out, Catch::Contains("Tuning made the model faster.") || Catch::Contains("ran slower here") ||
                        Catch::Contains("About the same"));
  // Both builds compute the same network: only the loop schedules differ.
  const double difference = reported_difference(r.out);
  CHECK(difference >= 0);
  CHECK(difference < 1e-4);
  CHECK_THAT(r.out, Catch::Contains("The tuning log was temporary"));
  CHECK(std::filesystem::is_empty(temporary.path()));  // nothing left behind
}

TEST_CASE("demo --db keeps the log with the trials it measured", "[cli][demo]") {
  TempDir dir;
  const std::string db = dir.file("demo.db");
  RunResult r = tessel({"demo", "--trials", "6", "--time-budget-s", "60", "--db", db});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, !Catch::Contains("temporary"));
  int trials = 0;
  for (const nlohmann::json& record : export_records(db)) trials += record.value("purpose", "trial") == "trial";
  CHECK(trials >= 1);
  CHECK(trials <= 6);

  // A second demo on the same log resumes: the budget is spent, so nothing more is measured.
  RunResult again = tessel({"demo", "--trials", "6", "--time-budget-s", "60", "--db", db});
  INFO(again.out << again.err);
  REQUIRE(again.exit_code == 0);
  int after = 0;
  for (const nlohmann::json& record : export_records(db)) after += record.value("purpose", "trial") == "trial";
  CHECK(after == trials);
}

TEST_CASE("demo refuses a bad budget before doing anything", "[cli][demo]") {
  TempDir temporary;
  RunResult r = tessel({"demo", "--time-budget-s", "nan"}, {{"TMPDIR", temporary.path().string()}});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("error:"));
  CHECK(std::filesystem::is_empty(temporary.path()));
}
