// A model stored in 16-bit floats (`--dtype fp16|bf16`): its weights and the values between its
// kernels in the 16-bit type, its inputs and outputs in float32, each kernel's DAG reading and writing
// its values in the types the graph gives them; and on the GPU a stored product takes tensor cores.
#include <catch2/catch.hpp>

#include <algorithm>

#include "frontend/model.h"
#include "schedule/te/half_float.h"
#include "search/gpu_schedule.h"
#include "tests/frontend/onnx_test_models.h"

namespace tessel {
namespace {

using namespace tessel_test;

// x[1,2,5,5] -> Conv(w, b) + Relu -> r -> Conv(w2) -> y[1,3,5,5]: two kernels, r between them.
std::string two_conv_file(TempDir& dir) {
  onnx::ModelProto model = make_model();
  add_input(model, "x", {1, 2, 5, 5});
  std::vector<float> w(3 * 2 * 3 * 3), w2(3 * 3 * 1 * 1);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.0123f * static_cast<float>(i % 13) - 0.071f;
  for (size_t i = 0; i < w2.size(); ++i) w2[i] = 0.31f * static_cast<float>(i % 5) - 0.52f;
  add_float_initializer(model, "w", {3, 2, 3, 3}, w);
  add_float_initializer(model, "b", {3}, {0.1f, -0.2f, 0.3f});
  add_float_initializer(model, "w2", {3, 3, 1, 1}, w2);
  add_ints_attr(add_node(model, "Conv", {"x", "w", "b"}, {"c"}, "conv"), "pads", {1, 1, 1, 1});
  add_node(model, "Relu", {"c"}, {"r"}, "relu");
  add_node(model, "Conv", {"r", "w2"}, {"y"}, "conv2");
  add_output(model, "y", {1, 3, 5, 5});
  write_file(dir.file("m.onnx"), serialize(model));
  return dir.file("m.onnx");
}

// Every subgraph's placeholders and output in the types of the graph values they are bound to.
void check_types_agree(const Model& m) {
  for (const Subgraph& sub : m.partition.subgraphs) {
    size_t p = 0;
    for (const Operation& op : sub.dag.ops())
      if (op.is_placeholder) CHECK(op.dtype == m.graph.value(sub.inputs.at(p++)).info.dtype);
    CHECK(sub.dag.ops().back().dtype == m.graph.value(sub.output).info.dtype);
  }
}

TEST_CASE("a model stored in 16 bits keeps its inputs and outputs in float32", "[frontend][dtype]") {
  TempDir dir;
  const std::string path = two_conv_file(dir);
  for (DType dtype : {DType::BFloat16, DType::Float16}) {
    ImportOptions options;
    options.cpu_channel_block = 0;
    options.storage = dtype;
    const Model m = load_model(path, options, TargetKind::Llvm);
    INFO(to_string(dtype));
    REQUIRE(m.partition.subgraphs.size() == 2);
    CHECK(m.graph.value("x").info.dtype == DType::Float32);
    CHECK(m.graph.value("y").info.dtype == DType::Float32);
    CHECK(m.graph.value("r").info.dtype == dtype);  // between the kernels
    for (const char* weight : {"w", "b", "w2"}) {
      const Value& v = m.graph.value(weight);
      CHECK(v.info.dtype == dtype);
      REQUIRE(v.constant);
      CHECK(v.constant->dtype() == dtype);
      CHECK(v.constant->byte_size() == static_cast<size_t>(v.constant->num_elements()) * 2);
    }
    // The weights rounded to the nearest 16-bit value.
    const std::vector<float> w = m.graph.value("w").constant->floats();
    CHECK(w[1] == static_cast<float>(round_to_dtype(0.0123f - 0.071f, dtype)));
    check_types_agree(m);
    // The first kernel ends in a stage that stores its float32 result in 16 bits; the second reads
    // that, and its last stage (the reduction, the model's output) stays float32.
    CHECK(m.partition.subgraphs[0].dag.ops().back().dtype == dtype);
    for (const Operation& op : m.partition.subgraphs[1].dag.ops())
      if (!op.is_placeholder && op.reduce != ReduceKind::None) CHECK(op.dtype == DType::Float32);
    // The tasks' workloads differ from float32's.
    ImportOptions wide = options;
    wide.storage = DType::Float32;
    const Model f = load_model(path, wide, TargetKind::Llvm);
    CHECK(f.tasks.at(0).key != m.tasks.at(0).key);
    CHECK(f.graph.value("r").info.dtype == DType::Float32);
  }
}

TEST_CASE("a product stored in bfloat16 takes the GPU's tensor cores by default", "[frontend][dtype]") {
  // x [64, 128] -> MatMul(w) + Relu -> r -> MatMul(w2) + Relu -> y [64, 64]: two kernels, r between
  // them. The first reads x in float32 (a model input); the second reads r and w2 in bfloat16, and
  // its Relu stores its float32 sums (y, a model output, stays float32).
  TempDir dir;
  onnx::ModelProto model = make_model();
  add_input(model, "x", {64, 128});
  std::vector<float> w(128 * 256);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.001f * static_cast<float>(i % 29) - 0.013f;
  add_float_initializer(model, "w", {128, 256}, w);
  add_float_initializer(model, "w2", {256, 64}, std::vector<float>(256 * 64, 0.002f));
  add_node(model, "MatMul", {"x", "w"}, {"h"}, "mm1");
  add_node(model, "Relu", {"h"}, {"r"}, "relu1");
  add_node(model, "MatMul", {"r", "w2"}, {"z"}, "mm2");
  add_node(model, "Relu", {"z"}, {"y"}, "relu2");
  add_output(model, "y", {64, 64});
  write_file(dir.file("g.onnx"), serialize(model));
  auto takes_tensor_cores = [](const ComputeDAG& dag) {
    const Trace t = default_gpu_schedule(dag, GpuTargetSpec{});
    return std::any_of(t.steps.begin(), t.steps.end(), [](const Step& s) {
      return s.kind == StepKind::CacheWrite && (s.scope == MemScope::Accumulator || s.scope == MemScope::WgAccumulator);
    });
  };
  ImportOptions options;
  options.storage = DType::BFloat16;
  const Model m = load_model(dir.file("g.onnx"), options, TargetKind::Cuda);
  check_types_agree(m);
  REQUIRE(m.tasks.size() == 2);
  CHECK(m.graph.value("r").info.dtype == DType::BFloat16);
  CHECK_FALSE(takes_tensor_cores(m.tasks[0].dag));  // x is float32
  CHECK(takes_tensor_cores(m.tasks[1].dag));
  const Model f = load_model(dir.file("g.onnx"), {}, TargetKind::Cuda);
  CHECK_FALSE(takes_tensor_cores(f.tasks[1].dag));
}

TEST_CASE("float16 storage keeps a constant it cannot hold in float32", "[frontend][dtype]") {
  // x [2, 4] + mask -> Relu -> r -> * scale -> y: the mask holds float32's lowest (an attention
  // mask), past float16's 65504 (it would become -inf, and 0 times it NaN); bfloat16 holds it.
  TempDir dir;
  onnx::ModelProto model = make_model();
  add_input(model, "x", {2, 4});
  add_float_initializer(model, "mask", {4}, {0.0f, -3.4e38f, 0.0f, 1.0f});
  add_float_initializer(model, "scale", {4}, {0.5f, 2.0f, -1.0f, 3.0f});
  add_node(model, "Add", {"x", "mask"}, {"a"}, "add");
  add_node(model, "Relu", {"a"}, {"r"}, "relu");
  add_node(model, "Mul", {"r", "scale"}, {"y"}, "mul");
  add_output(model, "y", {2, 4});
  write_file(dir.file("m.onnx"), serialize(model));
  ImportOptions options;
  options.storage = DType::Float16;
  const Model half = load_model(dir.file("m.onnx"), options, TargetKind::Llvm);
  CHECK(half.graph.value("mask").info.dtype == DType::Float32);
  CHECK(half.graph.value("scale").info.dtype == DType::Float16);
  check_types_agree(half);
  options.storage = DType::BFloat16;
  const Model bf = load_model(dir.file("m.onnx"), options, TargetKind::Llvm);
  CHECK(bf.graph.value("mask").info.dtype == DType::BFloat16);
  check_types_agree(bf);
}

}  // namespace
}  // namespace tessel
