// The one Catch2 main shared by every test executable. Exit status: 0 when every test that ran
// passed, kSkipReturnCode when they passed but one of them was skipped (tests/skip.h), otherwise
// non-zero as Catch2 reports it (never kSkipReturnCode, so a failure never reads as a skip).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "tests/skip.h"

namespace tessel_test {
namespace {
bool skipped = false;
}  // namespace

void skip_test(const std::string& why) {
  WARN("skipped: " << why);
  skipped = true;
}

}  // namespace tessel_test

int main(int argc, char* argv[]) {
  using tessel_test::kSkipReturnCode;
  int status = Catch::Session().run(argc, argv);
  if (status != 0) return status == kSkipReturnCode ? 1 : status;
  return tessel_test::skipped ? kSkipReturnCode : 0;
}
