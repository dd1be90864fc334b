// Hopper's warpgroup tensor cores: the layouts warpgroup.h fixes, the steps that lead to them
// (storage_swizzle, pipeline_stages, tensorize of a wg_accumulator and of its reader), lowering
// (registers, swizzled tiles, the pipeline that keeps one group of products running) and what the
// CUDA printer makes of it. Kernels are compiled through NVRTC where it is installed; running them
// is checked on a GPU host (the [gpu] tests of tests/measure, experiments/gpu/check_random.sh).
#include <algorithm>
#include <set>

#include <catch2/catch.hpp>

#include "codegen/cuda/cuda_backend.h"
#include "schedule/ir/warpgroup.h"
#include "schedule/lower/arith.h"
#include "schedule/lower/lower.h"
#include "schedule/ops/op_library.h"
#include "schedule/te/dag_parser.h"
#include "schedule/te/error.h"
#include "search/gpu_schedule.h"
#include "tests/cuda/cuda_test_util.h"

using namespace tessel;
using cuda_testing::contains;
using cuda_testing::gpu_options;

namespace {

bool has_step(const Trace& t, StepKind kind) {
  return std::any_of(t.steps.begin(), t.steps.end(), [&](const Step& s) { return s.kind == kind; });
}

int count_matrix(const Stmt& body, MatrixOpKind kind, int64_t pending = -1) {
  int n = 0;
  visit(body, [&](const Stmt& s) {
    n += s->op == StmtOp::Matrix && s->matrix_op == kind && (pending < 0 || *as_int(s->extent) == pending);
  });
  return n;
}

}  // namespace

TEST_CASE("warpgroup layouts: each accumulator register holds one element of its tile, and the swizzle "
          "permutes whole 16-byte chunks within rows", "[cuda][warpgroup]") {
  for (int64_t n : {8, 64, 136, 256}) {
    std::set<std::pair<int64_t, int64_t>> seen;
    for (int64_t t = 0; t < kWarpgroupThreads; ++t)
      for (int64_t q = 0; q < n / 2; ++q) {
        const int64_t r = wg_accumulator_row(t, q), c = wg_accumulator_col(t, q);
        CHECK(r >= 0);
        CHECK(r < 64);
        CHECK(c >= 0);
        CHECK(c < n);
        seen.insert({r, c});
        // The expression form lowering uses agrees with the number form.
        CHECK(*as_int(simplify_expr(wg_accumulator_row(make_int(t), make_int(q)))) == r);
        CHECK(*as_int(simplify_expr(wg_accumulator_col(make_int(t), make_int(q)))) == c);
      }
    CHECK(static_cast<int64_t>(seen.size()) == 64 * n);  // every element exactly once
  }
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{128, 64}, {64, 256}, {8, 64}, {24, 128}}) {
    const int64_t tile = rows * cols;
    std::set<int64_t> seen;
    for (int64_t i = 0; i < 2 * tile; ++i) {  // two copies
      const int64_t p = swizzled_index(i, rows, cols);
      CHECK(p / tile == i / tile);                  // stays in its copy
      CHECK(p / kSwizzleBlockCols == swizzle_block_index(i, rows, cols) / kSwizzleBlockCols);  // and its row
      if (i % 8) CHECK(p == swizzled_index(i - 1, rows, cols) + 1);  // a chunk stays contiguous
      seen.insert(p);
    }
    CHECK(static_cast<int64_t>(seen.size()) == 2 * tile);
  }
  // Column block b of row r sits after b full blocks of `rows` rows.
  CHECK(swizzle_block_index(64, 8, 128) == 8 * 64);
  CHECK(swizzle_block_index(128 + 65, 8, 128) == 8 * 64 + 64 + 1);
  // Row 1's first chunk moves to chunk 1, its second to chunk 0.
  CHECK(swizzled_index(64, 8, 64) == 64 + 8);
  CHECK(swizzled_index(72, 8, 64) == 64);
}

