// Features of lowered programs: layout and documentation, determinism, and that the columns see what
// the schedule did (vector lanes, GPU bindings, loop extents, pragmas).
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "costmodel/features.h"
#include "schedule/lower/lower.h"
#include "schedule/ops/op_library.h"
#include "schedule/te/error.h"
#include "search/gpu_schedule.h"
#include "search/random_schedule.h"

using namespace tessel;

namespace {

ComputeDAG matmul(int64_t m, int64_t n, int64_t k) {
  return build_op("matmul", {{"M", std::to_string(m)}, {"N", std::to_string(n)}, {"K", std::to_string(k)}});
}

int column(const std::string& name) {
  const auto& names = feature_names();
  auto it = std::find(names.begin(), names.end(), name);
  REQUIRE(it != names.end());
  return static_cast<int>(it - names.begin());
}

float at(const ProgramFeatures& f, int row, const std::string& name) {
  return f.values[static_cast<size_t>(row) * feature_width() + column(name)];
}

// The largest value of a column over the rows.
float max_of(const ProgramFeatures& f, const std::string& name) {
  float best = -1;
  for (int r = 0; r < f.rows; ++r) best = std::max(best, at(f, r, name));
  return best;
}

// The value of a per-float-operation column whose count is 0 (feature_layout.h's kNoCount).
constexpr float kNoCount = -64.0f;

// The row that multiplies floats (the update of a contraction).
int update_row(const ProgramFeatures& f) {
  for (int r = 0; r < f.rows; ++r)
    if (at(f, r, "float_mul") != kNoCount) return r;
  FAIL("no row multiplies floats");
  return -1;
}

float log1p2(double x) { return static_cast<float>(std::log2(1.0 + x)); }

}  // namespace

TEST_CASE("feature names match the width, are unique and all documented", "[costmodel][features]") {
  const auto& names = feature_names();
  REQUIRE(static_cast<int>(names.size()) == feature_width());
  CHECK(std::set<std::string>(names.begin(), names.end()).size() == names.size());

  std::ifstream doc(std::string(TESSEL_SOURCE_DIR) + "/docs/costmodel_features.md");
  REQUIRE(doc);
  std::stringstream text;
  text << doc.rdbuf();
  const std::string md = text.str();
  CHECK_THAT(md, Catch::Contains(std::to_string(feature_width()) + "\ncolumns") ||
                     Catch::Contains(std::to_string(feature_width()) + " columns"));
  for (const std::string& name : names) {
    // Per-buffer blocks and curve points are documented once, as Bk.<column> and ai_curve.p.
    std::string documented = name;
    if (name.size() > 3 && name[0] == 'B' && std::isdigit(static_cast<unsigned char>(name[1])) && name[2] == '.')
      documented = "Bk." + name.substr(3);
    if (name.rfind("ai_curve.", 0) == 0) documented = "ai_curve.p";
    INFO(name);
    CHECK_THAT(md, Catch::Contains("| `" + documented + "` |"));
  }
}

TEST_CASE("features are deterministic and finite for random schedules of several ops", "[costmodel][features]") {
  std::vector<ComputeDAG> dags = {matmul(61, 7, 13), build_op("softmax", {{"rows", "13"}, {"cols", "100"}}),
                                  build_op("conv2d", {{"N", "1"}, {"C", "8"}, {"H", "14"}, {"W", "14"}, {"F", "16"},
                                                      {"KH", "3"}, {"KW", "3"}, {"pad", "1"}})};
  for (const ComputeDAG& dag : dags)
    for (uint64_t seed = 0; seed < 10; ++seed)
      for (bool gpu : {false, true}) {
        Trace t = gpu ? random_gpu_schedule(dag, seed, GpuTargetSpec{}) : random_schedule(dag, seed, CpuTargetSpec{16, 2});
        ProgramFeatures a = features_of_schedule(dag, t, FeatureTarget{gpu});
        ProgramFeatures b = features_of_schedule(dag, t, FeatureTarget{gpu});
        REQUIRE(a.rows > 0);
        REQUIRE(a.values.size() == static_cast<size_t>(a.rows) * feature_width());
        CHECK(a.values == b.values);
        for (float v : a.values) REQUIRE(std::isfinite(v));
      }
}

