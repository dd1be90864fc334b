// Tensor cores: 16-bit contractions (matmul, dense, batch_matmul) scheduled onto warp-level wmma
// tiles (a GPU without warpgroup operations, as an sm_80 one) at sizes no multiple of 16, the tensorize step's rules, and what the CUDA printer makes of
// it. Kernels are compiled through NVRTC where it is installed; running them is checked on a GPU
// host (experiments/gpu/check_random.sh with DTYPE=bf16 or fp16).
#include <algorithm>

#include <catch2/catch.hpp>

#include "codegen/cuda/cuda_backend.h"
#include "measure/cuda_kernel.h"
#include "schedule/lower/lower.h"
#include "schedule/te/dag_parser.h"
#include "schedule/ops/op_library.h"
#include "schedule/te/error.h"
#include "search/gpu_schedule.h"
#include "tests/cuda/cuda_test_util.h"

using namespace tessel;
using cuda_testing::contains;
using cuda_testing::gpu_options;

namespace {

bool has_tensorize(const Trace& t) {
  for (const Step& s : t.steps)
    if (s.kind == StepKind::Tensorize) return true;
  return false;
}

int count_matrix(const Stmt& body, MatrixOpKind kind) {
  int n = 0;
  visit(body, [&](const Stmt& s) { n += s->op == StmtOp::Matrix && s->matrix_op == kind; });
  return n;
}

// A target whose tensor cores are a warp's only (tests/cuda/test_warpgroup_mma.cpp has the others).
GpuTargetSpec warp_mma() {
  GpuTargetSpec t;
  t.warpgroup_mma = false;
  return t;
}

}  // namespace

TEST_CASE("a bfloat16 matmul at odd sizes runs on tensor cores by default", "[cuda][tensor_core]") {
  ComputeDAG dag = build_op("matmul", {{"M", "61"}, {"N", "77"}, {"K", "45"}, {"dtype", "bfloat16"}});
  Trace t = default_gpu_schedule(dag, warp_mma());
  REQUIRE(has_tensorize(t));
  LoweredFunc f = lower(replay(dag, t), "mm", gpu_options());
  CHECK(count_matrix(f.body, MatrixOpKind::FillZero) > 0);
  CHECK(count_matrix(f.body, MatrixOpKind::LoadA) > 0);
  CHECK(count_matrix(f.body, MatrixOpKind::LoadB) > 0);
  CHECK(count_matrix(f.body, MatrixOpKind::MmaSync) > 0);
  CHECK(count_matrix(f.body, MatrixOpKind::Store) > 0);
  const std::string ir = to_string(f);
  INFO(ir);
  // The operand tiles in shared memory are zero past the tensors' ends (61 rows, 45 columns).
  CHECK(contains(ir, "select("));
  CHECK(contains(ir, "< 45"));
  // Rows of 32 bf16 padded to 40 (16 bytes more): the fragments load with a stride of 40.
  CHECK(contains(ir, "row 40"));

  CudaProgram p = emit_cuda(f);
  CHECK(contains(p.source, "wmma.load.a.sync.aligned.row.m16n16k16.shared.bf16"));
  CHECK(contains(p.source, "wmma.mma.sync.aligned.row.row.m16n16k16.f32.bf16.bf16.f32"));
  CHECK(contains(p.source, "wmma.store.d.sync.aligned.row.m16n16k16.shared.f32"));
  CHECK(p.launches.at(0).block[0] == 32);  // threadIdx.x: one warp's lanes
  cuda_testing::compile_or_skip(p);  // last: without NVRTC the test reports skipped
}

TEST_CASE("weights [N, K] load as column-major b tiles, and float16 has its own mma", "[cuda][tensor_core]") {
  // As an ONNX Gemm with transB = 1 is imported: Y = gelu(X W^T + b), rounded once to float16.
  ComputeDAG dag = parse_dag_text(
      "X = placeholder(float16[7, 19])\n"
      "W = placeholder(float16[100, 19])\n"
      "b = placeholder(float16[100])\n"
      "P[i:7, j:100] = sum(k:19; (float32(X[i, k]) * float32(W[j, k])))  : float32\n"
      "Y[i1:7, j1:100] = float16(((0.5f * (P[i1, j1] + float32(b[j1]))) * (1.0f + erf(((P[i1, j1] + "
      "float32(b[j1])) * 0.7071067811865476f)))))  : float16\n");
  LoweredFunc f = lower(replay(dag, default_gpu_schedule(dag, warp_mma())), "dense", gpu_options());
  CudaProgram p = emit_cuda(f);
  INFO(p.source);
  CHECK(contains(p.source, "wmma.load.b.sync.aligned.col.m16n16k16.shared.f16"));
  CHECK(contains(p.source, "wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32"));
  CHECK(contains(p.source, "tessel_float_to_half("));  // the epilogue rounds once, after bias and gelu
  cuda_testing::compile_or_skip(p);  // last: without NVRTC the test reports skipped
}

