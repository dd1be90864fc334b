// Math functions generated as LLVM IR, at scalar and vector lane counts, against <cmath> in double.
#include "codegen/llvm/llvm_backend.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

#include "tests/codegen/kernel_test_util.h"

using namespace tessel;
using namespace tessel::testing;

namespace {

const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kDenormMin = std::numeric_limits<float>::denorm_min();

// Y[k] = fn(X[k] [, Z[k]]) over n elements in vectors of `lanes` (n a multiple of lanes).
LoweredFunc math_kernel(MathFn fn, int lanes, int64_t n) {
  Expr index = lanes == 1 ? var("v") : make_ramp(var("v") * lanes, make_int(1), lanes);
  std::vector<Expr> args{fload("X", index)};
  std::vector<BufferParam> params{param("X", DType::Float32, n)};
  if (fn == MathFn::Pow) {
    args.push_back(fload("Z", index));
    params.push_back(param("Z", DType::Float32, n));
  }
  params.push_back(param("Y", DType::Float32, n, true));
  return LoweredFunc{std::string("math_") + to_string(fn) + "_" + std::to_string(lanes), params,
                     serial("v", n / lanes, make_store("Y", index, make_call(fn, args)))};
}

double reference(MathFn fn, double x, double y) {
  switch (fn) {
    case MathFn::Exp: return std::exp(x);
    case MathFn::Log: return std::log(x);
    case MathFn::Sqrt: return std::sqrt(x);
    case MathFn::Rsqrt: return 1.0 / std::sqrt(x);
    case MathFn::Tanh: return std::tanh(x);
    case MathFn::Sigmoid: return 1.0 / (1.0 + std::exp(-x));
    case MathFn::Erf: return std::erf(x);
    case MathFn::Abs: return std::fabs(x);
    case MathFn::Pow: return std::pow(x, y);
  }
  return NAN;
}

// Pads to a multiple of 48 (every lane count tested divides it) by repeating 1.
std::vector<float> padded(std::vector<float> v) {
  while (v.size() % 48) v.push_back(1.0f);
  return v;
}

std::vector<float> sweep(MathFn fn) {
  std::vector<float> v;
  auto linspace = [&](double lo, double hi, int n) {
    for (int i = 0; i <= n; ++i) v.push_back(static_cast<float>(lo + (hi - lo) * i / n));
  };
  switch (fn) {
    case MathFn::Exp: linspace(-103.9, 88.7, 20000); linspace(-1, 1, 2000); break;
    case MathFn::Log:
    case MathFn::Sqrt:
    case MathFn::Rsqrt:
      for (double e = -149; e <= 127.9; e += 0.0173) v.push_back(static_cast<float>(std::exp2(e)));
      for (int k = -500; k <= 500; ++k) v.push_back(1.0f + k * 1.1920929e-7f);
      break;
    case MathFn::Tanh: linspace(-12, 12, 20000); linspace(-0.7, 0.7, 4000); break;
    case MathFn::Sigmoid: linspace(-103, 100, 20000); linspace(-2, 2, 2000); break;
    case MathFn::Erf: linspace(-6, 6, 24000); break;
    case MathFn::Abs: linspace(-1e3, 1e3, 1000); break;
    case MathFn::Pow: break;
  }
  for (float tiny : {1e-30f, 1e-20f, 1e-10f, 1e-5f, 3e-3f}) {
    v.push_back(tiny);
    if (fn != MathFn::Log && fn != MathFn::Sqrt && fn != MathFn::Rsqrt) v.push_back(-tiny);
  }
  return v;
}

std::vector<float> specials() { return {0.0f, -0.0f, kInf, -kInf, kNaN, 1.0f, -1.0f, kDenormMin, -kDenormMin}; }

// Error allowed at x for a result whose double reference is ref.
double tolerance(MathFn fn, double ref) {
  double a = std::fabs(ref);
  switch (fn) {
    case MathFn::Erf: return 2e-7;
    case MathFn::Abs: return 0;
    default: return 4e-7 * a + 2 * kDenormMin;
  }
}

bool same_special(float got, float want) {
  if (std::isnan(want)) return std::isnan(got);
  return got == want && std::signbit(got) == std::signbit(want);
}

std::vector<float> run_kernel(const CompiledKernel& kernel, const std::vector<float>& x, const std::vector<float>* z) {
  AlignedBuffer<float> xb(x.size()), zb(x.size()), yb(x.size(), -123.0f);
  for (size_t i = 0; i < x.size(); ++i) {
    xb[i] = x[i];
    if (z) zb[i] = (*z)[i];
  }
  std::vector<void*> args{xb.data()};
  if (z) args.push_back(zb.data());
  args.push_back(yb.data());
  kernel.run(args.data());
  return std::vector<float>(yb.data(), yb.data() + x.size());
}

}  // namespace