TEST_CASE("tensor-core programs have rows for their products, loads and stores", "[costmodel][features]") {
  // A 16-bit matmul on the tensor cores: its wmma operations stand in as the stores of one lane each,
  // so the products show their multiply-adds and the fragments count as registers.
  for (int64_t n : {64, 256}) {
    ComputeDAG dag = build_op("matmul", {{"M", std::to_string(n)}, {"N", std::to_string(n)}, {"K", std::to_string(n)},
                                         {"dtype", "bfloat16"}});
    Trace t = default_gpu_schedule(dag, GpuTargetSpec{});
    ProgramFeatures f = features_of_schedule(dag, t, FeatureTarget{true});
    REQUIRE(f.rows >= 5);  // fill, two loads, product, store of the accumulators, the epilogue, fetches
    bool product = false;
    for (int r = 0; r < f.rows; ++r) product = product || at(f, r, "float_mul") > kNoCount;
    CHECK(product);
    for (float v : f.values) REQUIRE(std::isfinite(v));
  }
}

TEST_CASE("arithmetic counts are per float operation of the program, whatever its size", "[costmodel][features]") {
  for (int64_t m : {16, 64}) {
    // C = 0 (m x 32 stores, no float operation), then C += A x B (m x 32 x 8 multiplications and
    // as many additions): the program's float operations are 2 x m x 32 x 8.
    ComputeDAG dag = matmul(m, 32, 8);
    ProgramFeatures f = features_of_schedule(dag, Trace{}, FeatureTarget{});
    REQUIRE(f.rows == 2);
    int r = update_row(f);
    int init = 1 - r;
    CHECK(at(f, r, "float_mul") == Approx(-1.0));      // log2(m 32 8 / (2 m 32 8))
    CHECK(at(f, r, "float_addsub") == Approx(-1.0));
    CHECK(at(f, r, "float_div") == kNoCount);
    CHECK(at(f, r, "outer_prod") == Approx(-1.0));     // m 32 8 iterations per 2 m 32 8 operations
    CHECK(at(f, init, "float_mul") == kNoCount);
    CHECK(at(f, init, "outer_prod") == Approx(-4.0));  // m 32 stores: log2(1 / (2 x 8))
    CHECK(at(f, r, "num_loops") == 3);
    CHECK(at(f, r, "num_reduce_loops") == 1);  // k: C[i, j] does not move with it
    CHECK(at(f, r, "B0.acc_rw") + at(f, r, "B1.acc_rw") + at(f, r, "B2.acc_rw") == 1);
  }
}

TEST_CASE("a vectorized schedule shows its vector length", "[costmodel][features]") {
  ComputeDAG dag = matmul(64, 64, 64);
  Trace plain;
  Trace vectorized{{split_step("C", "j", {8}), reorder_step("C", {"i", "j.0", "k", "j.1"}),
                    annotate_step("C", "j.1", Annotation::Vectorize)}};
  ProgramFeatures p = features_of_schedule(dag, plain, FeatureTarget{});
  ProgramFeatures v = features_of_schedule(dag, vectorized, FeatureTarget{});
  CHECK(max_of(p, "vec_len") == 1);
  CHECK(max_of(v, "vec_len") == 8);
  CHECK(max_of(v, "vec_contiguous") == 1);
  CHECK(max_of(v, "vec_load_lanes") == 8);
  // The same work, counted in lanes.
  CHECK(at(v, update_row(v), "float_mul") == Approx(at(p, update_row(p), "float_mul")));
}

TEST_CASE("a parallel loop and an unrolled loop show in their columns", "[costmodel][features]") {
  ComputeDAG dag = matmul(64, 64, 64);
  Trace t{{split_step("C", "i", {16}), annotate_step("C", "i.0", Annotation::Parallel), split_step("C", "k", {4}),
           annotate_step("C", "k.1", Annotation::Unroll)}};
  ProgramFeatures f = features_of_schedule(dag, t, FeatureTarget{});
  int r = update_row(f);
  CHECK(at(f, r, "parallel_num") == 1);
  CHECK(at(f, r, "parallel_prod") == Approx(log1p2(4)));
  CHECK(at(f, r, "parallel_depth") == 1);
  CHECK(at(f, r, "unroll_copies") == Approx(log1p2(4)));
  CHECK(at(f, r, "float_mul") == Approx(-1.0));  // copies x remaining loops: all of the multiplications
  CHECK(at(f, r, "is_gpu") == 0);
  CHECK(at(f, r, "threadIdx.x") == 0);
}

