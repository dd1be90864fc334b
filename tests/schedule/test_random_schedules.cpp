// Property tests: random schedules (and the default schedule) of every op template at small odd
// shapes compute what the reference interpreter computes. A failure prints the seed and the trace.
#include <set>

#include "codegen/llvm/llvm_backend.h"
#include "measure/cpu_kernel.h"
#include "search/default_schedule.h"
#include "search/random_schedule.h"
#include "schedule_test_util.h"

using namespace tessel;
using namespace tessel::schedtest;

namespace {

constexpr uint64_t kSchedulesPerOp = 100;

CpuTargetSpec host_spec() { return CpuTargetSpec{host_vector_lanes(), 2}; }

struct OpCase {
  const char* op;
  OpParams params;
};

// Builds, runs and compares one trace; returns "" when correct, else what went wrong.
std::string check_trace(const ComputeDAG& dag, const Trace& trace, const HostTensors& inputs,
                        const ReferenceTensors& reference) {
  try {
    CpuKernel kernel = build_cpu_kernel(dag, trace);
    CheckOutcome outcome = check_cpu_kernel(kernel, inputs, reference, dag);
    return outcome.correct ? "" : outcome.message;
  } catch (const std::exception& e) {
    return std::string("exception: ") + e.what();
  }
}

// The unroll pass either unrolls a loop or turns it into a plain loop: nothing marked unrolled may
// reach LLVM, whose full-unroll of a large loop around inner loops would stall the compiler.
bool has_unrolled_loop(const LoweredFunc& f) {
  bool found = false;
  visit(f.body, [&](const Stmt& s) { found = found || (s->op == StmtOp::For && s->for_kind == ForKind::Unrolled); });
  return found;
}

void check_op(const OpCase& c) {
  ComputeDAG dag = build_op(c.op, c.params);
  HostTensors inputs = make_random_inputs(dag, 2024);
  ReferenceTensors reference = evaluate_reference(dag, inputs);
  CAPTURE(c.op, dag.workload_key());

  {
    Trace def = default_schedule(dag, host_spec());
    std::string error = check_trace(dag, def, inputs, reference);
    INFO("default schedule: " << trace_to_json(def));
    CHECK(error == "");
  }
  int failures = 0;
  uint64_t checked = 0;
  for (uint64_t seed = 1; checked < kSchedulesPerOp; ++seed) {
    Trace trace = random_schedule(dag, seed, host_spec());
    INFO("op " << c.op << " seed " << seed << " trace: " << trace_to_json(trace));
    try {
      CHECK_FALSE(has_unrolled_loop(lower(replay(dag, trace), "probe")));
    } catch (const std::exception& e) {
      FAIL_CHECK("random schedule does not lower: " << e.what());
      continue;
    }
    ++checked;
    std::string error = check_trace(dag, trace, inputs, reference);
    if (!error.empty()) ++failures;
    CHECK(error == "");
  }
  CHECK(checked == kSchedulesPerOp);
  CHECK(failures == 0);
}

}  // namespace

TEST_CASE("random schedules: matmul 61x7x13", "[property][random]") {
  check_op({"matmul", {{"M", "61"}, {"N", "7"}, {"K", "13"}}});
}
TEST_CASE("random schedules: dense 13x61x7 bias gelu", "[property][random]") {
  check_op({"dense", {{"M", "13"}, {"N", "61"}, {"K", "7"}, {"bias", "1"}, {"act", "gelu"}}});
}
TEST_CASE("random schedules: dense 7x13x61 silu", "[property][random]") {
  check_op({"dense", {{"M", "7"}, {"N", "13"}, {"K", "61"}, {"bias", "0"}, {"act", "silu"}}});
}
TEST_CASE("random schedules: batch_matmul 3x7x13x61", "[property][random]") {
  check_op({"batch_matmul", {{"B", "3"}, {"M", "7"}, {"N", "13"}, {"K", "61"}}});
}
TEST_CASE("random schedules: conv2d pad stride 2 groups bias relu", "[property][random]") {
  check_op({"conv2d",
            {{"N", "1"}, {"C", "4"}, {"H", "13"}, {"W", "11"}, {"F", "6"}, {"KH", "3"}, {"KW", "3"}, {"stride", "2"},
             {"pad", "1"}, {"groups", "2"}, {"bias", "1"}, {"act", "relu"}}});
}
TEST_CASE("random schedules: depthwise conv2d sigmoid", "[property][random]") {
  check_op({"conv2d",
            {{"N", "1"}, {"C", "3"}, {"H", "13"}, {"W", "7"}, {"F", "3"}, {"KH", "3"}, {"KW", "3"}, {"pad", "1"},
             {"groups", "3"}, {"act", "sigmoid"}}});
}
TEST_CASE("random schedules: softmax 7x61", "[property][random]") {
  check_op({"softmax", {{"rows", "7"}, {"cols", "61"}}});
}
TEST_CASE("random schedules: layernorm 13x127", "[property][random]") {
  check_op({"layernorm", {{"rows", "13"}, {"cols", "127"}}});
}
TEST_CASE("random schedules: rmsnorm 13x61", "[property][random]") {
  check_op({"rmsnorm", {{"rows", "13"}, {"cols", "61"}}});
}
TEST_CASE("random schedules: reduce_sum 61x127", "[property][random]") {
  check_op({"reduce_sum", {{"rows", "61"}, {"cols", "127"}}});
}
TEST_CASE("random schedules: bias_residual_layernorm 7x61", "[property][random]") {
  check_op({"bias_residual_layernorm", {{"rows", "7"}, {"cols", "61"}}});
}
TEST_CASE("random schedules: elementwise 7x13x3 with three inputs", "[property][random]") {
  check_op({"elementwise",
            {{"shape", "7x13x3"}, {"inputs", "3"},
             {"expr", "sigmoid(x)*tanh(y) + max(z, 0.5) - exp(min(x, y)) + sqrt(abs(z)) + relu(x - y)"}}});
}

