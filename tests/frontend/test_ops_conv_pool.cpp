// Conv and the pools (frontend/ops/nn.cpp, pool.cpp) on hand-built graphs at odd shapes: each
// result from the reference interpreter and the default CPU schedule compiled with LLVM, against
// loops written here from the ONNX spec (strides, dilations, groups, pads and auto_pad, ceil_mode,
// count_include_pad, 1-D and 3-D); the stages they make; the variants they refuse; and a
// convolution with its epilogue chain built in one subgraph.
#include <catch2/catch.hpp>
#include <cmath>

#include "frontend/op_library.h"
#include "schedule/te/error.h"
#include "search/schedule_patterns.h"
#include "tests/frontend/inline_build.h"

using namespace tessel;
using namespace tessel_test;

namespace {

using Index = std::vector<int64_t>;

struct Geometry {
  Index kernel, strides, dilations, pads_begin, pads_end, output;  // one per spatial axis
};

// The input positions window `o` covers at kernel offset k: o * stride - pad + k * dilation.
Index window_position(const Geometry& s, const Index& o, const Index& k) {
  Index p;
  for (size_t d = 0; d < k.size(); ++d) p.push_back(o[2 + d] * s.strides[d] - s.pads_begin[d] + k[d] * s.dilations[d]);
  return p;
}

// Whether position p lies in the input, or with `s` in the input padded by s's pads.
bool inside(const Index& p, const Index& x_shape, const Geometry* s = nullptr) {
  for (size_t d = 0; d < p.size(); ++d)
    if (p[d] < (s ? -s->pads_begin[d] : 0) || p[d] >= x_shape[2 + d] + (s ? s->pads_end[d] : 0)) return false;
  return true;
}

Index output_shape(int64_t n, int64_t c, const Index& spatial) {
  Index shape = {n, c};
  shape.insert(shape.end(), spatial.begin(), spatial.end());
  return shape;
}

// ONNX Conv: y[n, m, o...] = b[m] + sum over the group's channels c and kernel offsets k of
// x[n, group(m) * C/g + c, window position] * w[m, c, k...], positions in the padding reading 0.
Array naive_conv(const Array& x, const Array& w, const Array* b, int64_t group, const Geometry& s) {
  const int64_t cg = w.shape[1], mg = w.shape[0] / group;
  return make_array(output_shape(x.shape[0], w.shape[0], s.output), [&](const Index& o) {
    double sum = b ? b->values[o[1]] : 0.0;
    for (int64_t c = 0; c < cg; ++c)
      for_each_index(s.kernel, [&](const Index& k) {
        const Index p = window_position(s, o, k);
        if (!inside(p, x.shape)) return;
        Index xi = {o[0], o[1] / mg * cg + c}, wi = {o[1], c};
        xi.insert(xi.end(), p.begin(), p.end());
        wi.insert(wi.end(), k.begin(), k.end());
        sum += x.at(xi) * w.at(wi);
      });
    return sum;
  });
}

// MaxPool takes the largest element inside the input; AveragePool divides the sum by the number of
// positions inside the input, or with count_include_pad inside the padded input.
Array naive_pool(const Array& x, const Geometry& s, bool is_max, bool include_pad = false) {
  return make_array(output_shape(x.shape[0], x.shape[1], s.output), [&](const Index& o) {
    double acc = is_max ? -INFINITY : 0.0, count = 0;
    for_each_index(s.kernel, [&](const Index& k) {
      const Index p = window_position(s, o, k);
      if (include_pad && inside(p, x.shape, &s)) ++count;
      if (!inside(p, x.shape)) return;
      Index xi = {o[0], o[1]};
      xi.insert(xi.end(), p.begin(), p.end());
      acc = is_max ? std::max(acc, x.at(xi)) : acc + x.at(xi);
      if (!include_pad) ++count;
    });
    return is_max ? acc : acc / count;
  });
}

Geometry geometry(Index kernel, Index strides, Index pads_begin, Index pads_end, Index output, Index dilations = {}) {
  if (dilations.empty()) dilations.assign(kernel.size(), 1);
  return Geometry{kernel, strides, dilations, pads_begin, pads_end, output};
}

Index pads_attribute(const Geometry& s) {
  Index pads = s.pads_begin;
  pads.insert(pads.end(), s.pads_end.begin(), s.pads_end.end());
  return pads;
}

std::string stage_names(const Built& b) {
  std::string s;
  for (const Operation& op : b.dag.ops())
    if (!op.is_placeholder) s += (s.empty() ? "" : " ") + op.name;
  return s;
}

// Conv of x and w (and bias) with `attributes`, checked against naive_conv with geometry s.
void check_conv(const Array& x, const Array& w, const Array* bias, int64_t group, const Geometry& s,
                std::map<std::string, Attribute> attributes) {
  OpGraph g;
  g.input("x", x).input("w", w);
  std::vector<std::string> inputs = {"x", "w"};
  if (bias) {
    g.input("b", *bias);
    inputs.push_back("b");
  }
  attributes["group"] = group;
  g.node("Conv", inputs, {{"y", output_shape(x.shape[0], w.shape[0], s.output)}}, attributes);
  const Built b = build_inlined(g, "y");
  check_built(g, b, naive_conv(x, w, bias, group, s));
  // Grouped convolutions whose group has one input channel are not contractions (each output
  // channel reads its own input channel); every other convolution must stay one.
  if (w.shape[1] > 1 && group == 1) CHECK(find_contraction(b.dag) != nullptr);
}

}  // namespace

