// simplify() on hand-built graphs: the shape chains exporters emit fold to constants, Identity
// goes, BatchNormalization folds into Conv and computes the same (checked against direct loops),
// dead nodes go, constant outputs stay, a Gemm's constant B is laid out [K, N]; and the constant
// folds' ONNX semantics and errors.
#include <catch2/catch.hpp>
#include <cmath>

#include "frontend/constant_fold.h"
#include "frontend/simplify.h"
#include "schedule/te/error.h"
#include "tests/frontend/onnx_test_models.h"

using namespace tessel;
using Catch::Matchers::Contains;

namespace {

struct GraphMaker {
  Graph g;
  GraphMaker() { g.opset = 13; }
  GraphMaker& input(const std::string& name, std::vector<int64_t> shape, DType dtype = DType::Float32) {
    g.set_value(Value{name, TensorInfo{dtype, std::move(shape)}, std::nullopt});
    g.inputs.push_back(name);
    return *this;
  }
  GraphMaker& constant(const std::string& name, TensorData data) {
    g.set_value(Value{name, TensorInfo{data.dtype(), data.shape()}, std::move(data)});
    return *this;
  }
  GraphMaker& node(const std::string& op, std::vector<std::string> inputs, const std::string& output,
                   std::vector<int64_t> shape, DType dtype = DType::Float32,
                   std::map<std::string, Attribute> attrs = {}) {
    g.set_value(Value{output, TensorInfo{dtype, std::move(shape)}, std::nullopt});
    g.nodes.push_back(Node{op + "_" + output, op, std::move(inputs), {output}, std::move(attrs)});
    return *this;
  }
  GraphMaker& output(const std::string& name) {
    g.outputs.push_back(name);
    return *this;
  }
};

std::vector<std::string> op_types(const Graph& g) {
  std::vector<std::string> ops;
  for (const Node& n : g.nodes) ops.push_back(n.op_type);
  return ops;
}

}  // namespace

TEST_CASE("a Shape → Gather → Unsqueeze → Concat → Reshape chain folds to a constant shape", "[frontend][simplify]") {
  GraphMaker m;
  m.input("x", {2, 3, 4})
      .node("Shape", {"x"}, "s", {3}, DType::Int64)
      .constant("zero", TensorData::of_ints({}, {0}))
      .node("Gather", {"s", "zero"}, "d0", {}, DType::Int64)
      .constant("axes", TensorData::of_ints({1}, {0}))
      .node("Unsqueeze", {"d0", "axes"}, "u", {1}, DType::Int64)
      .constant("minus_one", TensorData::of_ints({1}, {-1}))
      .node("Concat", {"u", "minus_one"}, "shape", {2}, DType::Int64, {{"axis", int64_t{0}}})
      .node("Reshape", {"x", "shape"}, "y", {2, 12})
      .output("y");
  simplify(m.g);
  CHECK(op_types(m.g) == std::vector<std::string>{"Reshape"});
  REQUIRE(m.g.is_constant("shape"));
  CHECK(m.g.value("shape").constant->ints() == std::vector<int64_t>{2, -1});
  for (const char* gone : {"s", "zero", "d0", "axes", "u", "minus_one"}) CHECK_FALSE(m.g.has_value(gone));
  CHECK(m.g.values().size() == 3);  // x, shape, y
}

TEST_CASE("Identity nodes go and graph outputs keep their names", "[frontend][simplify]") {
  GraphMaker m;
  m.input("x", {4})
      .node("Relu", {"x"}, "r", {4})
      .node("Identity", {"r"}, "i", {4})
      .node("Sigmoid", {"i"}, "s", {4})
      .node("Identity", {"s"}, "y", {4})
      .node("Identity", {"x"}, "copy", {4})
      .output("y")
      .output("copy");
  simplify(m.g);
  CHECK(op_types(m.g) == std::vector<std::string>{"Relu", "Sigmoid", "Identity"});
  CHECK(m.g.nodes[1].inputs == std::vector<std::string>{"r"});
  CHECK(m.g.nodes[1].outputs == std::vector<std::string>{"y"});  // the producer took the output's name
  CHECK(m.g.outputs == std::vector<std::string>{"y", "copy"});
  CHECK_FALSE(m.g.has_value("i"));
}

