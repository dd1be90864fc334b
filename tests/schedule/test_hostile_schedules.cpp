// Hostile schedules: JSON numbers beyond a double or int64, too many steps or factors, split factors
// that would pad a loop to 2^62 iterations, chains of splits and fuses that grow a stage without
// bound, and the step arguments that used to drive lowering into long loops. Each is refused --
// where the JSON is read (InputError naming the file, the step and the field) or at the step that
// crosses a limit of schedule/state/schedule_limits.h (ScheduleError naming the step) -- in bounded
// time; what stays within the limits replays and lowers.
#include <limits>

#include "schedule/lower/storage_flatten.h"
#include "schedule/state/schedule_limits.h"
#include "schedule_test_util.h"

using namespace tessel;
using namespace tessel::schedtest;

namespace {

std::string json_error(const std::string& text) {
  try {
    trace_from_json(text, "hostile.json");
  } catch (const InputError& e) {
    return e.what();
  }
  FAIL("trace_from_json accepted: " << text);
  return "";
}

void require_parts(const std::string& message, std::initializer_list<const char*> parts) {
  INFO("message: " << message);
  for (const char* p : parts) CHECK(message.find(p) != std::string::npos);
}

std::string one_step(const std::string& step) { return R"({"version": 1, "steps": [)" + step + "]}"; }

// The ScheduleError that replaying `trace` on `dag` throws.
ScheduleError replay_error(const ComputeDAG& dag, const Trace& trace) {
  try {
    replay(dag, trace);
  } catch (const ScheduleError& e) {
    return e;
  }
  FAIL("the trace replayed");
  return ScheduleError(-1, "", "");
}

// `n` splits by 1, each of the inner loop the one before made: the stage gains a loop per split.
Trace chained_splits(const std::string& stage, const std::string& loop, int n) {
  Trace t;
  std::string name = loop;
  for (int i = 0; i < n; ++i) {
    t.steps.push_back(split_step(stage, name, {1}));
    name += ".1";
  }
  return t;
}

}  // namespace

TEST_CASE("hostile schedule JSON: 1e400 anywhere is refused with its line and column", "[hostile][trace][json]") {
  require_parts(json_error("{\"version\": 1,\n \"steps\": [{\"kind\": \"split\", \"stage\": \"C\", \"loop\": \"i\", "
                           "\"factors\": [1e400]}]}"),
                {"hostile.json", "malformed JSON", "1e400", "line 2, column"});
  require_parts(json_error(R"({"version": 1e400, "steps": []})"), {"hostile.json", "1e400", "line 1, column 17"});
  require_parts(json_error(R"({"version": 1, "steps": [], "decisions": [["C/i", [-1e400]]]})"), {"-1e400"});
}

TEST_CASE("hostile schedule JSON: integers out of range name the step and the field", "[hostile][trace][json]") {
  require_parts(json_error(one_step(R"({"kind": "split", "stage": "C", "loop": "i", "factors": [4, 18446744073709551615]})")),
                {"step 0", "field 'factors'", "entry 1", "not 18446744073709551615"});
  require_parts(json_error(one_step(R"({"kind": "split", "stage": "C", "loop": "i", "factors": [18446744073709551616]})")),
                {"step 0", "field 'factors'", "entry 0", "not the number 1.8"});
  require_parts(json_error(one_step(R"({"kind": "split", "stage": "C", "loop": "i", "factors": [0]})")),
                {"step 0", "entry 0 must be an integer from 1"});
  require_parts(json_error(one_step(R"({"kind": "pragma", "stage": "C", "loop": "i", "pragma": "auto_unroll_max_step",)"
                                    R"( "value": 4611686018427387904})")),
                {"step 0", "field 'value' must be an integer from 0 to 65536"});
  require_parts(json_error(one_step(R"({"kind": "storage_align", "stage": "P", "axis": 0, "factor": 4611686018427387904,)"
                                    R"( "offset": 0})")),
                {"step 0", "field 'factor' must be an integer from 1 to 4096"});
  require_parts(json_error(one_step(R"({"kind": "prefetch", "stage": "C", "loop": "i", "tensor": "A",)"
                                    R"( "offset": 9223372036854775807})")),
                {"step 0", "field 'offset' must be an integer from 1 to 1073741824"});
  require_parts(json_error(one_step(R"({"kind": "storage_align", "stage": "P", "axis": -1, "factor": 8, "offset": 0})")),
                {"step 0", "field 'axis' must be an integer from 0 to 64, not -1"});
  require_parts(json_error(R"({"version": 18446744073709551615, "steps": []})"),
                {"schedule version 18446744073709551615 is not supported"});
}

