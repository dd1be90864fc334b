// The harness end to end: builder pool and runner workers through Measurer, with injected faults.
#include <algorithm>
#include <functional>
#include <memory>
#include <catch2/catch.hpp>
#include <unistd.h>

#include "codegen/llvm/llvm_backend.h"
#include "measure/measurer.h"
#include "schedule/ops/op_library.h"
#include "schedule/te/dag_parser.h"
#include "schedule/te/error.h"
#include "search/default_schedule.h"
#include "search/gpu_schedule.h"
#include "tests/skip.h"

using namespace tessel;

namespace {

// The runner beside this test program (as in the bundle's bin/), else the one this build made.
std::string runner_path() {
  std::string beside = default_runner_path();
  return access(beside.c_str(), X_OK) == 0 ? beside : TESSEL_RUNNER_EXE;
}

MeasureOptions quick_options() {
  MeasureOptions o;
  o.runner_path = runner_path();
  // A safety net far above any checked run of these tiny workloads on however busy a machine; the
  // test of a hanging candidate shortens it for that candidate alone.
  o.run_timeout_s = 120;
  o.run = default_run_settings(TargetKind::Llvm);
  o.run.min_time_s = 0.005;
  return o;
}

ComputeDAG odd_matmul() { return build_op("matmul", {{"M", "13"}, {"N", "61"}, {"K", "7"}}); }

Trace default_trace(const ComputeDAG& dag) { return default_schedule(dag, CpuTargetSpec{host_vector_lanes(), 2}); }

}  // namespace

TEST_CASE("every candidate gets one result: faults cost one record each, the rest are timed", "[measure]") {
  ComputeDAG dag = odd_matmul();
  Trace good = default_trace(dag);
  Trace bad;
  bad.steps.push_back(split_step("C", "no_such_loop", {4}));
  std::vector<Candidate> batch = {{good, Fault::None},  {good, Fault::Crash},       {good, Fault::Wrong},
                                  {good, Fault::None},  {good, Fault::OutOfBounds}, {bad, Fault::None},
                                  {Trace{}, Fault::None}};
  std::vector<size_t> reported;
  size_t builds = 0;
  {
    Measurer m(dag, quick_options());
    m.on_build_progress([&](size_t, size_t total) { builds = total; });
    std::vector<MeasureResult> r = m.measure(batch, [&](size_t i, const MeasureResult&) { reported.push_back(i); });
    REQUIRE(r.size() == batch.size());
    CHECK(reported.size() == batch.size());
    CHECK(builds == 6);  // candidates 0 and 3 are one schedule: built once, run twice
    for (size_t i : {0, 3, 6}) {
      INFO("candidate " << i << ": " << r[i].message);
      CHECK(r[i].error == ErrorCode::Ok);
      CHECK(r[i].median_s > 0);
      CHECK(r[i].samples_s.size() >= 5);
    }
    CHECK(r[1].error == ErrorCode::RuntimeError);
    // SIGSEGV, or a sanitizer's exit status when the runner is built with one.
    CHECK_THAT(r[1].message, Catch::Contains("crashed its runner"));
    CHECK(r[2].error == ErrorCode::WrongAnswer);
    CHECK_THAT(r[2].message, Catch::Contains("wrong values in C"));
    CHECK((r[4].error == ErrorCode::RuntimeError || r[4].error == ErrorCode::WrongAnswer));
    CHECK(r[5].error == ErrorCode::Instantiation);
    CHECK_THAT(r[5].message, Catch::Contains("no_such_loop"));
    for (size_t i : {1, 2, 4}) CHECK_THAT(r[i].message, Catch::Contains("injected fault"));
    CHECK(m.runner_starts() >= 2);  // restarted after the crash (and the out-of-bounds write, if it crashed)
    CHECK_THAT(m.settings_json(), Catch::Contains("\"pinned\""));

    // A candidate that never finishes costs its run timeout, made short for it alone (a timeout
    // that short would put the other candidates at the mercy of the machine's load).
    m.set_run_timeout(0.5);
    std::vector<MeasureResult> hung = m.measure({{good, Fault::Hang}});
    CHECK(hung[0].error == ErrorCode::RunTimeout);
    CHECK_THAT(hung[0].message, Catch::Contains("injected fault"));
    CHECK(m.runner_starts() >= 3);  // the hung runner was killed

    // A new runner takes the next batch.
    m.set_run_timeout(quick_options().run_timeout_s);
    std::vector<MeasureResult> again = m.measure({{good, Fault::None}});
    CHECK(again[0].error == ErrorCode::Ok);
  }
  CHECK(child_pids_of(getpid()).empty());  // no runner or builder left behind
}

