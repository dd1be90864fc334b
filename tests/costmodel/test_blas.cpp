// The ranker's BLAS, opened at run time: its products agree with a plain triple loop at odd shapes and
// every transpose, on one thread and several, and it runs the kernels tessel asked for.
#include <catch2/catch.hpp>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <tuple>
#include <random>
#include <vector>

#include "costmodel/blas.h"
#include "tests/skip.h"

using namespace tessel;

namespace {

// C = alpha op(A) op(B) + beta C, row-major, the plain way.
void reference(bool ta, bool tb, int m, int n, int k, float alpha, const std::vector<float>& a,
               const std::vector<float>& b, float beta, std::vector<float>& c) {
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double sum = 0;
      for (int p = 0; p < k; ++p) {
        const float x = ta ? a[static_cast<size_t>(p) * m + i] : a[static_cast<size_t>(i) * k + p];
        const float y = tb ? b[static_cast<size_t>(j) * k + p] : b[static_cast<size_t>(p) * n + j];
        sum += static_cast<double>(x) * y;
      }
      float& out = c[static_cast<size_t>(i) * n + j];
      out = static_cast<float>(alpha * sum + beta * out);
    }
}

}  // namespace

TEST_CASE("blas::sgemm matches a triple loop at odd shapes and every transpose", "[costmodel][blas]") {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int threads : {1, 2}) {
    blas::set_threads(threads);
    for (auto [m, n, k] : {std::tuple{7, 61, 127}, std::tuple{127, 7, 61}, std::tuple{1, 1000, 3}, std::tuple{61, 127, 771}})
      for (bool ta : {false, true})
        for (bool tb : {false, true}) {
          std::vector<float> a(static_cast<size_t>(m) * k), b(static_cast<size_t>(k) * n), c(static_cast<size_t>(m) * n);
          for (float& v : a) v = u(rng);
          for (float& v : b) v = u(rng);
          for (float& v : c) v = u(rng);
          std::vector<float> want = c;
          reference(ta, tb, m, n, k, 0.5f, a, b, 0.25f, want);
          blas::sgemm(ta, tb, m, n, k, 0.5f, a.data(), ta ? m : k, b.data(), tb ? k : n, 0.25f, c.data(), n);
          INFO("m " << m << " n " << n << " k " << k << " ta " << ta << " tb " << tb << " threads " << threads);
          size_t off = 0;  // elements farther than rounding allows (or not a number)
          for (size_t i = 0; i < c.size(); ++i) off += !(std::abs(c[i] - want[i]) <= 1e-4f * static_cast<float>(k));
          CHECK(off == 0);
        }
  }
}

TEST_CASE("blas runs the kernels chosen for this CPU unless OPENBLAS_CORETYPE said otherwise", "[costmodel][blas]") {
  const std::string name = blas::core_name();
  INFO("OpenBLAS core: " << name);
  CHECK(!name.empty());
  const std::string chosen = blas::core_for_this_cpu();
  if (chosen.empty()) {
    tessel_test::skip_test("this CPU has neither AVX-512 nor AVX2: OpenBLAS chose its kernels (" + name + ")");
    return;
  }
  // Unset: tessel set it for the load and put it back (no child process inherits it); set: whoever ran
  // the test chose, and OpenBLAS runs that.
  const char* set = std::getenv("OPENBLAS_CORETYPE");
  // OpenBLAS reports the core it runs by its own spelling ("SkylakeX" can read "skylakex").
  auto lower = [](std::string s) {
    for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return s;
  };
  if (set == nullptr) CHECK(lower(name) == lower(chosen));
  else CHECK(lower(name) == lower(set));
}
