// The elementwise and broadcast ONNX ops (frontend/ops/elementwise.cpp) on hand-built graphs at odd
// shapes: each result from the reference interpreter and from the default CPU schedule compiled with
// LLVM, compared with loops written here from the ONNX spec; the variants they refuse; and that
// none of them makes a stage.
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>

#include "frontend/op_library.h"
#include "schedule/te/error.h"
#include "tests/frontend/inline_build.h"

using namespace tessel;
using namespace tessel_test;

namespace {

using Index = std::vector<int64_t>;
using Fn1 = std::function<double(double)>;
using FnN = std::function<double(const std::vector<double>&)>;

// Numpy broadcasting of `xs` into an array of `shape`, element by element through f.
Array broadcast(const std::vector<Array>& xs, const Index& shape, const FnN& f, DType dtype = DType::Float32) {
  return make_array(
      shape,
      [&](const Index& o) {
        std::vector<double> v;
        for (const Array& x : xs) {
          Index i(x.shape.size());
          for (size_t d = 0; d < i.size(); ++d) i[d] = x.shape[d] == 1 ? 0 : o[o.size() - i.size() + d];
          v.push_back(x.at(i));
        }
        return f(v);
      },
      dtype);
}

Array map(const Array& x, const Fn1& f) {
  return broadcast({x}, x.shape, [&](const std::vector<double>& v) { return f(v[0]); });
}

// Values uniform in [lo, hi), exact in float32.
Array uniform(const Index& shape, uint64_t seed, double lo, double hi) {
  Array a = random_array(shape, seed);
  for (double& v : a.values) v = static_cast<float>(lo + (v + 1) / 2 * (hi - lo));
  return a;
}

// A graph of one node `op` on x (and y), output `out` of `shape`.
OpGraph one_node(const std::string& op, const std::vector<std::pair<std::string, Array>>& inputs, const Index& shape,
                 std::map<std::string, Attribute> attributes = {}, DType dtype = DType::Float32) {
  OpGraph g;
  std::vector<std::string> names;
  for (const auto& [name, values] : inputs) {
    g.input(name, values);
    names.push_back(name);
  }
  g.node(op, names, {{"out", shape}}, std::move(attributes), {dtype});
  return g;
}

// The number of non-placeholder operations (stages) of the built subgraph.
int stage_count(const Built& b) {
  int n = 0;
  for (const Operation& op : b.dag.ops()) n += op.is_placeholder ? 0 : 1;
  return n;
}

}  // namespace

TEST_CASE("Add, Sub, Mul, Div broadcast numpy-style and make no stage of their own", "[frontend][ops]") {
  const Array x = random_array({7, 1, 13}, 1);
  const Array y = uniform({5, 1}, 2, 0.5, 1.5);
  const std::map<std::string, std::function<double(double, double)>> ops = {
      {"Add", [](double a, double b) { return a + b; }},
      {"Sub", [](double a, double b) { return a - b; }},
      {"Mul", [](double a, double b) { return a * b; }},
      {"Div", [](double a, double b) { return a / b; }}};
  for (const auto& [op, f] : ops) {
    INFO(op);
    OpGraph g = one_node(op, {{"x", x}, {"y", y}}, {7, 5, 13});
    check_inlined(g, "out", broadcast({x, y}, {7, 5, 13}, [&](const std::vector<double>& v) { return f(v[0], v[1]); }));
    CHECK(stage_count(build_inlined(g, "out")) == 1);  // the output stage only
  }
}

TEST_CASE("a one-element constant operand is an immediate, not a placeholder", "[frontend][ops]") {
  const Array x = random_array({13, 7}, 3);
  OpGraph g;
  g.input("x", x).floats("half", {0.5f}).floats("one", {1.0f}, {1, 1, 1});
  g.node("Mul", {"x", "half"}, {{"h", {13, 7}}}).node("Add", {"one", "h"}, {{"out", {1, 13, 7}}});
  const Built b = build_inlined(g, "out");
  CHECK(b.input_values == std::vector<std::string>{"x"});
  CHECK(b.dag.to_text().find("0.5f") != std::string::npos);
  Array want = map(x, [](double v) { return 1 + v * 0.5; });
  want.shape = {1, 13, 7};
  check_built(g, b, want);
}

