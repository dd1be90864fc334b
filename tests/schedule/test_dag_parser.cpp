// parse_dag_text: the canonical DAG text of every op template, suite case and printable expression
// reads back to the same DAG (text, workload key, structure, float bits), and bad text is an
// InputError naming the line and column.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "schedule/ops/op_library.h"
#include "schedule/te/dag_parser.h"
#include "schedule/te/error.h"

using namespace tessel;
using Catch::Matchers::Contains;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

uint64_t bits_of(double v) {
  uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

// Parses d's text and requires the same DAG back, down to the structural hash of every body (which
// covers each float constant's bits).
void require_round_trip(const ComputeDAG& d) {
  std::string text = d.to_text();
  INFO(text);
  ComputeDAG back = parse_dag_text(text);
  REQUIRE(back.to_text() == text);
  REQUIRE(back.workload_key() == d.workload_key());
  REQUIRE(back.ops().size() == d.ops().size());
  for (size_t i = 0; i < d.ops().size(); ++i) {
    const Operation &a = d.ops()[i], &b = back.ops()[i];
    CHECK(a.is_placeholder == b.is_placeholder);
    CHECK(a.dtype == b.dtype);
    CHECK(a.shape == b.shape);
    CHECK(a.reduce == b.reduce);
    CHECK(a.axes.size() == b.axes.size());
    CHECK(a.reduce_axes.size() == b.reduce_axes.size());
    if (a.body) {
      REQUIRE(b.body);
      CHECK(equal(a.body, b.body));
      CHECK(a.body->hash == b.body->hash);
    }
  }
}

ComputeDAG build(const std::string& op, const OpParams& params) {
  INFO(op);
  return build_op(op, params);
}

std::string str(int64_t v) { return std::to_string(v); }

// A DAG X[n] -> Y[i] = body(i, X[i]) for expressions the op templates never build.
ComputeDAG unary_dag(const std::function<Expr(Expr, Expr)>& body, int64_t n = 61) {
  Operation x;
  x.name = "X";
  x.is_placeholder = true;
  x.shape = {n};
  Operation y;
  y.name = "Y";
  y.shape = {n};
  y.axes = {{"i", n}};
  y.body = body(make_var("i"), make_tensor_read("X", {make_var("i")}));
  return ComputeDAG({x, y});
}

void require_input_error(const std::string& text, const std::vector<std::string>& parts) {
  INFO(text);
  try {
    parse_dag_text(text);
    FAIL("no error");
  } catch (const InputError& e) {
    std::string message = e.what();
    for (const std::string& p : parts) CHECK_THAT(message, Contains(p));
  }
}

const char* kMatmul =
    "A = placeholder(float32[7, 13])\n"
    "B = placeholder(float32[13, 61])\n"
    "C[i:7, j:61] = sum(k:13; (A[i, k] * B[k, j]))  : float32\n";

}  // namespace

