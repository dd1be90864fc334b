// Every op template at small odd shapes: the default GPU schedule and 100 random ones lower for the
// GPU, print as CUDA C and compile through NVRTC for sm_90 (no GPU needed). Running them is checked
// on a GPU host (experiments/gpu/run_h100.sh). Also the reduction across threads (warp shuffles).
#include <algorithm>

#include <catch2/catch.hpp>

#include "measure/cuda_kernel.h"
#include "schedule/ops/op_builders.h"
#include "schedule/ops/op_library.h"
#include "schedule/te/error.h"
#include "schedule/lower/lower.h"
#include "search/gpu_schedule.h"
#include "search/schedule_patterns.h"
#include "search/sketch.h"
#include "tests/skip.h"

using namespace tessel;

namespace {

// Whether NVRTC compiles here; when it does not, the calling test is marked skipped.
bool nvrtc_or_skip() {
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
  if (state != 1) tessel_test::skip_test("NVRTC not available on this machine");
  return state == 1;
}

void compile_schedules(const std::string& op, const OpParams& params) {
  if (!nvrtc_or_skip()) return;
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
TEST_CASE("gpu schedules compile: dense 1x61x771 bias relu (a matrix-vector product)", "[cuda][nvrtc]") {
  compile_schedules("dense", {{"M", "1"}, {"N", "61"}, {"K", "771"}, {"bias", "1"}, {"act", "relu"}});
}
TEST_CASE("gpu schedules compile: matmul 2x7x197", "[cuda][nvrtc]") {
  compile_schedules("matmul", {{"M", "2"}, {"N", "7"}, {"K", "197"}});
}
TEST_CASE("gpu schedules compile: bias_residual_layernorm 7x61", "[cuda][nvrtc]") {
  compile_schedules("bias_residual_layernorm", {{"rows", "7"}, {"cols", "61"}});
}
TEST_CASE("gpu schedules compile: elementwise 7x13x3, 3 inputs", "[cuda][nvrtc]") {
  compile_schedules("elementwise", {{"shape", "7x13x3"}, {"inputs", "3"}, {"expr", "tanh(x)*y+exp(z)-pow(abs(x),y)"}});
}
TEST_CASE("gpu schedules compile: matmul 61x7x13 bfloat16", "[cuda][nvrtc][half]") {
  compile_schedules("matmul", {{"M", "61"}, {"N", "7"}, {"K", "13"}, {"dtype", "bfloat16"}});
}
TEST_CASE("gpu schedules compile: dense 13x61x7 bias gelu float16", "[cuda][nvrtc][half]") {
  compile_schedules("dense",
                    {{"M", "13"}, {"N", "61"}, {"K", "7"}, {"bias", "1"}, {"act", "gelu"}, {"dtype", "float16"}});
}
TEST_CASE("gpu schedules compile: conv2d pad stride 2 float16", "[cuda][nvrtc][half]") {
  compile_schedules("conv2d", {{"N", "1"}, {"C", "5"}, {"H", "13"}, {"W", "11"}, {"F", "7"}, {"KH", "3"}, {"KW", "3"},
                               {"pad", "1"}, {"stride", "2"}, {"dtype", "float16"}});
}

// No NVRTC needed: what the printer makes of 16-bit buffers.
// A schedule on the CUDA cores (no tensorize step) that stages both operands in shared memory:
// the first such random one.
Trace cuda_core_schedule(const ComputeDAG& dag) {
  for (uint64_t seed = 1;; ++seed) {
    Trace t = random_gpu_schedule(dag, seed, GpuTargetSpec{});
    auto count = [&](StepKind kind) {
      return std::count_if(t.steps.begin(), t.steps.end(), [&](const Step& s) { return s.kind == kind; });
    };
    if (count(StepKind::Tensorize) == 0 && count(StepKind::CacheRead) == 2) return t;
  }
}

TEST_CASE("16-bit buffers print as their bits, converted by the prelude's helpers", "[cuda][printer][half]") {
  ComputeDAG dag = build_op("dense", {{"M", "13"}, {"N", "61"}, {"K", "7"}, {"bias", "1"}, {"dtype", "bfloat16"}});
  CudaBuild b = build_cuda_kernel(dag, cuda_core_schedule(dag), "sm_90", /*compile=*/false);
  const std::string& src = b.program.source;
  INFO(src);
  CHECK(src.find("typedef unsigned short tessel_bfloat16;") != std::string::npos);
  CHECK(src.find("const tessel_bfloat16* __restrict__ X") != std::string::npos);
  CHECK(src.find("tessel_bfloat16* __restrict__ Y") != std::string::npos);
  // The operands are staged in shared memory in their own type and widened where they are used.
  CHECK(src.find("__shared__ __align__(32) tessel_bfloat16 X_shared[") != std::string::npos);
  CHECK(src.find("tessel_bfloat16_to_float(X_shared[") != std::string::npos);
  CHECK(src.find("= tessel_float_to_bfloat16(") != std::string::npos);

  ComputeDAG fp16 = build_op("matmul", {{"M", "13"}, {"N", "61"}, {"K", "7"}, {"dtype", "float16"}});
  const std::string half_src =
      build_cuda_kernel(fp16, cuda_core_schedule(fp16), "sm_90", false).program.source;
  CHECK(half_src.find("tessel_half_to_float(A_shared[") != std::string::npos);
  CHECK(half_src.find("tessel_float_to_half(") != std::string::npos);

  // A float32 program has no 16-bit prelude (its source, and so its compiled form, is unchanged).
  ComputeDAG fp32 = build_op("matmul", {{"M", "13"}, {"N", "61"}, {"K", "7"}});
  const std::string fp32_src =
      build_cuda_kernel(fp32, default_gpu_schedule(fp32, GpuTargetSpec{}), "sm_90", false).program.source;
  CHECK(fp32_src.find("tessel_half") == std::string::npos);
}

namespace {

// softmax rows x cols with every reduction split over `threads` lanes bound to threadIdx.x (a
// reduction across threads) and `per_block` rows per block on threadIdx.y.
Trace cross_thread_softmax(const ComputeDAG& dag, int64_t threads, int64_t per_block) {
  TraceBuilder b(dag);
  auto apply = [&](const Step& step) { REQUIRE(b.apply(step)); };
  for (const Operation& op : dag.ops())
    if (!op.is_placeholder && op.reduce == ReduceKind::None && op.name != dag.ops().back().name)
      apply(compute_inline_step(op.name));
  const Operation& out = dag.ops().back();
  const std::string row = out.axes[0].name, col = out.axes[1].name;
  apply(split_step(out.name, col, {threads}));
  apply(annotate_step(out.name, col + ".1", Annotation::ThreadX));
  apply(split_step(out.name, row, {per_block}));
  apply(annotate_step(out.name, row + ".0", Annotation::BlockX));
  apply(annotate_step(out.name, row + ".1", Annotation::ThreadY));
  for (size_t i = dag.ops().size(); i-- > 0;) {
    const Operation& op = dag.ops()[i];
    if (op.reduce == ReduceKind::None) continue;
    const std::string k = op.reduce_axes[0].name;
    apply(split_step(op.name, k, {threads}));
    apply(annotate_step(op.name, k + ".1", Annotation::ThreadX));
    apply(set_scope_step(op.name, MemScope::Local));
    apply(compute_at_step(op.name, out.name, row + ".1"));
  }
  return b.trace();
}

}  // namespace

TEST_CASE("a reduction bound to threadIdx.x lowers to a combine across threads", "[cuda][nvrtc]") {
  ComputeDAG dag = build_op("softmax", {{"rows", "7"}, {"cols", "61"}});
  LowerOptions gpu;
  gpu.target = LowerTarget::Gpu;
  SECTION("one warp per row, 4 rows per block: shuffles within the warp, results stored under the row guard") {
    Trace t = cross_thread_softmax(dag, 32, 4);
    LoweredFunc f = lower(replay(dag, t), "softmax", gpu);
    std::string ir = to_string(f);
    INFO(ir);
    CHECK(ir.find("allreduce_max(over threadIdx.x, 32)") != std::string::npos);
    CHECK(ir.find("allreduce_sum(over threadIdx.x, 32)") != std::string::npos);
    if (!nvrtc_or_skip()) return;
    CudaBuild b = build_cuda_kernel(dag, t, "sm_90");
    INFO(b.program.source);
    CHECK(b.program.source.find("__shfl_xor_sync(0xffffffffu, ") != std::string::npos);
    CHECK(b.program.launches[0].block[0] == 32);
    CHECK(b.program.launches[0].block[1] == 4);
    CHECK(b.program.launches[0].grid[0] == 2);
  }
  SECTION("16 lanes per row: shuffles within a group of 16 lanes") {
    if (!nvrtc_or_skip()) return;
    CudaBuild b = build_cuda_kernel(dag, cross_thread_softmax(dag, 16, 2), "sm_90");
    INFO(b.program.source);
    CHECK(b.program.source.find("65535u << ((threadIdx.x + 16 * (threadIdx.y + 2 * threadIdx.z)) & 16)") !=
          std::string::npos);
  }
  SECTION("two warps per row: the warps' values meet in shared memory") {
    if (!nvrtc_or_skip()) return;
    CudaBuild b = build_cuda_kernel(dag, cross_thread_softmax(dag, 64, 2), "sm_90");
    INFO(b.program.source);
    CHECK(b.program.source.find("__shared__ float warp_values0[4];") != std::string::npos);
    CHECK(b.program.source.find("__syncthreads();") != std::string::npos);
  }
  SECTION("a thread count that is neither a power of two up to 32 nor whole warps is refused") {
    CHECK_THROWS_WITH(lower(replay(dag, cross_thread_softmax(dag, 48, 1)), "softmax", gpu),
                      Catch::Matchers::Contains("a power of two up to 32 threads or a multiple of 32"));
  }
  SECTION("the CPU target has no threads to reduce across") {
    CHECK_THROWS_WITH(lower(replay(dag, cross_thread_softmax(dag, 32, 1)), "softmax", LowerOptions{}),
                      Catch::Matchers::Contains("which the CPU target does not have"));
  }
}

TEST_CASE("a shared row buffer covers every row of its block, even rows of two images", "[cuda]") {
  // Grouped conv2d scheduled as rows: 8 rows (n, f, oh) per block on threadIdx.y, the input staged
  // in shared memory per block. A block's rows span two images (42 rows per image), so the staged
  // region must be both images, not the image of one thread's row (found on the H200: wrong
  // values from random schedules 24 and 28).
  ComputeDAG dag = build_op("conv2d", {{"N", "2"}, {"C", "4"}, {"H", "13"}, {"W", "7"}, {"F", "6"}, {"KH", "3"},
                                       {"KW", "3"}, {"pad", "1"}, {"stride", "2"}, {"groups", "2"}, {"bias", "1"},
                                       {"act", "silu"}});
  Trace t = trace_from_json(R"json({"steps": [{"kind": "cache_read", "readers": ["pad"], "scope": "shared", "stage": "X"}, {"kind": "compute_inline", "stage": "pad"}, {"kind": "fuse", "loops": ["n1", "f1", "oh1"], "stage": "Y"}, {"factors": [32], "kind": "split", "loop": "ow1", "stage": "Y"}, {"annotation": "threadIdx.x", "kind": "annotate", "loop": "ow1.1", "stage": "Y"}, {"factors": [8], "kind": "split", "loop": "n1@f1@oh1", "stage": "Y"}, {"annotation": "blockIdx.x", "kind": "annotate", "loop": "n1@f1@oh1.0", "stage": "Y"}, {"annotation": "threadIdx.y", "kind": "annotate", "loop": "n1@f1@oh1.1", "stage": "Y"}, {"kind": "set_scope", "scope": "local", "stage": "conv"}, {"kind": "compute_at", "loop": "n1@f1@oh1.1", "stage": "conv", "target": "Y"}, {"kind": "compute_at", "loop": "n1@f1@oh1.1", "stage": "X.shared", "target": "Y"}, {"kind": "fuse", "loops": ["ax0", "ax1", "ax2", "ax3"], "stage": "X.shared"}, {"factors": [8, 32], "kind": "split", "loop": "ax0@ax1@ax2@ax3", "stage": "X.shared"}, {"annotation": "threadIdx.y", "kind": "annotate", "loop": "ax0@ax1@ax2@ax3.1", "stage": "X.shared"}, {"annotation": "threadIdx.x", "kind": "annotate", "loop": "ax0@ax1@ax2@ax3.2", "stage": "X.shared"}], "version": 1})json");
  LowerOptions gpu;
  gpu.target = LowerTarget::Gpu;
  std::string ir = to_string(lower(replay(dag, t), "conv", gpu));
  INFO(ir);
  CHECK(ir.find("allocate X.shared[float32 * 728], shared") != std::string::npos);
}

TEST_CASE("a cooperative fetch vectorized by 4 loads 16 bytes at a time where rows are aligned", "[cuda][nvrtc]") {
  // The SGEMM blocking of experiments/schedules/cuda/hand (32 x 32 block tiles, 4 x 4 per thread,
  // slabs of 8 along k staged in shared memory, 4 consecutive floats fetched per thread). The fetch
  // index of a slab is floordiv / floormod of a fused index, which the vectorizer and the printer
  // must see through: with K = 32 every A row starts at a multiple of 4 floats, with K = 13 none does.
  const char* json = R"json({"version": 1, "steps": [{"kind": "cache_write", "stage": "C", "scope": "local"}, {"kind": "split", "stage": "C", "loop": "i", "factors": [8, 4]}, {"kind": "split", "stage": "C", "loop": "j", "factors": [8, 4]}, {"kind": "reorder", "stage": "C", "loops": ["i.0", "j.0", "i.1", "j.1", "i.2", "j.2"]}, {"kind": "annotate", "stage": "C", "loop": "i.0", "annotation": "blockIdx.y"}, {"kind": "annotate", "stage": "C", "loop": "j.0", "annotation": "blockIdx.x"}, {"kind": "annotate", "stage": "C", "loop": "i.1", "annotation": "threadIdx.y"}, {"kind": "annotate", "stage": "C", "loop": "j.1", "annotation": "threadIdx.x"}, {"kind": "annotate", "stage": "C", "loop": "i.2", "annotation": "unroll"}, {"kind": "annotate", "stage": "C", "loop": "j.2", "annotation": "unroll"}, {"kind": "compute_at", "stage": "C.local", "target": "C", "loop": "j.1"}, {"kind": "split", "stage": "C.local", "loop": "k", "factors": [8]}, {"kind": "reorder", "stage": "C.local", "loops": ["k.0", "k.1", "i", "j"]}, {"kind": "annotate", "stage": "C.local", "loop": "i", "annotation": "unroll"}, {"kind": "annotate", "stage": "C.local", "loop": "j", "annotation": "unroll"}, {"kind": "pragma", "stage": "C.local", "loop": "k.0", "pragma": "auto_unroll_max_step", "value": 512}, {"kind": "cache_read", "stage": "A", "scope": "shared", "readers": ["C.local"]}, {"kind": "compute_at", "stage": "A.shared", "target": "C.local", "loop": "k.0"}, {"kind": "fuse", "stage": "A.shared", "loops": ["ax0", "ax1"]}, {"kind": "split", "stage": "A.shared", "loop": "ax0@ax1", "factors": [8, 8, 4]}, {"kind": "annotate", "stage": "A.shared", "loop": "ax0@ax1.1", "annotation": "threadIdx.y"}, {"kind": "annotate", "stage": "A.shared", "loop": "ax0@ax1.2", "annotation": "threadIdx.x"}, {"kind": "annotate", "stage": "A.shared", "loop": "ax0@ax1.3", "annotation": "vectorize"}, {"kind": "cache_read", "stage": "B", "scope": "shared", "readers": ["C.local"]}, {"kind": "compute_at", "stage": "B.shared", "target": "C.local", "loop": "k.0"}, {"kind": "fuse", "stage": "B.shared", "loops": ["ax0", "ax1"]}, {"kind": "split", "stage": "B.shared", "loop": "ax0@ax1", "factors": [8, 8, 4]}, {"kind": "annotate", "stage": "B.shared", "loop": "ax0@ax1.1", "annotation": "threadIdx.y"}, {"kind": "annotate", "stage": "B.shared", "loop": "ax0@ax1.2", "annotation": "threadIdx.x"}, {"kind": "annotate", "stage": "B.shared", "loop": "ax0@ax1.3", "annotation": "vectorize"}]})json";
  Trace t = trace_from_json(json, "hand gemm");
  if (!nvrtc_or_skip()) return;
  SECTION("K = 32: float4 loads of A and B, float4 stores into shared memory") {
    ComputeDAG dag = build_op("matmul", {{"M", "64"}, {"N", "64"}, {"K", "32"}});
    CudaBuild b = build_cuda_kernel(dag, t, "sm_90");
    INFO(b.program.source);
    CHECK(b.program.source.find("*reinterpret_cast<const float4*>(&A[") != std::string::npos);
    CHECK(b.program.source.find("*reinterpret_cast<const float4*>(&B[") != std::string::npos);
    CHECK(b.program.source.find("*reinterpret_cast<float4*>(&A_shared[") != std::string::npos);
  }
  SECTION("K = 13: A's rows are not 16-byte aligned, so A is read element by element") {
    ComputeDAG dag = build_op("matmul", {{"M", "64"}, {"N", "64"}, {"K", "13"}});
    CudaBuild b = build_cuda_kernel(dag, t, "sm_90");
    INFO(b.program.source);
    CHECK(b.program.source.find("*reinterpret_cast<const float4*>(&A[") == std::string::npos);
    CHECK(b.program.source.find("*reinterpret_cast<const float4*>(&B[") != std::string::npos);
  }
}

TEST_CASE("a matrix-vector product: each output a row reduced across threads, its epilogue after the combine",
          "[cuda][nvrtc]") {
  // A classifier at batch 1 (ResNet-50's Gemm 1x1000 over 2048 inputs, here at odd sizes): with
  // few outputs, the tiling's blocks are few and walk the long reduction serially (6 ms on an H100
  // for ResNet-50's); the rows sketch reduces each output across a warp or more instead.
  ComputeDAG dag = build_op("dense", {{"M", "1"}, {"N", "61"}, {"K", "771"}, {"bias", "1"}, {"act", "relu"}});
  std::vector<Sketch> sketches = gpu_sketches(dag, GpuTargetSpec{});
  REQUIRE(sketches.size() == 2);
  CHECK(sketches[0].name == "gpu/multi_level_tiling");
  CHECK(sketches[1].name == "gpu/contraction_rows");
  Decider d(1, {{"rows.threads", {64}},
                {"rows.combine_by_shuffles", {1}},
                {"rows.per_block", {2}},
                {"rows.unroll", {2}}});
  SketchResult r = apply_sketch(sketches[1], dag, d);
  REQUIRE(r.trace.decisions.size() == 4);
  LowerOptions gpu;
  gpu.target = LowerTarget::Gpu;
  std::string ir = to_string(lower(replay(dag, r.trace), "gemv", gpu));
  INFO(trace_to_json(r.trace, true) << ir);
  CHECK(ir.find("allreduce_sum(over threadIdx.x, 64)") != std::string::npos);
  // The default takes the rows too: one output per row, the reduction across threads.
  std::string default_ir = to_string(lower(replay(dag, default_gpu_schedule(dag, GpuTargetSpec{})), "gemv", gpu));
  INFO(default_ir);
  CHECK(default_ir.find("allreduce_sum(over threadIdx.x") != std::string::npos);
  if (nvrtc_or_skip()) {
    CudaBuild b = build_cuda_kernel(dag, r.trace, "sm_90");
    INFO(b.program.source);
    CHECK(b.program.launches[0].block[0] == 64);
    CHECK(b.program.launches[0].block[1] == 2);
    CHECK(b.program.launches[0].grid[0] == 31);
  }
  // Many outputs over a short reduction (a BERT projection) keep the tiling alone, by default too.
  ComputeDAG wide = build_op("dense", {{"M", "128"}, {"N", "768"}, {"K", "768"}});
  CHECK(gpu_sketches(wide, GpuTargetSpec{}).size() == 1);
  std::string wide_ir = to_string(lower(replay(wide, default_gpu_schedule(wide, GpuTargetSpec{})), "dense", gpu));
  CHECK(wide_ir.find("allreduce") == std::string::npos);
}

TEST_CASE("a one-row Gemm as the model importer writes it: one output per row of threads, not one block",
          "[cuda][nvrtc]") {
  // dots[n] = sum_k x[0, k] * W[n, k]; Y[0, n] = dots[n] + b[n] (W stored [N, K], as exporters
  // write nn.Linear). Scheduled as rows along Y's last axis, the whole product ran in one block,
  // output after output: ResNet-50's classifier took 657 us tuned (6 ms by default) on an H100.
  using namespace tessel::ops_detail;
  const int64_t n = 61, k = 771;
  Axis o{"n", n}, r{"k", k}, i0{"i0", 1}, i1{"i1", n};
  std::vector<Operation> ops;
  ops.push_back(placeholder("x", {1, k}));
  ops.push_back(placeholder("W", {n, k}));
  ops.push_back(placeholder("b", {n}));
  Expr product = make_tensor_read("x", {make_int(0), var(r)}) * read("W", {o, r});
  ops.push_back(reduce("dots", {o}, ReduceKind::Sum, {r}, product));
  ops.push_back(compute("Y", {i0, i1}, read("dots", {i1}) + read("b", {i1})));
  ComputeDAG dag(std::move(ops));
  std::vector<Sketch> sketches = gpu_sketches(dag, GpuTargetSpec{});
  REQUIRE(sketches.size() == 1);
  CHECK(sketches[0].name == "gpu/cross_thread_reduction");
  LowerOptions gpu;
  gpu.target = LowerTarget::Gpu;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    Decider d(seed);
    SketchResult r = apply_sketch(sketches[0], dag, d);
    // Rows of one output: nothing to stage per row, no output vector.
    for (const TraceDecision& decision : r.trace.decisions) {
      CHECK(decision.name != "rows.stage_in_shared");
      CHECK(decision.name != "rows.output_vector");
    }
    std::string ir = to_string(lower(replay(dag, r.trace), "gemv", gpu));
    INFO(seed << trace_to_json(r.trace, true) << ir);
    // Every output's block index or thread row; the reduction's loop inside runs over k only.
    CHECK(ir.find("for (n") == std::string::npos);
  }
  Trace t = default_gpu_schedule(dag, GpuTargetSpec{});
  if (nvrtc_or_skip()) {
    CudaBuild b = build_cuda_kernel(dag, t, "sm_90");
    INFO(trace_to_json(t, true) << b.program.source);
    CHECK(b.program.launches[0].grid[0] * b.program.launches[0].block[1] >= n);
  }
}