// 16-bit inputs and outputs (float32 inside): the conversions in every position a schedule puts
// them (cached reads, vectorized loads and stores, the padded input, the epilogue).
TEST_CASE("random schedules: matmul 61x7x13 bfloat16", "[property][random][half]") {
  check_op({"matmul", {{"M", "61"}, {"N", "7"}, {"K", "13"}, {"dtype", "bfloat16"}}});
}
TEST_CASE("random schedules: dense 13x61x7 bias gelu float16", "[property][random][half]") {
  check_op({"dense", {{"M", "13"}, {"N", "61"}, {"K", "7"}, {"bias", "1"}, {"act", "gelu"}, {"dtype", "float16"}}});
}
TEST_CASE("random schedules: batch_matmul 3x7x13x61 float16", "[property][random][half]") {
  check_op({"batch_matmul", {{"B", "3"}, {"M", "7"}, {"N", "13"}, {"K", "61"}, {"dtype", "float16"}}});
}
TEST_CASE("random schedules: conv2d pad stride 2 dilation 2 bfloat16", "[property][random][half]") {
  check_op({"conv2d",
            {{"N", "1"}, {"C", "5"}, {"H", "13"}, {"W", "11"}, {"F", "7"}, {"KH", "3"}, {"KW", "3"}, {"stride", "2"},
             {"pad", "1"}, {"dilation", "2"}, {"dtype", "bfloat16"}}});
}
TEST_CASE("random schedules: depthwise conv2d in channel blocks float16", "[property][random][half]") {
  check_op({"conv2d",
            {{"N", "1"}, {"C", "12"}, {"H", "9"}, {"W", "7"}, {"F", "12"}, {"KH", "3"}, {"KW", "3"}, {"pad", "1"},
             {"groups", "12"}, {"layout", "nchw8c"}, {"bias", "1"}, {"act", "relu"}, {"dtype", "float16"}}});
}

