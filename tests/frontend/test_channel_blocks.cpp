// The CPU channel-block layout (frontend/channel_blocks.h) on a small net of odd sizes that holds
// every form the pass rewrites: a strided conv from a 3-channel image, a max pool, a depthwise conv
// with Clip, a pointwise conv and a dilated one joined by a residual Add, an average pool, a conv to
// 40 channels (blocks of 8 after blocks of 16), a scalar Mul, and a global pool. Checked: which nodes it makes, that
// no conversion is left between the convolutions, that the model computes what the NCHW model
// computes (itself checked against torch and ONNX's test data elsewhere) with default schedules
// compiled through LLVM, and that the sketches' random schedules of its kernels are correct.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "codegen/llvm/llvm_backend.h"
#include "frontend/channel_blocks.h"
#include "frontend/onnx_import.h"
#include "measure/cpu_kernel.h"
#include "model_runner.h"
#include "onnx_test_models.h"
#include "schedule/interpreter/reference_interpreter.h"
#include "search/sketch.h"

using namespace tessel;
using namespace tessel_test;

namespace {

std::vector<float> values(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    v[i] = static_cast<float>((seed >> 8) % 2001) / 1000.0f - 1.0f;
  }
  return v;
}

onnx::NodeProto* conv(onnx::ModelProto& m, const std::string& x, const std::string& name, int64_t f, int64_t c,
                      int64_t k, bool bias) {
  add_float_initializer(m, name + ".w", {f, c, k, k}, values(static_cast<size_t>(f * c * k * k), f * 31 + c));
  std::vector<std::string> inputs = {x, name + ".w"};
  if (bias) {
    add_float_initializer(m, name + ".b", {f}, values(static_cast<size_t>(f), f + 7));
    inputs.push_back(name + ".b");
  }
  return add_node(m, "Conv", inputs, {name}, name);
}

// x[1, 3, 13, 11] → ... → y[1, 40, 3, 3], and g[1, 48, 1, 1] (a global pool) beside it.
onnx::ModelProto odd_net() {
  onnx::ModelProto m = make_model(13);
  add_input(m, "x", {1, 3, 13, 11});
  onnx::NodeProto* c1 = conv(m, "x", "c1", 24, 3, 3, true);  // [1, 24, 7, 6]
  add_ints_attr(c1, "strides", {2, 2});
  add_ints_attr(c1, "pads", {1, 1, 1, 1});
  add_node(m, "Relu", {"c1"}, {"r1"}, "r1");
  onnx::NodeProto* p1 = add_node(m, "MaxPool", {"r1"}, {"p1"}, "p1");
  add_ints_attr(p1, "kernel_shape", {3, 3});
  add_ints_attr(p1, "pads", {1, 1, 1, 1});
  onnx::NodeProto* dw = conv(m, "p1", "dw", 24, 1, 3, true);
  add_int_attr(dw, "group", 24);
  add_ints_attr(dw, "pads", {1, 1, 1, 1});
  add_float_initializer(m, "zero", {}, {0.0f});
  add_float_initializer(m, "six", {}, {6.0f});
  add_node(m, "Clip", {"dw", "zero", "six"}, {"d1"}, "clip");
  conv(m, "d1", "pw", 48, 24, 1, false);
  onnx::NodeProto* side = conv(m, "p1", "side", 48, 24, 3, true);
  add_ints_attr(side, "dilations", {2, 2});
  add_ints_attr(side, "pads", {2, 2, 2, 2});
  add_node(m, "Add", {"pw", "side"}, {"sum"}, "add");
  add_node(m, "Relu", {"sum"}, {"r3"}, "r3");
  onnx::NodeProto* avg = add_node(m, "AveragePool", {"r3"}, {"a1"}, "avg");
  add_ints_attr(avg, "kernel_shape", {2, 2});
  add_ints_attr(avg, "strides", {2, 2});
  conv(m, "a1", "last", 40, 48, 1, true);
  add_float_initializer(m, "half", {1}, {0.5f});
  add_node(m, "Mul", {"last", "half"}, {"y"}, "scale");
  add_output(m, "y", {1, 40, 3, 3});
  add_node(m, "GlobalAveragePool", {"r3"}, {"g"}, "gap");
  add_output(m, "g", {1, 48, 1, 1});
  return m;
}

Model load(const TempDir& dir, int64_t widest_block, TargetKind target = TargetKind::Llvm) {
  const std::string path = dir.file("odd_net.onnx");
  write_file(path, serialize(odd_net()));
  ImportOptions options;
  options.cpu_channel_block = widest_block;
  return load_model(path, options, target);
}

int64_t count(const Graph& g, const std::string& op_type) {
  return std::count_if(g.nodes.begin(), g.nodes.end(), [&](const Node& n) { return n.op_type == op_type; });
}

}  // namespace