TEST_CASE("dag parser: every op template round-trips at odd and even shapes", "[dag_parser]") {
  const std::vector<int64_t> sizes = {1, 7, 61, 127, 771, 1000};
  std::set<std::string> covered;
  auto check = [&](const std::string& op, const OpParams& params) {
    covered.insert(op);
    require_round_trip(build(op, params));
  };
  const std::vector<std::string> acts = {"none", "relu", "gelu", "gelu_tanh", "silu", "sigmoid"};
  for (size_t s = 0; s < sizes.size(); ++s) {
    std::string a = str(sizes[s]), b = str(sizes[(s + 1) % sizes.size()]), c = str(sizes[(s + 2) % sizes.size()]);
    check("matmul", {{"M", a}, {"N", b}, {"K", c}});
    check("batch_matmul", {{"B", c}, {"M", a}, {"N", b}, {"K", "7"}});
    for (const std::string& act : acts)
      for (const char* bias : {"0", "1"}) check("dense", {{"M", a}, {"N", b}, {"K", c}, {"bias", bias}, {"act", act}});
    for (const char* op : {"softmax", "reduce_sum"}) check(op, {{"rows", a}, {"cols", b}});
    for (const char* op : {"layernorm", "rmsnorm", "bias_residual_layernorm"})
      for (const char* eps : {"1e-5", "1e-6", "0.1234567890123", "3e-12"})
        check(op, {{"rows", a}, {"cols", b}, {"eps", eps}});
    check("elementwise", {{"shape", a + "x" + b}, {"expr", "sigmoid(relu(x)*2+1)"}});
  }
  struct Conv {
    const char *n, *c, *h, *w, *f, *kh, *kw, *stride, *pad, *dilation, *groups;
  };
  for (const Conv& v : {Conv{"1", "3", "7", "61", "4", "3", "3", "1", "0", "1", "1"},
                        Conv{"2", "6", "61", "7", "9", "3", "1", "2", "1", "1", "3"},
                        Conv{"1", "8", "127", "13", "8", "5", "5", "3", "2", "2", "8"},
                        Conv{"1", "4", "9", "9", "8", "1", "1", "1", "0", "1", "2"},
                        Conv{"1", "5", "7", "7", "10", "7", "7", "1", "3", "1", "5"}})
    for (const std::string& act : acts)
      for (const char* bias : {"0", "1"})
        check("conv2d", {{"N", v.n},
                         {"C", v.c},
                         {"H", v.h},
                         {"W", v.w},
                         {"F", v.f},
                         {"KH", v.kh},
                         {"KW", v.kw},
                         {"stride", v.stride},
                         {"pad", v.pad},
                         {"dilation", v.dilation},
                         {"groups", v.groups},
                         {"bias", bias},
                         {"act", act}});
  std::set<std::string> all;
  for (const OpTemplate& t : op_templates()) all.insert(t.name);
  CHECK(covered == all);
}

TEST_CASE("dag parser: every case of suites/operators.json round-trips", "[dag_parser]") {
  std::ifstream in(std::string(TESSEL_SOURCE_DIR) + "/suites/operators.json");
  REQUIRE(in);
  nlohmann::json suite = nlohmann::json::parse(in);
  REQUIRE(suite["cases"].size() > 10);
  for (const nlohmann::json& c : suite["cases"]) {
    OpParams params;
    for (const auto& [k, v] : c["params"].items()) params[k] = v.is_string() ? v.get<std::string>() : v.dump();
    INFO(c["name"].get<std::string>());
    require_round_trip(build(c["op"].get<std::string>(), params));
  }
}

TEST_CASE("dag parser: elementwise expressions with every function and operator round-trip", "[dag_parser]") {
  const std::vector<std::string> exprs = {
      "relu(x)",
      "sigmoid(x)",
      "tanh(x)",
      "exp(x)",
      "log(x)",
      "sqrt(x)",
      "rsqrt(x)",
      "erf(x)",
      "abs(x)",
      "min(x, y)",
      "max(x, 2)",
      "pow(x, 3.5)",
      "x + y - z",
      "x * y / z",
      "-x",
      "-(x * y)",
      "--x",
      "-2 * x",
      "x - -3",
      "0.1 * x + 1e-30",
      "x * 3.4e38",
      "x * 0.1234567890123456",
      "x * 0.7978845608",
      "x / 7",
      "x * 1e300 * 1e-300",
      "-0 + x",
      "x * 2.2250738585072014e-308",
      "x * 123456789012",
      ".5 * x",
      "pow(sigmoid(x), tanh(y)) + erf(min(z, -1.5)) * abs(log(sqrt(rsqrt(exp(x + y)))))",
      "x*sigmoid(x)*y",
      "0.5*x*(1+tanh(0.7978845608*(x+0.044715*x*x*x)))"};
  for (const std::string& e : exprs)
    for (const char* shape : {"7", "61x127", "3x7x61", "771x1000"})
      require_round_trip(build("elementwise", {{"shape", shape}, {"inputs", "3"}, {"expr", e}}));
}