TEST_CASE("dead nodes go, and outputs that fold stay as constant values", "[frontend][simplify]") {
  GraphMaker m;
  m.input("x", {2, 3})
      .node("Relu", {"x"}, "unused", {2, 3})
      .node("Shape", {"x"}, "dims", {2}, DType::Int64)
      .node("Exp", {"x"}, "y", {2, 3})
      .output("y")
      .output("dims");
  simplify(m.g);
  CHECK(op_types(m.g) == std::vector<std::string>{"Exp"});
  REQUIRE(m.g.is_constant("dims"));
  CHECK(m.g.value("dims").constant->ints() == std::vector<int64_t>{2, 3});
  CHECK_FALSE(m.g.has_value("unused"));
}

namespace {

// out[n][m][i][j] = b[m] + Σ x[n][c][i+p-pad][j+q-pad] · w[m][c][p][q], stride 1, zero padding.
std::vector<float> direct_conv(const std::vector<float>& x, const std::vector<int64_t>& xs, const std::vector<float>& w,
                               const std::vector<int64_t>& ws, const std::vector<float>& b, int64_t pad) {
  const int64_t C = xs[1], H = xs[2], W = xs[3], M = ws[0], K = ws[2];
  const int64_t OH = H + 2 * pad - K + 1, OW = W + 2 * pad - K + 1;
  std::vector<float> out(M * OH * OW);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t i = 0; i < OH; ++i)
      for (int64_t j = 0; j < OW; ++j) {
        double acc = b.empty() ? 0.0 : b[m];
        for (int64_t c = 0; c < C; ++c)
          for (int64_t p = 0; p < K; ++p)
            for (int64_t q = 0; q < K; ++q) {
              const int64_t y = i + p - pad, z = j + q - pad;
              if (y >= 0 && y < H && z >= 0 && z < W) acc += x[(c * H + y) * W + z] * w[((m * C + c) * K + p) * K + q];
            }
        out[(m * OH + i) * OW + j] = static_cast<float>(acc);
      }
  return out;
}

std::vector<float> ramp(size_t n, float scale, float offset) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = offset + scale * static_cast<float>((i * 7) % 11);
  return v;
}

}  // namespace

TEST_CASE("BatchNormalization folds into the Conv before it and computes the same", "[frontend][simplify]") {
  const std::vector<int64_t> xs{1, 2, 5, 5}, ws{3, 2, 3, 3};
  const std::vector<float> x = ramp(50, 0.3f, -1.f), w = ramp(54, 0.1f, -0.4f);
  const std::vector<float> gamma{1.5f, 0.5f, -2.f}, beta{0.1f, 0.2f, 0.3f}, mean{0.5f, -0.25f, 1.f},
      var{4.f, 0.25f, 1.f};
  const float epsilon = 1e-3f;
  GraphMaker m;
  m.input("x", xs)
      .constant("w", TensorData::of_floats(ws, w))
      .node("Conv", {"x", "w"}, "c", {1, 3, 5, 5}, DType::Float32, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}})
      .constant("gamma", TensorData::of_floats({3}, gamma))
      .constant("beta", TensorData::of_floats({3}, beta))
      .constant("mean", TensorData::of_floats({3}, mean))
      .constant("var", TensorData::of_floats({3}, var))
      .node("BatchNormalization", {"c", "gamma", "beta", "mean", "var"}, "y", {1, 3, 5, 5}, DType::Float32,
            {{"epsilon", double{epsilon}}})
      .output("y");
  simplify(m.g);
  REQUIRE(op_types(m.g) == std::vector<std::string>{"Conv"});
  const Node& conv = m.g.nodes[0];
  REQUIRE(conv.inputs.size() == 3);
  CHECK(conv.outputs == std::vector<std::string>{"y"});
  const std::vector<float> folded = direct_conv(x, xs, m.g.value(conv.inputs[1]).constant->floats(), ws,
                                                m.g.value(conv.inputs[2]).constant->floats(), 1);
  const std::vector<float> plain = direct_conv(x, xs, w, ws, {}, 1);
  REQUIRE(folded.size() == plain.size());
  for (size_t i = 0; i < plain.size(); ++i) {
    const size_t c = i / 25;
    const float expected = (plain[i] - mean[c]) / std::sqrt(var[c] + epsilon) * gamma[c] + beta[c];
    CHECK(folded[i] == Approx(expected).epsilon(1e-5).margin(1e-5));
  }
  CHECK_FALSE(m.g.has_value("c"));
  CHECK_FALSE(m.g.has_value("gamma"));
}

