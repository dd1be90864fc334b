// The elementwise expression parser under the mutation fuzzer: mutants of real expressions (the
// suite's, every function and operator, nesting near the limits) go through the elementwise op
// template. Each must be refused with an InputError or build a DAG whose canonical text parses back,
// which lowers, and which the reference interpreter evaluates. A crash, a hang, any other exception
// or (in the sanitizer build) a memory error or undefined behaviour fails the test.
#include <catch2/catch.hpp>

#include "schedule/interpreter/reference_interpreter.h"
#include "schedule/lower/lower.h"
#include "schedule/ops/op_library.h"
#include "schedule/state/trace.h"
#include "schedule/te/dag_parser.h"
#include "schedule/te/error.h"
#include "tests/fuzz/mutator.h"

using namespace tessel;

namespace {

std::string nested(const std::string& open, const std::string& inner, const std::string& close, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += open;
  s += inner;
  for (int i = 0; i < n; ++i) s += close;
  return s;
}

std::string chain(const std::string& link, int n) {
  std::string s = "x";
  for (int i = 0; i < n; ++i) s += link;
  return s;
}

std::vector<std::string> seeds() {
  return {"sigmoid(relu(x)*2+1)",
          "0.5*x*(1+tanh(0.7978845608*(x+0.044715*x*x*x)))",
          "x * sigmoid(x) * y",
          "max(x, y) - min(z, 1e-3) / pow(x, 2.5e0)",
          "-(-x) * rsqrt(abs(y) + 1) + erf(z) - log(exp(x)) + sqrt(.5)",
          "((x + y) * (z - 1)) / (1 + x * x)",
          "x",
          "1e38 * 1e38 - x",
          nested("sigmoid(", "x", ")", 250),
          nested("(", "x+y", ")", 255),
          chain("+x", 250), chain("*sigmoid(y)", 200)};
}

}  // namespace

TEST_CASE("mutated elementwise expressions are refused as bad input or build, lower and evaluate",
          "[fuzz][ops][expr]") {
  int64_t refused = 0;
  const int64_t accepted = tessel_fuzz::fuzz(seeds(), 20000, 20261125, [&](const std::string& expr) {
    ComputeDAG dag;
    try {
      dag = build_op("elementwise", {{"shape", "3x2"}, {"inputs", "3"}, {"expr", expr}});
    } catch (const InputError&) {
      ++refused;
      return false;
    }
    INFO("expr: " << expr);
    REQUIRE(parse_dag_text(dag.to_text()).to_text() == dag.to_text());
    lower(replay(dag, Trace{}), "kernel");
    const ReferenceTensors out = evaluate_reference(dag, make_random_inputs(dag, 1));
    REQUIRE(out.at("Y").size() == 6);
    return true;
  });
  INFO("accepted " << accepted << ", refused " << refused);
  CHECK(accepted > 1000);  // the fuzzing reached past the parser
  CHECK(refused > 1000);
}
