// A model built for cuda by `tessel build`'s library from an ONNX graph (its memory plan places the
// context's input and output copies in the arena), run on the GPU with one run's output fed back as
// the next run's input as a device pointer: no byte of the output may be an input's, or the copy in
// would overwrite what it reads; and inputs that are also outputs given back as inputs, each read
// before a copy in overwrites it. Tagged [gpu]: skipped where there is no CUDA device or no NVRTC.
#include <catch2/catch.hpp>

#include <cmath>
#include <optional>

#include "codegen/cuda/cuda_backend.h"
#include "deploy/model_builder.h"
#include "runtime/model.h"
#include "tests/deploy/build_test_model.h"
#include "tests/frontend/onnx_test_models.h"
#include "tests/runtime/given_back_checks.h"
#include "tests/skip.h"

namespace tessel {
namespace {

using namespace tessel_test;

constexpr int64_t kChannels = 8, kSide = 12;

// `proto` built for this GPU by the build's library and loaded; none (the test reported skipped)
// where there is no CUDA device or no NVRTC.
std::optional<LoadedModel> built_for_gpu(const onnx::ModelProto& proto, const TempDir& dir) {
  std::string why;
  CudaRuntime* rt = CudaRuntime::get(&why);
  if (!rt) {
    skip_test(why);
    return std::nullopt;
  }
  if (!build_test_model(proto, TargetKind::Cuda, dir, rt->device())) return std::nullopt;
  return LoadedModel::load(dir.file("m.tsl"));
}

}  // namespace

TEST_CASE("gpu: a built model's output fed back as its next input on the device", "[runtime][gpu]") {
  TempDir dir;
  // Three convolutions of 8 channels at 12x12: the output of the input's shape.
  const std::optional<LoadedModel> built = built_for_gpu(conv_chain_model(kChannels, kChannels, kSide), dir);
  if (!built) return;
  const LoadedModel& model = *built;
  const ModelArtifact& a = model.artifact();
  REQUIRE(a.inputs.size() == 1);
  REQUIRE(a.outputs.size() == 1);
  const PlanBuffer& in = a.buffers.at(static_cast<size_t>(a.inputs[0]));
  const PlanBuffer& out = a.buffers.at(static_cast<size_t>(a.outputs[0]));
  CHECK((in.offset + in.bytes() <= out.offset || out.offset + out.bytes() <= in.offset));
  const std::vector<int64_t> shape = {1, kChannels, kSide, kSide};
  const size_t n = static_cast<size_t>(kChannels * kSide * kSide);
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = std::sin(0.37f * static_cast<float>(i));

  // Reference: the same two runs with the first output taken to the host and given back from there.
  ExecutionContext host_ctx(model);
  host_ctx.set_input(0, DType::Float32, shape, x.data());
  host_ctx.run();
  std::vector<float> y1(n), want(n), got(n);
  host_ctx.copy_output(0, y1.data(), MemoryKind::Host);
  host_ctx.set_input(0, DType::Float32, shape, y1.data());
  host_ctx.run();
  host_ctx.copy_output(0, want.data(), MemoryKind::Host);

  ExecutionContext ctx(model);
  ctx.set_input(0, DType::Float32, shape, x.data());
  ctx.run();
  ctx.set_input(0, DType::Float32, shape, ctx.output_data(0), MemoryKind::Device);  // the arena's own bytes
  ctx.run();
  ctx.copy_output(0, got.data(), MemoryKind::Host);
  CHECK(got == want);
  float largest = 0;
  for (float v : want) largest = std::max(largest, std::fabs(v));
  CHECK(largest > 0);  // the chain does not vanish: the comparison means something
}

TEST_CASE("gpu: inputs that are also outputs given back as inputs keep the bytes they had", "[runtime][gpu]") {
  TempDir dir;
  const std::optional<LoadedModel> built = built_for_gpu(pass_through_model(), dir);
  if (!built) return;
  const ModelArtifact& a = built->artifact();
  REQUIRE(a.inputs.size() == 2);
  REQUIRE(a.outputs.size() == 3);
  REQUIRE(a.outputs[0] == a.inputs[0]);  // what the test is about: one place, input and output
  REQUIRE(a.outputs[1] == a.inputs[1]);
  ExecutionContext ctx(*built);
  CHECK(ctx.memory_usage().inputs >= 2 * 4 * 37 * 4);  // the block inputs are copied aside to, made now
  const PassThroughValues v = pass_through_values();
  check_outputs_given_back(ctx, MemoryKind::Device, v.x.data(), v.y.data(), v.z.data());
}

}  // namespace tessel