TEST_CASE("a swizzled index splits into what the permutation carries rigidly and the part it permutes",
          "[cuda][warpgroup]") {
  const Expr s = make_var("s", kInt64), j = make_var("j", kInt64), y = make_var("y", kInt64), t = make_var("t", kInt64);
  struct Case {
    int64_t rows, cols;
    Expr index;
    VarRanges ranges;
    bool splits;  // whether anything moves outside the permutation
  };
  const std::vector<Case> cases = {
      // A copy s of a 64 x 256 tile, 8-row chunks j, half-tiles y, a thread's chunk t.
      {64, 256, s * make_int(16384) + j * make_int(2048) + y * make_int(1024) + t * make_int(8) + make_int(4096),
       {{"s", {0, 3}}, {"j", {0, 5}}, {"y", {0, 1}}, {"t", {0, 127}}}, true},
      // One column block: every multiple of 8 rows moves out, whatever the range.
      {128, 64, s * make_int(8192) + j * make_int(2048) + t * make_int(8) + make_int(8200),
       {{"s", {0, 3}}, {"j", {0, 3}}, {"t", {0, 255}}}, true},
      // A thread's chunks reach past one copy: nothing is proven, nothing moves.
      {8, 128, t * make_int(8), {{"t", {0, 300}}}, false},
      // Row groups that would carry the rest into the next copy stay inside the permutation.
      {16, 128, s * make_int(2048) + j * make_int(1024) + t * make_int(8), {{"s", {0, 1}}, {"j", {0, 1}}, {"t", {0, 200}}},
       false},
  };
  for (const Case& c : cases) {
    INFO(to_string(c.index) << " in a " << c.rows << " x " << c.cols << " tile");
    const SwizzleSplit split = split_swizzled_index(c.index, c.rows, c.cols, c.ranges);
    CHECK(!is_int_value(split.outer, 0) == c.splits);
    // Every combination of the variables' values: the split form gives the same places.
    std::vector<std::pair<std::string, Interval>> vars(c.ranges.begin(), c.ranges.end());
    std::vector<int64_t> value(vars.size());
    for (size_t v = 0; v < vars.size(); ++v) value[v] = *vars[v].second.lo;
    int64_t checked = 0;
    while (true) {
      auto at = [&](Expr e) {
        for (size_t v = 0; v < vars.size(); ++v) e = substitute(e, vars[v].first, make_int(value[v]));
        return *as_int(simplify_expr(e));
      };
      const int64_t i = at(c.index), outer = at(split.outer), rest = at(split.rest);
      if (swizzled_index(i, c.rows, c.cols) != outer + swizzled_index(rest, c.rows, c.cols) ||
          swizzle_block_index(i, c.rows, c.cols) != outer + swizzle_block_index(rest, c.rows, c.cols)) {
        FAIL("index " << i << ": outer " << outer << ", rest " << rest);
      }
      ++checked;
      size_t v = 0;
      while (v < vars.size() && value[v] == *vars[v].second.hi) value[v] = *vars[v].second.lo, ++v;
      if (v == vars.size()) break;
      ++value[v];
    }
    CHECK(checked > 100);
  }
}

