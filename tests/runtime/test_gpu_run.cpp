// Running a cuda model on the GPU (tests tagged [gpu], reported skipped where there is no CUDA
// device or no NVRTC): results against the reference interpreter with the run replayed as one CUDA
// graph and profiled kernel by kernel, inputs given as device pointers, outputs copied to device
// memory, what a context holds on the device, contexts on several threads, and a bad input refused
// with the outputs untouched.
#include <catch2/catch.hpp>
#include <optional>
#include <thread>

#include "runtime/model.h"
#include "runtime/tessel_runtime.h"
#include "tests/runtime/runtime_test_models.h"
#include "tests/skip.h"

using namespace tessel;
using namespace tessel_test;

namespace {

constexpr int64_t M = TwoKernelModel::M, K = TwoKernelModel::K, N = TwoKernelModel::N;

// The GPU's runtime and the model compiled for it, written to `path`; nullopt with the test marked
// skipped where there is no GPU or no NVRTC.
std::optional<TwoKernelModel> gpu_model_or_skip(const std::string& path, CudaRuntime** rt) {
  std::string why;
  *rt = CudaRuntime::get(&why);
  if (!*rt) {
    skip_test(why);
    return std::nullopt;
  }
  try {
    TwoKernelModel t = gpu_two_kernel_model((*rt)->device().arch);
    t.model.write(path);
    return t;
  } catch (const CompileError&) {
    throw;
  } catch (const Error& e) {
    if (std::string(e.what()).find("NVRTC not available") == std::string::npos) throw;
    skip_test(e.what());
    return std::nullopt;
  }
}

std::vector<float> host_output(const ExecutionContext& ctx) {
  std::vector<float> y(M * N);
  ctx.copy_output(0, y.data(), MemoryKind::Host);
  return y;
}

int64_t aligned256(int64_t bytes) { return (bytes + 255) / 256 * 256; }

}  // namespace

TEST_CASE("gpu: a cuda model runs as one CUDA graph and matches the reference interpreter", "[runtime][gpu]") {
  TempDir dir;
  CudaRuntime* rt = nullptr;
  const std::optional<TwoKernelModel> t = gpu_model_or_skip(dir.file("model.tsl"), &rt);
  if (!t) return;
  const LoadedModel model = LoadedModel::load(dir.file("model.tsl"));
  CHECK(model.memory() == MemoryKind::Device);
  ExecutionContext ctx(model);
  CHECK(ctx.replays_graph());
  for (uint64_t seed : {1, 2}) {
    const std::vector<float> x = random_floats(M * K, seed);
    ctx.set_input(0, DType::Float32, {M, K}, x.data());
    ctx.run();
    CHECK(first_mismatch(host_output(ctx), t->reference(x)) == "");
  }
  // A profiled run (kernels launched one by one between CUDA events) computes the same outputs and
  // times every kernel; the graph still replays afterwards.
  const std::vector<float> x = random_floats(M * K, 3);
  ctx.set_input(0, DType::Float32, {M, K}, x.data());
  for (int i = 0; i < 2; ++i) {
    const std::vector<double> seconds = ctx.run_profiled();
    CHECK(first_mismatch(host_output(ctx), t->reference(x)) == "");
    REQUIRE(seconds.size() == model.artifact().kernels.size());
    for (double s : seconds) CHECK((s > 0 && s < 1));
  }
  const std::vector<float> x4 = random_floats(M * K, 4);  // new input: the replay must compute
  ctx.set_input(0, DType::Float32, {M, K}, x4.data());
  ctx.run();
  CHECK(first_mismatch(host_output(ctx), t->reference(x4)) == "");

  const MemoryUsage u = ctx.memory_usage();
  CHECK(u.memory == MemoryKind::Device);
  CHECK(u.weights == aligned256(K * N * 4));
  CHECK(u.arena == model.artifact().arena_bytes);
  CHECK(u.arena >= (M * K * 2 + M * N) * 4);  // x's copy, h and y
  CHECK(u.outputs == 0);  // in the arena
  CHECK(u.inputs == 0);
}