TEST_CASE("random schedules are deterministic and varied and include non-divisible splits", "[property][random]") {
  ComputeDAG dag = matmul_dag(61, 7, 13);
  std::set<std::string> distinct;
  int non_divisible = 0, splits = 0;
  std::set<StepKind> kinds;
  const int n = 60;
  for (uint64_t seed = 1; seed <= n; ++seed) {
    Trace a = random_schedule(dag, seed, host_spec());
    Trace b = random_schedule(dag, seed, host_spec());
    INFO("seed " << seed);
    CHECK(trace_to_json(a) == trace_to_json(b));
    distinct.insert(trace_to_json(a));
    // Every random trace replays, round-trips and lowers.
    State s(dag);
    for (size_t i = 0; i < a.steps.size(); ++i) {
      const Step& step = a.steps[i];
      kinds.insert(step.kind);
      if (step.kind == StepKind::Split) {
        ++splits;
        const Stage& st = s.stage(step.stage);
        int64_t extent = st.vars[st.find_var(step.loop)].extent;
        int64_t inner = 1;
        for (int64_t f : step.factors) inner *= f;
        // Either the product of the factors, or one factor of the chain, leaves a partial tile.
        bool partial = extent % inner != 0;
        int64_t remaining = extent;
        for (int64_t f : step.factors) {
          partial = partial || remaining % f != 0;
          remaining = (remaining + f - 1) / f;
        }
        non_divisible += partial;
      }
      apply_step(s, step, static_cast<int>(i));
    }
    CHECK(s.to_string() == replay(dag, a).to_string());
    require_round_trip(dag, a);
    CHECK_NOTHROW(lower(s, "k"));
  }
  // Different seeds give different traces for most seeds.
  CHECK(distinct.size() >= static_cast<size_t>(n * 3 / 4));
  CHECK(splits > 0);
  CHECK(non_divisible > 0);
  // The generator exercises the main step kinds over the sample.
  for (StepKind k : {StepKind::Split, StepKind::Reorder, StepKind::Annotate, StepKind::CacheWrite})
    CHECK(kinds.count(k) == 1);

  // Seed 0 and a huge seed work too; another target gives (usually) another schedule space.
  CHECK_NOTHROW(random_schedule(dag, 0, host_spec()));
  CHECK_NOTHROW(random_schedule(dag, ~uint64_t{0}, host_spec()));
}

TEST_CASE("random schedules: non-divisible split factors occur across op templates", "[property][random]") {
  // Over a sample of layernorm schedules, some split leaves a partial last tile of its loop.
  ComputeDAG dag = build_op("layernorm", {{"rows", "13"}, {"cols", "127"}});
  int partial = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    Trace t = random_schedule(dag, seed, host_spec());
    State s(dag);
    for (size_t i = 0; i < t.steps.size(); ++i) {
      const Step& step = t.steps[i];
      if (step.kind == StepKind::Split) {
        const Stage& st = s.stage(step.stage);
        int64_t extent = st.vars[st.find_var(step.loop)].extent;
        int64_t inner = 1;
        for (int64_t f : step.factors) inner *= f;
        partial += extent % inner != 0;
      }
      apply_step(s, step, static_cast<int>(i));
    }
  }
  CHECK(partial > 0);
}

TEST_CASE("default schedule: deterministic and valid for every template", "[property][default]") {
  for (const OpTemplate& t : op_templates()) {
    OpParams p;
    if (t.name == "elementwise") p = {{"shape", "13x61"}, {"inputs", "2"}, {"expr", "x*y+1"}};
    else if (t.name == "conv2d")
      p = {{"N", "1"}, {"C", "2"}, {"H", "7"}, {"W", "7"}, {"F", "3"}, {"KH", "3"}, {"KW", "3"}};
    else
      for (const OpParam& q : t.params)
        if (q.default_value.empty()) p[q.name] = "13";
    INFO("op " << t.name);
    ComputeDAG dag = build_op(t.name, p);
    Trace a = default_schedule(dag, host_spec());
    CHECK(trace_to_json(a) == trace_to_json(default_schedule(dag, host_spec())));
    CHECK_NOTHROW(lower(replay(dag, a), "k"));
  }
}

// The default schedule vectorizes every row reduction through rfactor, the output's own too
// (reduce_sum), with independent vector accumulators.
TEST_CASE("default schedule: row reductions are vectorized through rfactor", "[property][default]") {
  for (const char* op : {"reduce_sum", "softmax", "rmsnorm"}) {
    INFO("op " << op);
    ComputeDAG dag = build_op(op, {{"rows", "61"}, {"cols", "1000"}});
    LoweredFunc f = lower(replay(dag, default_schedule(dag, host_spec())), "k");
    INFO(to_string(f));
    bool vector_accumulator = false;
    visit(f.body, [&](const Stmt& s) {
      vector_accumulator = vector_accumulator || (s->op == StmtOp::Store && s->buffer.size() > 3 &&
                                                  s->buffer.substr(s->buffer.size() - 3) == ".rf" &&
                                                  s->value->type.lanes == host_spec().vector_lanes);
    });
    CHECK(vector_accumulator);
  }
}

