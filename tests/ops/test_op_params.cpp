// Op templates as a contract: the registry, the DAG each template builds (names, order, canonical
// text, workload key, flops) and strict parameter errors.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "schedule/ops/op_library.h"
#include "schedule/te/error.h"

using namespace tessel;

namespace {

std::vector<std::string> names(const ComputeDAG& dag) {
  std::vector<std::string> out;
  for (const Operation& op : dag.ops()) out.push_back(op.name);
  return out;
}

// The InputError message of build_op, or "" when it does not throw.
std::string error_of(const std::string& op, const OpParams& params) {
  try {
    build_op(op, params);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

void require_error(const std::string& op, const OpParams& params, const std::vector<std::string>& parts) {
  std::string msg = error_of(op, params);
  INFO("message: " << msg);
  REQUIRE_FALSE(msg.empty());
  for (const std::string& part : parts) {
    INFO("expected substring: " << part);
    CHECK(msg.find(part) != std::string::npos);
  }
}

const OpParams kMatmul{{"M", "7"}, {"N", "13"}, {"K", "61"}};
const OpParams kConv{{"N", "1"}, {"C", "4"}, {"H", "9"}, {"W", "9"}, {"F", "8"}, {"KH", "3"}, {"KW", "3"}};

}  // namespace

TEST_CASE("the registry lists every template in a fixed order", "[ops]") {
  std::vector<std::string> listed;
  for (const OpTemplate& t : op_templates()) listed.push_back(t.name);
  REQUIRE(listed == std::vector<std::string>{"matmul", "dense", "batch_matmul", "conv2d", "softmax", "layernorm",
                                             "rmsnorm", "reduce_sum", "bias_residual_layernorm", "elementwise"});
  REQUIRE(find_op_template("conv2d") != nullptr);
  REQUIRE(find_op_template("conv2d")->params.size() == 15);
  REQUIRE(find_op_template("conv3d") == nullptr);
  for (const OpTemplate& t : op_templates()) {
    CHECK_FALSE(t.summary.empty());
    for (const OpParam& p : t.params) CHECK_FALSE(p.doc.empty());
  }
}

TEST_CASE("templates produce the documented stage order and names", "[ops]") {
  using V = std::vector<std::string>;
  CHECK(names(build_op("matmul", kMatmul)) == V{"A", "B", "C"});
  CHECK(names(build_op("dense", {{"M", "4"}, {"N", "5"}, {"K", "6"}})) == V{"X", "W", "Y"});
  CHECK(names(build_op("dense", {{"M", "4"}, {"N", "5"}, {"K", "6"}, {"bias", "1"}, {"act", "relu"}})) ==
        V{"X", "W", "b", "matmul", "Y"});
  CHECK(names(build_op("dense", {{"M", "4"}, {"N", "5"}, {"K", "6"}, {"act", "gelu"}})) == V{"X", "W", "matmul", "Y"});
  CHECK(names(build_op("batch_matmul", {{"B", "2"}, {"M", "4"}, {"N", "5"}, {"K", "6"}})) == V{"A", "B", "C"});
  CHECK(names(build_op("conv2d", kConv)) == V{"X", "W", "Y"});
  OpParams padded = kConv;
  padded["pad"] = "1";
  padded["bias"] = "1";
  CHECK(names(build_op("conv2d", padded)) == V{"X", "W", "b", "pad", "conv", "Y"});
  CHECK(names(build_op("softmax", {{"rows", "3"}, {"cols", "5"}})) == V{"X", "row_max", "exps", "row_sum", "Y"});
  CHECK(names(build_op("layernorm", {{"rows", "3"}, {"cols", "5"}})) ==
        V{"X", "gamma", "beta", "mean_sum", "mean", "var_sum", "rstd", "Y"});
  CHECK(names(build_op("rmsnorm", {{"rows", "3"}, {"cols", "5"}})) == V{"X", "gamma", "sq_sum", "rstd", "Y"});
  CHECK(names(build_op("reduce_sum", {{"rows", "3"}, {"cols", "5"}})) == V{"X", "Y"});
  CHECK(names(build_op("bias_residual_layernorm", {{"rows", "3"}, {"cols", "5"}})) ==
        V{"X", "b", "R", "gamma", "beta", "h", "mean_sum", "mean", "var_sum", "rstd", "Y"});
  CHECK(names(build_op("elementwise", {{"shape", "3x4"}, {"inputs", "2"}, {"expr", "x*y"}})) == V{"x", "y", "Y"});
}

TEST_CASE("every template has one output which is the last op and reductions hold only the reduced term", "[ops]") {
  std::vector<std::pair<std::string, OpParams>> all = {
      {"matmul", kMatmul},
      {"dense", {{"M", "4"}, {"N", "5"}, {"K", "6"}, {"bias", "1"}, {"act", "silu"}}},
      {"batch_matmul", {{"B", "2"}, {"M", "4"}, {"N", "5"}, {"K", "6"}}},
      {"conv2d", {{"N", "1"}, {"C", "4"}, {"H", "9"}, {"W", "9"}, {"F", "8"}, {"KH", "3"}, {"KW", "3"}, {"pad", "1"},
                  {"bias", "1"}, {"act", "relu"}, {"groups", "2"}}},
      {"softmax", {{"rows", "3"}, {"cols", "5"}}},
      {"layernorm", {{"rows", "3"}, {"cols", "5"}}},
      {"rmsnorm", {{"rows", "3"}, {"cols", "5"}}},
      {"reduce_sum", {{"rows", "3"}, {"cols", "5"}}},
      {"bias_residual_layernorm", {{"rows", "3"}, {"cols", "5"}}},
      {"elementwise", {{"shape", "7"}, {"expr", "exp(x)"}}},
  };
  for (const auto& [op, params] : all) {
    INFO(op);
    ComputeDAG dag = build_op(op, params);
    REQUIRE(dag.outputs() == std::vector<std::string>{dag.ops().back().name});
    bool seen_compute = false;
    for (const Operation& o : dag.ops()) {
      if (o.is_placeholder) CHECK_FALSE(seen_compute);  // placeholders first
      seen_compute = seen_compute || !o.is_placeholder;
      if (o.reduce == ReduceKind::None) continue;
      // The reduced term contains no division, activation or constant: those are later stages.
      std::string body = to_string(o.body);
      CHECK(body.find('/') == std::string::npos);
      CHECK(body.find("sigmoid") == std::string::npos);
      CHECK(body.find("rsqrt") == std::string::npos);
    }
  }
}

TEST_CASE("canonical text and workload key are stable and parameter-sensitive", "[ops]") {
  ComputeDAG a = build_op("matmul", kMatmul);
  ComputeDAG b = build_op("matmul", kMatmul);
  REQUIRE(a.to_text() == b.to_text());
  REQUIRE(a.workload_key() == b.workload_key());
  REQUIRE(a.workload_key().size() == 16);
  OpParams other = kMatmul;
  other["K"] = "62";
  ComputeDAG c = build_op("matmul", other);
  CHECK(a.to_text() != c.to_text());
  CHECK(a.workload_key() != c.workload_key());
  // Defaults spelled out give the same DAG as defaults left out.
  OpParams spelled = kConv;
  spelled.insert({{"stride", "1"}, {"pad", "0"}, {"dilation", "1"}, {"groups", "1"}, {"bias", "0"}, {"act", "none"}});
  CHECK(build_op("conv2d", kConv).to_text() == build_op("conv2d", spelled).to_text());
  CHECK(build_op("layernorm", {{"rows", "3"}, {"cols", "5"}}).workload_key() !=
        build_op("layernorm", {{"rows", "3"}, {"cols", "5"}, {"eps", "1e-6"}}).workload_key());
  CHECK(build_op("dense", {{"M", "4"}, {"N", "5"}, {"K", "6"}, {"act", "gelu"}}).to_text() !=
        build_op("dense", {{"M", "4"}, {"N", "5"}, {"K", "6"}, {"act", "gelu_tanh"}}).to_text());
  CHECK(build_op("elementwise", {{"shape", "4x4"}, {"expr", "x + 1"}}).to_text() ==
        build_op("elementwise", {{"shape", "4x4"}, {"expr", "x+1"}}).to_text());
}

TEST_CASE("matmul-like flops are 2*M*N*K", "[ops]") {
  CHECK(build_op("matmul", kMatmul).flops() == 2.0 * 7 * 13 * 61);
  CHECK(build_op("batch_matmul", {{"B", "3"}, {"M", "4"}, {"N", "5"}, {"K", "6"}}).flops() == 2.0 * 3 * 4 * 5 * 6);
  CHECK(build_op("dense", {{"M", "4"}, {"N", "5"}, {"K", "6"}}).flops() == 2.0 * 4 * 5 * 6);
  // conv2d without padding: 2 * N * F * OH * OW * C * KH * KW.
  CHECK(build_op("conv2d", kConv).flops() == 2.0 * 1 * 8 * 7 * 7 * 4 * 3 * 3);
}

TEST_CASE("axes are named readably and uniquely and conv padding clamps its read", "[ops]") {
  ComputeDAG mm = build_op("matmul", kMatmul);
  const Operation& c = mm.op("C");
  REQUIRE(c.axes.size() == 2);
  CHECK(c.axes[0].name == "i");
  CHECK(c.axes[1].name == "j");
  CHECK(c.reduce_axes[0].name == "k");
  CHECK(c.reduce == ReduceKind::Sum);

  OpParams padded = kConv;
  padded["pad"] = "2";
  ComputeDAG conv = build_op("conv2d", padded);
  const Operation& pad = conv.op("pad");
  CHECK(pad.shape == std::vector<int64_t>{1, 4, 13, 13});
  std::string body = to_string(pad.body);
  INFO(body);
  CHECK(body.find("select") != std::string::npos);
  CHECK(body.find("min") != std::string::npos);
  CHECK(body.find("max") != std::string::npos);
  CHECK(conv.op("Y").shape == std::vector<int64_t>{1, 8, 11, 11});
}

TEST_CASE("unknown ops and params are rejected with the known names", "[ops][errors]") {
  require_error("matmull", {}, {"matmull", "matmul", "conv2d", "elementwise"});
  require_error("matmul", {{"M", "7"}, {"N", "13"}, {"K", "61"}, {"Q", "1"}}, {"matmul", "'Q'", "M, N, K"});
  require_error("conv2d", {{"N", "1"}, {"C", "4"}, {"H", "9"}, {"W", "9"}, {"F", "8"}, {"KH", "3"}, {"KW", "3"},
                           {"padding", "1"}},
                {"conv2d", "padding"});
}

TEST_CASE("missing required params are named", "[ops][errors]") {
  require_error("matmul", {{"M", "7"}, {"N", "13"}}, {"matmul", "missing", "'K'"});
  require_error("elementwise", {{"shape", "4"}}, {"elementwise", "missing", "'expr'"});
  require_error("elementwise", {{"expr", "x"}}, {"elementwise", "missing", "'shape'"});
  require_error("layernorm", {{"cols", "4"}}, {"layernorm", "'rows'"});
}

TEST_CASE("integer params must be plain positive integers", "[ops][errors]") {
  for (std::string bad : {"abc", "12x", "1.5", "", " 7", "7 ", "+7", "1e3", "99999999999999999999"}) {
    INFO("M=" << bad);
    OpParams p = kMatmul;
    p["M"] = bad;
    require_error("matmul", p, {"matmul", "param M", "integer"});
  }
  for (std::string bad : {"0", "-3"}) {
    OpParams p = kMatmul;
    p["N"] = bad;
    require_error("matmul", p, {"matmul", "param N", "positive"});
  }
  OpParams neg_pad = kConv;
  neg_pad["pad"] = "-1";
  require_error("conv2d", neg_pad, {"conv2d", "param pad", "negative"});
  OpParams zero_stride = kConv;
  zero_stride["stride"] = "0";
  require_error("conv2d", zero_stride, {"conv2d", "param stride", "positive"});
  require_error("softmax", {{"rows", "3"}, {"cols", "0"}}, {"softmax", "param cols"});
  require_error("batch_matmul", {{"B", "0"}, {"M", "4"}, {"N", "5"}, {"K", "6"}}, {"batch_matmul", "param B"});
}

TEST_CASE("eps must be a positive float", "[ops][errors]") {
  for (std::string bad : {"0", "-1e-5", "abc", "1e-5x", "nan", "inf", "1e999"}) {
    INFO("eps=" << bad);
    require_error("layernorm", {{"rows", "3"}, {"cols", "5"}, {"eps", bad}}, {"layernorm", "param eps"});
  }
  CHECK_NOTHROW(build_op("rmsnorm", {{"rows", "3"}, {"cols", "5"}, {"eps", "1"}}));
  CHECK_NOTHROW(build_op("rmsnorm", {{"rows", "3"}, {"cols", "5"}, {"eps", ".5"}}));
}

TEST_CASE("choices are checked and listed", "[ops][errors]") {
  require_error("dense", {{"M", "4"}, {"N", "5"}, {"K", "6"}, {"act", "tanh"}},
                {"dense", "param act", "'tanh'", "gelu_tanh"});
  require_error("dense", {{"M", "4"}, {"N", "5"}, {"K", "6"}, {"bias", "yes"}}, {"dense", "param bias", "0, 1"});
  require_error("elementwise", {{"shape", "4"}, {"inputs", "4"}, {"expr", "x"}}, {"elementwise", "param inputs"});
  require_error("elementwise", {{"shape", "4"}, {"inputs", "0"}, {"expr", "x"}}, {"elementwise", "param inputs"});
}

TEST_CASE("conv2d checks groups and empty outputs", "[ops][errors]") {
  OpParams p = kConv;
  p["groups"] = "3";  // C = 4
  require_error("conv2d", p, {"conv2d", "param groups", "C=4", "divisible"});
  p = kConv;
  p["C"] = "6";
  p["groups"] = "3";  // F = 8
  require_error("conv2d", p, {"conv2d", "param groups", "F=8", "divisible"});
  p = kConv;
  p["KH"] = "11";  // 9 rows, no padding
  require_error("conv2d", p, {"conv2d", "param KH", "empty"});
  p = kConv;
  p["KW"] = "4";
  p["dilation"] = "3";  // dilated width 10 > 9
  require_error("conv2d", p, {"conv2d", "param KW", "empty"});
  p["pad"] = "1";  // 11 columns: fits
  CHECK_NOTHROW(build_op("conv2d", p));
}

TEST_CASE("elementwise shapes and expressions are validated", "[ops][errors]") {
  for (std::string bad : {"4096x", "0x5", "axb", "x4", "4xx4", "", "4x-2", "4 x 4", "1.5"}) {
    INFO("shape=" << bad);
    require_error("elementwise", {{"shape", bad}, {"expr", "x"}}, {"elementwise", "param shape"});
  }
  ComputeDAG rank3 = build_op("elementwise", {{"shape", "2x3x4"}, {"expr", "x"}});
  CHECK(rank3.op("Y").shape == std::vector<int64_t>{2, 3, 4});
  CHECK(rank3.op("Y").axes[2].name == "i2");
  require_error("elementwise", {{"shape", "4"}, {"expr", "x+y"}}, {"elementwise", "param expr", "column 3", "'y'"});
  require_error("elementwise", {{"shape", "4"}, {"inputs", "2"}, {"expr", "x+foo(y)"}},
                {"param expr", "column 3", "unknown function 'foo'"});
  require_error("elementwise", {{"shape", "4"}, {"expr", ""}}, {"param expr"});
}