TEST_CASE("auto_unroll_max_step reaches the rows of its stage", "[costmodel][features]") {
  ComputeDAG dag = matmul(32, 32, 32);
  Trace t{{pragma_step("C", "i", "auto_unroll_max_step", 64)}};
  ProgramFeatures f = features_of_schedule(dag, t, FeatureTarget{});
  CHECK(max_of(f, "auto_unroll_max_step") == Approx(log1p2(64)));
  ProgramFeatures none = features_of_schedule(dag, Trace{}, FeatureTarget{});
  CHECK(max_of(none, "auto_unroll_max_step") == 0);
}

TEST_CASE("a GPU-lowered program shows its thread and block extents and scopes", "[costmodel][features]") {
  ComputeDAG dag = matmul(64, 64, 64);
  Trace t = default_gpu_schedule(dag, GpuTargetSpec{});
  LowerOptions options;
  options.target = LowerTarget::Gpu;
  LoweredFunc func = lower(replay(dag, t), "k", options);
  // The extents bound to threadIdx.x / blockIdx.x in the program itself.
  int64_t tx = 0, bx = 0;
  visit(func.body, [&](const Stmt& s) {
    if (s->op != StmtOp::For) return;
    if (s->thread_tag == "threadIdx.x") tx = std::max(tx, *as_int(s->extent));
    if (s->thread_tag == "blockIdx.x") bx = std::max(bx, *as_int(s->extent));
  });
  REQUIRE(tx > 1);
  ProgramFeatures f = extract_features(func, FeatureTarget{true});
  int r = update_row(f);
  CHECK(at(f, r, "is_gpu") == 1);
  CHECK(at(f, r, "threadIdx.x") == Approx(log1p2(static_cast<double>(tx))));
  CHECK(at(f, r, "blockIdx.x") == Approx(log1p2(static_cast<double>(bx))));
  CHECK(at(f, r, "threads_per_block") >= at(f, r, "threadIdx.x"));
  CHECK(at(f, r, "alloc_local") == 1);  // the register tile C.local
  CHECK(at(f, r, "parallel_num") == 0);
  // The operands come from shared memory.
  float shared = 0;
  for (int b = 0; b < 5; ++b) shared += at(f, r, "B" + std::to_string(b) + ".scope_shared");
  CHECK(shared == 2);
  CHECK(max_of(f, "alloc_shared") == 1);  // the cooperative fetches store into shared memory
}

TEST_CASE("features_of_schedule reports a trace that does not apply", "[costmodel][features]") {
  ComputeDAG dag = matmul(16, 16, 16);
  Trace bad{{split_step("C", "no_such_loop", {4})}};
  CHECK_THROWS_AS(features_of_schedule(dag, bad, FeatureTarget{}), ScheduleError);
}

namespace {

// A hand-written GPU kernel: 264 blocks of 128 threads, each thread running a serial loop of 4 that
// copies In to Out at `out_stride` elements per thread, through a 16 KiB shared buffer S written at
// `shared_stride` per thread.
LoweredFunc copy_kernel(int64_t out_stride, int64_t shared_stride) {
  Expr b = make_var("b"), t = make_var("t"), i = make_var("i");
  Expr in = make_load("In", (b * 128 + t) * 4 + i, kFloat32);
  Stmt body = make_seq({make_store("S", t * shared_stride + i, in),
                        make_store("Out", (b * 128 + t) * out_stride * 4 + i, make_load("S", t * shared_stride + i, kFloat32))});
  Stmt loop = make_for("i", make_int(0), make_int(4), ForKind::Serial, body);
  Stmt shared = make_allocate("S", DType::Float32, {4096}, MemScope::Shared, loop);
  Stmt threads = make_for("t", make_int(0), make_int(128), ForKind::ThreadBound, shared, "threadIdx.x");
  LoweredFunc f;
  f.name = "copy";
  f.params = {BufferParam{"In", DType::Float32, {264 * 128 * 4}, false},
              BufferParam{"Out", DType::Float32, {264 * 128 * 4 * out_stride}, true}};
  f.body = make_for("b", make_int(0), make_int(264), ForKind::ThreadBound, threads, "blockIdx.x");
  return f;
}

}  // namespace

