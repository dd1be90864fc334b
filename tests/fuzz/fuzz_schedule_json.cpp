// Schedule JSON under the mutation fuzzer: mutants of real schedules (default and random ones for
// the CPU and the GPU, over small DAGs of several op templates, plus one step of every kind) are
// read, replayed on every DAG and lowered for both targets. Each must be refused by a typed error --
// InputError where the JSON is read, ScheduleError where a step does not apply or crosses a limit,
// CompileError where the lowered code is invalid -- or lower. A crash, a hang, any other exception
// (an internal error) or (in the sanitizer build) a memory error or undefined behaviour fails.
#include <catch2/catch.hpp>

#include "schedule/lower/lower.h"
#include "schedule/state/schedule_limits.h"
#include "schedule/ops/op_library.h"
#include "schedule/state/trace.h"
#include "schedule/te/error.h"
#include "search/default_schedule.h"
#include "search/gpu_schedule.h"
#include "search/random_schedule.h"
#include "tests/fuzz/mutator.h"

using namespace tessel;

namespace {

std::vector<ComputeDAG> dags() {
  return {build_op("matmul", {{"M", "16"}, {"N", "8"}, {"K", "12"}}),
          build_op("softmax", {{"rows", "5"}, {"cols", "33"}}),
          build_op("conv2d", {{"N", "1"}, {"C", "2"}, {"H", "6"}, {"W", "5"}, {"F", "3"}, {"KH", "3"}, {"KW", "2"},
                              {"pad", "1"}, {"bias", "1"}, {"act", "relu"}}),
          build_op("layernorm", {{"rows", "4"}, {"cols", "20"}})};
}

// One step of every kind, on the matmul (stages A, B, C; loops i, j, k).
const char* kEveryKind = R"({"version": 1, "steps": [
  {"kind": "cache_write", "stage": "C", "scope": "local"},
  {"kind": "split", "stage": "C", "loop": "i", "factors": [4, 2]},
  {"kind": "fuse", "stage": "C", "loops": ["i.1", "i.2"]},
  {"kind": "reorder", "stage": "C", "loops": ["i.0", "j", "i.1@i.2"]},
  {"kind": "compute_at", "stage": "C.local", "target": "C", "loop": "j"},
  {"kind": "cache_read", "stage": "A", "scope": "shared", "readers": ["C.local"]},
  {"kind": "compute_inline", "stage": "A.shared"},
  {"kind": "compute_root", "stage": "C.local"},
  {"kind": "rfactor", "stage": "C", "loop": "k.1", "factor_axis": 0},
  {"kind": "annotate", "stage": "C", "loop": "i.0", "annotation": "parallel"},
  {"kind": "pragma", "stage": "C", "loop": "i.0", "pragma": "auto_unroll_max_step", "value": 16},
  {"kind": "storage_align", "stage": "C.local", "axis": 0, "factor": 8, "offset": 1},
  {"kind": "set_scope", "stage": "C.local", "scope": "global"},
  {"kind": "prefetch", "stage": "C", "loop": "i.0", "tensor": "B", "offset": 2}
], "sketch": "hand", "decisions": [["C/i", [4, 2]], ["C.auto_unroll", [16]]]})";

std::vector<std::string> seeds(const std::vector<ComputeDAG>& dags) {
  std::vector<std::string> out = {kEveryKind};
  for (const ComputeDAG& dag : dags) {
    out.push_back(trace_to_json(default_schedule(dag, CpuTargetSpec{16, 4})));
    out.push_back(trace_to_json(default_gpu_schedule(dag, GpuTargetSpec{})));
    for (uint64_t seed = 1; seed <= 2; ++seed) {
      out.push_back(trace_to_json(random_schedule(dag, seed, CpuTargetSpec{8, 2})));
      out.push_back(trace_to_json(random_gpu_schedule(dag, seed, GpuTargetSpec{})));
    }
  }
  return out;
}

bool uses_gpu(const State& state) {
  for (const Stage& s : state.stages())
    for (int l : s.leaves)
      if (is_gpu_binding(s.vars[l].annotation)) return true;
  return false;
}

}  // namespace

TEST_CASE("mutated schedules are refused by a typed error or replay and lower", "[fuzz][schedule][json]") {
  const std::vector<ComputeDAG> workloads = dags();
  int64_t lowered = 0, refused_json = 0;
  const int64_t accepted = tessel_fuzz::fuzz(seeds(workloads), 15000, 20261127, [&](const std::string& text) {
    Trace trace;
    try {
      trace = trace_from_json(text, "fuzz.json");
    } catch (const InputError& e) {
      REQUIRE(std::string(e.what()).find("fuzz.json") != std::string::npos);
      ++refused_json;
      return false;
    }
    for (const ComputeDAG& dag : workloads) {
      // The whole trace, as `tessel run --schedule` replays it; then every step that applies, the
      // others skipped (as the search treats an illegal step), so that lowering also sees states
      // that hostile values reached.
      try {
        replay(dag, trace);
      } catch (const ScheduleError&) {
      } catch (const InputError&) {  // more steps than a schedule may have
      }
      State state(dag);
      for (size_t i = 0; i < trace.steps.size() && i < static_cast<size_t>(kMaxTraceSteps); ++i) {
        try {
          apply_step(state, trace.steps[i], static_cast<int>(i));
        } catch (const ScheduleError&) {
        }
      }
      try {
        LowerOptions options;
        options.target = uses_gpu(state) ? LowerTarget::Gpu : LowerTarget::Cpu;
        lower(state, "kernel", options);
        ++lowered;
      } catch (const ScheduleError&) {
      } catch (const CompileError&) {
      }
    }
    return true;
  });
  INFO("read " << accepted << ", refused as JSON " << refused_json << ", lowered " << lowered);
  CHECK(accepted > 400);
  CHECK(lowered > 1500);
}
