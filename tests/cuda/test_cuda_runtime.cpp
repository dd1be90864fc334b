// The CUDA runtime: on a machine without a GPU, that it says so; on a GPU (tests tagged [gpu],
// skipped elsewhere), real kernels end to end (results, NaN poisoning, event timing, dynamic shared
// memory, scratch buffers) and that an illegal address surfaces as an Error, checked in a child
// process because it poisons the context.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <memory>

#include "tests/cuda/cuda_test_util.h"

using namespace tessel;
using namespace tessel::cuda_testing;
using Catch::Matchers::Contains;

namespace {

// Device buffers for a LoweredFunc's params, freed on scope exit.
class DeviceBuffers {
 public:
  DeviceBuffers(CudaRuntime& rt, const LoweredFunc& f) : rt_(rt) {
    for (const BufferParam& p : f.params) {
      int64_t n = 1;
      for (int64_t e : p.shape) n *= e;
      sizes_.push_back(n);
      ptrs_.push_back(rt.alloc(n * 4));
    }
  }
  ~DeviceBuffers() {
    for (uint64_t p : ptrs_) rt_.free(p);
  }
  const std::vector<uint64_t>& ptrs() const { return ptrs_; }
  void upload(size_t i, const std::vector<float>& data) { rt_.copy_to_device(ptrs_[i], data.data(), int64_t(data.size()) * 4); }
  std::vector<float> download(size_t i) {
    std::vector<float> out(sizes_[i]);
    rt_.copy_to_host(out.data(), ptrs_[i], int64_t(out.size()) * 4);
    return out;
  }
  void poison(size_t i) { rt_.fill_nan(ptrs_[i], sizes_[i]); }

 private:
  CudaRuntime& rt_;
  std::vector<uint64_t> ptrs_;
  std::vector<int64_t> sizes_;
};

std::unique_ptr<CudaModule> build(CudaRuntime& rt, const LoweredFunc& f, CudaProgram* program = nullptr) {
  CudaProgram p = emit_cuda(f);
  std::vector<char> cubin = nvrtc_compile(p, rt.device().arch);
  auto module = rt.load(p, cubin);
  if (program) *program = p;
  return module;
}

// Runs `f` with inputs filled by `input(i)` (param 0 only) and returns output param `out`.
std::vector<float> run_once(CudaRuntime& rt, const LoweredFunc& f, const std::vector<float>& input, size_t out = 1) {
  auto module = build(rt, f);
  DeviceBuffers buffers(rt, f);
  buffers.upload(0, input);
  buffers.poison(out);
  module->run(buffers.ptrs());
  rt.synchronize();
  return buffers.download(out);
}

bool close(double got, double want) { return std::fabs(got - want) <= 1e-4 * std::fabs(want) + 1e-6; }

}  // namespace

TEST_CASE("cuda runtime without a GPU: CudaRuntime::get says why there is none", "[cuda][runtime]") {
  std::string why;
  if (CudaRuntime::get(&why)) {
    tessel_test::skip_test("a CUDA device is present; this checks the message on a machine without one");
    return;
  }
  CHECK_THAT(why, Contains("no CUDA"));
  CHECK(CudaRuntime::get() == nullptr);  // cached, and `why` is optional
}

TEST_CASE("cuda gpu: CudaRuntime::get describes the device", "[cuda][runtime][gpu]") {
  CudaRuntime* rt = runtime_or_skip();
  if (!rt) return;
  const CudaDeviceInfo& d = rt->device();
  CHECK(!d.name.empty());
  CHECK(d.arch.rfind("sm_", 0) == 0);
  CHECK(d.max_threads_per_block >= 1024);
  CHECK(d.max_shared_per_block_optin >= d.max_shared_per_block);
  CHECK(d.sm_count > 0);
  CHECK(d.l2_bytes > 0);
  CHECK(!d.driver_version.empty());
  CHECK(CudaRuntime::get() == rt);
}

TEST_CASE("default device info is an H100", "[cuda][runtime]") {
  CudaDeviceInfo d = default_cuda_device_info();
  CHECK(d.arch == "sm_90");
  CHECK(d.max_threads_per_block == 1024);
  CHECK(d.max_shared_per_block == 48 * 1024);
  CHECK(d.max_shared_per_block_optin == 227 * 1024);
  CHECK(d.max_grid[0] == 2147483647);
  CHECK(d.max_grid[1] == 65535);
  CHECK(d.max_block[2] == 64);
}