TEST_CASE("GPU features count a warp's sectors and bank ways, occupancy and waves", "[costmodel][features]") {
  ProgramFeatures dense = extract_features(copy_kernel(1, 4), FeatureTarget{true});
  ProgramFeatures strided = extract_features(copy_kernel(8, 32), FeatureTarget{true});
  REQUIRE(dense.rows == 2);
  REQUIRE(strided.rows == 2);
  for (const ProgramFeatures* f : {&dense, &strided}) {
    for (int r = 0; r < 2; ++r) {
      CHECK(at(*f, r, "thread_iters") == Approx(log1p2(4)));
      CHECK(at(*f, r, "shared_per_block") == Approx(log1p2(16384)));
      CHECK(at(*f, r, "local_per_thread") == 0);
      // 4 warps a block; 228 KiB of shared memory hold 13 blocks of 16 KiB + 1 KiB reserved each.
      CHECK(at(*f, r, "blocks_per_sm") == 13);
      CHECK(at(*f, r, "occupancy") == Approx(13.0 * 4 / 64));
      CHECK(at(*f, r, "sm_fill") == 1);
      CHECK(at(*f, r, "waves") == Approx(log1p2(264.0 / (132 * 13))));
      CHECK(at(*f, r, "wave_efficiency") == Approx(264.0 / (132 * 13)));
    }
  }
  // Rows in program order: S's store, then Out's. Buffers with equal bytes are in name order: the
  // S row describes In then S, the Out row Out then S.
  const int s_row = 0, out_row = 1;
  // Out: 32 threads 16 bytes apart touch 16 sectors, a quarter of each used; 128 bytes apart (8 x 4
  // floats), 32 sectors with 4 bytes of each used.
  CHECK(at(dense, out_row, "B0.warp_sectors") == Approx(log1p2(16)));
  CHECK(at(dense, out_row, "B0.warp_efficiency") == Approx(0.25));
  CHECK(at(strided, out_row, "B0.warp_sectors") == Approx(log1p2(32)));
  CHECK(at(strided, out_row, "B0.warp_efficiency") == Approx(4.0 / 32));
  CHECK(at(dense, s_row, "B0.bank_ways") == 0);  // In: global memory has no banks
  // S: 4 floats apart, the 32 threads' words fall 4 to a bank, 4 ways for the warp's 128 bytes; 32
  // floats apart, all 32 in one bank.
  CHECK(at(dense, s_row, "B1.scope_shared") == 1);
  CHECK(at(dense, s_row, "B1.bank_ways") == Approx(4));
  CHECK(at(strided, s_row, "B1.bank_ways") == Approx(32));
  // The CPU reads none of these columns.
  ProgramFeatures cpu = extract_features(copy_kernel(1, 4), FeatureTarget{false});
  for (const char* name : {"thread_iters", "occupancy", "waves", "B0.warp_sectors", "B1.bank_ways"})
    CHECK(max_of(cpu, name) == 0);
}