TEST_CASE("Conv 2-D: pads and strides, dilations, bias, and the stage structure of the conv2d template",
          "[frontend][ops]") {
  const Array x = random_array({1, 3, 7, 13}, 1), w = random_array({5, 3, 3, 3}, 2), b = random_array({5}, 3);
  SECTION("pads 1, stride 2, bias: a padding stage, the reduction, the epilogue") {
    const Geometry s = geometry({3, 3}, {2, 2}, {1, 1}, {1, 1}, {4, 7});
    check_conv(x, w, &b, 1, s, {{"strides", Index{2, 2}}, {"pads", pads_attribute(s)}});
    OpGraph g;
    g.input("x", x).input("w", w).input("b", b);
    g.node("Conv", {"x", "w", "b"}, {{"y", {1, 5, 4, 7}}}, {{"strides", Index{2, 2}}, {"pads", pads_attribute(s)}});
    const Built built = build_inlined(g, "y");
    CHECK(stage_names(built) == "pad0 conv1 out2");
    CHECK(built.dag.op("pad0").shape == Index{1, 3, 9, 15});
    CHECK(built.dag.op("conv1").reduce == ReduceKind::Sum);
  }
  SECTION("no pads, no bias: the reduction is the output") {
    const Array x2 = random_array({2, 4, 9, 11}, 4), w2 = random_array({6, 4, 3, 2}, 5);
    const Geometry s = geometry({3, 2}, {1, 1}, {0, 0}, {0, 0}, {5, 8}, {2, 3});
    check_conv(x2, w2, nullptr, 1, s, {{"dilations", Index{2, 3}}});
    OpGraph g;
    g.input("x", x2).input("w", w2);
    g.node("Conv", {"x", "w"}, {{"y", {2, 6, 5, 8}}}, {{"dilations", Index{2, 3}}});
    CHECK(stage_names(build_inlined(g, "y")) == "conv0");
  }
  SECTION("asymmetric pads") {
    const Geometry s = geometry({3, 3}, {1, 1}, {0, 1}, {2, 1}, {7, 13});
    check_conv(x, w, nullptr, 1, s, {{"pads", pads_attribute(s)}});
  }
}

TEST_CASE("Conv groups: grouped, depthwise, depthwise with a channel multiplier", "[frontend][ops]") {
  const Array x = random_array({1, 6, 7, 7}, 6);
  check_conv(x, random_array({4, 3, 3, 3}, 7), nullptr, 2, geometry({3, 3}, {1, 1}, {1, 1}, {1, 1}, {7, 7}),
             {{"pads", Index{1, 1, 1, 1}}});
  const Array b = random_array({6}, 8);
  check_conv(x, random_array({6, 1, 3, 3}, 9), &b, 6, geometry({3, 3}, {2, 2}, {1, 1}, {1, 1}, {4, 4}),
             {{"pads", Index{1, 1, 1, 1}}, {"strides", Index{2, 2}}});
  check_conv(x, random_array({12, 1, 5, 3}, 10), nullptr, 6, geometry({5, 3}, {1, 1}, {2, 1}, {2, 1}, {7, 7}),
             {{"pads", Index{2, 1, 2, 1}}});
}