TEST_CASE("dag parser: expressions beyond the op templates round-trip", "[dag_parser]") {
  const std::vector<std::function<Expr(Expr, Expr)>> bodies = {
      [](Expr i, Expr x) { return make_select(logical_and(i >= make_int(3), i < make_int(50)), x, make_float(0)); },
      [](Expr i, Expr x) {
        Expr c =
            logical_or(make_binary(ExprOp::EQ, i, make_int(-4)), make_not(make_binary(ExprOp::NE, i, make_int(9))));
        return make_select(logical_or(c, logical_and(i <= make_int(2), i > make_int(1))), x, -x);
      },
      [](Expr i, Expr x) {
        return x + make_cast(kFloat32, make_binary(ExprOp::FloorMod, i, make_int(7)) + i / make_int(2));
      },
      [](Expr i, Expr x) {
        return make_cast(kFloat32, min(max(i - 3, make_int(0)), make_int(std::numeric_limits<int64_t>::max())));
      },
      [](Expr i, Expr x) { return make_cast(kFloat32, i * make_int(std::numeric_limits<int64_t>::min())); },
      [](Expr i, Expr x) {
        return make_cast(kFloat32, make_cast(kInt64, x) + make_binary(ExprOp::Div, i, make_int(3)));
      },
      [](Expr i, Expr x) { return make_cast(kFloat32, make_cast(kBool, x)); },
      [](Expr i, Expr x) {
        return make_select(make_bool(true), x, make_select(make_bool(false), make_float(kInf), make_float(-kInf)));
      },
      [](Expr i, Expr x) { return x * make_float(-0.0) + make_float(5e-324) + make_float(1.7976931348623157e308); },
      [](Expr i, Expr x) {
        return make_select(make_binary(ExprOp::EQ, x, x), make_float(std::numeric_limits<double>::quiet_NaN()), x);
      },
      [](Expr i, Expr x) {
        return make_call(MathFn::Pow, {make_broadcast(x, 4), make_float(2)});
      },
      [](Expr i, Expr x) {
        return make_cast(Type{DType::Float32, 8}, make_ramp(i, make_int(-2), 8)) + make_broadcast(x, 8);
      },
  };
  for (const auto& body : bodies) require_round_trip(unary_dag(body));

  // Reductions by max and min, an int64 input read as int64, rank-0 tensors, dotted names.
  Operation idx{"idx.in", true, DType::Int64, {5}};
  Operation s{"s", true, DType::Float32, {}};
  Operation m{"m",
              false,
              DType::Float32,
              {7},
              {{"i", 7}},
              {{"r", 5}},
              ReduceKind::Max,
              make_tensor_read("s", {}) * make_cast(kFloat32, make_tensor_read("idx.in", {make_var("r")}, kInt64))};
  Operation n{"n", false,       DType::Float32,  {},
              {},  {{"r2", 7}}, ReduceKind::Min, make_tensor_read("m", {make_var("r2")})};
  require_round_trip(ComputeDAG({idx, s, m, n}));
}

TEST_CASE("dag parser: float constants read back bit for bit", "[dag_parser]") {
  std::mt19937_64 rng(20261121);
  std::vector<double> values = {0.70710678118654752440,
                                0.79788456080286535588,
                                0.1,
                                1.0 / 3.0,
                                1e-5,
                                static_cast<float>(0.1),
                                std::numeric_limits<double>::denorm_min(),
                                std::numeric_limits<double>::max(),
                                -std::numeric_limits<double>::min()};
  for (int k = 0; k < 2000; ++k) {
    uint64_t b = rng();
    double v;
    std::memcpy(&v, &b, sizeof v);
    if (std::isfinite(v)) values.push_back(v);
    float f = std::uniform_real_distribution<float>(-1e4f, 1e4f)(rng);
    values.push_back(f);
  }
  for (double v : values) {
    ComputeDAG d = unary_dag([&](Expr, Expr x) { return x * make_float(v); });
    ComputeDAG back = parse_dag_text(d.to_text());
    const double* c = as_float(back.ops()[1].body->args[1]);
    REQUIRE(c);
    INFO(d.to_text());
    REQUIRE(bits_of(*c) == bits_of(v));
  }
}