TEST_CASE("a schedule that comes twice in a batch is built once and has each result", "[measure]") {
  ComputeDAG dag = odd_matmul();
  Trace good = default_trace(dag);
  Trace bad;
  bad.steps.push_back(split_step("C", "no_such_loop", {4}));
  Measurer m(dag, quick_options());
  size_t builds = 0;
  m.on_build_progress([&](size_t, size_t total) { builds = total; });
  std::vector<size_t> reported;
  std::vector<MeasureResult> r =
      m.measure({{good, Fault::None}, {bad, Fault::None}, {good, Fault::None}, {bad, Fault::None}, {good, Fault::None}},
                [&](size_t i, const MeasureResult&) { reported.push_back(i); });
  CHECK(builds == 2);
  std::sort(reported.begin(), reported.end());
  CHECK(reported == std::vector<size_t>{0, 1, 2, 3, 4});
  for (size_t i : {0, 2, 4}) {
    INFO("candidate " << i << ": " << r[i].message);
    CHECK(r[i].error == ErrorCode::Ok);
    CHECK(r[i].samples_s.size() >= 5);  // timed each time it comes
  }
  for (size_t i : {1, 3}) CHECK(r[i].error == ErrorCode::Instantiation);
  // The one artifact was removed after its last run, not its first: the next batch builds afresh.
  CHECK(m.measure({{good, Fault::None}})[0].error == ErrorCode::Ok);
}

TEST_CASE("a build over its deadline is killed and recorded as build_timeout", "[measure]") {
  ComputeDAG dag = odd_matmul();
  MeasureOptions o = quick_options();
  o.build_timeout_s = 0.001;
  Measurer m(dag, o);
  auto children = [] {
    std::vector<pid_t> pids = child_pids_of(getpid());
    std::sort(pids.begin(), pids.end());
    return pids;
  };
  const std::vector<pid_t> before = children();  // the runner and the work folder's watchdog
  std::vector<MeasureResult> r = m.measure({{default_trace(dag), Fault::None}});
  CHECK(r[0].error == ErrorCode::BuildTimeout);
  CHECK(children() == before);  // the builder over its deadline was killed and reaped
}

TEST_CASE("a harness that cannot start its runner says why", "[measure]") {
  MeasureOptions o = quick_options();
  o.runner_path = "/no/such/tessel-runner";
  CHECK_THROWS_WITH(Measurer(odd_matmul(), o), Catch::Contains("/no/such/tessel-runner"));
}

namespace {

// The measurer for `o` on the GPU, or nullptr with the reason when this machine has none (the CUDA
// driver is only ever initialized in the runner, never in this process that forks builders).
std::unique_ptr<Measurer> cuda_measurer(const ComputeDAG& dag, const MeasureOptions& o, std::string* no_gpu) {
  try {
    return std::make_unique<Measurer>(dag, o);
  } catch (const Error& e) {
    if (std::string(e.what()).find("no CUDA device") == std::string::npos) throw;
    *no_gpu = e.what();
    return nullptr;
  }
}

MeasureOptions cuda_options() {
  MeasureOptions o = quick_options();
  o.target = TargetKind::Cuda;
  o.run = default_run_settings(TargetKind::Cuda);
  o.run.min_time_s = 0.005;
  return o;
}

}  // namespace

TEST_CASE("the cuda harness on a machine without a GPU says there is none, as bad input", "[measure][cuda]") {
  try {
    Measurer m(odd_matmul(), cuda_options());
    tessel_test::skip_test("a CUDA device is present; this checks the message on a machine without one");
    return;
  } catch (const InputError& e) {  // asking for a GPU where there is none is the user's mistake
    CHECK_THAT(e.what(), Catch::StartsWith("the cuda runner cannot start: no CUDA device"));
  }
  CHECK(child_pids_of(getpid()).empty());  // the runner that found no device is gone
}

