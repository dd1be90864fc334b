// The suite reader under the mutation fuzzer: mutants of the benchmark suite and of a small suite
// with every op template go through parse_suite. Each must be refused with an InputError naming the
// file, or yield workloads whose DAGs are valid (sizes within the limits, so their memory need and
// workload key can be computed). A crash, a hang, any other exception or (in the sanitizer build) a
// memory error or undefined behaviour fails the test.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "schedule/interpreter/host_memory.h"
#include "schedule/te/error.h"
#include "tests/fuzz/mutator.h"
#include "tools/workload.h"

using namespace tessel;

namespace {

std::vector<std::string> seeds() {
  std::ifstream in(std::string(TESSEL_SOURCE_DIR) + "/suites/operators.json");
  std::stringstream suite;
  suite << in.rdbuf();
  REQUIRE(!suite.str().empty());
  const std::string small = R"json({"cases": [
    {"name": "mm", "op": "matmul", "params": {"M": 8, "N": "16", "K": 4}},
    {"name": "dense", "op": "dense", "params": {"M": 2, "N": 3, "K": 5, "bias": 1, "act": "gelu"}},
    {"name": "bmm", "op": "batch_matmul", "params": {"B": 2, "M": 3, "N": 4, "K": 5}},
    {"name": "conv", "op": "conv2d", "params": {"N": 1, "C": 4, "H": 9, "W": 7, "F": 4, "KH": 3, "KW": 3,
                                               "stride": 2, "pad": 1, "dilation": 1, "groups": 2}},
    {"name": "sm", "op": "softmax", "params": {"rows": 3, "cols": 7}},
    {"name": "ln", "op": "layernorm", "params": {"rows": 3, "cols": 7, "eps": 1e-5}},
    {"name": "rms", "op": "rmsnorm", "params": {"rows": 3, "cols": 7, "eps": 0.001}},
    {"name": "rs", "op": "reduce_sum", "params": {"rows": 3, "cols": 7}},
    {"name": "brl", "op": "bias_residual_layernorm", "params": {"rows": 2, "cols": 6}},
    {"name": "ew", "op": "elementwise", "params": {"shape": "4x5", "inputs": 2, "expr": "x*sigmoid(y)"}}
  ], "about": "small", "min_bytes": 12}
)json";
  return {suite.str(), small};
}

}  // namespace

TEST_CASE("mutated suites are refused as bad input or yield valid workloads", "[fuzz][tools][suite]") {
  int64_t refused = 0;
  const int64_t accepted = tessel_fuzz::fuzz(seeds(), 20000, 20261126, [&](const std::string& text) {
    std::vector<Workload> cases;
    try {
      cases = parse_suite(text, "fuzz.json");
    } catch (const InputError& e) {
      REQUIRE(std::string(e.what()).find("fuzz.json") != std::string::npos);
      ++refused;
      return false;
    }
    for (const Workload& w : cases) {
      REQUIRE(host_memory_need(w.dag).total_bytes > 0);
      REQUIRE(w.dag.workload_key().size() == 16);
    }
    return true;
  });
  INFO("accepted " << accepted << ", refused " << refused);
  CHECK(accepted > 500);
  CHECK(refused > 1000);
}