// Prefetches are hints: a prefetch in every loop that may hold one, of every input, at offsets
// that stay inside a row, cross into later rows and run past the tensor's end, leaves every
// result as the reference interpreter computes it.
TEST_CASE("prefetch anywhere changes no result of the row templates at odd shapes", "[property][prefetch]") {
  const std::vector<OpCase> cases = {
      {"softmax", {{"rows", "7"}, {"cols", "61"}}},     {"softmax", {{"rows", "3"}, {"cols", "771"}}},
      {"softmax", {{"rows", "5"}, {"cols", "1000"}}},   {"layernorm", {{"rows", "13"}, {"cols", "127"}}},
      {"rmsnorm", {{"rows", "3"}, {"cols", "771"}}},    {"reduce_sum", {{"rows", "61"}, {"cols", "127"}}},
      {"bias_residual_layernorm", {{"rows", "7"}, {"cols", "61"}}}};
  for (const OpCase& c : cases) {
    ComputeDAG dag = build_op(c.op, c.params);
    HostTensors inputs = make_random_inputs(dag, 11);
    ReferenceTensors reference = evaluate_reference(dag, inputs);
    const Trace base = default_schedule(dag, host_spec());
    const State state = replay(dag, base);
    for (int variant = 0; variant < 3; ++variant) {
      Trace t = base;
      int added = 0;
      for (const Operation& input : state.ops()) {
        if (!input.is_placeholder) continue;
        for (const std::string& reader : state.effective_consumers(input.name)) {
          const Stage& s = state.stage(reader);
          for (int p = 0; p < static_cast<int>(s.leaves.size()); ++p) {
            int64_t extent = s.leaf(p).extent;
            int64_t offset = variant == 0 ? 1 : variant == 1 ? extent : 3 * extent + 1;
            Trace next = t;
            next.steps.push_back(prefetch_step(reader, s.leaf(p).name, input.name, offset));
            try {
              replay(dag, next);
            } catch (const ScheduleError&) {
              continue;  // a vectorized loop, or an input already prefetched there
            }
            t = next;
            ++added;
          }
        }
      }
      INFO(c.op << " variant " << variant << ": " << trace_to_json(t));
      CHECK(added > 0);
      CHECK(check_trace(dag, t, inputs, reference) == "");
    }
  }
}

TEST_CASE("default schedule: inputs far larger than the caches are prefetched rows ahead", "[default][prefetch]") {
  auto prefetches_of = [](const Trace& t) {
    std::vector<Step> out;
    for (const Step& s : t.steps)
      if (s.kind == StepKind::Prefetch) out.push_back(s);
    return out;
  };
  // The rule, not the host: 16 float lanes (AVX-512), and 8 (AVX2) where it differs.
  const CpuTargetSpec wide{16, 2}, narrow{8, 2};
  SECTION("softmax 8192x8192: exps, the pass after the max, fetches X at least a row ahead") {
    ComputeDAG dag = build_op("softmax", {{"rows", "8192"}, {"cols", "8192"}});
    Trace t = default_schedule(dag, wide);
    std::vector<Step> p = prefetches_of(t);
    REQUIRE(p.size() == 1);
    CHECK(p[0].stage == "exps");
    CHECK(p[0].tensor == "X");
    const State state = replay(dag, t);
    const Stage& exps = state.stage("exps");
    int64_t per_iteration = 1;
    for (int q = exps.leaf_position(p[0].loop) + 1; q < static_cast<int>(exps.leaves.size()); ++q)
      per_iteration *= exps.leaf(q).extent;
    CHECK(p[0].value * per_iteration >= 8192);
    LoweredFunc f = lower(state, "k");
    CHECK(count_op(f.body, StmtOp::Prefetch) >= 1);
  }
  SECTION("layernorm 16384x1024: the variance pass fetches X; gamma and beta are small") {
    ComputeDAG dag = build_op("layernorm", {{"rows", "16384"}, {"cols", "1024"}});
    std::vector<Step> p = prefetches_of(default_schedule(dag, wide));
    REQUIRE(p.size() == 1);
    CHECK(p[0].stage == "var_sum.rf");
    CHECK(p[0].tensor == "X");
  }
  SECTION("with 8 lanes an iteration of exps' column loop fetches 32 bytes, under a cache line: no prefetch") {
    ComputeDAG dag = build_op("softmax", {{"rows", "8192"}, {"cols", "8192"}});
    CHECK(prefetches_of(default_schedule(dag, narrow)).empty());
    ComputeDAG norm = build_op("layernorm", {{"rows", "16384"}, {"cols", "1024"}});
    CHECK(prefetches_of(default_schedule(norm, narrow)).size() == 1);  // its reduction runs 4 chains of 8 lanes
  }
  SECTION("small inputs are left to the caches") {
    for (const char* op : {"softmax", "layernorm", "rmsnorm", "reduce_sum"}) {
      ComputeDAG dag = build_op(op, {{"rows", "61"}, {"cols", "1000"}});
      CHECK(prefetches_of(default_schedule(dag, wide)).empty());
    }
  }
}
