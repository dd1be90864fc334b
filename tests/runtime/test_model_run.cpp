// Running model files through the C++ API on this CPU: results against the reference interpreter,
// the arena shared by two kernels, weights, inputs of every dtype, inputs NumPy would give (not
// 64-byte aligned), what a context holds, and contexts run at once from several threads.
#include <catch2/catch.hpp>
#include <cstring>
#include <thread>

#include "runtime/model.h"
#include "tests/runtime/runtime_test_models.h"

using namespace tessel;
using namespace tessel_test;

namespace {

constexpr int64_t M = TwoKernelModel::M, K = TwoKernelModel::K, N = TwoKernelModel::N;

std::vector<float> output_of(const ExecutionContext& ctx, size_t i = 0) {
  std::vector<float> out(static_cast<size_t>(ctx.model().outputs()[i].bytes / 4));
  ctx.copy_output(i, out.data(), MemoryKind::Host);
  return out;
}

}  // namespace

TEST_CASE("a two-kernel model runs on this CPU and matches the reference interpreter", "[runtime]") {
  TempDir dir;
  const TwoKernelModel t = cpu_two_kernel_model();
  t.model.write(dir.file("model.tsl"));
  const LoadedModel model = LoadedModel::load(dir.file("model.tsl"));
  REQUIRE(model.target() == TargetKind::Llvm);
  REQUIRE(model.memory() == MemoryKind::Host);
  REQUIRE(model.inputs().size() == 1);
  CHECK(model.inputs()[0].name == "x");
  CHECK(model.inputs()[0].shape == std::vector<int64_t>{M, K});
  CHECK(model.outputs()[0].bytes == M * N * 4);
  CHECK(model.input_index("x") == 0u);
  CHECK(!model.input_index("y"));
  CHECK(model.weight_bytes() >= K * N * 4);

  ExecutionContext ctx(model);
  for (uint64_t seed : {1, 2}) {  // inputs are read anew on every run
    const std::vector<float> x = random_floats(M * K, seed);
    ctx.set_input(0, DType::Float32, {M, K}, x.data());
    ctx.run();
    CHECK(first_mismatch(output_of(ctx), t.reference(x)) == "");
    const auto* direct = static_cast<const float*>(ctx.output_data(0));
    CHECK(std::memcmp(direct, output_of(ctx).data(), M * N * 4) == 0);
  }
  // A profiled run computes the same outputs and times every kernel of the plan.
  const std::vector<float> x = random_floats(M * K, 3);
  ctx.set_input(0, DType::Float32, {M, K}, x.data());
  const std::vector<double> seconds = ctx.run_profiled();
  CHECK(first_mismatch(output_of(ctx), t.reference(x)) == "");
  REQUIRE(seconds.size() == model.artifact().kernels.size());
  for (double s : seconds) CHECK(s > 0);

  const MemoryUsage u = ctx.memory_usage();
  CHECK(u.memory == MemoryKind::Host);
  CHECK(u.arena == model.artifact().arena_bytes);
  CHECK(u.outputs == M * N * 4);
  CHECK(u.weights == model.weight_bytes());
}

TEST_CASE("inputs bound by name, and inputs not 64-byte aligned, give the same results", "[runtime]") {
  TempDir dir;
  const TwoKernelModel t = cpu_two_kernel_model();
  t.model.write(dir.file("model.tsl"));
  const LoadedModel model = LoadedModel::load(dir.file("model.tsl"));
  ExecutionContext ctx(model);
  const std::vector<float> x = random_floats(M * K, 3);
  // The kernels assume 64-byte aligned buffers; NumPy arrays are often only 16-byte aligned.
  std::vector<float> shifted(x.size() + 16);
  float* odd = shifted.data() + 1;
  std::memcpy(odd, x.data(), x.size() * 4);
  REQUIRE(reinterpret_cast<uintptr_t>(odd) % 64 != 0);
  ctx.set_input("x", DType::Float32, {M, K}, odd);
  ctx.run();
  CHECK(first_mismatch(output_of(ctx), t.reference(x)) == "");
  CHECK(ctx.memory_usage().inputs == M * K * 4);  // the aligned copy
}

TEST_CASE("int64 and bool inputs reach the kernel as such", "[runtime]") {
  TempDir dir;
  cpu_typed_model().write(dir.file("typed.tsl"));
  const LoadedModel model = LoadedModel::load(dir.file("typed.tsl"));
  REQUIRE(model.inputs().size() == 3);
  CHECK(model.inputs()[1].dtype == DType::Int64);
  CHECK(model.inputs()[2].dtype == DType::Bool);
  ExecutionContext ctx(model);
  const std::vector<float> x = random_floats(32, 5);
  std::vector<int64_t> n(32);
  std::vector<uint8_t> m(32);
  for (int i = 0; i < 32; ++i) {
    n[i] = i - 7;
    m[i] = i % 3 != 0;
  }
  ctx.set_input(0, DType::Float32, {4, 8}, x.data());
  ctx.set_input(1, DType::Int64, {4, 8}, n.data());
  ctx.set_input(2, DType::Bool, {4, 8}, m.data());
  ctx.run();
  CHECK(first_mismatch(output_of(ctx), typed_reference(x, n, m)) == "");
}

TEST_CASE("contexts on one model run at once from several threads", "[runtime]") {
  TempDir dir;
  const TwoKernelModel t = cpu_two_kernel_model();
  t.model.write(dir.file("model.tsl"));
  const LoadedModel model = LoadedModel::load(dir.file("model.tsl"));
  constexpr int kThreads = 3, kRuns = 40;
  std::vector<std::vector<float>> x;
  std::vector<std::vector<double>> want;
  for (int k = 0; k < kThreads; ++k) {  // each thread its own input
    x.push_back(random_floats(M * K, 100 + k));
    want.push_back(t.reference(x.back()));
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
          wrong[k] = first_mismatch(output_of(ctx), want[k]);
        }
      } catch (const std::exception& e) {
        wrong[k] = e.what();
      }
    });
  for (std::thread& th : threads) th.join();
  for (int k = 0; k < kThreads; ++k) CHECK(wrong[k] == "");
}

TEST_CASE("a context keeps its model alive, and two models load side by side", "[runtime]") {
  TempDir dir;
  const TwoKernelModel t = cpu_two_kernel_model();
  t.model.write(dir.file("a.tsl"));
  cpu_typed_model().write(dir.file("b.tsl"));  // its kernel exports tessel_k0 as well
  std::unique_ptr<ExecutionContext> ctx;
  {
    const LoadedModel a = LoadedModel::load(dir.file("a.tsl"));
    const LoadedModel b = LoadedModel::load(dir.file("b.tsl"));
    ctx = std::make_unique<ExecutionContext>(a);
  }
  const std::vector<float> x = random_floats(M * K, 9);
  ctx->set_input(0, DType::Float32, {M, K}, x.data());
  ctx->run();
  CHECK(first_mismatch(output_of(*ctx), t.reference(x)) == "");
}
