// The reference interpreter on hand-built DAGs: reductions, lazy Select, bounds checks, input
// validation, random inputs and compare_with_reference.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>

#include "schedule/interpreter/reference_interpreter.h"
#include "schedule/ops/op_library.h"
#include "schedule/te/error.h"

using namespace tessel;

namespace {

Operation placeholder(const std::string& name, std::vector<int64_t> shape) {
  Operation op;
  op.name = name;
  op.is_placeholder = true;
  op.shape = std::move(shape);
  return op;
}

Operation compute(const std::string& name, std::vector<Axis> axes, Expr body, ReduceKind kind = ReduceKind::None,
                  std::vector<Axis> reduce_axes = {}) {
  Operation op;
  op.name = name;
  for (const Axis& a : axes) op.shape.push_back(a.extent);
  op.axes = std::move(axes);
  op.body = std::move(body);
  op.reduce = kind;
  op.reduce_axes = std::move(reduce_axes);
  return op;
}

Expr v(const std::string& name) { return make_var(name); }

std::string error_of(const ComputeDAG& dag, const HostTensors& in) {
  try {
    evaluate_reference(dag, in);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("Max Min and Sum reductions start from their init values", "[interpreter]") {
  ComputeDAG dag({placeholder("X", {2, 3}),
                  compute("mx", {{"i", 2}}, make_tensor_read("X", {v("i"), v("k")}), ReduceKind::Max, {{"k", 3}}),
                  compute("mn", {{"i1", 2}}, make_tensor_read("X", {v("i1"), v("k1")}), ReduceKind::Min, {{"k1", 3}}),
                  compute("sm", {{"i2", 2}}, make_tensor_read("X", {v("i2"), v("k2")}), ReduceKind::Sum, {{"k2", 3}})});
  HostTensors in{{"X", {-5, -7, -6, 4, 9, 2}}};
  ReferenceTensors out = evaluate_reference(dag, in);
  CHECK(out.at("mx") == std::vector<double>{-5, 9});
  CHECK(out.at("mn") == std::vector<double>{-7, 2});
  CHECK(out.at("sm") == std::vector<double>{-18, 15});
}

TEST_CASE("multi-axis reductions and integer index arithmetic", "[interpreter]") {
  // Y[i] = sum_{a, b} X[(i + a) floordiv 2, b mod 3 ...]: checks floor division / modulo on ints.
  ComputeDAG dag({placeholder("X", {4}),
                  compute("Y", {{"i", 3}}, make_tensor_read("X", {(v("i") + v("a")) / make_int(2) + v("b") % make_int(2)}),
                          ReduceKind::Sum, {{"a", 2}, {"b", 3}})});
  HostTensors in{{"X", {1, 10, 100, 1000}}};
  std::vector<double> want;
  for (int i = 0; i < 3; ++i) {
    double s = 0;
    for (int a = 0; a < 2; ++a)
      for (int b = 0; b < 3; ++b) s += in["X"][(i + a) / 2 + b % 2];
    want.push_back(s);
  }
  CHECK(evaluate_reference(dag, in).at("Y") == want);
}

TEST_CASE("Select evaluates only the taken branch", "[interpreter]") {
  // X[i + 10] would be out of bounds: it must never be evaluated.
  Expr guarded = make_select(v("i") < make_int(4), make_tensor_read("X", {v("i")}), make_tensor_read("X", {v("i") + 10}));
  ComputeDAG dag({placeholder("X", {4}), compute("Y", {{"i", 4}}, guarded)});
  HostTensors in{{"X", {1, 2, 3, 4}}};
  CHECK(evaluate_reference(dag, in).at("Y") == std::vector<double>{1, 2, 3, 4});
}

TEST_CASE("out-of-bounds reads throw naming the tensor and index", "[interpreter]") {
  ComputeDAG dag({placeholder("X", {4}), compute("Y", {{"i", 4}}, make_tensor_read("X", {v("i") + 1}))});
  std::string msg = error_of(dag, {{"X", {1, 2, 3, 4}}});
  INFO(msg);
  CHECK(msg.find("X[4]") != std::string::npos);
  ComputeDAG neg({placeholder("X", {4}), compute("Y", {{"i", 4}}, make_tensor_read("X", {v("i") - 1}))});
  CHECK(error_of(neg, {{"X", {1, 2, 3, 4}}}).find("X[-1]") != std::string::npos);
}

TEST_CASE("inputs must be present and have the right size", "[interpreter]") {
  ComputeDAG dag = build_op("matmul", {{"M", "2"}, {"N", "3"}, {"K", "4"}});
  HostTensors in = make_random_inputs(dag, 1);
  in["A"].pop_back();
  std::string msg = error_of(dag, in);
  CHECK(msg.find("A") != std::string::npos);
  CHECK(msg.find("7") != std::string::npos);
  in.erase("A");
  CHECK(error_of(dag, in).find("A") != std::string::npos);
}

TEST_CASE("padding of conv2d reads zeros outside the input", "[interpreter]") {
  ComputeDAG dag = build_op("conv2d", {{"N", "1"}, {"C", "1"}, {"H", "2"}, {"W", "2"}, {"F", "1"}, {"KH", "1"},
                                       {"KW", "1"}, {"pad", "1"}});
  HostTensors in{{"X", {1, 2, 3, 4}}, {"W", {2}}};
  ReferenceTensors out = evaluate_reference(dag, in);
  CHECK(out.at("pad") == std::vector<double>{0, 0, 0, 0, 0, 1, 2, 0, 0, 3, 4, 0, 0, 0, 0, 0});
  CHECK(out.at("Y") == std::vector<double>{0, 0, 0, 0, 0, 2, 4, 0, 0, 6, 8, 0, 0, 0, 0, 0});
}

TEST_CASE("random inputs are deterministic and uniform in -1 to 1 and seed-dependent", "[interpreter]") {
  ComputeDAG dag = build_op("layernorm", {{"rows", "31"}, {"cols", "33"}});
  HostTensors a = make_random_inputs(dag, 42), b = make_random_inputs(dag, 42), c = make_random_inputs(dag, 43);
  REQUIRE(a.size() == 3);
  CHECK(a == b);
  CHECK(a.at("X") != c.at("X"));
  CHECK(a.at("gamma") != a.at("beta"));
  double mean = 0;
  float lo = 1, hi = -1;
  for (float x : a.at("X")) {
    REQUIRE(x >= -1.0f);
    REQUIRE(x < 1.0f);
    mean += x;
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  mean /= static_cast<double>(a.at("X").size());
  CHECK(std::fabs(mean) < 0.1);
  CHECK(lo < -0.9f);
  CHECK(hi > 0.9f);
}

TEST_CASE("compare_with_reference applies the documented tolerance", "[interpreter]") {
  Operation c = placeholder("C", {2, 3});
  std::vector<double> want{1, 2, 3, 4, 5, 1.25};
  std::vector<float> got{1, 2, 3, 4, 5, 1.25f};
  CompareResult same = compare_with_reference(c, got, want);
  CHECK(same.mismatches == 0);
  CHECK(same.max_abs_error == 0);
  CHECK(same.first_mismatch.empty());

  got[5] = 1.5f;
  got[4] = 5.5f;
  CompareResult diff = compare_with_reference(c, got, want);
  CHECK(diff.mismatches == 2);
  CHECK(diff.max_abs_error == 0.5);
  CHECK(diff.first_mismatch == "C[1, 1]: got 5.5, want 5");

  // atol is scaled by max |want| (here 1000): an error of 5e-3 near zero passes, 2e-2 fails.
  std::vector<double> big{1000, 0, 0, 0, 0, 0};
  std::vector<float> near{1000, 0.005f, 0, 0, 0, 0};
  CHECK(compare_with_reference(c, near, big).mismatches == 0);
  near[1] = 0.02f;
  CHECK(compare_with_reference(c, near, big).mismatches == 1);
  // rtol: relative to |want|.
  std::vector<double> w2{1000, 1, 1, 1, 1, 1};
  std::vector<float> g2{1000.05f, 1, 1, 1, 1, 1};
  CHECK(compare_with_reference(c, g2, w2).mismatches == 0);
  g2[0] = 1000.5f;
  CHECK(compare_with_reference(c, g2, w2).mismatches == 1);
}

TEST_CASE("compare_with_reference of a large output counts and names as one pass would, in any number of chunks", "[interpreter]") {
  // 9M values. The largest reference value (which scales atol) sits in the last chunk, the first
  // mismatch in a middle one (for 2, 3 and 8 chunks), a larger error after it.
  const int64_t n = 9'000'000;
  std::vector<double> want(static_cast<size_t>(n), 0.0);
  std::vector<float> got(static_cast<size_t>(n), 0.0f);
  want[n - 1] = 1000;
  got[n - 1] = 1000;
  got[10] = 0.005f;  // within atol x 1000
  for (int64_t i : {int64_t{5'600'000}, int64_t{7'900'001}, n - 2}) got[static_cast<size_t>(i)] = 0.5f;
  got[8'000'000] = 2.0f;
  for (int chunks : {1, 2, 3, 8, 0}) {
    CAPTURE(chunks);
    CompareResult r = compare_with_reference("C", {n}, got.data(), want.data(), 1e-4, 1e-5, chunks);
    CHECK(r.mismatches == 4);
    CHECK(r.max_abs_error == 2.0);
    CHECK(r.first_mismatch == "C[5600000]: got 0.5, want 0");
  }
  got[3] = NAN;
  for (int chunks : {1, 3, 8}) {
    CAPTURE(chunks);
    CompareResult r = compare_with_reference("C", {n}, got.data(), want.data(), 1e-4, 1e-5, chunks);
    CHECK(r.mismatches == 5);
    CHECK(r.max_abs_error == INFINITY);
    CHECK(r.first_mismatch == "C[3]: got nan, want 0");
  }
  // Without the large reference value, 0.005 is out of tolerance: the checks above used the scale.
  got[3] = 0;
  want[n - 1] = 0;
  got[n - 1] = 0;
  CHECK(compare_with_reference("C", {n}, got.data(), want.data(), 1e-4, 1e-5, 8).mismatches == 5);
}

TEST_CASE("compare_with_reference treats NaN as equal only to NaN and inf only to the same inf", "[interpreter]") {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  Operation c = placeholder("C", {4});
  std::vector<double> want{nan, inf, -inf, 1};
  CHECK(compare_with_reference(c, {NAN, INFINITY, -INFINITY, 1}, want).mismatches == 0);
  CHECK(compare_with_reference(c, {0, INFINITY, -INFINITY, 1}, want).mismatches == 1);
  CHECK(compare_with_reference(c, {NAN, -INFINITY, -INFINITY, 1}, want).mismatches == 1);
  CompareResult r = compare_with_reference(c, {NAN, INFINITY, -INFINITY, NAN}, want);
  CHECK(r.mismatches == 1);
  CHECK(r.first_mismatch.find("C[3]: got nan, want 1") != std::string::npos);
  CHECK_THROWS_AS(compare_with_reference(c, {1, 2, 3}, want), InputError);
}