TEST_CASE("channel blocks: convs and pools run in blocks, conversions only at the model's edges",
          "[frontend][layout]") {
  TempDir dir;
  const Model m = load(dir, 16);
  const Graph& g = m.graph;
  CHECK(count(g, "Conv") == 0);
  CHECK(count(g, kConvBlocked) == 5);
  CHECK(count(g, kMaxPoolBlocked) == 1);
  CHECK(count(g, kAveragePoolBlocked) == 1);
  CHECK(count(g, kGlobalAveragePoolBlocked) == 1);
  CHECK(count(g, kToBlocks) == 0);    // the first conv reads the 3-channel image as NCHW
  CHECK(count(g, kFromBlocks) == 2);  // the two outputs, under their own names
  CHECK(g.outputs == std::vector<std::string>{"y", "g"});
  CHECK(g.value("y").info.shape == std::vector<int64_t>{1, 40, 3, 3});
  CHECK(g.value("g").info.shape == std::vector<int64_t>{1, 48, 1, 1});
  for (const Node& n : g.nodes)
    if (n.op_type == kFromBlocks) CHECK((n.outputs[0] == "y" || n.outputs[0] == "g"));
  // 24 channels go in blocks of 8, 48 in blocks of 16, 40 in blocks of 8; the repacked weights and
  // biases replace the model's.
  for (const Node& n : g.nodes) {
    if (n.op_type != kConvBlocked) continue;
    const std::vector<int64_t>& w = g.value(n.inputs[1]).info.shape;
    const int64_t filters = w.front() * w.back();
    CHECK(w.back() == channel_block(filters, 16));
  }
  CHECK_FALSE(g.has_value("c1.w"));
  // The tasks' names keep the model's op names.
  for (const ModelTask& t : m.tasks) CHECK(t.name.find("NCHWc") == std::string::npos);
}

TEST_CASE("channel blocks: blocks of one AVX2 vector (8) wherever 16 would divide too", "[frontend][layout]") {
  TempDir dir;
  const Model m = load(dir, 8);
  CHECK(count(m.graph, kConvBlocked) == 5);
  for (const Node& n : m.graph.nodes)
    if (n.op_type == kConvBlocked) CHECK(m.graph.value(n.inputs[1]).info.shape.back() == 8);
  CHECK(channel_block(48, 8) == 8);
  CHECK(channel_block(48, 16) == 16);
  CHECK(channel_block(40, 16) == 8);
  CHECK(channel_block(40, 4) == 8);  // a block is never narrower than 8
  CHECK(channel_block(12, 16) == 0);
}

TEST_CASE("channel blocks: the blocked model computes what the NCHW model computes", "[frontend][layout]") {
  TempDir dir;
  const int64_t widest = GENERATE(16, 8);
  CAPTURE(widest);
  const Model blocked = load(dir, widest), plain = load(dir, 0);
  CHECK(count(plain.graph, kConvBlocked) == 0);
  CHECK(count(blocked.graph, kConvBlocked) == 5);
  std::map<std::string, TensorData> inputs;
  inputs.emplace("x", TensorData::of_floats({1, 3, 13, 11}, values(3 * 13 * 11, 99)));
  const std::map<std::string, TensorData> want = run_model_cpu(plain, inputs);
  const std::map<std::string, TensorData> got = run_model_cpu(blocked, inputs);
  for (const char* name : {"y", "g"}) {
    const std::string wrong = compare_tensors(got.at(name), want.at(name), 1e-5, 1e-6);
    INFO(name << ": " << wrong);
    CHECK(wrong.empty());
    double largest = 0;
    for (float v : want.at(name).floats()) largest = std::max(largest, std::fabs(static_cast<double>(v)));
    CHECK(largest > 0.1);  // the comparison is of real values, not of zeros
  }
}

TEST_CASE("channel blocks: only the CPU gets them, and a model may not hold the internal ops", "[frontend][layout]") {
  TempDir dir;
  CHECK(count(load(dir, 16, TargetKind::Cuda).graph, kConvBlocked) == 0);
  Graph g;
  g.set_value(Value{"x", {DType::Float32, {1, 16, 4, 4}}, std::nullopt});
  g.set_value(Value{"y", {DType::Float32, {1, 1, 4, 4, 16}}, std::nullopt});
  g.inputs = {"x"};
  g.outputs = {"y"};
  Node n;
  n.name = "n";
  n.op_type = kToBlocks;
  n.inputs = {"x"};
  n.outputs = {"y"};
  g.nodes.push_back(n);
  CHECK(unsupported_nodes(g) == std::vector<std::string>{"node 'n' (ToNCHWc)"});
}

TEST_CASE("channel blocks: random schedules of every sketch of the blocked kernels are correct", "[frontend][layout]") {
  TempDir dir;
  const int64_t widest = GENERATE(16, 8);
  CAPTURE(widest);
  const Model m = load(dir, widest);
  const CpuTargetSpec target{host_vector_lanes(), 2};
  int checked = 0;
  for (const ModelTask& task : m.tasks) {
    HostTensors inputs = make_random_inputs(task.dag, 3);
    ReferenceTensors reference = evaluate_reference(task.dag, inputs);
    for (const Sketch& sketch : cpu_sketches(task.dag, target))
      for (uint64_t seed = 0; seed < 4; ++seed) {
        Decider sampler(seed);
        const Trace trace = apply_sketch(sketch, task.dag, sampler).trace;
        CAPTURE(task.name, sketch.name, seed);
        CHECK(check_cpu_kernel(build_cpu_kernel(task.dag, trace), inputs, reference, task.dag).correct);
        ++checked;
      }
  }
  CHECK(checked >= 4 * static_cast<int>(m.tasks.size()));
}