TEST_CASE("unary math functions are accurate at every lane count", "[codegen][math]") {
  for (MathFn fn : {MathFn::Exp, MathFn::Log, MathFn::Tanh, MathFn::Sigmoid, MathFn::Erf, MathFn::Sqrt,
                    MathFn::Rsqrt, MathFn::Abs}) {
    std::vector<float> sweep_x = padded(sweep(fn));
    std::vector<float> special_x = padded(specials());
    for (int lanes : {1, 3, 8, 16}) {
      CAPTURE(to_string(fn), lanes);
      auto kernel = jit_compile(math_kernel(fn, lanes, sweep_x.size()));
      std::vector<float> got = run_kernel(*kernel, sweep_x, nullptr);
      double worst = 0;
      for (size_t i = 0; i < sweep_x.size(); ++i) {
        double ref = reference(fn, sweep_x[i], 0);
        double err = std::fabs(got[i] - ref);
        CAPTURE(sweep_x[i], got[i], ref);
        REQUIRE(err <= tolerance(fn, ref));
        if (std::fabs(ref) > 1e-30) worst = std::max(worst, fn == MathFn::Erf ? err : err / std::fabs(ref));
      }
      if (lanes == 16) std::printf("%-8s max %s error %.3g\n", to_string(fn), fn == MathFn::Erf ? "abs" : "rel", worst);

      auto special_kernel = jit_compile(math_kernel(fn, lanes, special_x.size()));
      std::vector<float> got_special = run_kernel(*special_kernel, special_x, nullptr);
      for (size_t i = 0; i < special_x.size(); ++i) {
        float want = static_cast<float>(reference(fn, special_x[i], 0));
        CAPTURE(special_x[i], got_special[i], want);
        if (std::fabs(special_x[i]) == kDenormMin && fn != MathFn::Abs && !std::isnan(want)) {
          REQUIRE(std::fabs(got_special[i] - reference(fn, special_x[i], 0)) <= tolerance(fn, want));
        } else {
          REQUIRE(same_special(got_special[i], want));
        }
      }
    }
  }
}

TEST_CASE("pow follows C's pow including special cases", "[codegen][math]") {
  std::vector<float> xs, ys;
  // Generic positive bases and exponents.
  for (int i = 0; i <= 60; ++i)
    for (int j = 0; j <= 40; ++j) {
      xs.push_back(static_cast<float>(std::exp2(-7.0 + i * 0.23)));
      ys.push_back(static_cast<float>(-10.0 + j * 0.5 + 0.013 * j));
    }
  // Negative bases with integer exponents, and the special values of both operands.
  for (float x : {-3.5f, -2.0f, -0.5f})
    for (float y : {-3.0f, -2.0f, 1.0f, 2.0f, 3.0f, 7.0f, 0.5f, 2.5f}) {
      xs.push_back(x);
      ys.push_back(y);
    }
  size_t generic = xs.size();
  std::vector<float> sx = {0.0f, -0.0f, kInf, -kInf, kNaN, 1.0f, -1.0f, 0.5f, 2.0f, -2.0f};
  std::vector<float> sy = {0.0f, -0.0f, 1.0f, -1.0f, 2.0f, -2.0f, 3.0f, -3.0f, 0.5f, -0.5f, kInf, -kInf, kNaN, 1e30f};
  for (float x : sx)
    for (float y : sy) {
      xs.push_back(x);
      ys.push_back(y);
    }
  xs = padded(xs);
  ys = padded(ys);
  for (int lanes : {1, 16}) {
    CAPTURE(lanes);
    auto kernel = jit_compile(math_kernel(MathFn::Pow, lanes, xs.size()));
    std::vector<float> got = run_kernel(*kernel, xs, &ys);
    for (size_t i = 0; i < xs.size(); ++i) {
      double ref = std::pow(static_cast<double>(xs[i]), static_cast<double>(ys[i]));
      float want = static_cast<float>(ref);
      CAPTURE(xs[i], ys[i], got[i], ref);
      if (i < generic && std::isfinite(want) && want != 0)
        REQUIRE(std::fabs(got[i] - ref) <= 4e-7 * std::fabs(ref) + 2 * kDenormMin);
      else
        REQUIRE(same_special(got[i], want));
    }
  }
}