TEST_CASE("cuda gpu: the cuda harness measures, and survives an out-of-bounds kernel and a wrong one",
          "[measure][cuda][gpu]") {
  ComputeDAG dag = odd_matmul();
  std::string no_gpu;
  std::unique_ptr<Measurer> m = cuda_measurer(dag, cuda_options(), &no_gpu);
  if (!m) {
    tessel_test::skip_test(no_gpu);
    return;
  }
  Trace t;  // the unscheduled program runs on one GPU thread: slow but correct
  std::vector<MeasureResult> r =
      m->measure({{t, Fault::None}, {t, Fault::OutOfBounds}, {t, Fault::Wrong}, {t, Fault::None}});
  CHECK(r[0].error == ErrorCode::Ok);
  CHECK(r[1].error == ErrorCode::RuntimeError);
  CHECK(r[2].error == ErrorCode::WrongAnswer);
  CHECK(r[3].error == ErrorCode::Ok);  // the runner came back after the poisoned context
}

// The default GPU schedule of each case, which has the step `shape` looks for, run on the GPU and
// checked against the reference (skipped without a GPU).
static void check_gpu_defaults(const std::vector<std::pair<std::string, ComputeDAG>>& cases,
                               const std::function<bool(const Step&)>& shape,
                               const GpuTargetSpec& target = GpuTargetSpec{}) {
  std::vector<Trace> traces;
  for (const auto& [what, dag] : cases) {
    traces.push_back(default_gpu_schedule(dag, target));
    INFO(what << ": " << trace_to_json(traces.back()));
    REQUIRE(std::any_of(traces.back().steps.begin(), traces.back().steps.end(), shape));
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    std::string no_gpu;
    std::unique_ptr<Measurer> m = cuda_measurer(cases[i].second, cuda_options(), &no_gpu);
    if (!m) {
      tessel_test::skip_test(no_gpu);
      return;
    }
    std::vector<MeasureResult> r = m->measure({{traces[i], Fault::None}});
    INFO(cases[i].first << ": " << r[0].message);
    CHECK(r[0].error == ErrorCode::Ok);
  }
}

TEST_CASE("cuda gpu: the pipelined default of long matrix products computes the reference at odd shapes",
          "[measure][cuda][gpu]") {
  // Reductions that steps of 32 do not divide (the last step guarded), outputs that blocks of 64 x 64
  // do not tile; with an epilogue of bias and gelu, and without one. And a batched product of 64
  // products, which takes those tiles where they divide it.
  check_gpu_defaults(
      {{"dense", build_op("dense", {{"M", "771"}, {"N", "700"}, {"K", "261"}, {"bias", "1"}, {"act", "gelu"}})},
       {"matmul", build_op("matmul", {{"M", "700"}, {"N", "771"}, {"K", "300"}})},
       {"batch_matmul", build_op("batch_matmul", {{"B", "48"}, {"M", "128"}, {"N", "192"}, {"K", "64"}})}},
      [](const Step& s) { return s.kind == StepKind::Pragma && s.pragma == "double_buffer"; });
}

TEST_CASE("cuda gpu: rows folded into the axis before them compute the reference", "[measure][cuda][gpu]") {
  // Activations [sequence, batch 8, features] by one weight matrix: 104 rows (the last block's
  // guarded) split along the reduction (10 blocks, folded); 320 rows in the pipelined tiles.
  const std::string w = "W = placeholder(float32[200, 300])\nbias = placeholder(float32[300])\n";
  check_gpu_defaults(
      {{"split", parse_dag_text("X = placeholder(float32[13, 8, 200])\n" + w +
                                "mm[s:13, b:8, n:300] = sum(k:200; (X[s, b, k] * W[k, n]))  : float32\n"
                                "Y[i:13, j:8, l:300] = (mm[i, j, l] + bias[l])  : float32\n")},
       {"pipelined", parse_dag_text("X = placeholder(float32[40, 8, 300])\nW = placeholder(float32[300, 2000])\n"
                                    "Y[i:40, j:8, l:2000] = sum(k:300; (X[i, j, k] * W[k, l]))  : float32\n")}},
      [](const Step& s) {  // the output's rows, or the partial sums' (split-K)
        using Loops = std::vector<std::string>;
        return s.kind == StepKind::Fuse && (s.loops == Loops{"i", "j"} || s.loops == Loops{"s", "b"});
      });
}

