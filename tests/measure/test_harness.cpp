// The harness end to end: builder pool and runner workers through Measurer, with injected faults.
#include <algorithm>
#include <catch2/catch.hpp>
#include <unistd.h>

#include "codegen/llvm/llvm_backend.h"
#include "measure/measurer.h"
#include "schedule/ops/op_library.h"
#include "schedule/te/error.h"
#include "search/default_schedule.h"

using namespace tessel;

namespace {

MeasureOptions quick_options() {
  MeasureOptions o;
  o.runner_path = TESSEL_RUNNER_EXE;
  o.run_timeout_s = 2;
  o.run = default_run_settings("llvm");
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
  std::vector<Candidate> batch = {{good, Fault::None},  {good, Fault::Crash}, {good, Fault::Hang},
                                  {good, Fault::Wrong}, {good, Fault::None}, {good, Fault::OutOfBounds},
                                  {bad, Fault::None},   {Trace{}, Fault::None}};
  std::vector<size_t> reported;
  size_t builds = 0;
  {
    Measurer m(dag, quick_options());
    m.on_build_progress([&](size_t, size_t total) { builds = total; });
    std::vector<MeasureResult> r = m.measure(batch, [&](size_t i, const MeasureResult&) { reported.push_back(i); });
    REQUIRE(r.size() == batch.size());
    CHECK(reported.size() == batch.size());
    CHECK(builds == 7);  // candidates 0 and 4 are one schedule: built once, run twice
    for (size_t i : {0, 4, 7}) {
      INFO("candidate " << i << ": " << r[i].message);
      CHECK(r[i].error == ErrorCode::Ok);
      CHECK(r[i].median_s > 0);
      CHECK(r[i].samples_s.size() >= 5);
    }
    CHECK(r[1].error == ErrorCode::RuntimeError);
    // SIGSEGV, or a sanitizer's exit status when the runner is built with one.
    CHECK_THAT(r[1].message, Catch::Contains("crashed its runner"));
    CHECK(r[2].error == ErrorCode::RunTimeout);
    CHECK(r[3].error == ErrorCode::WrongAnswer);
    CHECK_THAT(r[3].message, Catch::Contains("wrong values in C"));
    CHECK((r[5].error == ErrorCode::RuntimeError || r[5].error == ErrorCode::WrongAnswer));
    CHECK(r[6].error == ErrorCode::Instantiation);
    CHECK_THAT(r[6].message, Catch::Contains("no_such_loop"));
    for (size_t i : {1, 2, 3, 5}) CHECK_THAT(r[i].message, Catch::Contains("injected fault"));
    CHECK(m.runner_starts() >= 3);  // restarted after the crash, the hang and the out-of-bounds write
    CHECK_THAT(m.settings_json(), Catch::Contains("\"pinned\""));

    // The runner survives into the next batch.
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
  std::vector<MeasureResult> r = m.measure({{default_trace(dag), Fault::None}});
  CHECK(r[0].error == ErrorCode::BuildTimeout);
  CHECK(child_pids_of(getpid()).size() == 1);  // only the runner
}

TEST_CASE("a harness that cannot start its runner says why", "[measure]") {
  MeasureOptions o = quick_options();
  o.runner_path = "/no/such/tessel-runner";
  CHECK_THROWS_WITH(Measurer(odd_matmul(), o), Catch::Contains("/no/such/tessel-runner"));
  o = quick_options();
  o.target = "tpu";
  CHECK_THROWS_AS(Measurer(odd_matmul(), o), InputError);
}

TEST_CASE("the cuda harness reports a missing GPU clearly or measures on it", "[measure][cuda]") {
  ComputeDAG dag = odd_matmul();
  MeasureOptions o = quick_options();
  o.target = "cuda";
  o.run = default_run_settings("cuda");
  o.run.min_time_s = 0.005;
  std::unique_ptr<Measurer> m;
  try {
    m = std::make_unique<Measurer>(dag, o);
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("no CUDA device"));
    WARN("skipping the GPU part: " << e.what());
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