TEST_CASE("cuda gpu: elementwise kernel end to end", "[cuda][gpu]") {
  CudaRuntime* rt = runtime_or_skip();
  if (!rt) return;
  LoweredFunc f = elementwise_add(1000);
  auto module = build(*rt, f);
  DeviceBuffers buffers(*rt, f);
  std::vector<float> a(1000), b(1000);
  for (int i = 0; i < 1000; ++i) {
    a[i] = 0.5f * i;
    b[i] = 100.0f - i;
  }
  buffers.upload(0, a);
  buffers.upload(1, b);
  buffers.poison(2);
  module->run(buffers.ptrs());
  rt->synchronize();
  std::vector<float> c = buffers.download(2);
  for (int i = 0; i < 1000; ++i) REQUIRE(c[i] == a[i] + b[i]);
}

TEST_CASE("cuda gpu: fill_nan poisons a buffer", "[cuda][gpu]") {
  CudaRuntime* rt = runtime_or_skip();
  if (!rt) return;
  uint64_t ptr = rt->alloc(256 * 4);
  std::vector<float> zeros(256, 0.0f), back(256, 0.0f);
  rt->copy_to_device(ptr, zeros.data(), 256 * 4);
  rt->fill_nan(ptr, 256);
  rt->copy_to_host(back.data(), ptr, 256 * 4);
  rt->free(ptr);
  for (float v : back) REQUIRE(std::isnan(v));
}

TEST_CASE("cuda gpu: event timing returns positive samples", "[cuda][gpu]") {
  CudaRuntime* rt = runtime_or_skip();
  if (!rt) return;
  LoweredFunc f = elementwise_add(1 << 20);
  auto module = build(*rt, f);
  DeviceBuffers buffers(*rt, f);
  for (bool flush : {false, true}) {
    CudaTiming t = rt->time([&] { module->run(buffers.ptrs()); }, 0.02, flush);
    REQUIRE(t.samples_s.size() >= 5);
    double total = 0;
    for (double s : t.samples_s) {
      CHECK(s > 0);
      total += s;
    }
    // With a flush every sample is one run, so the samples add up to the requested time. Without
    // one a sample is the mean of a batch of back-to-back runs: the batches add up to it instead.
    if (flush) CHECK((total >= 0.02 || t.samples_s.size() >= 10000));
    CHECK(t.median_s > 0);
  }
}