TEST_CASE("int64 arithmetic: C division truncating toward zero, Sub, Max, Abs, Neg, Relu", "[frontend][ops]") {
  // Integers come from Cast (float to int64 truncates), so the interpreter sees float reads only.
  const Array x = uniform({7, 13}, 4, -9.9, 9.9);
  Array y = uniform({13}, 5, 1, 4.9);
  for (size_t k = 0; k < y.values.size(); k += 2) y.values[k] = -y.values[k];
  auto chain = [&](const std::string& op, const std::function<double(double, double)>& f) {
    INFO(op);
    OpGraph g;
    g.input("x", x).input("y", y);
    g.node("Cast", {"x"}, {{"a", {7, 13}}}, {{"to", int64_t{7}}}, {DType::Int64});
    g.node("Cast", {"y"}, {{"b", {13}}}, {{"to", int64_t{7}}}, {DType::Int64});
    g.node(op, {"a", "b"}, {{"q", {7, 13}}}, {}, {DType::Int64});
    g.node("Cast", {"q"}, {{"out", {7, 13}}}, {{"to", int64_t{1}}});
    check_inlined(g, "out", broadcast({x, y}, {7, 13}, [&](const std::vector<double>& v) {
                    return f(std::trunc(v[0]), std::trunc(v[1]));
                  }));
  };
  chain("Div", [](double a, double b) { return static_cast<double>(int64_t(a) / int64_t(b)); });
  chain("Sub", [](double a, double b) { return a - b; });
  chain("Max", [](double a, double b) { return std::max(a, b); });
  for (const char* op : {"Abs", "Neg", "Relu"}) {
    INFO(op);
    OpGraph g;
    g.input("x", x);
    g.node("Cast", {"x"}, {{"a", {7, 13}}}, {{"to", int64_t{7}}}, {DType::Int64});
    g.node(op, {"a"}, {{"r", {7, 13}}}, {}, {DType::Int64});
    g.node("Cast", {"r"}, {{"out", {7, 13}}}, {{"to", int64_t{1}}});
    const std::string name = op;
    check_inlined(g, "out", map(x, [&](double v) {
                    const double t = std::trunc(v);
                    return name == "Abs" ? std::fabs(t) : name == "Neg" ? -t : std::max(t, 0.0);
                  }));
  }
}

TEST_CASE("unary math ops", "[frontend][ops]") {
  const Array x = random_array({3, 7, 13}, 6);
  const Array positive = uniform({3, 7, 13}, 7, 0.05, 4);
  const std::vector<std::tuple<const char*, Fn1, bool>> ops = {
      {"Sqrt", [](double v) { return std::sqrt(v); }, true},
      {"Log", [](double v) { return std::log(v); }, true},
      {"Reciprocal", [](double v) { return 1 / v; }, true},
      {"Exp", [](double v) { return std::exp(v); }, false},
      {"Erf", [](double v) { return std::erf(v); }, false},
      {"Tanh", [](double v) { return std::tanh(v); }, false},
      {"Sigmoid", [](double v) { return 1 / (1 + std::exp(-v)); }, false},
      {"Neg", [](double v) { return -v; }, false},
      {"Abs", [](double v) { return std::fabs(v); }, false},
      {"Sign", [](double v) { return static_cast<double>((v > 0) - (v < 0)); }, false},
      {"Identity", [](double v) { return v; }, false}};
  for (const auto& [op, f, needs_positive] : ops) {
    INFO(op);
    const Array& in = needs_positive ? positive : x;
    check_inlined(one_node(op, {{"x", in}}, in.shape), "out", map(in, f));
  }
}