TEST_CASE("Conv auto_pad: SAME_UPPER puts the odd pad at the end, SAME_LOWER at the start, and VALID", "[frontend][ops]") {
  const Array x = random_array({1, 3, 7, 13}, 11), w = random_array({4, 3, 4, 4}, 12);
  // Output ceil(7 / 2) = 4, ceil(13 / 2) = 7: 3 positions of padding along each axis.
  check_conv(x, w, nullptr, 1, geometry({4, 4}, {2, 2}, {1, 1}, {2, 2}, {4, 7}),
             {{"auto_pad", std::string("SAME_UPPER")}, {"strides", Index{2, 2}}});
  check_conv(x, w, nullptr, 1, geometry({4, 4}, {2, 2}, {2, 2}, {1, 1}, {4, 7}),
             {{"auto_pad", std::string("SAME_LOWER")}, {"strides", Index{2, 2}}});
  check_conv(x, w, nullptr, 1, geometry({4, 4}, {2, 2}, {0, 0}, {0, 0}, {2, 5}),
             {{"auto_pad", std::string("VALID")}, {"strides", Index{2, 2}}});
}

TEST_CASE("Conv 1-D and 3-D", "[frontend][ops]") {
  const Array b = random_array({4}, 13);
  check_conv(random_array({2, 3, 29}, 14), random_array({4, 3, 5}, 15), &b, 1, geometry({5}, {3}, {2}, {1}, {10}),
             {{"strides", Index{3}}, {"pads", Index{2, 1}}});
  check_conv(random_array({1, 2, 5, 6, 7}, 16), random_array({3, 2, 3, 3, 3}, 17), nullptr, 1,
             geometry({3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {5, 6, 7}), {{"pads", Index{1, 1, 1, 1, 1, 1}}});
}

TEST_CASE("Conv refuses inconsistent groups, kernel_shape, pads with auto_pad and wrong output shapes",
          "[frontend][ops]") {
  const Array x = random_array({1, 6, 7, 7}, 18), w = random_array({4, 4, 3, 3}, 19);
  auto conv = [&](std::map<std::string, Attribute> attributes, Index out) {
    OpGraph g;
    g.input("x", x).input("w", w);
    g.node("Conv", {"x", "w"}, {{"y", out}}, std::move(attributes));
    return g;
  };
  CHECK_THROWS_WITH(build_inlined(conv({}, {1, 4, 5, 5}), "y"),
                    Catch::Contains("node 'Conv_0' (Conv)") && Catch::Contains("input channels (6)"));
  const Array w3 = random_array({4, 3, 3, 3}, 20);
  OpGraph g;
  g.input("x", x).input("w", w3);
  g.node("Conv", {"x", "w"}, {{"y", {1, 4, 5, 5}}}, {{"group", int64_t{2}}, {"kernel_shape", Index{3, 2}}});
  CHECK_THROWS_WITH(build_inlined(g, "y"), Catch::Contains("kernel_shape"));
  g.graph.nodes[0].attributes = {
      {"group", int64_t{2}}, {"pads", Index{1, 1, 1, 1}}, {"auto_pad", std::string("VALID")}};
  CHECK_THROWS_WITH(build_inlined(g, "y"), Catch::Contains("exclude each other"));
  g.graph.nodes[0].attributes = {{"group", int64_t{2}}};
  g.graph.value("y").info.shape = {1, 4, 7, 7};
  CHECK_THROWS_WITH(build_inlined(g, "y"), Catch::Contains("[1, 4, 5, 5]") && Catch::Contains("[1, 4, 7, 7]"));
}

namespace {

// A pool `op` of x with `attributes`, checked against naive_pool with geometry s.
void check_pool(const std::string& op, const Array& x, const Geometry& s, std::map<std::string, Attribute> attributes,
                bool include_pad = false) {
  OpGraph g;
  g.input("x", x);
  attributes["kernel_shape"] = s.kernel;
  g.node(op, {"x"}, {{"y", output_shape(x.shape[0], x.shape[1], s.output)}}, std::move(attributes));
  check_inlined(g, "y", naive_pool(x, s, op == "MaxPool", include_pad));
}

}  // namespace

TEST_CASE("MaxPool: pads (-inf), strides, dilations, ceil_mode, auto_pad, 1-D and 3-D", "[frontend][ops]") {
  const Array x = random_array({1, 3, 13, 11}, 21);
  const Geometry padded = geometry({3, 3}, {2, 2}, {1, 1}, {1, 1}, {7, 6});
  check_pool("MaxPool", x, padded, {{"strides", Index{2, 2}}, {"pads", pads_attribute(padded)}});
  check_pool("MaxPool", x, geometry({2, 2}, {1, 1}, {0, 0}, {0, 0}, {11, 9}, {2, 2}), {{"dilations", Index{2, 2}}});
  const Array y = random_array({1, 2, 8, 10}, 22);
  // ceil((8 - 3) / 2) + 1 = 4 rows, ceil((10 - 3) / 2) + 1 = 5 columns: the last window is cut short.
  check_pool("MaxPool", y, geometry({3, 3}, {2, 2}, {0, 0}, {0, 0}, {4, 5}),
             {{"strides", Index{2, 2}}, {"ceil_mode", int64_t{1}}});
  check_pool("MaxPool", y, geometry({2, 3}, {1, 1}, {0, 1}, {1, 1}, {8, 10}),
             {{"auto_pad", std::string("SAME_UPPER")}});
  check_pool("MaxPool", y, geometry({2, 3}, {1, 1}, {1, 1}, {0, 1}, {8, 10}),
             {{"auto_pad", std::string("SAME_LOWER")}});
  check_pool("MaxPool", random_array({2, 3, 31}, 23), geometry({4}, {3}, {1}, {2}, {11}),
             {{"strides", Index{3}}, {"pads", Index{1, 2}}});
  check_pool("MaxPool", random_array({1, 2, 5, 6, 7}, 24),
             geometry({2, 2, 2}, {2, 2, 2}, {0, 0, 0}, {0, 0, 0}, {2, 3, 3}), {{"strides", Index{2, 2, 2}}});

  OpGraph pad_stage;
  pad_stage.input("x", x);
  pad_stage.node("MaxPool", {"x"}, {{"y", {1, 3, 7, 6}}},
                 {{"kernel_shape", Index{3, 3}}, {"strides", Index{2, 2}}, {"pads", Index{1, 1, 1, 1}}});
  const Built b = build_inlined(pad_stage, "y");
  CHECK(stage_names(b) == "pad0 max_pool1");
  CHECK(b.dag.op("max_pool1").reduce == ReduceKind::Max);
  CHECK(b.dag.to_text().find("-inf") != std::string::npos);
}

TEST_CASE("AveragePool: count_include_pad, ceil_mode windows past the pads, auto_pad", "[frontend][ops]") {
  const Array x = random_array({1, 3, 13, 11}, 25);
  const Geometry s = geometry({3, 3}, {2, 2}, {1, 1}, {1, 1}, {7, 6});
  for (int64_t include : {0, 1})
    check_pool("AveragePool", x, s,
               {{"strides", Index{2, 2}}, {"pads", pads_attribute(s)}, {"count_include_pad", include}}, include != 0);
  // Padded rows 10, ceil((10 - 3) / 2) + 1 = 5: the last window covers input row 7, the end pad and
  // one position past it, which no rule counts.
  const Array y = random_array({1, 2, 8, 10}, 26);
  const Geometry past = geometry({3, 3}, {2, 2}, {1, 1}, {1, 1}, {5, 6});
  for (int64_t include : {0, 1})
    check_pool("AveragePool", y, past,
               {{"strides", Index{2, 2}},
                {"pads", pads_attribute(past)},
                {"ceil_mode", int64_t{1}},
                {"count_include_pad", include}},
               include != 0);
  check_pool("AveragePool", y, geometry({2, 2}, {2, 2}, {0, 0}, {0, 0}, {4, 5}), {{"strides", Index{2, 2}}});
  check_pool("AveragePool", y, geometry({3, 2}, {2, 3}, {0, 0}, {1, 1}, {4, 4}),
             {{"strides", Index{2, 3}}, {"auto_pad", std::string("SAME_UPPER")}});
}

TEST_CASE("GlobalAveragePool and GlobalMaxPool reduce every spatial axis into [N, C] and keep unit axes",
          "[frontend][ops]") {
  for (const Index& shape : {Index{2, 3, 7, 13}, Index{2, 5, 29}, Index{1, 2, 3, 5, 7}}) {
    const Array x = random_array(shape, 27);
    Geometry s;
    for (size_t d = 2; d < shape.size(); ++d) {
      s.kernel.push_back(shape[d]);
      s.strides.push_back(1);
      s.dilations.push_back(1);
      s.pads_begin.push_back(0);
      s.pads_end.push_back(0);
      s.output.push_back(1);
    }
    for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) {
      INFO(op);
      OpGraph g;
      g.input("x", x).node(op, {"x"}, {{"y", output_shape(shape[0], shape[1], s.output)}});
      const Built b = build_inlined(g, "y");
      CHECK(b.dag.ops()[1].shape == Index{shape[0], shape[1]});
      check_built(g, b, naive_pool(x, s, std::string(op) == "GlobalMaxPool"));
    }
  }
}