TEST_CASE("a bfloat16 matmul takes the warpgroup tensor cores by default: swizzled tiles in four copies, "
          "one group of products in flight", "[cuda][warpgroup]") {
  ComputeDAG dag = build_op("matmul", {{"M", "4096"}, {"N", "4096"}, {"K", "4096"}, {"dtype", "bfloat16"}});
  const Trace t = default_gpu_schedule(dag, GpuTargetSpec{});
  INFO(trace_to_json(t, true));
  REQUIRE(has_step(t, StepKind::StorageSwizzle));
  CHECK(std::any_of(t.steps.begin(), t.steps.end(),
                    [](const Step& s) { return s.pragma == "pipeline_stages" && s.value == 4; }));
  LoweredFunc f = lower(replay(dag, t), "mm", gpu_options());
  const std::string ir = to_string(f);
  INFO(ir);
  // 64 of the reduction a step, 16 an operation, in the steady loop and in the last two steps.
  CHECK(count_matrix(f.body, MatrixOpKind::WgmmaMma) == 8);
  CHECK(count_matrix(f.body, MatrixOpKind::WgmmaFence) == 2);
  CHECK(count_matrix(f.body, MatrixOpKind::WgmmaWait, 1) == 2);  // inside the loops
  CHECK(count_matrix(f.body, MatrixOpKind::WgmmaWait, 0) == 1);  // after them
  CHECK(contains(ir, "for (k.0, 0, 62)"));                       // the steady loop: fills unconditional
  CHECK(contains(ir, "swizzled 128 x 64"));  // a's tile: 128 rows of the reduction's 64
  CHECK(contains(ir, "swizzled 64 x 256"));  // b's: 64 rows of 256 columns
  CHECK(contains(ir, "wait_copies(1)"));     // two tiles ahead of four copies
  CHECK(contains(ir, "<-async"));

  CudaProgram p = emit_cuda(f);
  CHECK(p.warpgroup_mma);
  CHECK(contains(p.source, "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16"));
  CHECK(contains(p.source, ", p, 1, 1, 0, 1;"));  // a along k (K-major), b along n: read transposed
  CHECK(contains(p.source, "fence.proxy.async.shared::cta"));
  CHECK(contains(p.source, "wgmma.wait_group.sync.aligned 1;"));
  CHECK(contains(p.source, "tessel_swizzle("));
  REQUIRE(p.launches.size() == 1);
  CHECK(p.launches[0].block[0] == 128);  // a warpgroup
  CHECK(p.launches[0].block[2] == 2);    // two of them along the rows
  CHECK(p.launches[0].grid[0] == 16);
  CHECK(p.launches[0].grid[1] == 32);
  CHECK(p.launches[0].dynamic_shared_bytes == 4 * (128 + 256) * 64 * 2 + 1024);
  cuda_testing::compile_or_skip(p);  // last: without NVRTC the test reports skipped
}

TEST_CASE("warpgroup defaults at odd shapes: zero-filled tiles, guarded epilogues, weights read along k",
          "[cuda][warpgroup]") {
  struct Case {
    const char* what;
    ComputeDAG dag;
    const char* transposes;  // the immediates telling which operand is read along its rows or columns
  };
  std::vector<Case> cases;
  cases.push_back({"matmul 61x77x45", build_op("matmul", {{"M", "61"}, {"N", "77"}, {"K", "45"}, {"dtype", "bfloat16"}}),
                   ", 0, 1;"});
  cases.push_back({"batch_matmul 3x61x197x100",
                   build_op("batch_matmul", {{"B", "3"}, {"M", "61"}, {"N", "197"}, {"K", "100"}, {"dtype", "float16"}}),
                   ", 0, 1;"});
  // As an ONNX Gemm with transB = 1 is imported: W stored [N, K], so b is K-major.
  cases.push_back({"dense [N, K] gelu", parse_dag_text(
      "X = placeholder(float16[197, 72])\n"
      "W = placeholder(float16[100, 72])\n"
      "b = placeholder(float16[100])\n"
      "P[i:197, j:100] = sum(k:72; (float32(X[i, k]) * float32(W[j, k])))  : float32\n"
      "Y[i1:197, j1:100] = float16(((0.5f * (P[i1, j1] + float32(b[j1]))) * (1.0f + erf(((P[i1, j1] + "
      "float32(b[j1])) * 0.7071067811865476f)))))  : float16\n"), ", 0, 0;"});
  for (const Case& c : cases) {
    INFO(c.what);
    const Trace t = default_gpu_schedule(c.dag, GpuTargetSpec{});
    INFO(trace_to_json(t, true));
    REQUIRE(has_step(t, StepKind::StorageSwizzle));
    LoweredFunc f = lower(replay(c.dag, t), "k", gpu_options());
    const std::string ir = to_string(f);
    INFO(ir);
    CHECK(contains(ir, "select("));  // the tiles' edges zero-filled
    CudaProgram p = emit_cuda(f);
    INFO(p.source);
    CHECK(contains(p.source, c.transposes));
    CHECK(p.launches.at(0).block[0] == 128);
    cuda_testing::compile_or_skip(p);
  }
}