TEST_CASE("cuda gpu: contractions split along their reduction (split-K) compute the reference at odd shapes",
          "[measure][cuda][gpu]") {
  // Each default splits its reduction into parts that do not divide it (the last part guarded):
  // with an epilogue of bias and relu, without one (the sum of the parts in registers), a matmul.
  check_gpu_defaults({{"conv2d bias relu", build_op("conv2d", {{"N", "1"}, {"C", "100"}, {"H", "7"}, {"W", "7"},
                                                             {"F", "61"}, {"KH", "3"}, {"KW", "3"}, {"pad", "1"},
                                                             {"bias", "1"}, {"act", "relu"}})},
                      {"conv2d", build_op("conv2d", {{"N", "1"}, {"C", "100"}, {"H", "7"}, {"W", "7"}, {"F", "61"},
                                                     {"KH", "3"}, {"KW", "3"}, {"pad", "1"}})},
                      {"matmul", build_op("matmul", {{"M", "97"}, {"N", "61"}, {"K", "771"}})}},
                     [](const Step& s) { return s.kind == StepKind::RFactor; });
}

TEST_CASE("cuda gpu: one bfloat16 weight matrix for a batch of activations on tensor cores computes the "
          "reference at odd shapes", "[measure][cuda][gpu]") {
  check_gpu_defaults({{"projection", parse_dag_text("X = placeholder(bfloat16[3, 97, 45])\n"
                                                    "W = placeholder(bfloat16[45, 77])\n"
                                                    "b = placeholder(bfloat16[77])\n"
                                                    "P[s:3, i:97, j:77] = sum(k:45; (float32(X[s, i, k]) * "
                                                    "float32(W[k, j])))  : float32\n"
                                                    "Y[s1:3, i1:97, j1:77] = bfloat16((P[s1, i1, j1] + "
                                                    "float32(b[j1])))  : bfloat16\n")}},
                     [](const Step& s) { return s.kind == StepKind::Tensorize; });
}

TEST_CASE("cuda gpu: a default whose scratch budget leaves no room for the padded input reads it through its "
          "bounds tests and computes the reference", "[measure][cuda][gpu]") {
  // As a model build asks when a step's memory has no room: every padded value tested in the fetch.
  GpuTargetSpec no_room;
  no_room.max_scratch_bytes = 1;
  check_gpu_defaults({{"conv2d bias relu", build_op("conv2d", {{"N", "1"}, {"C", "100"}, {"H", "7"}, {"W", "7"},
                                                             {"F", "61"}, {"KH", "3"}, {"KW", "3"}, {"pad", "1"},
                                                             {"bias", "1"}, {"act", "relu"}})},
                      {"conv2d stride 2", build_op("conv2d", {{"N", "2"}, {"C", "13"}, {"H", "61"}, {"W", "61"},
                                                              {"F", "19"}, {"KH", "3"}, {"KW", "3"}, {"stride", "2"},
                                                              {"pad", "1"}})}},
                     [](const Step& s) { return s.kind == StepKind::ComputeInline && s.stage == "pad"; }, no_room);
  // Room for 2 parts of partial sums but not the padded input: both at once.
  GpuTargetSpec two_parts;
  two_parts.max_scratch_bytes = 32399;
  check_gpu_defaults({{"conv2d split", build_op("conv2d", {{"N", "1"}, {"C", "100"}, {"H", "7"}, {"W", "7"},
                                                         {"F", "61"}, {"KH", "3"}, {"KW", "3"}, {"pad", "1"}})}},
                     [](const Step& s) { return s.kind == StepKind::RFactor; }, two_parts);
  // No budget and no epilogue: the padded input computed up front on all threads.
  check_gpu_defaults({{"conv2d stride 2 up front",
                       build_op("conv2d", {{"N", "2"}, {"C", "13"}, {"H", "61"}, {"W", "61"}, {"F", "19"},
                                           {"KH", "3"}, {"KW", "3"}, {"stride", "2"}, {"pad", "1"}})}},
                     [](const Step& s) {
                       return s.kind == StepKind::Annotate && s.stage == "pad" && s.annotation == Annotation::ThreadX;
                     });
}