TEST_CASE("Pow: broadcast exponents, constant exponents 2 and 3 as multiplications", "[frontend][ops]") {
  const Array x = uniform({7, 13}, 8, 0.1, 2);
  const Array y = random_array({13}, 9);
  check_inlined(one_node("Pow", {{"x", x}, {"y", y}}, {7, 13}), "out",
                broadcast({x, y}, {7, 13}, [](const std::vector<double>& v) { return std::pow(v[0], v[1]); }));
  for (double e : {2.0, 3.0, 0.5}) {
    INFO(e);
    OpGraph g;
    g.input("x", x).floats("e", {static_cast<float>(e)});
    g.node("Pow", {"x", "e"}, {{"out", {7, 13}}});
    const Built b = build_inlined(g, "out");
    CHECK((b.dag.to_text().find("pow") != std::string::npos) == (e == 0.5));
    check_built(g, b, map(x, [e](double v) { return std::pow(v, e); }));
  }
  OpGraph g;
  g.input("x", x).ints("e", {3});
  g.node("Pow", {"x", "e"}, {{"out", {7, 13}}});
  check_inlined(g, "out", map(x, [](double v) { return v * v * v; }));
}

TEST_CASE("activations: Relu, LeakyRelu, Elu, Selu, HardSigmoid, HardSwish, Softplus, Softsign, PRelu",
          "[frontend][ops]") {
  const Array x = uniform({2, 5, 7, 3}, 10, -4, 4);
  const Index s = x.shape;
  check_inlined(one_node("Relu", {{"x", x}}, s), "out", map(x, [](double v) { return std::max(v, 0.0); }));
  check_inlined(one_node("LeakyRelu", {{"x", x}}, s, {{"alpha", 0.1}}), "out",
                map(x, [](double v) { return v < 0 ? 0.1 * v : v; }));
  check_inlined(one_node("LeakyRelu", {{"x", x}}, s), "out", map(x, [](double v) { return v < 0 ? 0.01 * v : v; }));
  check_inlined(one_node("Elu", {{"x", x}}, s, {{"alpha", 0.7}}), "out",
                map(x, [](double v) { return v < 0 ? 0.7 * (std::exp(v) - 1) : v; }));
  check_inlined(one_node("Selu", {{"x", x}}, s, {{"alpha", 1.5}, {"gamma", 2.0}}), "out",
                map(x, [](double v) { return 2 * (v > 0 ? v : 1.5 * (std::exp(v) - 1)); }));
  check_inlined(one_node("HardSigmoid", {{"x", x}}, s, {{"alpha", 0.3}, {"beta", 0.4}}), "out",
                map(x, [](double v) { return std::max(0.0, std::min(1.0, 0.3 * v + 0.4)); }));
  check_inlined(one_node("HardSwish", {{"x", x}}, s), "out",
                map(x, [](double v) { return v * std::max(0.0, std::min(1.0, v / 6 + 0.5)); }));
  check_inlined(one_node("Softplus", {{"x", x}}, s), "out", map(x, [](double v) { return std::log(std::exp(v) + 1); }));
  check_inlined(one_node("Softsign", {{"x", x}}, s), "out", map(x, [](double v) { return v / (1 + std::fabs(v)); }));
  const Array slope = random_array({5, 1, 1}, 11);
  check_inlined(one_node("PRelu", {{"x", x}, {"slope", slope}}, s), "out",
                broadcast({x, slope}, s, [](const std::vector<double>& v) { return v[0] < 0 ? v[1] * v[0] : v[0]; }));
}