TEST_CASE("hostile schedule JSON: too many steps, factors or decisions are refused before replay",
          "[hostile][trace][json]") {
  std::string steps;
  for (int i = 0; i < 5000; ++i) steps += std::string(i ? "," : "") + R"({"kind": "compute_root", "stage": "C"})";
  require_parts(json_error(R"({"version": 1, "steps": [)" + steps + "]}"), {"5000 steps", "at most 1000"});
  std::string factors;
  for (int i = 0; i < 5000; ++i) factors += std::string(i ? "," : "") + "1";
  require_parts(json_error(one_step(R"({"kind": "split", "stage": "C", "loop": "i", "factors": [)" + factors + "]}")),
                {"step 0", "field 'factors' has 5000 entries", "at most 16"});
  require_parts(json_error(R"({"version": 1, "steps": [], "decisions": [["t", [)" + factors + "]]]}"),
                {"decision 0", "5000 values"});
  // Nesting a million levels deep is refused without recursion.
  require_parts(json_error(std::string(1000000, '[') + std::string(1000000, ']')), {"a schedule must be a JSON object"});
}

TEST_CASE("a split factor of 2^62 is refused at its step instead of padding the loop to 2^62 iterations",
          "[hostile][trace][split]") {
  const ComputeDAG dag = matmul_dag(64, 64, 64);
  ScheduleError e = replay_error(dag, Trace{{split_step("C", "i", {int64_t{1} << 62})}});
  CHECK(e.step_index() == 0);
  require_parts(e.what(), {"step 0 (split(C, i, [4611686018427387904]))", "262144 iterations", "1024-fold"});
  e = replay_error(dag, Trace{{split_step("C", "i", {int64_t{1} << 31, int64_t{1} << 31})}});
  require_parts(e.what(), {"step 0", "pad"});
  // A product beyond int64 is named as such, not wrapped into a small number.
  e = replay_error(dag, Trace{{split_step("C", "i", {int64_t{1} << 40, int64_t{1} << 40})}});
  require_parts(e.reason(), {"product of the split factors is beyond the int64 range"});
  e = replay_error(dag, Trace{{split_step("C", "i", std::vector<int64_t>(17, 1))}});
  require_parts(e.reason(), {"17 factors", "at most 16"});
}

TEST_CASE("padding within the limit replays and lowers: tiles and thread counts beyond the extent",
          "[hostile][trace][split]") {
  // A 1-row matmul tiled by 1024 rows (as a GPU thread count would): 1024-fold padding is allowed.
  const ComputeDAG one_row = matmul_dag(1, 64, 16);
  State s = replay(one_row, Trace{{split_step("C", "i", {1024})}});
  CHECK(s.stage("C").leaf(1).extent == 1024);
  CHECK_NOTHROW(lower(s, "k", {}));
  // A tiny stage may pad up to 2^20 iterations in all.
  const ComputeDAG tiny = matmul_dag(1, 1, 1);
  CHECK_NOTHROW(replay(tiny, Trace{{split_step("C", "i", {1 << 20})}}));
  CHECK_THROWS_AS(replay(tiny, Trace{{split_step("C", "i", {(1 << 20) + 1})}}), ScheduleError);
}

