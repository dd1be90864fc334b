// The 16-bit storage types: conversions against their definitions, the type rules of expressions and
// DAGs, the reference interpreter's rounding, and the op templates' dtype parameter.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>

#include "schedule/interpreter/reference_interpreter.h"
#include "schedule/ops/op_library.h"
#include "schedule/te/dag_parser.h"
#include "schedule/te/error.h"
#include "schedule/te/half_float.h"

using namespace tessel;

namespace {

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// The value of a binary16 bit pattern from its definition: (-1)^s * 2^(e-15) * 1.m, subnormals
// 2^-14 * 0.m.
double half_value(uint16_t h) {
  const int sign = h >> 15, exponent = (h >> 10) & 0x1F, mantissa = h & 0x3FF;
  double magnitude;
  if (exponent == 0) magnitude = std::ldexp(mantissa, -24);
  else if (exponent < 31) magnitude = std::ldexp(1024 + mantissa, exponent - 25);
  else magnitude = mantissa ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  return sign ? -magnitude : magnitude;
}

std::string build_error(const std::string& op, const OpParams& params) {
  try {
    build_op(op, params);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("float16: every bit pattern widens to its value and narrows back to itself", "[half]") {
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    const auto bits = static_cast<uint16_t>(h);
    const double want = half_value(bits);
    const float got = half_bits_to_float(bits);
    INFO("bits 0x" << std::hex << h);
    if (std::isnan(want)) {
      CHECK(std::isnan(got));
      CHECK((float_to_half_bits(got) & 0x7C00) == 0x7C00);
      CHECK((float_to_half_bits(got) & 0x3FF) != 0);
      continue;
    }
    REQUIRE(static_cast<double>(got) == want);
    REQUIRE(std::signbit(got) == ((h & 0x8000) != 0));
    REQUIRE(float_to_half_bits(got) == bits);
  }
}

TEST_CASE("float16: narrowing rounds to nearest, ties to even, and saturates to infinity", "[half]") {
  // Between 1 and 1 + 2^-10 the tie 1 + 2^-11 goes to the even 1; 1 + 3 * 2^-11 to 1 + 2^-9.
  CHECK(float_to_half_bits(1.0f + std::ldexp(1.0f, -11)) == 0x3C00);
  CHECK(float_to_half_bits(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3C02);
  CHECK(float_to_half_bits(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)) == 0x3C01);
  // Mantissa carry into the exponent: just below 2 rounds to 2.
  CHECK(float_to_half_bits(2.0f - std::ldexp(1.0f, -12)) == 0x4000);
  CHECK(float_to_half_bits(65504.0f) == 0x7BFF);
  CHECK(float_to_half_bits(65519.0f) == 0x7BFF);
  CHECK(float_to_half_bits(65520.0f) == 0x7C00);
  CHECK(float_to_half_bits(-1e9f) == 0xFC00);
  // Subnormals: 2^-24 is the smallest; half of it ties to the even 0, three halves to 2 units.
  CHECK(float_to_half_bits(std::ldexp(1.0f, -24)) == 0x0001);
  CHECK(float_to_half_bits(std::ldexp(1.0f, -25)) == 0x0000);
  CHECK(float_to_half_bits(3 * std::ldexp(1.0f, -25)) == 0x0002);
  CHECK(float_to_half_bits(-std::ldexp(1.0f, -26)) == 0x8000);
  CHECK(float_to_half_bits(std::ldexp(1023.5f, -24)) == 0x0400);  // rounds up into the smallest normal
}

TEST_CASE("bfloat16: the upper half of a float32, rounded to nearest even", "[half]") {
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    const float f = bfloat16_bits_to_float(static_cast<uint16_t>(h));
    REQUIRE(bits_of(f) == h << 16);
    if (!std::isnan(f)) REQUIRE(float_to_bfloat16_bits(f) == h);
  }
  CHECK(float_to_bfloat16_bits(1.0f + std::ldexp(1.0f, -8)) == 0x3F80);          // tie to even (down)
  CHECK(float_to_bfloat16_bits(1.0f + 3 * std::ldexp(1.0f, -8)) == 0x3F82);      // tie to even (up)
  CHECK(float_to_bfloat16_bits(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)) == 0x3F81);
  CHECK(float_to_bfloat16_bits(std::numeric_limits<float>::max()) == 0x7F80);   // overflow: infinity
  const uint16_t nan = float_to_bfloat16_bits(std::numeric_limits<float>::quiet_NaN());
  CHECK(std::isnan(bfloat16_bits_to_float(nan)));
  CHECK(round_to_dtype(1.0 / 3.0, DType::BFloat16) == 0.333984375);
  CHECK(round_to_dtype(1.0 / 3.0, DType::Float16) == 0.333251953125);
}

