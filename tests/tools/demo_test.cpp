// `tessel demo`: a short tuning session of the suite cases it is given, with a temporary log that it
// removes, or the log the user names, which `run --best` then replays.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "subprocess.h"

using tessel_test::export_records;
using tessel_test::RunResult;
using tessel_test::source_file;
using tessel_test::TempDir;
using tessel_test::tessel;

namespace {

// A suite case small enough that two trials take a second or two.
const char* const kCase = "gelu_tanh_1024";

// The line of the final table for `name`, or "" when there is none.
std::string table_row(const std::string& text, const std::string& name) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind(name + " ", 0) == 0) return line;
  return "";
}

}  // namespace

TEST_CASE("demo tunes the case it is given and removes its temporary log", "[cli][demo]") {
  TempDir temporary;  // the demo's temporary directory (TMPDIR): its log and the measurer's files
  RunResult r = tessel({"demo", "--suite", source_file("suites/operators.json"), "--case", kCase, "--trials", "2"},
                       {{"TMPDIR", temporary.path().string()}});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::StartsWith("tessel demo: tuning 1 suite cases on this CPU, 2 trials each"));
  CHECK_THAT(table_row(r.out, kCase), Catch::Contains(" 2/2 "));
  CHECK_THAT(r.out, Catch::Contains("the demo's tuning log was temporary"));
  CHECK(std::filesystem::is_empty(temporary.path()));  // nothing left behind
}

TEST_CASE("demo --db keeps the log, and run --best replays its winner", "[cli][demo]") {
  TempDir dir;
  std::string db = dir.file("demo.db");
  RunResult r =
      tessel({"demo", "--suite", source_file("suites/operators.json"), "--case", kCase, "--trials", "2", "--db", db});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, !Catch::Contains("temporary"));
  int trials = 0;
  for (const nlohmann::json& record : export_records(db)) trials += record.value("purpose", "trial") == "trial";
  CHECK(trials == 2);

  RunResult best = tessel({"run", "--suite", source_file("suites/operators.json"), "--case", kCase, "--db", db,
                           "--best", "--min-time", "0.01", "--json"});
  INFO(best.out << best.err);
  REQUIRE(best.exit_code == 0);
  CHECK(nlohmann::json::parse(best.out)["schedule_source"] == "tuning log");
}