TEST_CASE("cuda gpu: warpgroup tensor-core defaults and random schedules compute the reference at odd shapes",
          "[measure][cuda][gpu]") {
  // A step of the reduction (64) that the shape does not fill, tiles past the rows and columns,
  // weights [N, K] read along k, a batch, an epilogue of bias and gelu; and a long reduction that
  // runs the pipeline of four copies through many steps.
  const std::vector<std::pair<std::string, ComputeDAG>> cases{
      {"matmul bf16 61x77x45", build_op("matmul", {{"M", "61"}, {"N", "77"}, {"K", "45"}, {"dtype", "bfloat16"}})},
      {"matmul bf16 700x771x300", build_op("matmul", {{"M", "700"}, {"N", "771"}, {"K", "300"}, {"dtype", "bfloat16"}})},
      {"matmul fp16 512x512x1024", build_op("matmul", {{"M", "512"}, {"N", "512"}, {"K", "1024"}, {"dtype", "float16"}})},
      {"batch_matmul bf16 3x61x197x100",
       build_op("batch_matmul", {{"B", "3"}, {"M", "61"}, {"N", "197"}, {"K", "100"}, {"dtype", "bfloat16"}})},
      {"projection of [sequence, batch 8, features], rows folded",
       parse_dag_text("X = placeholder(bfloat16[13, 8, 72])\nW = placeholder(bfloat16[72, 200])\n"
                      "b = placeholder(bfloat16[200])\n"
                      "P[s:13, i:8, j:200] = sum(k:72; (float32(X[s, i, k]) * float32(W[k, j])))  : float32\n"
                      "Y[s1:13, i1:8, j1:200] = bfloat16((P[s1, i1, j1] + float32(b[j1])))  : bfloat16\n")},
      {"dense [N, K] gelu fp16", parse_dag_text("X = placeholder(float16[197, 72])\n"
                                                "W = placeholder(float16[100, 72])\n"
                                                "b = placeholder(float16[100])\n"
                                                "P[i:197, j:100] = sum(k:72; (float32(X[i, k]) * float32(W[j, k])))"
                                                "  : float32\n"
                                                "Y[i1:197, j1:100] = float16(((0.5f * (P[i1, j1] + float32(b[j1]))) * "
                                                "(1.0f + erf(((P[i1, j1] + float32(b[j1])) * 0.7071067811865476f)))))"
                                                "  : float16\n")}};
  auto swizzled = [](const Step& s) { return s.kind == StepKind::StorageSwizzle; };
  check_gpu_defaults(cases, swizzled);
  for (const auto& [what, dag] : cases) {
    std::vector<Candidate> candidates;
    for (uint64_t seed = 1; seed <= 40 && candidates.size() < 8; ++seed) {
      Trace t = random_gpu_schedule(dag, seed, GpuTargetSpec{});
      if (std::any_of(t.steps.begin(), t.steps.end(), swizzled)) candidates.push_back({t, Fault::None});
    }
    REQUIRE(candidates.size() >= 4);
    std::string no_gpu;
    std::unique_ptr<Measurer> m = cuda_measurer(dag, cuda_options(), &no_gpu);
    if (!m) {
      tessel_test::skip_test(no_gpu);
      return;
    }
    std::vector<MeasureResult> r = m->measure(candidates);
    for (size_t i = 0; i < r.size(); ++i) {
      INFO(what << " random schedule " << i << ": " << trace_to_json(candidates[i].trace) << "\n" << r[i].message);
      CHECK(r[i].error == ErrorCode::Ok);
    }
  }
}
