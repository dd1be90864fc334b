// Numbers on the command line: NaN, infinities, values past their range and integers past int64 are
// refused as bad input (exit 2, an `error:` naming the option) before any log is opened or made.
#include <catch2/catch.hpp>
#include <filesystem>

#include "subprocess.h"

using tessel_test::RunResult;
using tessel_test::TempDir;
using tessel_test::tessel;

TEST_CASE("numeric options refuse NaN, infinities and out-of-range values", "[cli][hostile]") {
  TempDir dir;
  const std::string db = dir.file("log.db");
  const std::vector<std::string> matmul = {"--op", "matmul", "--param", "M=4", "--param", "N=4", "--param", "K=4"};
  auto with = [&](std::vector<std::string> head, std::vector<std::string> tail) {
    head.insert(head.end(), matmul.begin(), matmul.end());
    head.insert(head.end(), tail.begin(), tail.end());
    return head;
  };
  struct Case {
    std::vector<std::string> args;
    std::string option;
  };
  for (const Case& c : {
           Case{with({"run"}, {"--min-time", "nan"}), "--min-time"},
           Case{with({"run"}, {"--min-time", "-1"}), "--min-time"},
           Case{with({"run"}, {"--min-time", "1e400"}), "--min-time"},
           Case{with({"measure"}, {"--db", db, "--min-time-ms", "nan", "--random-schedules", "1"}), "--min-time-ms"},
           Case{with({"measure"}, {"--db", db, "--build-timeout", "inf", "--random-schedules", "1"}), "--build-timeout"},
           Case{with({"measure"}, {"--db", db, "--run-timeout", "0", "--random-schedules", "1"}), "--run-timeout"},
           Case{with({"tune"}, {"--db", db, "--trials", "4", "--time-budget-s", "nan"}), "--time-budget-s"},
           Case{with({"tune"}, {"--db", db, "--trials", "4", "--min-time-ms", "-inf"}), "--min-time-ms"},
           Case{with({"tune"}, {"--db", db, "--trials", "99999999999999999999"}), "--trials"},
           Case{with({"tune"}, {"--db", db, "--trials", "0"}), "--trials"},
           Case{{"demo", "--time-budget-s", "nan", "--db", db}, "--time-budget-s"},
       }) {
    RunResult r = tessel(c.args);
    INFO(r.command << "\n" << r.err);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::StartsWith("error:") && Catch::Contains(c.option));
  }
  CHECK_FALSE(std::filesystem::exists(db));
}
