// The ONNX reductions (frontend/ops/reduce.cpp) on hand-built graphs: values from the reference
// interpreter and the default CPU schedule against loops written here from the ONNX spec, the
// stage structure softmax and layernorm share with their templates, and chains of ops built in
// one subgraph (injective ops read through by a contraction; an elementwise prologue inlined into
// softmax).
#include <catch2/catch.hpp>
#include <cmath>

#include "frontend/op_library.h"
#include "tests/frontend/op_check.h"

using namespace tessel;
using namespace tessel_test;

namespace {

using Index = std::vector<int64_t>;

// out[kept...] = combine over the axes in `reduced` of x; `keepdims` leaves them as 1s.
Array naive_reduce(const Array& x, const std::vector<bool>& reduced, bool keepdims, const std::string& kind) {
  Index shape;
  for (size_t d = 0; d < x.shape.size(); ++d)
    if (!reduced[d] || keepdims) shape.push_back(reduced[d] ? 1 : x.shape[d]);
  const double init = kind == "max" ? -INFINITY : kind == "min" ? INFINITY : 0.0;
  Array out = make_array(shape, [&](const Index&) { return init; });
  int64_t count = 1;
  for (size_t d = 0; d < x.shape.size(); ++d) count *= reduced[d] ? x.shape[d] : 1;
  for_each_index(x.shape, [&](const Index& i) {
    Index o;
    for (size_t d = 0; d < i.size(); ++d)
      if (!reduced[d] || keepdims) o.push_back(reduced[d] ? 0 : i[d]);
    double& acc = out.at(o);
    const double v = x.at(i);
    acc = kind == "max" ? std::max(acc, v) : kind == "min" ? std::min(acc, v) : acc + v;
  });
  if (kind == "mean")
    for (double& v : out.values) v /= static_cast<double>(count);
  return out;
}

// Softmax (or log-softmax) over the axes in `reduced`, each combination of the other axes a row.
Array naive_softmax(const Array& x, const std::vector<bool>& reduced, bool log) {
  Array max = naive_reduce(x, reduced, true, "max");
  Array sum = make_array(max.shape, [](const Index&) { return 0.0; });
  auto row = [&](const Index& i) {
    Index r = i;
    for (size_t d = 0; d < i.size(); ++d)
      if (reduced[d]) r[d] = 0;
    return r;
  };
  for_each_index(x.shape, [&](const Index& i) { sum.at(row(i)) += std::exp(x.at(i) - max.at(row(i))); });
  return make_array(x.shape, [&](const Index& i) {
    const double shifted = x.at(i) - max.at(row(i));
    return log ? shifted - std::log(sum.at(row(i))) : std::exp(shifted) / sum.at(row(i));
  });
}

std::vector<ReduceKind> stage_kinds(const ComputeDAG& dag) {
  std::vector<ReduceKind> kinds;
  for (const Operation& op : dag.ops())
    if (!op.is_placeholder) kinds.push_back(op.reduce);
  return kinds;
}

}  // namespace

