// A model built for cuda by `tessel build`'s library from an ONNX graph (its memory plan places the
// context's input and output copies in the arena), run on the GPU with one run's output fed back as
// the next run's input as a device pointer: no byte of the output may be an input's, or the copy in
// would overwrite what it reads. Tagged [gpu]: skipped where there is no CUDA device or no NVRTC.
#include <catch2/catch.hpp>

#include <cmath>
#include <optional>

#include "codegen/cuda/cuda_backend.h"
#include "deploy/model_builder.h"
#include "runtime/model.h"
#include "tests/frontend/onnx_test_models.h"
#include "tests/skip.h"

namespace tessel {
namespace {

using namespace tessel_test;

constexpr int64_t kChannels = 8, kSide = 12;

}  // namespace

TEST_CASE("gpu: a built model's output fed back as its next input on the device", "[runtime][gpu]") {
  std::string why;
  CudaRuntime* rt = CudaRuntime::get(&why);
  if (!rt) {
    skip_test(why);
    return;
  }
  TempDir dir;
  // Three convolutions of 8 channels at 12x12: the output of the input's shape.
  write_file(dir.file("m.onnx"), serialize(conv_chain_model(kChannels, kChannels, kSide)));
  const Model m = load_model(dir.file("m.onnx"), {}, TargetKind::Cuda);
  BuildOptions o;
  o.target = TargetKind::Cuda;
  o.device = rt->device();
  o.device_name = o.device.name;
  try {
    build_model(m, o, dir.file("m.tsl"));
  } catch (const Error& e) {
    if (std::string(e.what()).find("NVRTC not available") == std::string::npos) throw;
    skip_test(e.what());
    return;
  }
  const LoadedModel model = LoadedModel::load(dir.file("m.tsl"));
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

}  // namespace tessel