// Activations [batch, rows, k] by one weight matrix [k, n], the bias added and the sum rounded to
// bfloat16: a transformer's projection as torch exports it and a 16-bit model build stores it.
const char* const kProjection =
    "X = placeholder(bfloat16[3, 97, 45])\n"
    "W = placeholder(bfloat16[45, 77])\n"
    "b = placeholder(bfloat16[77])\n"
    "P[s:3, i:97, j:77] = sum(k:45; (float32(X[s, i, k]) * float32(W[k, j])))  : float32\n"
    "Y[s1:3, i1:97, j1:77] = bfloat16((P[s1, i1, j1] + float32(b[j1])))  : bfloat16\n";

TEST_CASE("one weight matrix for a batch of activations runs on tensor cores, the weights' tiles without "
          "a batch axis", "[cuda][tensor_core]") {
  ComputeDAG dag = parse_dag_text(kProjection);
  Trace t = default_gpu_schedule(dag, warp_mma());
  INFO(trace_to_json(t, true));
  REQUIRE(has_tensorize(t));
  const State s = replay(dag, t);
  CHECK(s.op("W.shared").axes.size() == 2);  // staged as the weights are: [k, n]
  CHECK(s.op("X.shared").axes.size() == 3);
  // Their rows padded along their own second-to-last axis: k for the weights, i for the activations.
  REQUIRE(s.stage("W.shared").storage_align.size() == 1);
  CHECK(s.stage("W.shared").storage_align[0].axis == 0);
  REQUIRE(s.stage("X.shared").storage_align.size() == 1);
  CHECK(s.stage("X.shared").storage_align[0].axis == 1);
  LoweredFunc f = lower(s, "projection", gpu_options());
  CHECK(count_matrix(f.body, MatrixOpKind::LoadB) > 0);
  CHECK(count_matrix(f.body, MatrixOpKind::MmaSync) > 0);
  CudaProgram p = emit_cuda(f);
  CHECK(contains(p.source, "wmma.mma.sync.aligned.row.row.m16n16k16.f32.bf16.bf16.f32"));
  CHECK(p.launches.at(0).grid[2] == 3);  // a block column per batch
  int tensor_core = 0;
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    Trace r = random_gpu_schedule(dag, seed, warp_mma());
    INFO("seed " << seed << ": " << trace_to_json(r));
    tensor_core += has_tensorize(r);
    CHECK_NOTHROW(lower(replay(dag, r), "k", gpu_options()));
  }
  CHECK(tensor_core >= 5);
  cuda_testing::compile_or_skip(p);  // last: without NVRTC the test reports skipped
}

TEST_CASE("one weight matrix for rows fewer than a tensor-core block keeps the CUDA cores, the rows folded",
          "[cuda][tensor_core]") {
  // Activations [sequence 13, batch 8, features]: 8 rows a block of 64 would leave 7/8 idle.
  ComputeDAG dag = parse_dag_text(
      "X = placeholder(bfloat16[13, 8, 45])\nW = placeholder(bfloat16[45, 77])\n"
      "P[s:13, i:8, j:77] = sum(k:45; (float32(X[s, i, k]) * float32(W[k, j])))  : float32\n"
      "Y[s1:13, i1:8, j1:77] = bfloat16(P[s1, i1, j1])  : bfloat16\n");
  Trace t = default_gpu_schedule(dag, warp_mma());
  INFO(trace_to_json(t, true));
  CHECK_FALSE(has_tensorize(t));
  CHECK(std::any_of(t.steps.begin(), t.steps.end(), [](const Step& s) {
    return s.kind == StepKind::Fuse && s.stage == "Y" && s.loops == std::vector<std::string>{"s1", "i1"};
  }));
}