TEST_CASE("dag parser: float text keeps 9 digits where they suffice", "[dag_parser]") {
  // The printer only lengthens constants that 9 significant digits cannot give back exactly, and then
  // to the fewest digits that do.
  CHECK(to_string(make_float(0.5)) == "0.5f");
  CHECK(to_string(make_float(2)) == "2.0f");
  CHECK(to_string(make_float(1e-5)) == "1e-05f");
  CHECK(to_string(make_float(static_cast<float>(0.1))) == "0.10000000149011612f");
  CHECK(to_string(make_float(100000000)) == "100000000.0f");
  CHECK(to_string(make_float(-0.0)) == "-0.0f");
  CHECK(to_string(make_float(0.70710678118654752440)) == "0.7071067811865476f");
  CHECK(to_string(make_float(0.7978845608)) == "0.7978845608f");
}

TEST_CASE("dag parser: bad text is an InputError with line and column", "[dag_parser][errors]") {
  // Unbalanced brackets.
  require_input_error("A = placeholder(float32[7, 13)\n",
                      {"workload text: line 1, column 30: expected ']' after the shape of A"});
  require_input_error(std::string(kMatmul).replace(std::string(kMatmul).find("B[k, j]"), 7, "B[k, j"),
                      {"line 3, column 43: expected ']' after the indices of B, found ')'"});
  require_input_error("A = placeholder(float32[4])\nC[i:4] = (A[i] * 2.0f  : float32\n",
                      {"line 2, column 24: expected ')' to close the '(' at column 10, found ':'"});
  require_input_error("A = placeholder(float32[4])\nC[i:4] = (A[i] * 2.0f))  : float32\n",
                      {"line 2, column 23: expected ':' before the dtype of C, found ')'"});
  // Unknown tensor, axis, dtype and function.
  require_input_error(std::string(kMatmul).replace(std::string(kMatmul).find("B[k, j]"), 1, "Q"),
                      {"line 3, column 37: unknown tensor 'Q'"});
  require_input_error("A = placeholder(float32[4])\nC[i:4] = A[j]  : float32\n",
                      {"line 2, column 12: unknown axis 'j'; the axes of C are i"});
  require_input_error("A = placeholder(float8[4])\n", {"line 1, column 17: unknown dtype 'float8'"});
  require_input_error("A = placeholder(float32[4])\nC[i:4] = A[i]  : double\n",
                      {"line 2, column 18: unknown dtype 'double'"});
  require_input_error("A = placeholder(float32[4])\nC[i:4] = foo(A[i])  : float32\n",
                      {"line 2, column 10: unknown function 'foo'"});
  // Trailing junk after a line and after the text.
  require_input_error(std::string(kMatmul) + "junk\n", {"line 4, column 5: expected '= placeholder(...)' or '['"});
  require_input_error("A = placeholder(float32[4]) x\n",
                      {"line 1, column 29: expected the end of the line, found 'x'"});
  require_input_error("A = placeholder(float32[4])\nC[i:4] = A[i]  : float32 ;\n",
                      {"line 2, column 26: expected the end of the line, found ';'"});
  // Types, ranks, literals, names.
  require_input_error("A = placeholder(float32[4])\nC[i:4] = (A[i] + i)  : float32\n",
                      {"line 2, column 16: the operands of '+' differ in type: float32 and int64"});
  require_input_error("A = placeholder(float32[4])\nC[i:4] = A[i, i]  : float32\n",
                      {"line 2, column 10: A has rank 1 but is read with 2 indices"});
  require_input_error("A = placeholder(float32[4])\nC[i:4] = A[2.0f]  : float32\n",
                      {"line 2, column 12: an index of A must be int64"});
  require_input_error("A = placeholder(float32[4])\nC[i:4] = (A[i] * 2.5)  : float32\n",
                      {"line 2, column 21: expected 'f' after the float literal '2.5'"});
  require_input_error("A = placeholder(float32[4])\nC[i:4] = A[99999999999999999999]  : float32\n",
                      {"line 2, column 12: the integer literal '99999999999999999999' is out of the int64 range"});
  require_input_error("A = placeholder(float32[0])\n", {"line 1, column 25: an extent of A must be positive, got 0"});
  require_input_error("A = placeholder(float32[4])\nA[i:4] = A[i]  : float32\n",
                      {"line 2, column 1: a second operation is named 'A'"});
  require_input_error("A = placeholder(float32[4])\nC[i:4] = A[i]  : float32\nD[i:4] = C[i]  : float32\n",
                      {"line 3, column 3: axis name 'i' is used twice"});
  require_input_error("A = placeholder(float32[4])\nC[i:4] = select(A[i], 1.0f, 2.0f)  : float32\n",
                      {"line 2, column 17: argument 1 of select must be bool, not float32"});
  // Empty text, only inputs, deep nesting.
  require_input_error("", {"workload text: line 1, column 1: expected an operation, found the end of the text"});
  require_input_error("A = placeholder(float32[4])\n", {"workload text: the DAG computes nothing"});
  require_input_error("A = placeholder(float32[4])\nC[i:4] = " + std::string(100000, '(') + "\n",
                      {"line 2, column 1010: expression nested deeper than 1000 levels"});
  // The source names the log record.
  try {
    parse_dag_text("A = placeholder(int8[4])\n", "tuning.db record 17");
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK_THAT(e.what(), Contains("tuning.db record 17: line 1, column 17: unknown dtype 'int8'"));
  }
}

