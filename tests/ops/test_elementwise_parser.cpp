// The elementwise expression parser: precedence, unary minus, functions, literals and errors with
// their columns. Values are checked by evaluating the parsed expression with the reference
// interpreter, so a wrong tree shows up as a wrong number.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "schedule/interpreter/reference_interpreter.h"
#include "schedule/ops/elementwise_parser.h"
#include "schedule/ops/op_library.h"
#include "schedule/te/error.h"

using namespace tessel;

namespace {

// Evaluates `expr` at one point with x, y, z given (all exactly representable in float).
double eval(const std::string& expr, float x = 0, float y = 0, float z = 0) {
  ComputeDAG dag = build_op("elementwise", {{"shape", "1"}, {"inputs", "3"}, {"expr", expr}});
  HostTensors in{{"x", {x}}, {"y", {y}}, {"z", {z}}};
  return evaluate_reference(dag, in).at("Y")[0];
}

Expr parse(const std::string& text, std::vector<std::string> inputs = {"x", "y", "z"}) {
  return parse_elementwise_expr(text, inputs, [](const std::string& n) { return make_var(n, kFloat32); });
}

std::string parse_error(const std::string& text, std::vector<std::string> inputs = {"x"}) {
  try {
    parse(text, inputs);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

void require_parse_error(const std::string& text, int column, const std::string& part,
                         std::vector<std::string> inputs = {"x"}) {
  std::string msg = parse_error(text, inputs);
  INFO("expr '" << text << "' gave: " << msg);
  REQUIRE_FALSE(msg.empty());
  CHECK(msg.find("column " + std::to_string(column) + ":") != std::string::npos);
  CHECK(msg.find(part) != std::string::npos);
}

}  // namespace

TEST_CASE("operators follow the usual precedence and associativity", "[ops][parser]") {
  CHECK(eval("1+2*x", 3) == 7);
  CHECK(eval("(1+2)*x", 3) == 9);
  CHECK(eval("x-2-3", 10) == 5);      // left-associative
  CHECK(eval("x/2/5", 100) == 10);    // left-associative
  CHECK(eval("x - y * z + 1", 10, 2, 3) == 5);
  CHECK(eval("x / y * z", 8, 2, 3) == 12);
  CHECK(eval("((((x))))", 4) == 4);
  CHECK(eval("  1 +\t2 * ( x - 1 )  ", 3) == 5);  // whitespace anywhere
  CHECK(to_string(parse("1+2*x")) == to_string(make_float(1) + make_float(2) * make_var("x", kFloat32)));
}

TEST_CASE("unary minus binds tighter than binary operators", "[ops][parser]") {
  CHECK(eval("-x", 3) == -3);
  CHECK(eval("--x", 3) == 3);
  CHECK(eval("-x*2", 3) == -6);
  CHECK(eval("2*-x", 3) == -6);
  CHECK(eval("1 - -x", 3) == 4);
  CHECK(eval("-(x+1)", 3) == -4);
  CHECK(eval("-2.5") == -2.5);
}

TEST_CASE("every function evaluates like its C definition", "[ops][parser]") {
  const double x = 0.75, y = -0.5;
  CHECK(eval("relu(x)", -2) == 0);
  CHECK(eval("relu(x)", 2) == 2);
  CHECK(eval("sigmoid(x)", x) == Approx(1 / (1 + std::exp(-x))).epsilon(1e-14));
  CHECK(eval("tanh(x)", x) == Approx(std::tanh(x)).epsilon(1e-14));
  CHECK(eval("exp(x)", x) == Approx(std::exp(x)).epsilon(1e-14));
  CHECK(eval("log(x)", x) == Approx(std::log(x)).epsilon(1e-14));
  CHECK(eval("sqrt(x)", x) == Approx(std::sqrt(x)).epsilon(1e-14));
  CHECK(eval("rsqrt(x)", x) == Approx(1 / std::sqrt(x)).epsilon(1e-14));
  CHECK(eval("erf(x)", x) == Approx(std::erf(x)).epsilon(1e-14));
  CHECK(eval("abs(y)", 0, y) == 0.5);
  CHECK(eval("min(x, y)", x, y) == y);
  CHECK(eval("max(x, y)", x, y) == x);
  CHECK(eval("pow(x, y)", x, y) == Approx(std::pow(x, y)).epsilon(1e-14));
  CHECK(eval("pow(2, 10)") == 1024);
}

TEST_CASE("nested calls and the documented example", "[ops][parser]") {
  CHECK(eval("sigmoid(relu(x)*2+1)", -3) == Approx(1 / (1 + std::exp(-1.0))).epsilon(1e-14));
  CHECK(eval("sigmoid(relu(x)*2+1)", 0.5) == Approx(1 / (1 + std::exp(-2.0))).epsilon(1e-14));
  CHECK(eval("max(min(x, y), abs(z))", 1, 2, -3) == 3);
  CHECK(eval("exp(log(max(x, 1e-3)))", 2) == Approx(2).epsilon(1e-14));
}

TEST_CASE("float literals in every spelling", "[ops][parser]") {
  CHECK(eval("1") == 1);
  CHECK(eval("2.5") == 2.5);
  CHECK(eval("1e-3") == 1e-3);
  CHECK(eval("1E2") == 100);
  CHECK(eval("2.5e+1") == 25);
  CHECK(eval(".5") == 0.5);
  CHECK(eval("3.") == 3);
  CHECK(eval("x*.25", 8) == 2);
}

TEST_CASE("bad expressions report the column of the problem", "[ops][parser][errors]") {
  require_parse_error("", 1, "empty");
  require_parse_error("   ", 4, "empty");
  require_parse_error("1+*x", 3, "expected an operand");
  require_parse_error("x+", 3, "end of the expression");
  require_parse_error("foo(x)", 1, "unknown function 'foo'");
  require_parse_error("x + bar", 5, "unknown name 'bar'");
  require_parse_error("x+y", 3, "input 'y' is not available");
  require_parse_error("(x+1", 5, "expected ')'");
  require_parse_error("max(x)", 1, "takes 2 arguments, got 1");
  require_parse_error("exp(x, x)", 1, "takes 1 argument, got 2");
  require_parse_error("relu()", 1, "got 0");
  require_parse_error("exp + 1", 1, "needs arguments");
  require_parse_error("x 1", 3, "unexpected '1'");
  require_parse_error("x)", 2, "unexpected ')'");
  require_parse_error("1e", 2, "malformed exponent");
  require_parse_error("1.2.3", 4, "unexpected '.'");
  require_parse_error("2x", 2, "unexpected 'x'");
  require_parse_error("x^2", 2, "unexpected '^'");
  require_parse_error(".", 1, "malformed number");
  require_parse_error("max(x,,x)", 7, "expected an operand");
  require_parse_error("max(x x)", 7, "expected ',' or ')'");
  require_parse_error("1e999", 1, "out of range");
  // Names beyond `inputs` are errors even when they are valid input names.
  require_parse_error("x*z", 3, "'z'", {"x", "y"});
  CHECK(parse_error("x*z", {"x", "y", "z"}).empty());
}