TEST_CASE("cuda gpu: shared, dynamic shared, local, vector, math, integer and scratch kernels compute the right values",
          "[cuda][gpu]") {
  CudaRuntime* rt = runtime_or_skip();
  if (!rt) return;
  SECTION("shared reverse") {
    std::vector<float> a(256);
    for (int i = 0; i < 256; ++i) a[i] = float(i);
    std::vector<float> b = run_once(*rt, shared_reverse(4), a);
    for (int i = 0; i < 256; ++i) REQUIRE(b[i] == a[i / 64 * 64 + 63 - i % 64]);
  }
  SECTION("dynamic shared reverse (64 KiB)") {
    std::vector<float> a(2 * 16384);
    for (size_t i = 0; i < a.size(); ++i) a[i] = float(i);
    std::vector<float> b = run_once(*rt, big_shared_reverse(), a);
    for (int i = 0; i < 2 * 16384; ++i) REQUIRE(b[i] == a[i / 16384 * 16384 + 16383 - i % 16384]);
  }
  SECTION("local weighted sum") {
    std::vector<float> a(256);
    for (int i = 0; i < 256; ++i) a[i] = float(i % 7);
    std::vector<float> out = run_once(*rt, local_weighted_sum(), a);
    for (int t = 0; t < 64; ++t) {
      float want = 0;
      for (int k = 0; k < 4; ++k) want += a[t * 4 + k] * float(k + 1);
      REQUIRE(out[t] == want);
    }
  }
  for (auto [lanes, offset] : {std::pair{4, 0}, {4, 2}, {2, 0}, {3, 1}}) {
    DYNAMIC_SECTION("vector lanes " << lanes << " offset " << offset) {
      LoweredFunc f = vector_scale(lanes, offset);
      int64_t n = f.params[0].shape[0];
      std::vector<float> a(n);
      for (int64_t i = 0; i < n; ++i) a[i] = float(i) * 0.25f;
      std::vector<float> out = run_once(*rt, f, a);
      for (int64_t i = offset; i < n; ++i) REQUIRE(out[i] == a[i] * 2 + float((i - offset) % lanes));
    }
  }
  SECTION("math functions") {
    std::vector<float> a(128);
    for (int i = 0; i < 128; ++i) a[i] = 0.05f + 0.03f * float(i);
    std::vector<float> out = run_once(*rt, all_math(), a);
    for (int i = 0; i < 128; ++i) {
      double x = a[i];
      double want[] = {std::exp(x),  std::log(x),  std::sqrt(x),     1 / std::sqrt(x),  std::tanh(x),
                       1 / (1 + std::exp(-x)), std::erf(x), std::fabs(x - 1), std::pow(x, 1.5)};
      for (int f = 0; f < 9; ++f) {
        INFO("function " << f << " at x = " << x);
        REQUIRE(close(out[f * 128 + i], want[f]));
      }
    }
  }
  SECTION("floor division, modulo and select") {
    std::vector<float> a(100);
    for (int i = 0; i < 100; ++i) a[i] = float(i - 50) * 0.02f;
    std::vector<float> out = run_once(*rt, int_ops_and_select(), a);
    auto fdiv = [](int64_t x, int64_t y) { return int64_t(std::floor(double(x) / double(y))); };
    for (int i = 0; i < 100; ++i) {
      int64_t x = i - 50;
      REQUIRE(out[0 * 100 + i] == float(fdiv(x, 7)));
      REQUIRE(out[1 * 100 + i] == float(x - fdiv(x, 7) * 7));
      REQUIRE(out[2 * 100 + i] == float(fdiv(x, 8)));
      REQUIRE(out[3 * 100 + i] == float(x - fdiv(x, 8) * 8));
      REQUIRE(out[4 * 100 + i] == float(fdiv(x, -3)));
      REQUIRE(out[5 * 100 + i] == float(x + fdiv(x, -3) * 3));
      REQUIRE(out[6 * 100 + i] == (a[i] > 0 ? std::fmax(a[i], 0.5f) : std::fmin(a[i], -0.5f)));
    }
  }
  SECTION("two kernels through a scratch buffer") {
    std::vector<float> a(512);
    for (int i = 0; i < 512; ++i) a[i] = float(i);
    std::vector<float> b = run_once(*rt, two_kernels(), a);
    for (int i = 0; i < 512; ++i) REQUIRE(b[i] == a[i] * 2 + 1);
  }
}

// Hidden: run by the next test in a child process, since the error poisons the CUDA context.
TEST_CASE("gpu child: out-of-bounds store", "[.][cuda_oob_child]") {
  CudaRuntime* rt = runtime_or_skip();
  if (!rt) return;
  LoweredFunc f;
  f.name = "out_of_bounds";
  f.params = {param("A", 32, true)};
  f.body = bound("t", 32, "threadIdx.x", make_store("A", var("t") + make_int(int64_t(1) << 40), make_float(1.0)));
  auto module = build(*rt, f);
  DeviceBuffers buffers(*rt, f);
  CHECK_THROWS_WITH((module->run(buffers.ptrs()), rt->synchronize()), Contains("CUDA_ERROR_ILLEGAL_ADDRESS"));
  std::string why;
  CHECK(CudaRuntime::get(&why) == nullptr);
  CHECK_THAT(why, Contains("unusable") && Contains("CUDA_ERROR_ILLEGAL_ADDRESS"));
  CHECK_THROWS_WITH(rt->alloc(16), Contains("unusable"));
}

TEST_CASE("cuda gpu: an illegal address raises an Error and makes the runtime unusable", "[cuda][gpu]") {
  if (!runtime_or_skip()) return;
  char exe[4096] = {};
  ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  REQUIRE(len > 0);
  std::string command = "'" + std::string(exe, len) + "' 'gpu child: out-of-bounds store' 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe);
  std::string output;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) output.append(buf, n);
  int status = pclose(pipe);
  INFO(output);
  CHECK(status == 0);
  CHECK_THAT(output, Contains("All tests passed"));
}