TEST_CASE("dag parser: truncated and mangled text never escapes as anything but InputError", "[dag_parser][errors]") {
  const OpParams conv = {{"N", "1"},  {"C", "4"},   {"H", "7"},      {"W", "9"},    {"F", "8"},          {"KH", "3"},
                         {"KW", "3"}, {"pad", "1"}, {"groups", "2"}, {"bias", "1"}, {"act", "gelu_tanh"}};
  const std::vector<std::string> texts = {build_op("conv2d", conv).to_text(),
                                          build_op("softmax", {{"rows", "7"}, {"cols", "61"}}).to_text()};
  auto parses_or_input_error = [](const std::string& t) {
    try {
      parse_dag_text(t);
    } catch (const InputError&) {
    }
  };
  for (const std::string& text : texts) {
    REQUIRE(parse_dag_text(text).to_text() == text);
    for (size_t n = 0; n < text.size(); ++n) {  // every prefix
      INFO(text.substr(0, n));
      REQUIRE_NOTHROW(parses_or_input_error(text.substr(0, n)));
    }
  }
  // Cut inside a line, the error names that line: line 5 is conv2d's reduction `conv[...] = sum(rc:2, rh:3, ...`.
  size_t line5 = 0;
  for (int k = 0; k < 4; ++k) line5 = texts[0].find('\n', line5) + 1;
  REQUIRE(texts[0].compare(line5, 5, "conv[") == 0);
  require_input_error(texts[0].substr(0, line5 + 40),
                      {"line 5, column 41: expected ':' after the axis name 'r', found the end of the text"});

  // Random byte changes, deletions and insertions.
  std::mt19937 rng(7);
  const std::string alphabet = "()[],:;=!<>&|+-*/.0123456789efxinaXY_ \n";
  for (int k = 0; k < 4000; ++k) {
    std::string t = texts[k % texts.size()];
    for (int edits = 1 + k % 3; edits > 0; --edits) {
      size_t at = rng() % t.size();
      char c = alphabet[rng() % alphabet.size()];
      if (rng() % 3 == 0)
        t[at] = c;
      else if (rng() % 2 == 0)
        t.erase(at, 1);
      else
        t.insert(t.begin() + static_cast<std::ptrdiff_t>(at), c);
    }
    INFO(t);
    REQUIRE_NOTHROW(parses_or_input_error(t));
  }
}
