// Every op template at small odd shapes: the default GPU schedule and 100 random ones lower for the
// GPU, print as CUDA C and compile through NVRTC for sm_90 (no GPU needed). Running them is checked
// on a GPU host (experiments/gpu/run_h100.sh).
#include <catch2/catch.hpp>

#include "measure/cuda_kernel.h"
#include "schedule/ops/op_library.h"
#include "schedule/te/error.h"
#include "search/gpu_schedule.h"

using namespace tessel;

namespace {

bool nvrtc_available() {
  static int state = -1;
  if (state < 0) {
    try {
      CudaProgram p;
      p.source = "extern \"C\" __global__ void probe() {}\n";
      nvrtc_compile(p, "sm_90");
      state = 1;
    } catch (const tessel::Error&) {
      state = 0;
    }
  }
  return state == 1;
}

void compile_schedules(const std::string& op, const OpParams& params) {
  if (!nvrtc_available()) {
    WARN("skipped: NVRTC not available on this machine");
    return;
  }
  ComputeDAG dag = build_op(op, params);
  int compiled = 0;
  for (uint64_t seed = 0; seed <= 100; ++seed) {
    Trace trace = seed == 0 ? default_gpu_schedule(dag, GpuTargetSpec{}) : random_gpu_schedule(dag, seed, GpuTargetSpec{});
    INFO(op << " seed " << seed << " (0 = default): " << trace_to_json(trace));
    try {
      CudaBuild b = build_cuda_kernel(dag, trace, "sm_90");
      CHECK(!b.cubin.empty());
      ++compiled;
    } catch (const tessel::Error& e) {
      FAIL_CHECK(e.what());
    }
  }
  CHECK(compiled == 101);
}

}  // namespace

TEST_CASE("gpu schedules compile: matmul 61x7x13", "[cuda][nvrtc]") { compile_schedules("matmul", {{"M", "61"}, {"N", "7"}, {"K", "13"}}); }
TEST_CASE("gpu schedules compile: dense 13x61x7 gelu", "[cuda][nvrtc]") {
  compile_schedules("dense", {{"M", "13"}, {"N", "61"}, {"K", "7"}, {"bias", "1"}, {"act", "gelu"}});
}
TEST_CASE("gpu schedules compile: batch_matmul 3x7x13x61", "[cuda][nvrtc]") {
  compile_schedules("batch_matmul", {{"B", "3"}, {"M", "7"}, {"N", "13"}, {"K", "61"}});
}
TEST_CASE("gpu schedules compile: conv2d pad stride groups", "[cuda][nvrtc]") {
  compile_schedules("conv2d", {{"N", "2"}, {"C", "4"}, {"H", "13"}, {"W", "7"}, {"F", "6"}, {"KH", "3"}, {"KW", "3"},
                               {"pad", "1"}, {"stride", "2"}, {"groups", "2"}, {"bias", "1"}, {"act", "silu"}});
}
TEST_CASE("gpu schedules compile: softmax 7x61", "[cuda][nvrtc]") { compile_schedules("softmax", {{"rows", "7"}, {"cols", "61"}}); }
TEST_CASE("gpu schedules compile: layernorm 13x127", "[cuda][nvrtc]") {
  compile_schedules("layernorm", {{"rows", "13"}, {"cols", "127"}});
}
TEST_CASE("gpu schedules compile: rmsnorm 13x61", "[cuda][nvrtc]") { compile_schedules("rmsnorm", {{"rows", "13"}, {"cols", "61"}}); }
TEST_CASE("gpu schedules compile: reduce_sum 61x127", "[cuda][nvrtc]") {
  compile_schedules("reduce_sum", {{"rows", "61"}, {"cols", "127"}});
}
TEST_CASE("gpu schedules compile: bias_residual_layernorm 7x61", "[cuda][nvrtc]") {
  compile_schedules("bias_residual_layernorm", {{"rows", "7"}, {"cols", "61"}});
}
TEST_CASE("gpu schedules compile: elementwise 7x13x3, 3 inputs", "[cuda][nvrtc]") {
  compile_schedules("elementwise", {{"shape", "7x13x3"}, {"inputs", "3"}, {"expr", "tanh(x)*y+exp(z)-pow(abs(x),y)"}});
}