TEST_CASE("random GPU schedules of 16-bit contractions use the tensor cores and the CUDA cores",
          "[cuda][tensor_core]") {
  for (const char* op : {"matmul", "batch_matmul"}) {
    OpParams params{{"M", "61"}, {"N", "197"}, {"K", "7"}, {"dtype", "bfloat16"}};
    if (std::string(op) == "batch_matmul") params["B"] = "3";
    ComputeDAG dag = build_op(op, params);
    int tensor_core = 0;
    for (uint64_t seed = 1; seed <= 60; ++seed) {
      Trace t = random_gpu_schedule(dag, seed, warp_mma());
      INFO(op << " seed " << seed << ": " << trace_to_json(t));
      tensor_core += has_tensorize(t);
      CHECK_NOTHROW(lower(replay(dag, t), "k", gpu_options()));
    }
    CHECK(tensor_core >= 15);
    CHECK(tensor_core <= 55);
  }
  // float32 has no tensor-core path (TF32 would change the results).
  ComputeDAG fp32 = build_op("matmul", {{"M", "64"}, {"N", "64"}, {"K", "64"}});
  for (uint64_t seed = 1; seed <= 20; ++seed)
    CHECK_FALSE(has_tensorize(random_gpu_schedule(fp32, seed, warp_mma())));
  CHECK_FALSE(has_tensorize(default_gpu_schedule(fp32, warp_mma())));
}

TEST_CASE("tensorize: what the step refuses and what lowering refuses", "[cuda][tensor_core]") {
  ComputeDAG dag = build_op("matmul", {{"M", "32"}, {"N", "32"}, {"K", "32"}, {"dtype", "bfloat16"}});
  State s(dag);
  // A plain stage in global memory is no fragment.
  CHECK_THROWS_WITH(apply_step(s, tensorize_step("C", "C_0")), Catch::Contains("neither a fragment"));
  apply_step(s, cache_write_step("C_acc", MemScope::Accumulator));
  const std::string acc = "C_acc.accumulator";
  // The innermost loops must be 16 x 16 x 16, rows, columns, then the reduction.
  CHECK_THROWS_WITH(apply_step(s, tensorize_step(acc, "i")), Catch::Contains("extent 32"));
  apply_step(s, split_step(acc, "i", {16}));
  apply_step(s, split_step(acc, "j", {16}));
  apply_step(s, split_step(acc, "k", {16}));
  CHECK_THROWS_WITH(apply_step(s, tensorize_step(acc, "i.1")), Catch::Contains("innermost 3 loops"));
  apply_step(s, reorder_step(acc, {"i.0", "j.0", "k.0", "j.1", "i.1", "k.1"}));
  CHECK_NOTHROW(apply_step(s, tensorize_step(acc, "j.1")));  // order is checked in lowering
  // The accumulator's operands are no fragments: lowering says so, on either target.
  CHECK_THROWS_AS(lower(s, "k", gpu_options()), ScheduleError);

  // A whole tensor-core schedule is for the GPU only.
  Trace t = default_gpu_schedule(dag, warp_mma());
  REQUIRE(has_tensorize(t));
  CHECK_THROWS_AS(lower(replay(dag, t), "k", LowerOptions{}), ScheduleError);

  // Steps and scopes survive a trip through JSON.
  Trace back = trace_from_json(trace_to_json(t));
  REQUIRE(back.steps.size() == t.steps.size());
  for (size_t i = 0; i < t.steps.size(); ++i) CHECK(back.steps[i].describe() == t.steps[i].describe());
}

TEST_CASE("double-buffered tiles: the next tiles are fetched asynchronously during this step's products",
          "[cuda][tensor_core]") {
  // Aligned sizes: every fill copies 16 bytes of global memory unchanged, so it is a cp.async.
  ComputeDAG dag = build_op("matmul", {{"M", "256"}, {"N", "256"}, {"K", "256"}, {"dtype", "bfloat16"}});
  Trace t = default_gpu_schedule(dag, warp_mma());
  REQUIRE(std::any_of(t.steps.begin(), t.steps.end(), [](const Step& s) { return s.pragma == "double_buffer"; }));
  LoweredFunc f = lower(replay(dag, t), "mm", gpu_options());
  const std::string ir = to_string(f);
  INFO(ir);
  CHECK(contains(ir, "double_buffer") == false);  // the loop was rewritten
  CHECK(contains(ir, "<-async"));
  CHECK(contains(ir, "commit_copies(wait 1)"));
  CHECK(contains(ir, "commit_copies(wait -1)"));
  CudaProgram p = emit_cuda(f);
  CHECK(contains(p.source, "cp.async.cg.shared.global"));
  CHECK(contains(p.source, "cp.async.wait_group 1;"));

  // Odd sizes: the tiles' edges are zero-filled by plain stores, still in two copies.
  ComputeDAG odd = build_op("matmul", {{"M", "61"}, {"N", "77"}, {"K", "45"}, {"dtype", "bfloat16"}});
  LoweredFunc g = lower(replay(odd, default_gpu_schedule(odd, warp_mma())), "mm", gpu_options());
  const std::string odd_ir = to_string(g);
  INFO(odd_ir);
  CHECK(contains(odd_ir, "commit_copies(wait 1)"));
  CHECK_FALSE(contains(odd_ir, "<-async"));
  CHECK(contains(odd_ir, "select("));
  cuda_testing::compile_or_skip(p);
  cuda_testing::compile_or_skip(emit_cuda(g));
}