TEST_CASE("pools refuse a read Indices output, a window wholly past the input, attributes they lack",
          "[frontend][ops]") {
  const Array x = random_array({1, 2, 5, 5}, 28);
  OpGraph indices;
  indices.input("x", x);
  indices.node("MaxPool", {"x"}, {{"y", {1, 2, 5, 5}}, {"i", {1, 2, 5, 5}}}, {{"kernel_shape", Index{1, 1}}},
               {DType::Float32, DType::Int64});
  indices.graph.outputs = {"y", "i"};
  CHECK_THROWS_WITH(build_inlined(indices, "y"), Catch::Contains("MaxPool") && Catch::Contains("Indices"));
  indices.graph.outputs = {"y"};
  check_inlined(indices, "y", x);  // an unread Indices output is fine

  // Kernel 1, stride 3, ceil_mode: windows at 0, 3 and 6, and 6 lies past the 5 input columns.
  OpGraph past;
  past.input("x", x);
  past.node("AveragePool", {"x"}, {{"y", {1, 2, 3, 3}}},
            {{"kernel_shape", Index{1, 1}}, {"strides", Index{3, 3}}, {"ceil_mode", int64_t{1}}});
  CHECK_THROWS_WITH(build_inlined(past, "y"), Catch::Contains("starts past the input"));
  past.graph.nodes[0].attributes = {{"kernel_shape", Index{2, 2}}, {"dilations", Index{2, 2}}};
  CHECK_THROWS_WITH(build_inlined(past, "y"), Catch::Contains("'dilations' is not supported"));
  past.graph.nodes[0].attributes = {{"strides", Index{2, 2}}};
  CHECK_THROWS_WITH(build_inlined(past, "y"), Catch::Contains("'kernel_shape' is required"));
}