TEST_CASE("ReduceMean, ReduceSum, ReduceMax, ReduceMin: axes, keepdims, noop_with_empty_axes", "[frontend][ops]") {
  const Array x = random_array({3, 13, 7}, 21);
  SECTION("ReduceMean over the last axis (axes attribute, negative), keepdims 1") {
    OpGraph g;
    g.input("x", x).node("ReduceMean", {"x"}, {{"y", {3, 13, 1}}}, {{"axes", Index{-1}}});
    check_op(g, "y", naive_reduce(x, {false, false, true}, true, "mean"));
  }
  SECTION("ReduceMean over axes 0 and 2, keepdims 0") {
    OpGraph g;
    g.input("x", x).node("ReduceMean", {"x"}, {{"y", {13}}}, {{"axes", Index{0, 2}}, {"keepdims", int64_t{0}}});
    check_op(g, "y", naive_reduce(x, {true, false, true}, false, "mean"));
  }
  SECTION("ReduceSum with the axes input (opset 13), keepdims 0") {
    OpGraph g;
    g.input("x", x).ints("axes", {1}).node("ReduceSum", {"x", "axes"}, {{"y", {3, 7}}}, {{"keepdims", int64_t{0}}});
    check_op(g, "y", naive_reduce(x, {false, true, false}, false, "sum"));
  }
  SECTION("ReduceSum without axes reduces everything; noop_with_empty_axes keeps the input") {
    OpGraph g;
    g.input("x", x).node("ReduceSum", {"x"}, {{"y", {1, 1, 1}}});
    check_op(g, "y", naive_reduce(x, {true, true, true}, true, "sum"));
    OpGraph noop;
    noop.input("x", x).node("ReduceSum", {"x"}, {{"y", {3, 13, 7}}}, {{"noop_with_empty_axes", int64_t{1}}});
    check_op(noop, "y", x);
  }
  SECTION("ReduceMax over axis 1 and ReduceMin over axis -3, keepdims 1") {
    OpGraph g;
    g.input("x", x).node("ReduceMax", {"x"}, {{"y", {3, 1, 7}}}, {{"axes", Index{1}}});
    check_op(g, "y", naive_reduce(x, {false, true, false}, true, "max"));
    OpGraph m;
    m.input("x", x).node("ReduceMin", {"x"}, {{"y", {1, 13, 7}}}, {{"axes", Index{-3}}});
    check_op(m, "y", naive_reduce(x, {true, false, false}, true, "min"));
  }
}

TEST_CASE("Softmax: the template's stages, one axis from opset 13, 2-D coercion before", "[frontend][ops]") {
  SECTION("the last axis: max, exp(x - max), sum, then a lazy normalization") {
    const Array x = random_array({7, 61}, 22);
    OpGraph g;
    g.input("x", x).node("Softmax", {"x"}, {{"y", {7, 61}}});
    check_op(g, "y", naive_softmax(x, {false, true}, false));
    const ComputeDAG dag = build_subgraph(g, "y").dag;
    CHECK(stage_kinds(dag) ==
          std::vector<ReduceKind>{ReduceKind::Max, ReduceKind::None, ReduceKind::Sum, ReduceKind::None});
  }
  SECTION("a middle axis of a rank-3 tensor") {
    const Array x = random_array({3, 13, 7}, 23);
    OpGraph g;
    g.input("x", x).node("Softmax", {"x"}, {{"y", {3, 13, 7}}}, {{"axis", int64_t{1}}});
    check_op(g, "y", naive_softmax(x, {false, true, false}, false));
  }
  SECTION("attention scores [batch, heads, rows, cols]") {
    const Array x = random_array({2, 3, 5, 13}, 24);
    OpGraph g;
    g.input("x", x).node("Softmax", {"x"}, {{"y", {2, 3, 5, 13}}}, {{"axis", int64_t{-1}}});
    check_op(g, "y", naive_softmax(x, {false, false, false, true}, false));
  }
  SECTION("opset 11: the input is read as 2-D at axis 1 (default)") {
    const Array x = random_array({3, 5, 7}, 25);
    OpGraph g(11);
    g.input("x", x).node("Softmax", {"x"}, {{"y", {3, 5, 7}}});
    check_op(g, "y", naive_softmax(x, {false, true, true}, false));
  }
  SECTION("LogSoftmax over the last axis and, at opset 11, over axes 1.. of a rank-3 tensor") {
    const Array x = random_array({7, 61}, 26);
    OpGraph g;
    g.input("x", x).node("LogSoftmax", {"x"}, {{"y", {7, 61}}});
    check_op(g, "y", naive_softmax(x, {false, true}, true));
    const Array z = random_array({3, 5, 7}, 27);
    OpGraph old(11);
    old.input("z", z).node("LogSoftmax", {"z"}, {{"y", {3, 5, 7}}});
    check_op(old, "y", naive_softmax(z, {false, true, true}, true));
  }
}

