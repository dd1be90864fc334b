#include "tests/runtime/c_api_checks.h"

#include <catch2/catch.hpp>
#include <thread>
#include <vector>

#include "tests/runtime/runtime_test_models.h"

using Catch::Matchers::Contains;

namespace tessel_test {
namespace {

constexpr int64_t M = TwoKernelModel::M, K = TwoKernelModel::K, N = TwoKernelModel::N;

void check_description(const CApi& api, const TesselModel* model) {
  TesselTarget target = TESSEL_TARGET_CUDA;
  size_t inputs = 0, outputs = 0;
  REQUIRE(api.model_target(model, &target) == TESSEL_OK);
  REQUIRE(api.model_num_inputs(model, &inputs) == TESSEL_OK);
  REQUIRE(api.model_num_outputs(model, &outputs) == TESSEL_OK);
  CHECK(target == TESSEL_TARGET_CPU);
  CHECK(inputs == 1);
  CHECK(outputs == 1);
  const char* name = nullptr;
  TesselDType dtype = TESSEL_BOOL;
  size_t rank = 0;
  const int64_t* dims = nullptr;
  REQUIRE(api.model_input_info(model, 0, &name, &dtype, &rank, &dims) == TESSEL_OK);
  CHECK(std::string(name) == "x");
  CHECK(dtype == TESSEL_FLOAT32);
  REQUIRE(rank == 2);
  CHECK((dims[0] == M && dims[1] == K));
  REQUIRE(api.model_output_info(model, 0, &name, nullptr, &rank, &dims) == TESSEL_OK);
  CHECK(std::string(name) == "y");
  CHECK((rank == 2 && dims[0] == M && dims[1] == N));
  CHECK(api.model_input_info(model, 1, &name, nullptr, nullptr, nullptr) == TESSEL_ERROR_ARGUMENT);
  CHECK_THAT(api.last_error(), Contains("no input 1"));
  size_t index = 9;
  CHECK(api.model_input_index(model, "x", &index) == TESSEL_OK);
  CHECK(index == 0);
  CHECK(api.model_input_index(model, "nope", &index) == TESSEL_ERROR_ARGUMENT);
  CHECK_THAT(api.last_error(), Contains("no input 'nope'") && Contains("'x'"));
  CHECK(api.model_num_inputs(nullptr, &inputs) == TESSEL_ERROR_ARGUMENT);
}

void check_bad_inputs(const CApi& api, TesselContext* ctx, const std::vector<float>& x) {
  const int64_t dims[2] = {M, K}, short_dims[2] = {M, K - 1};
  CHECK(api.run(ctx) == TESSEL_ERROR_INPUT);
  CHECK_THAT(api.last_error(), Contains("inputs not set: 0 ('x')"));
  CHECK(api.set_input(ctx, 0, TESSEL_FLOAT32, short_dims, 2, x.data(), 0) == TESSEL_ERROR_INPUT);
  CHECK(std::string(api.last_error()) == "input 0 ('x'): expected float32[8, 24], got float32[8, 23]");
  CHECK(api.set_input(ctx, 0, TESSEL_INT64, dims, 2, x.data(), 0) == TESSEL_ERROR_INPUT);
  CHECK_THAT(api.last_error(), Contains("got int64[8, 24]"));
  CHECK(api.set_input(ctx, 0, TESSEL_FLOAT32, dims, 2, x.data(), 1) == TESSEL_ERROR_INPUT);
  CHECK_THAT(api.last_error(), Contains("runs on the CPU"));
  CHECK(api.set_input(ctx, 0, static_cast<TesselDType>(9), dims, 2, x.data(), 0) == TESSEL_ERROR_ARGUMENT);
  CHECK(api.set_input(ctx, 0, TESSEL_FLOAT32, nullptr, 2, x.data(), 0) == TESSEL_ERROR_ARGUMENT);
  CHECK(api.set_input(ctx, 0, TESSEL_FLOAT32, dims, size_t{1} << 40, x.data(), 0) == TESSEL_ERROR_ARGUMENT);
  CHECK_THAT(api.last_error(), Contains("rank 1099511627776"));
  CHECK(api.set_input(ctx, 3, TESSEL_FLOAT32, dims, 2, x.data(), 0) == TESSEL_ERROR_ARGUMENT);
  CHECK(api.run(ctx) == TESSEL_ERROR_INPUT);
}

// Runs `ctx` on `x` and compares with `want`: "" when all agree, else what went wrong. No Catch2
// assertions: it runs on several threads at once.
std::string run_and_compare(const CApi& api, TesselContext* ctx, const std::vector<float>& x,
                            const std::vector<double>& want) {
  const int64_t dims[2] = {M, K};
  std::vector<float> y(M * N);
  if (api.set_input(ctx, 0, TESSEL_FLOAT32, dims, 2, x.data(), 0) != TESSEL_OK || api.run(ctx) != TESSEL_OK ||
      api.copy_output(ctx, 0, y.data(), y.size() * 4, 0) != TESSEL_OK)
    return api.last_error();
  return first_mismatch(y, want);
}

}  // namespace

void check_c_api(const CApi& api, const std::string& path) {
  const TwoKernelModel t = cpu_two_kernel_model();
  CHECK(api.api_version() == TESSEL_API_VERSION);

  TesselModel* bad = reinterpret_cast<TesselModel*>(1);
  CHECK(api.load((path + ".missing").c_str(), &bad) == TESSEL_ERROR_ARTIFACT);
  CHECK(bad == nullptr);
  CHECK_THAT(api.last_error(), Contains(".missing"));

  TesselModel* model = nullptr;
  REQUIRE(api.load(path.c_str(), &model) == TESSEL_OK);
  check_description(api, model);
  TesselContext* ctx = nullptr;
  REQUIRE(api.context_create(model, &ctx) == TESSEL_OK);
  const std::vector<float> x = random_floats(M * K, 11);
  check_bad_inputs(api, ctx, x);

  CHECK(run_and_compare(api, ctx, x, t.reference(x)) == "");
  const void* data = nullptr;
  size_t bytes = 0;
  int on_device = 1;
  REQUIRE(api.get_output(ctx, 0, &data, &bytes, &on_device) == TESSEL_OK);
  CHECK(bytes == M * N * 4);
  CHECK(on_device == 0);
  CHECK(first_mismatch(std::vector<float>(static_cast<const float*>(data), static_cast<const float*>(data) + M * N),
                       t.reference(x)) == "");
  std::vector<float> small(4);
  CHECK(api.copy_output(ctx, 0, small.data(), 16, 0) == TESSEL_ERROR_ARGUMENT);
  CHECK_THAT(api.last_error(), Contains("has 640 bytes; the destination holds 16"));

  TesselMemoryUsage usage{};
  REQUIRE(api.context_memory(ctx, &usage) == TESSEL_OK);
  CHECK(usage.arena == t.model.artifact.arena_bytes);
  CHECK(usage.liveness_bound == t.model.artifact.liveness_bound_bytes);
  CHECK(usage.outputs == M * N * 4);
  CHECK(usage.weights >= K * N * 4);

  // The error message is per thread: another thread has seen none.
  std::string other_thread = "unset";
  std::thread([&] { other_thread = api.last_error(); }).join();
  CHECK(other_thread == "");

  // Contexts of one model on several threads, the model freed while they live.
  std::vector<TesselContext*> contexts(3);
  for (TesselContext*& c : contexts) REQUIRE(api.context_create(model, &c) == TESSEL_OK);
  api.model_free(model);
  std::vector<std::vector<float>> xs;
  std::vector<std::vector<double>> want;
  for (size_t k = 0; k < contexts.size(); ++k) {
    xs.push_back(random_floats(M * K, 50 + k));
    want.push_back(t.reference(xs.back()));
  }
  std::vector<std::string> wrong(contexts.size());
  std::vector<std::thread> threads;
  for (size_t k = 0; k < contexts.size(); ++k)
    threads.emplace_back([&, k] {
      for (int r = 0; r < 20 && wrong[k].empty(); ++r) wrong[k] = run_and_compare(api, contexts[k], xs[k], want[k]);
    });
  for (std::thread& th : threads) th.join();
  for (const std::string& w : wrong) CHECK(w == "");
  for (TesselContext* c : contexts) api.context_free(c);
  api.context_free(ctx);
  api.context_free(nullptr);
  api.model_free(nullptr);
}

}  // namespace tessel_test