TEST_CASE("Clip: bounds as constant inputs, one bound left out, runtime bounds, attributes before opset 11",
          "[frontend][ops]") {
  const Array x = uniform({7, 13}, 12, -2, 2);
  auto clipped = [&](double lo, double hi) { return map(x, [=](double v) { return std::min(std::max(v, lo), hi); }); };
  OpGraph g;
  g.input("x", x).floats("lo", {-0.5f}).floats("hi", {1.25f});
  g.node("Clip", {"x", "lo", "hi"}, {{"out", {7, 13}}});
  check_inlined(g, "out", clipped(-0.5, 1.25));
  CHECK(build_inlined(g, "out").input_values == std::vector<std::string>{"x"});
  OpGraph upper;
  upper.input("x", x).floats("hi", {6.0f});
  upper.node("Clip", {"x", "", "hi"}, {{"out", {7, 13}}});
  check_inlined(upper, "out", clipped(-INFINITY, 6));
  const Array lo = make_array({}, [](const Index&) { return -0.25; });
  const Array hi = make_array({}, [](const Index&) { return 0.75; });
  check_inlined(one_node("Clip", {{"x", x}, {"lo", lo}, {"hi", hi}}, {7, 13}), "out", clipped(-0.25, 0.75));
  OpGraph old(6);
  old.input("x", x).node("Clip", {"x"}, {{"out", {7, 13}}}, {{"min", 0.0}, {"max", 6.0}});
  check_inlined(old, "out", clipped(0, 6));
}

TEST_CASE("comparisons, logic and Where", "[frontend][ops]") {
  const Array x = random_array({7, 13}, 13);
  const Array y = random_array({13}, 14);
  const std::map<std::string, std::function<bool(double, double)>> cmp = {
      {"Less", [](double a, double b) { return a < b; }},
      {"LessOrEqual", [](double a, double b) { return a <= b; }},
      {"Greater", [](double a, double b) { return a > b; }},
      {"GreaterOrEqual", [](double a, double b) { return a >= b; }}};
  for (const auto& [op, f] : cmp) {
    INFO(op);
    check_inlined(
        one_node(op, {{"x", x}, {"y", y}}, {7, 13}, {}, DType::Bool), "out",
        broadcast(
            {x, y}, {7, 13}, [&](const std::vector<double>& v) { return f(v[0], v[1]) ? 1.0 : 0.0; }, DType::Bool));
  }
  SECTION("Where(Not(x > y) or x == 0, x, y) with the condition computed in the subgraph") {
    OpGraph g;
    g.input("x", x).input("y", y).floats("zero", {0.0f});
    g.node("Greater", {"x", "y"}, {{"gt", {7, 13}}}, {}, {DType::Bool});
    g.node("Not", {"gt"}, {{"le", {7, 13}}}, {}, {DType::Bool});
    g.node("Equal", {"x", "zero"}, {{"z", {7, 13}}}, {}, {DType::Bool});
    g.node("Or", {"le", "z"}, {{"c", {7, 13}}}, {}, {DType::Bool});
    g.node("Where", {"c", "x", "y"}, {{"out", {7, 13}}});
    check_inlined(g, "out", broadcast({x, y}, {7, 13}, [](const std::vector<double>& v) {
                    return !(v[0] > v[1]) || v[0] == 0 ? v[0] : v[1];
                  }));
  }
  SECTION("Where broadcasts all three operands; And and Xor of bools") {
    const Array c = make_array(
        {7, 1}, [](const Index& i) { return i[0] % 2 ? 1.0 : 0.0; }, DType::Bool);
    const Array d = make_array(
        {13}, [](const Index& i) { return i[0] % 3 ? 1.0 : 0.0; }, DType::Bool);
    OpGraph g;
    g.input("c", c).input("d", d).input("x", x).input("y", y);
    g.node("Xor", {"c", "d"}, {{"e", {7, 13}}}, {}, {DType::Bool});
    g.node("And", {"e", "c"}, {{"f", {7, 13}}}, {}, {DType::Bool});
    g.node("Where", {"f", "x", "y"}, {{"out", {7, 13}}});
    check_inlined(g, "out", broadcast({c, d, x, y}, {7, 13}, [](const std::vector<double>& v) {
                    const bool e = (v[0] != 0) != (v[1] != 0);
                    return e && v[0] != 0 ? v[2] : v[3];
                  }));
  }
}