TEST_CASE("BatchNormalization stays when the Conv output has another reader", "[frontend][simplify]") {
  GraphMaker m;
  m.input("x", {1, 1, 3, 3})
      .constant("w", TensorData::of_floats({1, 1, 1, 1}, {2.f}))
      .node("Conv", {"x", "w"}, "c", {1, 1, 3, 3});
  for (const char* p : {"g", "b", "mu", "var"}) m.constant(p, TensorData::of_floats({1}, {1.f}));
  m.node("BatchNormalization", {"c", "g", "b", "mu", "var"}, "y", {1, 1, 3, 3})
      .node("Relu", {"c"}, "r", {1, 1, 3, 3})
      .output("y")
      .output("r");
  simplify(m.g);
  CHECK(op_types(m.g) == std::vector<std::string>{"Conv", "BatchNormalization", "Relu"});
}

TEST_CASE("a Gemm's constant B stored N x K is transposed once to K x N but not for a one-row Gemm",
          "[frontend][simplify]") {
  // B: 3 x 5 (N = 3, K = 5), read by two 7-row Gemms with transB and by one with a single row.
  const std::vector<float> b = ramp(15, 0.5f, -2.f);
  GraphMaker m;
  m.input("x", {7, 5})
      .input("one", {1, 5})
      .input("bx", {3, 5})
      .constant("b", TensorData::of_floats({3, 5}, b))
      .node("Gemm", {"x", "b"}, "y1", {7, 3}, DType::Float32, {{"transB", int64_t{1}}})
      .node("Gemm", {"x", "b"}, "y2", {7, 3}, DType::Float32, {{"transB", int64_t{1}}, {"alpha", 2.0}})
      .node("Gemm", {"one", "b"}, "y3", {1, 3}, DType::Float32, {{"transB", int64_t{1}}})
      .node("Gemm", {"x", "bx"}, "y4", {7, 3}, DType::Float32, {{"transB", int64_t{1}}})
      .output("y1")
      .output("y2")
      .output("y3")
      .output("y4");
  simplify(m.g);
  REQUIRE(m.g.nodes.size() == 4);
  const Node &g1 = m.g.nodes[0], &g2 = m.g.nodes[1], &g3 = m.g.nodes[2], &g4 = m.g.nodes[3];
  CHECK(g1.int_attr("transB") == 0);
  CHECK(g2.int_attr("transB") == 0);
  CHECK(g1.inputs[1] == g2.inputs[1]);  // one copy for both
  CHECK(g2.float_attr("alpha") == 2.0);
  const TensorData& kn = *m.g.value(g1.inputs[1]).constant;
  REQUIRE(kn.shape() == std::vector<int64_t>{5, 3});
  for (int64_t n = 0; n < 3; ++n)
    for (int64_t k = 0; k < 5; ++k) CHECK(kn.as_double(k * 3 + n) == b[n * 5 + k]);
  // The one-row Gemm (a matrix-vector product) and the B fed at run time keep transB.
  CHECK(g3.inputs[1] == "b");
  CHECK(g3.int_attr("transB") == 1);
  CHECK(g4.inputs[1] == "bx");
  CHECK(g4.int_attr("transB") == 1);
  CHECK(m.g.value("b").info.shape == std::vector<int64_t>{3, 5});
}

namespace {

// Folds one node over constant inputs and returns its single output.
TensorData fold_one(const std::string& op, const std::vector<TensorData>& inputs,
                    std::map<std::string, Attribute> attrs = {}) {
  Node node{"n", op, {}, {"out"}, std::move(attrs)};
  std::vector<TensorInfo> infos;
  infos.reserve(inputs.size());
  std::vector<FoldInput> in;
  for (size_t k = 0; k < inputs.size(); ++k) {
    node.inputs.push_back("in" + std::to_string(k));
    infos.push_back(TensorInfo{inputs[k].dtype(), inputs[k].shape()});
    in.push_back(FoldInput{&infos.back(), &inputs[k]});
  }
  auto out = fold_node(node, in, 13);
  REQUIRE(out);
  return (*out)[0];
}

}  // namespace