// LayerNormalization over axes [axis, rank), the reference's way: mean, then the mean of squared
// deviations, then (x - mean) / sqrt(var + eps) * scale + bias.
Array naive_layer_norm(const Array& x, size_t axis, const Array& scale, const Array* bias, double eps) {
  std::vector<bool> reduced(x.shape.size(), false);
  for (size_t d = axis; d < reduced.size(); ++d) reduced[d] = true;
  const Array mean = naive_reduce(x, reduced, true, "mean");
  Array centered_sq = make_array(x.shape, [&](const Index& i) {
    Index r = i;
    for (size_t d = axis; d < r.size(); ++d) r[d] = 0;
    return std::pow(x.at(i) - mean.at(r), 2);
  });
  const Array var = naive_reduce(centered_sq, reduced, true, "mean");
  return make_array(x.shape, [&](const Index& i) {
    Index r = i, c(i.begin() + static_cast<std::ptrdiff_t>(x.shape.size() - scale.shape.size()), i.end());
    for (size_t d = axis; d < r.size(); ++d) r[d] = 0;
    const double y = (x.at(i) - mean.at(r)) / std::sqrt(var.at(r) + eps) * scale.at(c);
    return bias ? y + bias->at(c) : y;
  });
}

TEST_CASE("LayerNormalization: the layernorm template's stages, axis, epsilon, Scale and B", "[frontend][ops]") {
  SECTION("the last axis with Scale and B") {
    const Array x = random_array({7, 61}, 28), s = random_array({61}, 29), b = random_array({61}, 30);
    OpGraph g;
    g.input("x", x).input("s", s).input("b", b);
    g.node("LayerNormalization", {"x", "s", "b"}, {{"y", {7, 61}}}, {{"epsilon", 1e-3}});
    check_op(g, "y", naive_layer_norm(x, 1, s, &b, 1e-3));
    CHECK(stage_kinds(build_subgraph(g, "y").dag) == std::vector<ReduceKind>{ReduceKind::Sum, ReduceKind::None,
                                                                             ReduceKind::Sum, ReduceKind::None,
                                                                             ReduceKind::None});
  }
  SECTION("axis -2 of a rank-3 tensor, Scale only") {
    const Array x = random_array({3, 5, 13}, 31), s = random_array({5, 13}, 32);
    OpGraph g;
    g.input("x", x).input("s", s).node("LayerNormalization", {"x", "s"}, {{"y", {3, 5, 13}}}, {{"axis", int64_t{-2}}});
    check_op(g, "y", naive_layer_norm(x, 1, s, nullptr, 1e-5));
  }
  SECTION("the optional Mean and InvStdDev outputs, shaped with the normalized axes as 1s") {
    const Array x = random_array({3, 5, 13}, 33), s = random_array({13}, 34);
    OpGraph g;
    g.input("x", x).input("s", s);
    g.node("LayerNormalization", {"x", "s"}, {{"y", {3, 5, 13}}, {"mean", {3, 5, 1}}, {"rstd", {3, 5, 1}}});
    const Array mean = naive_reduce(x, {false, false, true}, true, "mean");
    check_op(g, "mean", mean);
    check_op(g, "rstd", make_array({3, 5, 1}, [&](const Index& i) {
               double var = 0;
               for (int64_t k = 0; k < 13; ++k) var += std::pow(x.at({i[0], i[1], k}) - mean.at(i), 2) / 13;
               return 1 / std::sqrt(var + 1e-5);
             }));
  }
}

