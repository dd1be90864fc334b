// Exit code 1: `check` and `run --check` report a kernel whose values are not the reference's.
//
// No legal schedule computes a wrong answer (steps are checked and lowering keeps the semantics), so
// the wrong values come from float32 itself: exp(200 x) overflows float32 for x > 0.44, while the
// float64 reference interpreter holds it (inputs lie in [-1, 1)). Every schedule of this workload
// is wrong in the same honest way, which is what these commands must catch.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "subprocess.h"

using tessel_test::RunResult;
using tessel_test::tessel;

namespace {

const std::vector<std::string> kOverflow = {"--op",      "elementwise", "--param",
                                            "shape=8x8", "--param",     "expr=exp(x*200)"};

std::vector<std::string> with(std::vector<std::string> head, const std::vector<std::string>& tail = {}) {
  head.insert(head.end(), kOverflow.begin(), kOverflow.end());
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

}  // namespace

TEST_CASE("check exits 1 and says FAIL for each schedule whose values are wrong", "[cli][check]") {
  RunResult r = tessel(with({"check"}, {"--random-schedules", "2"}));
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.out,
             Catch::StartsWith("FAIL default: ") && Catch::Contains("wrong values in Y") && Catch::Contains("got inf"));
  CHECK_THAT(r.out, Catch::EndsWith("checked 3 schedules: 0 correct\n"));
  CHECK(r.err.empty());
}

TEST_CASE("run --check exits 1 and reports the wrong values", "[cli][run]") {
  RunResult text = tessel(with({"run", "--check", "--min-time", "0.01"}));
  INFO(text.out << text.err);
  CHECK(text.exit_code == 1);
  CHECK_THAT(text.out, Catch::Contains("WRONG: ") && Catch::Contains("wrong values in Y"));

  RunResult json = tessel(with({"run", "--check", "--min-time", "0.01", "--json"}));
  INFO(json.out << json.err);
  CHECK(json.exit_code == 1);
  nlohmann::json j = nlohmann::json::parse(json.out);
  CHECK(j["correct"] == false);
  CHECK_THAT(j["error"].get<std::string>(), Catch::Contains("wrong values in Y"));

  // Without --check nothing is compared: the same kernel runs and exits 0.
  CHECK(tessel(with({"run", "--min-time", "0.01"})).exit_code == 0);
}