TEST_CASE("chains of splits and fuses stop at the loop and loop-variable limits of a stage", "[hostile][trace]") {
  const ComputeDAG dag = matmul_dag(64, 64, 64);
  // C has i, j, k: 61 splits make 64 loops, the 62nd a 65th.
  CHECK(replay(dag, chained_splits("C", "i", 61)).stage("C").leaves.size() == 64);
  ScheduleError e = replay_error(dag, chained_splits("C", "i", 5000 / 5));
  CHECK(e.step_index() == 61);
  require_parts(e.reason(), {"stage C would have 65 loops", "at most 64"});

  // Split a loop 17 ways and fuse 16 of the parts back, for every axis of a conv2d, twice: the loop
  // count stays small, the loop variables pile up (18 per round) until the limit.
  const ComputeDAG conv = build_op("conv2d", {{"N", "1"}, {"C", "3"}, {"H", "8"}, {"W", "8"}, {"F", "4"}, {"KH", "3"},
                                             {"KW", "3"}});
  Trace rounds;
  std::vector<std::string> loops = {"n", "f", "oh", "ow", "rc", "rh", "rw"};
  for (int round = 0; round < 2; ++round)
    for (std::string& loop : loops) {
      rounds.steps.push_back(split_step("Y", loop, std::vector<int64_t>(16, 1)));
      std::vector<std::string> parts;
      for (int k = 1; k <= 16; ++k) parts.push_back(loop + "." + std::to_string(k));
      rounds.steps.push_back(fuse_step("Y", parts));
      std::string fused;
      for (const std::string& p : parts) fused += (fused.empty() ? "" : "@") + p;
      loop = fused;
    }
  e = replay_error(conv, rounds);
  require_parts(e.reason(), {"stage Y would have made", "loop variables", "at most 256"});
}

TEST_CASE("a chain of cache stages, each computed inside the next, stops at the loop nest limit",
          "[hostile][trace]") {
  // A -> X1 -> X2 -> ... -> C: each new cache stage is computed at C's innermost loop and the one
  // before it inside the new one, so the first sits two loops deeper with every level (2n + 3).
  const ComputeDAG dag = matmul_dag(8, 8, 8);
  Trace t;
  std::string previous = "A";
  for (int n = 1; n <= 200; ++n) {
    const std::string cache = cache_stage_name(previous, MemScope::Local);
    t.steps.push_back(cache_read_step(previous, MemScope::Local, {"C"}));
    t.steps.push_back(compute_at_step(cache, "C", "k"));
    if (n > 1) t.steps.push_back(compute_at_step(previous, cache, "ax1"));
    previous = cache;
  }
  ScheduleError e = replay_error(dag, t);
  require_parts(e.what(), {"compute_at(", "257 loops deep", "at most 256"});
}

TEST_CASE("step arguments that drove lowering into long loops are bounded", "[hostile][trace]") {
  // storage_align padded a stride one element at a time: a factor of 4096 with the worst offset now
  // costs one division.
  CHECK(row_major_strides({3, 5}, {StorageAlign{0, 4096, 4095}}) == std::vector<int64_t>{4095, 1});
  CHECK(row_major_strides({3, 5}, {StorageAlign{0, 8, 3}}) == std::vector<int64_t>{11, 1});
  const ComputeDAG chain = chain_dag();
  CHECK_THROWS_AS(replay(chain, Trace{{storage_align_step("P", 0, int64_t{1} << 62, 0)}}), ScheduleError);
  CHECK_NOTHROW(replay(chain, Trace{{storage_align_step("P", 0, 4096, 4095)}}));

  const ComputeDAG dag = matmul_dag(64, 64, 64);
  ScheduleError e = replay_error(dag, Trace{{pragma_step("C", "i", "auto_unroll_max_step", int64_t{1} << 62)}});
  require_parts(e.reason(), {"auto_unroll_max_step 4611686018427387904", "65536"});
  e = replay_error(dag, Trace{{prefetch_step("C", "k", "A", std::numeric_limits<int64_t>::max())}});
  require_parts(e.reason(), {"prefetch offset 9223372036854775807", "1073741824"});

  // The largest unroll budget over a loop of 2^40 iterations: no product overflows, nothing unrolls.
  const ComputeDAG wide = build_op("reduce_sum", {{"rows", "1"}, {"cols", "1099511627776"}});
  State s = replay(wide, Trace{{pragma_step("Y", "i", "auto_unroll_max_step", kMaxAutoUnrollStep)}});
  LoweredFunc f = lower(s, "k", {});
  CHECK(to_string(f).find("1099511627776") != std::string::npos);
}