TEST_CASE("Cast between float32, int64 and bool, and other targets refused naming the node", "[frontend][ops]") {
  Array x = uniform({7, 13}, 15, -3, 3);
  x.values[0] = 0;
  x.values[1] = 0.25;
  auto cast_chain = [&](int64_t via, DType dtype, const Fn1& f) {
    INFO(via);
    OpGraph g;
    g.input("x", x);
    g.node("Cast", {"x"}, {{"c", {7, 13}}}, {{"to", via}}, {dtype});
    g.node("Cast", {"c"}, {{"out", {7, 13}}}, {{"to", int64_t{1}}});
    check_inlined(g, "out", map(x, f));
  };
  cast_chain(7, DType::Int64, [](double v) { return std::trunc(v); });
  cast_chain(9, DType::Bool, [](double v) { return v != 0 ? 1.0 : 0.0; });
  SECTION("int64 to bool and bool to int64") {
    OpGraph g;
    g.input("x", x);
    g.node("Cast", {"x"}, {{"i", {7, 13}}}, {{"to", int64_t{7}}}, {DType::Int64});
    g.node("Cast", {"i"}, {{"b", {7, 13}}}, {{"to", int64_t{9}}}, {DType::Bool});
    g.node("Cast", {"b"}, {{"j", {7, 13}}}, {{"to", int64_t{7}}}, {DType::Int64});
    g.node("Cast", {"j"}, {{"out", {7, 13}}}, {{"to", int64_t{1}}});
    check_inlined(g, "out", map(x, [](double v) { return std::trunc(v) != 0 ? 1.0 : 0.0; }));
  }
  SECTION("a cast to its own type is the identity") {
    check_inlined(one_node("Cast", {{"x", x}}, {7, 13}, {{"to", int64_t{1}}}), "out", x);
  }
  SECTION("DOUBLE, FLOAT16 and INT32 targets") {
    for (int64_t to : {11, 10, 6}) {
      OpGraph g = one_node("Cast", {{"x", x}}, {7, 13}, {{"to", to}});
      CHECK_THROWS_WITH(build_inlined(g, "out"),
                        Catch::Contains("node 'Cast_0' (Cast)") && Catch::Contains("not supported"));
    }
  }
}

TEST_CASE("variadic Min, Max, Sum, Mean broadcast every input", "[frontend][ops]") {
  const Array a = random_array({7, 1, 13}, 16), b = random_array({5, 1}, 17), c = random_array({13}, 18);
  const std::map<std::string, FnN> ops = {
      {"Min",
       [](const std::vector<double>& v) {
         return std::min({v[0], v[1], v[2]});
       }},
      {"Max",
       [](const std::vector<double>& v) {
         return std::max({v[0], v[1], v[2]});
       }},
      {"Sum", [](const std::vector<double>& v) { return v[0] + v[1] + v[2]; }},
      {"Mean", [](const std::vector<double>& v) { return (v[0] + v[1] + v[2]) / 3; }}};
  for (const auto& [op, f] : ops) {
    INFO(op);
    check_inlined(one_node(op, {{"a", a}, {"b", b}, {"c", c}}, {7, 5, 13}), "out", broadcast({a, b, c}, {7, 5, 13}, f));
  }
  check_inlined(one_node("Max", {{"a", a}}, a.shape), "out", a);
}

TEST_CASE("Dropout at inference is the identity, and its mask and training mode are refused", "[frontend][ops]") {
  const Array x = random_array({7, 13}, 19);
  OpGraph g;
  g.input("x", x).floats("ratio", {0.3f});
  g.graph.set_value(Value{"training", TensorInfo{DType::Bool, {}}, TensorData::of_bools({}, {false})});
  g.node("Dropout", {"x", "ratio", "training"}, {{"out", {7, 13}}, {"mask", {7, 13}}}, {},
         {DType::Float32, DType::Bool});
  check_inlined(g, "out", x);

  OpGraph read_mask = g;
  read_mask.node("Cast", {"mask"}, {{"m", {7, 13}}}, {{"to", int64_t{1}}});
  CHECK_THROWS_WITH(build_inlined(read_mask, "m"), Catch::Contains("Dropout") && Catch::Contains("mask"));
  OpGraph training = g;
  training.graph.set_value(Value{"training", TensorInfo{DType::Bool, {}}, TensorData::of_bools({}, {true})});
  CHECK_THROWS_WITH(build_inlined(training, "out"), Catch::Contains("training mode"));
}

