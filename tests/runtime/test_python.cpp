// The Python module (tools/python/tessel, ctypes over libtessel_runtime.so) run by /usr/bin/python3
// on models and expected outputs written here: tests/runtime/python_check.py holds the checks.
// Reported skipped where there is no python3 or no NumPy.
#include <unistd.h>

#include <catch2/catch.hpp>

#include "tests/runtime/runtime_test_models.h"
#include "tests/skip.h"

using namespace tessel_test;

#ifndef TESSEL_PYTHON_ENV
#define TESSEL_PYTHON_ENV ""  // a sanitizer build sets what python3 needs to load a sanitized library
#endif

namespace {

constexpr int64_t M = TwoKernelModel::M, K = TwoKernelModel::K, N = TwoKernelModel::N;

template <typename T>
void write_values(const std::string& path, const std::vector<T>& values) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(values.data());
  write_bytes(path, std::vector<uint8_t>(bytes, bytes + values.size() * sizeof(T)));
}

}  // namespace

TEST_CASE("the Python module runs models with NumPy arrays and raises the runtime's errors", "[runtime][python]") {
  if (access("/usr/bin/python3", X_OK) != 0) {
    skip_test("no /usr/bin/python3");
    return;
  }
  TempDir dir;
  const TwoKernelModel t = cpu_two_kernel_model();
  t.model.write(dir.file("model.tsl"));
  std::vector<uint8_t> bad = read_bytes(dir.file("model.tsl"));
  bad[bad.size() - 100] ^= 1;
  write_bytes(dir.file("bad.tsl"), bad);
  for (int k = 0; k < 3; ++k) {
    const std::vector<float> x = random_floats(M * K, 300 + k);
    write_values(dir.file("x" + std::to_string(k) + ".bin"), x);
    write_values(dir.file("y" + std::to_string(k) + ".bin"), t.reference(x));
  }
  cpu_typed_model().write(dir.file("typed.tsl"));
  const std::vector<float> x = random_floats(32, 8);
  std::vector<int64_t> n(32);
  std::vector<uint8_t> m(32);
  for (int i = 0; i < 32; ++i) {
    n[i] = 3 - i;
    m[i] = i % 4 != 1;
  }
  write_values(dir.file("tx.bin"), x);
  write_values(dir.file("tn.bin"), n);
  write_values(dir.file("tm.bin"), m);
  write_values(dir.file("ty.bin"), typed_reference(x, n, m));

  const std::string source = TESSEL_SOURCE_DIR;
  std::string output;
  const int status =
      run_command("env " TESSEL_PYTHON_ENV " PYTHONPATH=" + source + "/tools/python TESSEL_RUNTIME_LIBRARY=" + TESSEL_RUNTIME_LIBRARY +
                      " /usr/bin/python3 " + source + "/tests/runtime/python_check.py " + dir.file(""),
                  output);
  INFO(output);
  if (status == kSkipReturnCode) {
    skip_test(output);
    return;
  }
  CHECK(status == 0);
  CHECK(output.find("ok") != std::string::npos);
}
