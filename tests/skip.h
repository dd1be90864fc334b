// Skipping a test that cannot run on this machine (no GPU, no NVRTC). The test calls skip_test()
// and returns; the test program then exits with kSkipReturnCode instead of 0 (a failure still exits
// non-zero, and never with that code), and CTest, told SKIP_RETURN_CODE, reports the test as
// skipped rather than passed.
#pragma once

#include <string>

namespace tessel_test {

inline constexpr int kSkipReturnCode = 77;

// Marks the running test as skipped, with a warning that says why. The caller returns at once.
void skip_test(const std::string& why);

}  // namespace tessel_test