TEST_CASE("constant folds follow ONNX's semantics", "[frontend][simplify]") {
  const TensorData iota = TensorData::of_ints({2, 3}, {0, 1, 2, 3, 4, 5});
  // Slice backwards over the last axis, end past the start: [[2, 1, 0], [5, 4, 3]] → every second.
  const TensorData sliced =
      fold_one("Slice", {iota, TensorData::of_ints({1}, {-1}), TensorData::of_ints({1}, {INT64_MIN}),
                         TensorData::of_ints({1}, {1}), TensorData::of_ints({1}, {-2})});
  CHECK(sliced.shape() == std::vector<int64_t>{2, 2});
  CHECK(sliced.ints() == std::vector<int64_t>{2, 0, 5, 3});
  CHECK(fold_one("Gather", {iota, TensorData::of_ints({1}, {-1})}, {{"axis", int64_t{1}}}).ints() ==
        std::vector<int64_t>{2, 5});
  CHECK(fold_one("Range", {TensorData::of_ints({}, {10}), TensorData::of_ints({}, {1}), TensorData::of_ints({}, {-4})})
            .ints() == std::vector<int64_t>{10, 6, 2});
  CHECK(fold_one("Div", {TensorData::of_ints({2}, {-7, 7}), TensorData::of_ints({}, {2})}).ints() ==
        std::vector<int64_t>{-3, 3});
  CHECK(fold_one("Where", {TensorData::of_bools({2}, {true, false}), TensorData::of_floats({2}, {1, 2}),
                           TensorData::of_floats({}, {9})})
            .floats() == std::vector<float>{1, 9});
  CHECK(fold_one("Cast", {TensorData::of_floats({2}, {-2.7f, 3.9f})}, {{"to", int64_t{7}}}).ints() ==
        std::vector<int64_t>{-2, 3});
  CHECK(fold_one("Expand", {TensorData::of_ints({2, 1}, {1, 2}), TensorData::of_ints({2}, {2, 3})}).ints() ==
        std::vector<int64_t>{1, 1, 1, 2, 2, 2});
  CHECK(fold_one("Equal", {iota, TensorData::of_ints({3}, {0, 4, 2})}).ints() ==
        std::vector<int64_t>{1, 0, 1, 0, 1, 0});
  CHECK(fold_one("Reshape", {iota, TensorData::of_ints({2}, {0, -1})}).shape() == std::vector<int64_t>{2, 3});
}

TEST_CASE("constant folds refuse inputs that break the op's rules, naming the node", "[frontend][simplify]") {
  const TensorData iota = TensorData::of_ints({2, 3}, {0, 1, 2, 3, 4, 5});
  using tessel_test::input_error;
  CHECK_THAT(input_error([&] {
               fold_one("Gather", {iota, TensorData::of_ints({1}, {2})});
             }),
             Contains("node 'n' (Gather): index 2 is out of range for extent 2"));
  CHECK_THAT(input_error([&] {
               fold_one("Reshape", {iota, TensorData::of_ints({2}, {4, -1})});
             }),
             Contains("node 'n' (Reshape): cannot reshape [2, 3] to [4, -1]"));
  CHECK_THAT(input_error([&] {
               fold_one("Div", {iota, TensorData::of_ints({}, {0})});
             }),
             Contains("node 'n' (Div): integer division by zero"));
  CHECK_THAT(input_error([&] {
               fold_one("Add", {iota, TensorData::of_ints({2}, {1, 2})});
             }),
             Contains("node 'n' (Add): input shapes [2, 3] and [2] do not broadcast"));
}

TEST_CASE("outputs past the size limit stay as nodes", "[frontend][simplify]") {
  GraphMaker m;
  m.constant("shape", TensorData::of_ints({2}, {2048, 1024}))
      .node("ConstantOfShape", {"shape"}, "big", {2048, 1024})
      .input("x", {2048, 1024})
      .node("Add", {"big", "x"}, "y", {2048, 1024})
      .output("y");
  simplify(m.g);
  CHECK(op_types(m.g) == std::vector<std::string>{"ConstantOfShape", "Add"});
}