TEST_CASE("GPU features describe each kernel of a program on its own, inside its scratch allocation",
          "[costmodel][features]") {
  // Kernel A: 64 blocks of 256 threads write the scratch buffer T; kernel B: 32 blocks of 32 threads
  // copy T, one float in, to Out.
  Expr b = make_var("b"), t = make_var("t");
  auto kernel = [&](int64_t blocks, int64_t threads, Stmt body) {
    return make_for("b", make_int(0), make_int(blocks), ForKind::ThreadBound,
                    make_for("t", make_int(0), make_int(threads), ForKind::ThreadBound, body, "threadIdx.x"), "blockIdx.x");
  };
  Stmt a = kernel(64, 256, make_store("T", b * 256 + t, make_load("In", b * 256 + t, kFloat32)));
  Stmt c = kernel(32, 32, make_store("Out", b * 32 + t, make_load("T", b * 32 + t + 1, kFloat32)));
  LoweredFunc func;
  func.name = "two";
  func.params = {BufferParam{"In", DType::Float32, {16384}, false}, BufferParam{"Out", DType::Float32, {1024}, true}};
  func.body = make_allocate("T", DType::Float32, {16384}, MemScope::Global, make_seq({a, c}));
  ProgramFeatures f = extract_features(func, FeatureTarget{true});
  REQUIRE(f.rows == 2);
  // A: 8 warps a block, 8 blocks resident (2048 threads), half the multiprocessors' worth of blocks.
  CHECK(at(f, 0, "threads_per_block") == Approx(log1p2(256)));
  CHECK(at(f, 0, "blocks_per_sm") == 8);
  CHECK(at(f, 0, "occupancy") == 1);
  CHECK(at(f, 0, "sm_fill") == Approx(64.0 / 132));
  CHECK(at(f, 0, "alloc_size") == Approx(log1p2(16384 * 4)));  // the scratch allocation it stores into
  // B: one warp a block, at most 32 blocks resident: half the warps a multiprocessor holds.
  CHECK(at(f, 1, "blocks_per_sm") == 32);
  CHECK(at(f, 1, "occupancy") == Approx(0.5));
  CHECK(at(f, 1, "sm_fill") == Approx(32.0 / 132));
  // B's buffers, equal bytes so by name: Out, then T. Out's warp writes 128 aligned bytes, 4 sectors;
  // T's starts one float in, 5 sectors, 128 of their 160 bytes used.
  CHECK(at(f, 1, "B0.warp_sectors") == Approx(log1p2(4)));
  CHECK(at(f, 1, "B0.warp_efficiency") == 1);
  CHECK(at(f, 1, "B1.warp_sectors") == Approx(log1p2(5)));
  CHECK(at(f, 1, "B1.warp_efficiency") == Approx(0.8));
}

TEST_CASE("a program summary holds its heaviest row, each column's max and min, and its row count",
          "[costmodel][features]") {
  const int w = feature_width();
  const auto& names = feature_names();
  auto column = [&](const std::string& name) {
    return static_cast<int>(std::find(names.begin(), names.end(), name) - names.begin());
  };
  const int mul = column("float_mul"), add = column("float_addsub"), vec = column("vec_len"),
            bytes = column("B0.bytes");
  // Three rows: row 1 does most of the float work (2^-1 + 2^-1 of F against row 0's 2^-3; row 2
  // none); vec_len 4, 1, 8.
  ProgramFeatures f;
  f.rows = 3;
  f.values.assign(static_cast<size_t>(3 * w), kNoCount);
  auto at = [&](int r, int c) -> float& { return f.values[static_cast<size_t>(r * w + c)]; };
  at(0, mul) = -3, at(1, mul) = -1, at(1, add) = -1;
  at(0, vec) = 4, at(1, vec) = 1, at(2, vec) = 8;
  at(0, bytes) = 10, at(1, bytes) = 12, at(2, bytes) = 20;
  std::vector<float> s = program_summary(f);
  REQUIRE(s.size() == static_cast<size_t>(program_summary_width()));
  CHECK(program_summary_width() == 3 * w + 1);
  CHECK(std::equal(s.begin(), s.begin() + w, f.values.begin() + w));  // row 1
  CHECK(s[static_cast<size_t>(w + vec)] == 8);
  CHECK(s[static_cast<size_t>(2 * w + vec)] == 1);
  CHECK(s[static_cast<size_t>(w + mul)] == -1);
  CHECK(s[static_cast<size_t>(2 * w + mul)] == kNoCount);
  CHECK(s.back() == 3);

  // Equal float work: the row with more bytes in its first buffer block is the heaviest.
  at(1, add) = kNoCount, at(1, mul) = -3;
  s = program_summary(f);
  CHECK(std::equal(s.begin(), s.begin() + w, f.values.begin() + w));  // row 1: 12 bytes against row 0's 10
  at(1, bytes) = 9;
  s = program_summary(f);
  CHECK(std::equal(s.begin(), s.begin() + w, f.values.begin()));  // now row 0

  CHECK(program_summary(ProgramFeatures{}) == std::vector<float>(static_cast<size_t>(program_summary_width()), 0.0f));
}