TEST_CASE("reductions refuse integer inputs and shapes inference disagrees with", "[frontend][ops]") {
  OpGraph ints;
  ints.input("x", int_array({2, 2}, {1, 2, 3, 4})).node("ReduceSum", {"x"}, {{"y", {1, 1}}}, {}, {DType::Int64});
  CHECK_THROWS_WITH(build_subgraph(ints, "y"), Catch::Contains("(ReduceSum)") && Catch::Contains("float32"));
  OpGraph shape;
  shape.input("x", random_array({3, 5}, 35)).node("ReduceMean", {"x"}, {{"y", {3}}}, {{"axes", Index{1}}});
  CHECK_THROWS_WITH(build_subgraph(shape, "y"), Catch::Contains("shape inference gave [3]"));
  OpGraph twice;
  twice.input("x", random_array({3, 5}, 36)).node("ReduceMax", {"x"}, {{"y", {3, 1}}}, {{"axes", Index{1, -1}}});
  CHECK_THROWS_WITH(build_subgraph(twice, "y"), Catch::Contains("axis -1 is given twice"));
}

TEST_CASE("a contraction reads through Reshape and Transpose built in the same subgraph", "[frontend][ops]") {
  // Attention's head split: q [2, 7, 12] -> [2, 7, 3, 4] -> [2, 3, 7, 4]; scores[b, h, s, t] =
  // sum_d q'[b, h, s, d] * q'[b, h, t, d], the reduction written here with the builder.
  const Array q = random_array({2, 7, 12}, 37);
  OpGraph g;
  g.input("q", q).ints("shape", {0, 0, 3, 4}).node("Reshape", {"q", "shape"}, {{"r", {2, 7, 3, 4}}});
  g.node("Transpose", {"r"}, {{"t", {2, 3, 7, 4}}}, {{"perm", Index{0, 2, 1, 3}}});
  SubgraphBuilder builder;
  const LazyTensor t = build_nodes(g, builder).at("t");
  LazyTensor scores = builder.reduce("scores", TensorInfo{DType::Float32, {2, 3, 7, 7}}, {4}, ReduceKind::Sum,
                                     [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
                                       return t.at({i[0], i[1], i[2], r[0]}) * t.at({i[0], i[1], i[3], r[0]});
                                     });
  Built b{builder.finish(scores), builder.input_values()};
  // The head split inlines into the contraction: one placeholder, one stage, affine reads.
  REQUIRE(b.dag.ops().size() == 2);
  CHECK(b.dag.to_text().find("floordiv") == std::string::npos);
  check_built(g, b, make_array({2, 3, 7, 7}, [&](const Index& i) {
                double sum = 0;
                for (int64_t d = 0; d < 4; ++d)
                  sum += q.at({i[0], i[2], i[1] * 4 + d}) * q.at({i[0], i[3], i[1] * 4 + d});
                return sum;
              }));
}

TEST_CASE("an elementwise prologue (x * scale + mask) inlines into softmax's stages", "[frontend][ops]") {
  const Array x = random_array({3, 5, 13}, 38), mask = random_array({5, 13}, 39);
  OpGraph g;
  g.input("x", x).input("mask", mask).node("Softmax", {"scaled"}, {{"y", {3, 5, 13}}});
  g.graph.set_value(Value{"scaled", TensorInfo{DType::Float32, {3, 5, 13}}, std::nullopt});
  SubgraphBuilder builder;
  const LazyTensor xs = builder.input("x", g.graph.value("x").info);
  const LazyTensor ms = builder.input("mask", g.graph.value("mask").info);
  // What the elementwise ops make: no stage, an expression over the output's indices.
  const LazyTensor scaled(TensorInfo{DType::Float32, {3, 5, 13}}, [xs, ms](const std::vector<Expr>& i) {
    return xs.at(i) * make_float(0.125) + ms.at({i[1], i[2]});
  });
  OpContext ctx{g.graph, g.graph.nodes[0], builder};
  const LazyTensor y = find_op("Softmax")->build(ctx, {scaled}).at(0);
  Built b{builder.finish(y), builder.input_values()};
  CHECK(stage_kinds(b.dag) ==
        std::vector<ReduceKind>{ReduceKind::Max, ReduceKind::None, ReduceKind::Sum, ReduceKind::None});
  const Array s = make_array(x.shape, [&](const Index& i) { return x.at(i) * 0.125 + mask.at({i[1], i[2]}); });
  check_built(g, b, naive_softmax(s, {false, false, true}, false));
}