TEST_CASE("BatchNormalization in inference form over the channel axis", "[frontend][ops]") {
  for (const Index& shape : {Index{2, 5, 7, 3}, Index{13, 5}}) {
    const Array x = random_array(shape, 20);
    const Array scale = random_array({5}, 21), bias = random_array({5}, 22), mean = random_array({5}, 23);
    const Array var = uniform({5}, 24, 0.1, 2);
    OpGraph g;
    g.input("x", x).input("scale", scale).input("B", bias).input("mean", mean).input("var", var);
    g.node("BatchNormalization", {"x", "scale", "B", "mean", "var"}, {{"out", shape}}, {{"epsilon", 1e-3}});
    Array want = make_array(shape, [&](const Index& i) {
      const Index c = {i[1]};
      return (x.at(i) - mean.at(c)) / std::sqrt(var.at(c) + 1e-3) * scale.at(c) + bias.at(c);
    });
    check_inlined(g, "out", want);
    CHECK(stage_count(build_inlined(g, "out")) == 1);

    OpGraph training = g;
    training.graph.nodes.back().attributes["training_mode"] = int64_t{1};
    CHECK_THROWS_WITH(build_inlined(training, "out"), Catch::Contains("training mode"));
  }
}

TEST_CASE("elementwise ops refuse mixed types, bool arithmetic and shapes inference disagrees with",
          "[frontend][ops]") {
  const Array x = random_array({7, 13}, 25);
  OpGraph mixed;
  mixed.input("x", x).input("i", int_array({13}, std::vector<int64_t>(13, 1)));
  mixed.node("Add", {"x", "i"}, {{"out", {7, 13}}});
  CHECK_THROWS_WITH(build_inlined(mixed, "out"), Catch::Contains("node 'Add_0' (Add)") && Catch::Contains("mix"));

  OpGraph wrong_shape = one_node("Relu", {{"x", x}}, {7, 12});
  CHECK_THROWS_WITH(build_inlined(wrong_shape, "out"),
                    Catch::Contains("node 'Relu_0' (Relu)") && Catch::Contains("[7, 12]"));
  OpGraph no_broadcast = one_node("Mul", {{"x", x}, {"y", random_array({7}, 26)}}, {7, 13});
  CHECK_THROWS_WITH(build_inlined(no_broadcast, "out"), Catch::Contains("do not broadcast"));

  const Array b = make_array(
      {7, 13}, [](const Index&) { return 1.0; }, DType::Bool);
  CHECK_THROWS_WITH(build_inlined(one_node("Add", {{"a", b}, {"b", b}}, {7, 13}, {}, DType::Bool), "out"),
                    Catch::Contains("does not take bool"));
  CHECK_THROWS_WITH(build_inlined(one_node("Exp", {{"i", int_array({2}, {1, 2})}}, {2}, {}, DType::Int64), "out"),
                    Catch::Contains("does not take int64"));
}

TEST_CASE("pattern kinds of the elementwise and contraction ops", "[frontend][ops]") {
  for (const char* op : {"Relu", "Exp", "Sqrt", "Cast", "Clip", "Not", "Identity", "Dropout", "HardSwish"})
    CHECK(find_op(op)->pattern == OpPattern::Elementwise);
  for (const char* op : {"Add", "Mul", "Div", "Pow", "Where", "Equal", "Max", "PRelu", "BatchNormalization"})
    CHECK(find_op(op)->pattern == OpPattern::Broadcast);
  for (const char* op : {"Conv", "Gemm", "MatMul", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"})
    CHECK(find_op(op)->pattern == OpPattern::OutEwiseFusable);
}