TEST_CASE("tensor-core schedules may use shared memory past 48 KiB, others may not", "[cuda][tensor_core]") {
  ComputeDAG big = build_op("matmul", {{"M", "4096"}, {"N", "4096"}, {"K", "4096"}, {"dtype", "bfloat16"}});
  Trace t = default_gpu_schedule(big, warp_mma());
  CHECK(shared_limit(warp_mma(), t) == warp_mma().max_shared_bytes_tensor_core);
  CudaProgram p = emit_cuda(lower(replay(big, t), "mm", gpu_options()));
  REQUIRE(p.launches.size() == 1);
  CHECK(p.launches[0].dynamic_shared_bytes > 48 * 1024);  // 128 x 128 tiles, double-buffered
  CHECK(p.launches[0].block[1] * p.launches[0].block[2] == 4);  // 2 x 2 warps
  ComputeDAG fp32 = build_op("matmul", {{"M", "512"}, {"N", "512"}, {"K", "512"}});
  CHECK(shared_limit(warp_mma(), default_gpu_schedule(fp32, warp_mma())) == warp_mma().max_shared_bytes);
}

TEST_CASE("float32 tiles on the CUDA cores can be double-buffered too (a decision of the search)",
          "[cuda][tensor_core]") {
  ComputeDAG dag = build_op("matmul", {{"M", "128"}, {"N", "128"}, {"K", "128"}});
  int found = 0;
  for (uint64_t seed = 1; seed <= 40 && found == 0; ++seed) {
    Trace t = random_gpu_schedule(dag, seed, warp_mma());
    if (std::none_of(t.steps.begin(), t.steps.end(), [](const Step& s) { return s.pragma == "double_buffer"; }))
      continue;
    ++found;
    const std::string ir = to_string(lower(replay(dag, t), "mm", gpu_options()));
    INFO(ir);
    CHECK(contains(ir, "commit_copies(wait 1)"));
  }
  CHECK(found == 1);
}

TEST_CASE("a fragment left untensorized, or a stage left in global memory inside a kernel, is a bad schedule",
          "[cuda][tensor_core]") {
  // Found by mutating default traces: both were internal errors (of storage flattening, of the
  // CUDA printer) instead of a ScheduleError naming the step.
  ComputeDAG dag = build_op("matmul", {{"M", "61"}, {"N", "77"}, {"K", "45"}, {"dtype", "bfloat16"}});
  const Trace t = default_gpu_schedule(dag, warp_mma());
  auto without = [&](auto&& drop) {
    Trace m = t;
    m.steps.erase(std::remove_if(m.steps.begin(), m.steps.end(), drop), m.steps.end());
    return m;
  };
  Trace untensorized =
      without([](const Step& s) { return s.kind == StepKind::Tensorize && s.stage == "B.shared.matrix_b"; });
  CHECK_THROWS_WITH(lower(replay(dag, untensorized), "k", gpu_options()), Catch::Contains("element by element"));
  Trace global = without([](const Step& s) { return s.kind == StepKind::SetScope && s.stage == "C_acc"; });
  CHECK_THROWS_AS(lower(replay(dag, global), "k", gpu_options()), ScheduleError);
  CHECK_THROWS_WITH(lower(replay(dag, global), "k", gpu_options()), Catch::Contains("computed inside a GPU kernel"));
}

TEST_CASE("a CPU schedule's parallel loop lowered for the GPU is a bad schedule, not an internal error",
          "[cuda][tensor_core]") {
  ComputeDAG dag = build_op("matmul", {{"M", "64"}, {"N", "64"}, {"K", "64"}});
  State s(dag);
  apply_step(s, annotate_step("C", "i", Annotation::Parallel));
  CHECK_THROWS_AS(lower(s, "k", gpu_options()), ScheduleError);
  CHECK_THROWS_WITH(lower(s, "k", gpu_options()), Catch::Contains("the GPU target does not have"));
}