TEST_CASE("random schedules of 16-bit contractions take warpgroup tiles, warp tiles and the CUDA cores",
          "[cuda][warpgroup]") {
  ComputeDAG dag = build_op("matmul", {{"M", "197"}, {"N", "130"}, {"K", "77"}, {"dtype", "bfloat16"}});
  int warpgroup = 0, warp = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    Trace t = random_gpu_schedule(dag, seed, GpuTargetSpec{});
    INFO("seed " << seed << ": " << trace_to_json(t));
    const bool wg = has_step(t, StepKind::StorageSwizzle);
    warpgroup += wg;
    warp += !wg && has_step(t, StepKind::Tensorize);
    LoweredFunc f;
    REQUIRE_NOTHROW(f = lower(replay(dag, t), "k", gpu_options()));
    if (wg && warpgroup <= 3) cuda_testing::compile_or_skip(emit_cuda(f));
  }
  CHECK(warpgroup >= 10);
  CHECK(warp >= 5);
  // A target without them (an sm_80 GPU) never takes them.
  GpuTargetSpec ampere;
  ampere.warpgroup_mma = false;
  for (uint64_t seed = 1; seed <= 20; ++seed)
    CHECK_FALSE(has_step(random_gpu_schedule(dag, seed, ampere), StepKind::StorageSwizzle));
  CHECK_FALSE(has_step(default_gpu_schedule(dag, ampere), StepKind::StorageSwizzle));
}

TEST_CASE("storage_swizzle, pipeline_stages and warpgroup tensorize: what the steps refuse", "[cuda][warpgroup]") {
  ComputeDAG dag = build_op("matmul", {{"M", "128"}, {"N", "128"}, {"K", "128"}, {"dtype", "bfloat16"}});
  State s(dag);
  const std::string acc = "C_acc.wg_accumulator";
  apply_step(s, cache_write_step("C_acc", MemScope::WgAccumulator));
  apply_step(s, cache_read_step("A", MemScope::Shared, {acc}));
  CHECK_THROWS_WITH(apply_step(s, storage_swizzle_step("C")), Catch::Contains("lays out a shared buffer"));
  apply_step(s, storage_align_step("A.shared", 0, 64, 8));
  CHECK_THROWS_WITH(apply_step(s, storage_swizzle_step("A.shared")), Catch::Contains("storage_align"));
  apply_step(s, cache_read_step("B", MemScope::Shared, {acc}));
  apply_step(s, storage_swizzle_step("B.shared"));
  CHECK_THROWS_WITH(apply_step(s, storage_swizzle_step("B.shared")), Catch::Contains("already swizzled"));
  CHECK_THROWS_WITH(apply_step(s, storage_align_step("B.shared", 0, 64, 8)), Catch::Contains("swizzled"));
  // float32 has 32 elements to a 128-byte row: not a layout the warpgroup reads.
  ComputeDAG fp32 = build_op("matmul", {{"M", "64"}, {"N", "64"}, {"K", "64"}});
  State f(fp32);
  apply_step(f, cache_read_step("A", MemScope::Shared, {"C"}));
  CHECK_THROWS_WITH(apply_step(f, storage_swizzle_step("A.shared")), Catch::Contains("16-bit"));

  CHECK_THROWS_WITH(apply_step(s, pragma_step(acc, "k", "pipeline_stages", 1)), Catch::Contains("2 to 8"));
  CHECK_THROWS_WITH(apply_step(s, pragma_step(acc, "k", "pipeline_stages", 9)), Catch::Contains("2 to 8"));
  CHECK_NOTHROW(apply_step(s, pragma_step(acc, "k", "pipeline_stages", 3)));

  // The product's tile is 64 rows, 8 to 256 columns in steps of 8, and 16 of the reduction.
  apply_step(s, split_step(acc, "i", {64}));
  apply_step(s, split_step(acc, "k", {16}));
  apply_step(s, reorder_step(acc, {"i.0", "k.0", "i.1", "j", "k.1"}));
  CHECK_NOTHROW(apply_step(s, tensorize_step(acc, "i.1")));
  State wide(dag);
  apply_step(wide, cache_write_step("C_acc", MemScope::WgAccumulator));
  apply_step(wide, split_step(acc, "j", {100}));
  apply_step(wide, split_step(acc, "i", {64}));
  apply_step(wide, split_step(acc, "k", {16}));
  apply_step(wide, reorder_step(acc, {"j.0", "i.0", "k.0", "i.1", "j.1", "k.1"}));
  CHECK_THROWS_WITH(apply_step(wide, tensorize_step(acc, "i.1")), Catch::Contains("a multiple of 8"));

  // Steps survive a trip through JSON.
  const Trace t = default_gpu_schedule(dag, GpuTargetSpec{});
  Trace back = trace_from_json(trace_to_json(t));
  REQUIRE(back.steps.size() == t.steps.size());
  for (size_t i = 0; i < t.steps.size(); ++i) CHECK(back.steps[i].describe() == t.steps[i].describe());
}