TEST_CASE("16-bit floats are storage types: no arithmetic, reductions or conversions to ints", "[half][dag]") {
  Expr h = make_var("h", kFloat16);
  CHECK_THROWS_AS(h + h, Error);
  CHECK_THROWS_AS(make_call(MathFn::Exp, {h}), Error);
  CHECK_THROWS_AS(make_cast(kInt64, h), Error);
  CHECK_THROWS_AS(make_cast(kBFloat16, make_int(1)), Error);
  CHECK(make_cast(kFloat32, h)->type == kFloat32);
  CHECK(make_cast(kBFloat16, h)->type == kBFloat16);
  CHECK(make_select(make_bool(true), h, make_cast(kFloat16, make_float(0)))->type == kFloat16);

  // The text parser says so as an InputError, with the place.
  CHECK_THROWS_WITH(parse_dag_text("X = placeholder(float16[4])\nY[i:4] = (X[i] + X[i])  : float16\n"),
                    Catch::Contains("cast it to float32 first"));
  CHECK_THROWS_WITH(parse_dag_text("X = placeholder(bfloat16[4])\nY[i:4] = exp(X[i])  : float32\n"),
                    Catch::Contains("must be float32"));

  // A DAG checks that reads and bodies agree with the tensors' types.
  Operation x;
  x.name = "X";
  x.is_placeholder = true;
  x.dtype = DType::BFloat16;
  x.shape = {4};
  Operation y;
  y.name = "Y";
  y.axes = {{"i", 4}};
  y.shape = {4};
  y.body = make_tensor_read("X", {make_var("i")}, kFloat32);
  CHECK_THROWS_WITH(ComputeDAG({x, y}), Catch::Contains("reads X as float32; it holds bfloat16"));
  y.body = make_tensor_read("X", {make_var("i")}, kBFloat16);
  CHECK_THROWS_WITH(ComputeDAG({x, y}), Catch::Contains("is float32 but its body computes bfloat16"));
  y.dtype = DType::BFloat16;
  CHECK_NOTHROW(ComputeDAG({x, y}));
  Operation sum;
  sum.name = "S";
  sum.dtype = DType::BFloat16;
  sum.shape = {1};
  sum.axes = {{"o", 1}};
  sum.reduce = ReduceKind::Sum;
  sum.reduce_axes = {{"r", 4}};
  sum.body = make_tensor_read("X", {make_var("r")}, kBFloat16);
  CHECK_THROWS_WITH(ComputeDAG({x, sum}), Catch::Contains("reductions accumulate in float32"));
}