TEST_CASE("gpu: inputs as device pointers and outputs copied to device memory", "[runtime][gpu]") {
  TempDir dir;
  CudaRuntime* rt = nullptr;
  const std::optional<TwoKernelModel> t = gpu_model_or_skip(dir.file("model.tsl"), &rt);
  if (!t) return;
  const LoadedModel model = LoadedModel::load(dir.file("model.tsl"));
  ExecutionContext ctx(model);
  const std::vector<float> x = random_floats(M * K, 3);
  const uint64_t dx = rt->alloc(M * K * 4), dy = rt->alloc(M * N * 4);
  rt->copy_to_device(dx, x.data(), M * K * 4);
  ctx.set_input(0, DType::Float32, {M, K}, reinterpret_cast<const void*>(dx), MemoryKind::Device);
  ctx.run();
  ctx.copy_output(0, reinterpret_cast<void*>(dy), MemoryKind::Device);
  std::vector<float> y(M * N);
  rt->copy_to_host(y.data(), dy, M * N * 4);
  CHECK(first_mismatch(y, t->reference(x)) == "");

  // Through the C API: the output is a device pointer.
  TesselModel* cmodel = nullptr;
  TesselContext* cctx = nullptr;
  REQUIRE(tessel_load(dir.file("model.tsl").c_str(), &cmodel) == TESSEL_OK);
  REQUIRE(tessel_context_create(cmodel, &cctx) == TESSEL_OK);
  const int64_t dims[2] = {M, K};
  REQUIRE(tessel_set_input(cctx, 0, TESSEL_FLOAT32, dims, 2, reinterpret_cast<const void*>(dx), 1) == TESSEL_OK);
  REQUIRE(tessel_run(cctx) == TESSEL_OK);
  const void* out = nullptr;
  int on_device = 0;
  REQUIRE(tessel_get_output(cctx, 0, &out, nullptr, &on_device) == TESSEL_OK);
  CHECK(on_device == 1);
  std::vector<float> y2(M * N);
  rt->copy_to_host(y2.data(), reinterpret_cast<uint64_t>(out), M * N * 4);
  CHECK(first_mismatch(y2, t->reference(x)) == "");
  tessel_context_free(cctx);
  tessel_model_free(cmodel);
  rt->free(dx);
  rt->free(dy);
}

TEST_CASE("gpu: contexts on one model run at once from several threads", "[runtime][gpu]") {
  TempDir dir;
  CudaRuntime* rt = nullptr;
  const std::optional<TwoKernelModel> t = gpu_model_or_skip(dir.file("model.tsl"), &rt);
  if (!t) return;
  const LoadedModel model = LoadedModel::load(dir.file("model.tsl"));
  constexpr int kThreads = 4, kRuns = 50;
  std::vector<std::vector<float>> x;
  std::vector<std::vector<double>> want;
  for (int k = 0; k < kThreads; ++k) {
    x.push_back(random_floats(M * K, 200 + k));
    want.push_back(t->reference(x.back()));
  }
  std::vector<std::string> wrong(kThreads);
  std::vector<std::thread> threads;
  for (int k = 0; k < kThreads; ++k)
    threads.emplace_back([&, k] {  // no Catch2 assertions off the main thread
      try {
        ExecutionContext ctx(model);
        ctx.set_input(0, DType::Float32, {M, K}, x[k].data());
        for (int r = 0; r < kRuns && wrong[k].empty(); ++r) {
          ctx.run();
          wrong[k] = first_mismatch(host_output(ctx), want[k]);
        }
      } catch (const std::exception& e) {
        wrong[k] = e.what();
      }
    });
  for (std::thread& th : threads) th.join();
  for (int k = 0; k < kThreads; ++k) CHECK(wrong[k] == "");
}

TEST_CASE("gpu: a bad input is refused and the outputs stay as they were", "[runtime][gpu]") {
  TempDir dir;
  CudaRuntime* rt = nullptr;
  const std::optional<TwoKernelModel> t = gpu_model_or_skip(dir.file("model.tsl"), &rt);
  if (!t) return;
  const LoadedModel model = LoadedModel::load(dir.file("model.tsl"));
  ExecutionContext ctx(model);
  const std::vector<float> x = random_floats(M * K, 4);
  ctx.set_input(0, DType::Float32, {M, K}, x.data());
  ctx.run();
  const std::vector<float> before = host_output(ctx);
  CHECK_THROWS_AS(ctx.set_input(0, DType::Float32, {K, M}, x.data()), InputError);
  CHECK_THROWS_AS(ctx.run(), InputError);
  CHECK(host_output(ctx) == before);
}