TEST_CASE("lowering refuses warpgroup products on unswizzled tiles and on the CPU", "[cuda][warpgroup]") {
  ComputeDAG dag = build_op("matmul", {{"M", "128"}, {"N", "128"}, {"K", "128"}, {"dtype", "bfloat16"}});
  const Trace t = default_gpu_schedule(dag, GpuTargetSpec{});
  REQUIRE(has_step(t, StepKind::StorageSwizzle));
  Trace plain = t;
  plain.steps.erase(std::remove_if(plain.steps.begin(), plain.steps.end(),
                                   [](const Step& s) { return s.kind == StepKind::StorageSwizzle && s.stage == "B.shared"; }),
                    plain.steps.end());
  CHECK_THROWS_WITH(lower(replay(dag, plain), "k", gpu_options()), Catch::Contains("swizzled shared tiles"));
  CHECK_THROWS_AS(lower(replay(dag, t), "k", LowerOptions{}), ScheduleError);
}

TEST_CASE("pipelines of more than two copies: synchronous work refills the copy read an iteration before",
          "[cuda][warpgroup]") {
  // Warp tiles (synchronous products) with three copies: tiles run two iterations ahead.
  ComputeDAG dag = build_op("matmul", {{"M", "256"}, {"N", "256"}, {"K", "256"}, {"dtype", "bfloat16"}});
  GpuTargetSpec ampere;
  ampere.warpgroup_mma = false;
  Trace t = default_gpu_schedule(dag, ampere);
  bool changed = false;
  for (Step& s : t.steps)
    if (s.kind == StepKind::Pragma && s.pragma == "double_buffer") {
      s.pragma = "pipeline_stages";
      s.value = 3;
      changed = true;
    }
  REQUIRE(changed);
  const std::string ir = to_string(lower(replay(dag, t), "mm", gpu_options()));
  INFO(ir);
  CHECK(contains(ir, "wait_copies(1)"));
  CHECK(contains(ir, "<-async"));
  CHECK_FALSE(contains(ir, "wgmma"));
}

TEST_CASE("rows fewer than a warpgroup tile fold into the axis before them: activations [sequence, batch 8, "
          "features] by one weight matrix", "[cuda][warpgroup]") {
  ComputeDAG dag = parse_dag_text(
      "X = placeholder(bfloat16[13, 8, 72])\nW = placeholder(bfloat16[72, 200])\nb = placeholder(bfloat16[200])\n"
      "P[s:13, i:8, j:200] = sum(k:72; (float32(X[s, i, k]) * float32(W[k, j])))  : float32\n"
      "Y[s1:13, i1:8, j1:200] = bfloat16((P[s1, i1, j1] + float32(b[j1])))  : bfloat16\n");
  const Trace t = default_gpu_schedule(dag, GpuTargetSpec{});
  INFO(trace_to_json(t, true));
  REQUIRE(has_step(t, StepKind::StorageSwizzle));
  CHECK(std::any_of(t.steps.begin(), t.steps.end(), [](const Step& s) {
    return s.kind == StepKind::Fuse && s.stage == "Y" && s.loops == std::vector<std::string>{"s1", "i1"};
  }));
  LoweredFunc f = lower(replay(dag, t), "k", gpu_options());
  const std::string ir = to_string(f);
  INFO(ir);
  CHECK(contains(ir, "swizzled 64 x 64"));  // the activations' tile: 8 positions of the 8 rows, 64 of k
  CudaProgram p = emit_cuda(f);
  CHECK(contains(p.source, "wgmma.mma_async"));
  cuda_testing::compile_or_skip(p);
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    Trace r = random_gpu_schedule(dag, seed, GpuTargetSpec{});
    INFO("seed " << seed << ": " << trace_to_json(r));
    CHECK_NOTHROW(lower(replay(dag, r), "k", gpu_options()));
  }
}