TEST_CASE("op templates take dtype: 16-bit inputs, float32 accumulation, one rounding on store", "[half][ops]") {
  const OpParams mm{{"M", "7"}, {"N", "5"}, {"K", "61"}};
  // float32 is the default, and spelling it out changes nothing (the same workload key).
  OpParams mm32 = mm;
  mm32["dtype"] = "float32";
  CHECK(build_op("matmul", mm).workload_key() == build_op("matmul", mm32).workload_key());

  OpParams mm16 = mm;
  mm16["dtype"] = "bfloat16";
  ComputeDAG dag = build_op("matmul", mm16);
  CHECK(dag.workload_key() != build_op("matmul", mm).workload_key());
  REQUIRE(dag.ops().size() == 4);
  CHECK(dag.op("A").dtype == DType::BFloat16);
  CHECK(dag.op("B").dtype == DType::BFloat16);
  CHECK(dag.op("C_acc").dtype == DType::Float32);
  CHECK(dag.op("C").dtype == DType::BFloat16);
  CHECK(dag.outputs() == std::vector<std::string>{"C"});
  // The text names the types and reads back to the same workload.
  CHECK(dag.to_text().find("bfloat16") != std::string::npos);
  CHECK(parse_dag_text(dag.to_text()).workload_key() == dag.workload_key());

  // The reference: products of the 16-bit inputs summed in float64, rounded once to bfloat16.
  HostTensors in = make_random_inputs(dag, 7);
  for (float v : in.at("A")) REQUIRE(static_cast<double>(v) == round_to_dtype(v, DType::BFloat16));
  ReferenceTensors ref = evaluate_reference(dag, in);
  for (int i = 0; i < 7; ++i)
    for (int j = 0; j < 5; ++j) {
      double sum = 0;
      for (int k = 0; k < 61; ++k) sum += static_cast<double>(in.at("A")[i * 61 + k]) * in.at("B")[k * 5 + j];
      REQUIRE(ref.at("C_acc")[i * 5 + j] == Approx(sum).epsilon(1e-12));
      REQUIRE(ref.at("C")[i * 5 + j] == round_to_dtype(sum, DType::BFloat16));
    }

  // Given inputs that are not 16-bit values are rounded to the type first.
  HostTensors off = in;
  off.at("A")[0] = 1.0f + std::ldexp(1.0f, -12);
  CHECK(evaluate_reference(dag, off).at("C_acc") == evaluate_reference(dag, [&] {
          HostTensors exact = off;
          exact.at("A")[0] = 1.0f;
          return exact;
        }()).at("C_acc"));
}

TEST_CASE("dense and conv2d in 16 bits keep the epilogue and the padding in the output's type", "[half][ops]") {
  ComputeDAG dense = build_op("dense", {{"M", "3"}, {"N", "5"}, {"K", "7"}, {"bias", "1"}, {"act", "gelu"},
                                        {"dtype", "float16"}});
  CHECK(dense.op("b").dtype == DType::Float16);
  CHECK(dense.op("matmul").dtype == DType::Float32);
  CHECK(dense.op("Y").dtype == DType::Float16);
  CHECK(dense.ops().size() == 5);

  ComputeDAG conv = build_op("conv2d", {{"N", "1"}, {"C", "3"}, {"H", "7"}, {"W", "5"}, {"F", "4"}, {"KH", "3"},
                                        {"KW", "3"}, {"pad", "1"}, {"dtype", "bfloat16"}});
  CHECK(conv.op("pad").dtype == DType::BFloat16);
  CHECK(conv.op("Y_acc").dtype == DType::Float32);
  CHECK(conv.op("Y").dtype == DType::BFloat16);
  ComputeDAG blocked = build_op("conv2d", {{"N", "1"}, {"C", "16"}, {"H", "7"}, {"W", "5"}, {"F", "16"},
                                           {"KH", "3"}, {"KW", "3"}, {"pad", "1"}, {"groups", "16"},
                                           {"layout", "nchw8c"}, {"dtype", "float16"}});
  CHECK(blocked.op("X").dtype == DType::Float16);
  CHECK(blocked.op("Y").dtype == DType::Float16);

  CHECK_THAT(build_error("matmul", {{"M", "2"}, {"N", "2"}, {"K", "2"}, {"dtype", "fp8"}}),
             Catch::Contains("dtype"));
}