TEST_CASE("Conv -> Add(bias) -> Relu -> Add(residual) in one subgraph: one conv stage and one output stage",
          "[frontend][ops]") {
  const Array x = random_array({1, 4, 7, 13}, 29), w = random_array({6, 4, 3, 3}, 30);
  const Array bias = random_array({1, 6, 1, 1}, 31), skip = random_array({1, 6, 7, 13}, 32);
  OpGraph g;
  g.input("x", x).input("w", w).input("bias", bias).input("skip", skip);
  g.node("Conv", {"x", "w"}, {{"c", {1, 6, 7, 13}}}, {{"pads", Index{1, 1, 1, 1}}})
      .node("Add", {"c", "bias"}, {{"cb", {1, 6, 7, 13}}})
      .node("Relu", {"cb"}, {{"r", {1, 6, 7, 13}}})
      .node("Add", {"r", "skip"}, {{"y", {1, 6, 7, 13}}});
  const Built b = build_inlined(g, "y");
  CHECK(stage_names(b) == "pad0 conv1 out2");
  CHECK(find_contraction(b.dag) == &b.dag.op("conv1"));
  const Array conv = naive_conv(x, w, nullptr, 1, geometry({3, 3}, {1, 1}, {1, 1}, {1, 1}, {7, 13}));
  check_built(g, b, make_array(conv.shape, [&](const Index& i) {
                return std::max(conv.at(i) + bias.at({0, i[1], 0, 0}), 0.0) + skip.at(i);
              }));
}
