// The search's parts: sketches and their decisions, the schedules they make (checked against the
// reference interpreter at odd shapes), mutation and crossover through the search policy, and the
// task scheduler.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "codegen/cuda/cuda_backend.h"
#include "codegen/llvm/llvm_backend.h"
#include "measure/cpu_kernel.h"
#include "schedule/interpreter/reference_interpreter.h"
#include "schedule/lower/lower.h"
#include "schedule/ops/op_library.h"
#include "schedule/te/tensor_size.h"
#include "schedule/te/dag_parser.h"
#include "search/default_schedule.h"
#include "search/gpu_schedule.h"
#include "search/schedule_patterns.h"
#include "search/search_policy.h"
#include "search/task_scheduler.h"
#include "tests/schedule/schedule_test_util.h"

using namespace tessel;

namespace {

struct OpCase {
  const char* op;
  OpParams params;
};

// Every op template at small odd shapes.
const std::vector<OpCase>& op_cases() {
  static const std::vector<OpCase> cases = {
      {"matmul", {{"M", "61"}, {"N", "7"}, {"K", "13"}}},
      {"dense", {{"M", "13"}, {"N", "61"}, {"K", "7"}, {"bias", "1"}, {"act", "gelu"}}},
      {"batch_matmul", {{"B", "3"}, {"M", "7"}, {"N", "13"}, {"K", "61"}}},
      {"conv2d",
       {{"N", "1"},
        {"C", "3"},
        {"H", "7"},
        {"W", "13"},
        {"F", "5"},
        {"KH", "3"},
        {"KW", "3"},
        {"pad", "1"},
        {"stride", "2"},
        {"bias", "1"},
        {"act", "relu"}}},
      {"conv2d",  // depthwise, dilated, strided: the window-tiling sketch
       {{"N", "1"},
        {"C", "6"},
        {"H", "13"},
        {"W", "19"},
        {"F", "6"},
        {"groups", "6"},
        {"KH", "3"},
        {"KW", "3"},
        {"pad", "2"},
        {"dilation", "2"},
        {"stride", "2"},
        {"bias", "1"},
        {"act", "relu"}}},
      {"conv2d",  // channels in blocks of 8, neither count a multiple of 8, strided and dilated
       {{"N", "1"},
        {"C", "11"},
        {"H", "9"},
        {"W", "13"},
        {"F", "13"},
        {"KH", "3"},
        {"KW", "3"},
        {"pad", "2"},
        {"dilation", "2"},
        {"stride", "2"},
        {"bias", "1"},
        {"act", "relu"},
        {"layout", "nchw8c"}}},
      {"conv2d",  // depthwise with channels in blocks of 8: each lane its own channel's window
       {{"N", "1"},
        {"C", "13"},
        {"H", "9"},
        {"W", "11"},
        {"F", "13"},
        {"groups", "13"},
        {"KH", "3"},
        {"KW", "3"},
        {"pad", "1"},
        {"stride", "2"},
        {"bias", "1"},
        {"act", "relu"},
        {"layout", "nchw8c"}}},
      {"softmax", {{"rows", "7"}, {"cols", "61"}}},
      {"layernorm", {{"rows", "13"}, {"cols", "127"}}},
      {"rmsnorm", {{"rows", "13"}, {"cols", "61"}}},
      {"reduce_sum", {{"rows", "61"}, {"cols", "127"}}},
      {"bias_residual_layernorm", {{"rows", "7"}, {"cols", "61"}}},
      {"elementwise", {{"shape", "7x13x3"}, {"inputs", "2"}, {"expr", "sigmoid(x)*y+1"}}},
  };
  return cases;
}

CpuTargetSpec host_spec() { return CpuTargetSpec{host_vector_lanes(), 2}; }

// Deterministic scores in [0, 1) from the program's features: a stand-in model that ranks.
class FeatureHashModel : public CostModel {
 public:
  std::vector<double> predict(const std::vector<ProgramFeatures>& programs) override {
    std::vector<double> out;
    for (const ProgramFeatures& p : programs) {
      double h = 0;
      for (float v : p.values) h = std::fmod(h * 31.0 + v, 1000.0);
      out.push_back(h / 1000.0);
    }
    return out;
  }
  void update(const std::vector<TrainingSample>&) override {}
  bool trained() const override { return true; }
  std::string name() const override { return "feature-hash"; }
};

// Whether the trace splits `loop` by exactly `factors`, or annotates `loop` with `annotation`.
bool has_split(const Trace& t, const std::string& loop, const std::vector<int64_t>& factors) {
  return std::any_of(t.steps.begin(), t.steps.end(), [&](const Step& s) {
    return s.kind == StepKind::Split && s.loop == loop && s.factors == factors;
  });
}
bool has_annotation(const Trace& t, const std::string& loop, Annotation annotation) {
  return std::any_of(t.steps.begin(), t.steps.end(), [&](const Step& s) {
    return s.kind == StepKind::Annotate && s.loop == loop && s.annotation == annotation;
  });
}

}  // namespace

TEST_CASE("sketch decisions replay: the same decisions give the same steps under any seed", "[search][sketch]") {
  for (const OpCase& c : op_cases()) {
    ComputeDAG dag = build_op(c.op, c.params);
    for (bool gpu : {false, true}) {
      std::vector<Sketch> sketches = gpu ? gpu_sketches(dag, GpuTargetSpec{}) : cpu_sketches(dag, host_spec());
      REQUIRE_FALSE(sketches.empty());
      for (uint64_t seed = 0; seed < 20; ++seed) {
        Decider sampler(seed);
        SketchResult a = apply_sketch(sketches[0], dag, sampler);
        CAPTURE(c.op, gpu, seed, trace_to_json(a.trace));
        REQUIRE(a.trace.sketch == sketches[0].name);
        REQUIRE(a.trace.decisions.size() == a.spaces.size());
        Decider replayer(seed + 1000, a.trace.decisions);
        SketchResult b = apply_sketch(sketches[0], dag, replayer);
        CHECK(trace_steps_key(b.trace) == trace_steps_key(a.trace));
        // The JSON form keeps the decisions.
        Trace parsed = trace_from_json(trace_to_json(a.trace));
        CHECK(parsed.sketch == a.trace.sketch);
        REQUIRE(parsed.decisions.size() == a.trace.decisions.size());
        for (size_t i = 0; i < parsed.decisions.size(); ++i) {
          CHECK(parsed.decisions[i].name == a.trace.decisions[i].name);
          CHECK(parsed.decisions[i].values == a.trace.decisions[i].values);
        }
      }
    }
  }
}

TEST_CASE("sampled tiles include non-divisible lengths and stay within the loop", "[search][sketch]") {
  std::mt19937_64 rng(7);
  bool non_divisible = false;
  for (int i = 0; i < 500; ++i) {
    std::vector<int64_t> t = sample_tile(rng, 771, 3, {16});
    int64_t remaining = 771;
    for (size_t l = t.size(); l-- > 0;) {
      REQUIRE(t[l] >= 1);
      REQUIRE(t[l] <= remaining);
      non_divisible = non_divisible || remaining % t[l] != 0;
      remaining = (remaining + t[l] - 1) / t[l];
    }
  }
  CHECK(non_divisible);
}

TEST_CASE("CPU contraction sketch: a packed operand is copied to a local tile and computes right", "[search][sketch]") {
  const std::vector<OpCase> cases = {
      {"matmul", {{"M", "61"}, {"N", "127"}, {"K", "771"}}},
      {"dense", {{"M", "13"}, {"N", "61"}, {"K", "7"}, {"bias", "1"}, {"act", "gelu"}}},
      {"batch_matmul", {{"B", "3"}, {"M", "7"}, {"N", "13"}, {"K", "61"}}},
      {"conv2d",
       {{"N", "1"},
        {"C", "3"},
        {"H", "7"},
        {"W", "13"},
        {"F", "5"},
        {"KH", "3"},
        {"KW", "3"},
        {"pad", "1"},
        {"stride", "2"},
        {"bias", "1"},
        {"act", "relu"}}},
  };
  for (const OpCase& c : cases) {
    ComputeDAG dag = build_op(c.op, c.params);
    HostTensors inputs = make_random_inputs(dag, 5);
    ReferenceTensors reference = evaluate_reference(dag, inputs);
    Sketch sketch = cpu_sketches(dag, host_spec()).at(0);
    int packed = 0;
    for (uint64_t seed = 0; seed < 24; ++seed) {
      Decider sampler(seed);
      std::vector<TraceDecision> decisions = apply_sketch(sketch, dag, sampler).trace.decisions;
      auto pack = std::find_if(decisions.begin(), decisions.end(), [](const TraceDecision& d) {
        return d.name.size() > 5 && d.name.compare(d.name.size() - 5, 5, ".pack") == 0;
      });
      REQUIRE(pack != decisions.end());
      pack->values = {1};
      Decider replayer(seed, decisions);
      Trace trace = apply_sketch(sketch, dag, replayer).trace;
      CAPTURE(c.op, seed, trace_to_json(trace));
      auto read = std::find_if(trace.steps.begin(), trace.steps.end(),
                               [](const Step& s) { return s.kind == StepKind::CacheRead; });
      if (read != trace.steps.end()) {
        ++packed;
        CHECK(read->scope == MemScope::Local);
        // Placed inside the contraction right after the copy is made.
        REQUIRE(read + 1 != trace.steps.end());
        CHECK((read + 1)->kind == StepKind::ComputeAt);
        CHECK((read + 1)->stage == cache_stage_name(read->stage, MemScope::Local));
      }
      CHECK(check_cpu_kernel(build_cpu_kernel(dag, trace), inputs, reference, dag).correct);
    }
    INFO(c.op);
    CHECK(packed > 0);
  }
  // The copy is made when it fits 256 KiB: B's 64-column tile is 64 KiB with K = 256, 1 MiB with K = 4096.
  for (int64_t k : {256, 4096}) {
    ComputeDAG dag = build_op("matmul", {{"M", "64"}, {"N", "512"}, {"K", std::to_string(k)}});
    Sketch sketch = cpu_sketches(dag, host_spec()).at(0);
    Decider sampler(3);
    std::vector<TraceDecision> decisions = apply_sketch(sketch, dag, sampler).trace.decisions;
    const std::map<std::string, std::vector<int64_t>> forced = {
        {"C/i", {64, 1}},      {"C/j", {512, 1}},      {"C.parallel", {0}},  {"C.local.at", {0}},
        {"C.local/i", {1, 4}}, {"C.local/j", {4, 16}}, {"C.local.pack", {1}}};
    for (TraceDecision& d : decisions)
      if (forced.count(d.name)) d.values = forced.at(d.name);
    Decider replayer(3, decisions);
    Trace trace = apply_sketch(sketch, dag, replayer).trace;
    CAPTURE(k, trace_to_json(trace));
    CHECK(has_split(trace, "j", {4, 16}));
    bool copied = std::any_of(trace.steps.begin(), trace.steps.end(),
                              [](const Step& s) { return s.kind == StepKind::CacheRead && s.stage == "B"; });
    CHECK(copied == (k == 256));
  }
}

TEST_CASE("CPU contraction sketch: padding per output tile is computed beside the contraction and computes right",
          "[search][sketch]") {
  // Blocked depthwise (strided) and dense (dilated) convolutions at odd sizes, with an epilogue and
  // without one (the output is then the contraction, through a local cache stage).
  const std::vector<OpParams> cases = {
      {{"N", "1"}, {"C", "13"}, {"H", "9"}, {"W", "11"}, {"F", "13"}, {"groups", "13"}, {"KH", "3"}, {"KW", "3"},
       {"pad", "1"}, {"stride", "2"}, {"bias", "0"}, {"act", "none"}, {"layout", "nchw8c"}},
      {{"N", "1"}, {"C", "13"}, {"H", "9"}, {"W", "11"}, {"F", "13"}, {"groups", "13"}, {"KH", "3"}, {"KW", "3"},
       {"pad", "1"}, {"bias", "1"}, {"act", "relu"}, {"layout", "nchw8c"}},
      {{"N", "1"}, {"C", "11"}, {"H", "7"}, {"W", "13"}, {"F", "19"}, {"KH", "3"}, {"KW", "3"}, {"pad", "2"},
       {"dilation", "2"}, {"bias", "0"}, {"act", "none"}, {"layout", "nchw16c"}},
  };
  for (size_t c = 0; c < cases.size(); ++c) {
    ComputeDAG dag = build_op("conv2d", cases[c]);
    HostTensors inputs = make_random_inputs(dag, 7);
    ReferenceTensors reference = evaluate_reference(dag, inputs);
    Sketch sketch = cpu_sketches(dag, host_spec()).at(0);
    for (uint64_t seed = 0; seed < 8; ++seed) {
      Decider sampler(seed);
      std::vector<TraceDecision> decisions = apply_sketch(sketch, dag, sampler).trace.decisions;
      auto where = std::find_if(decisions.begin(), decisions.end(),
                                [](const TraceDecision& d) { return d.name == "pad.inline"; });
      REQUIRE(where != decisions.end());
      where->values = {2};
      Decider replayer(seed, decisions);
      Trace trace = apply_sketch(sketch, dag, replayer).trace;
      CAPTURE(c, seed, trace_to_json(trace));
      CHECK(std::any_of(trace.steps.begin(), trace.steps.end(), [&](const Step& s) {
        return s.kind == StepKind::ComputeAt && s.stage == "pad" && s.target_stage == dag.ops().back().name;
      }));
      CHECK(check_cpu_kernel(build_cpu_kernel(dag, trace), inputs, reference, dag).correct);
    }
  }
}

TEST_CASE("CPU sketches: a register tile keeps the smaller of its operand groups inside", "[search][sketch]") {
  // A convolution in blocks of 8: the weights' vectors are selected by fo.2, the input's broadcasts
  // by n.2, oh.2, ow.2. Whichever group's tile is smaller is the inner one (fewer live vectors).
  ComputeDAG dag = build_op("conv2d", {{"N", "1"}, {"C", "16"}, {"H", "9"}, {"W", "13"}, {"F", "40"}, {"KH", "3"},
                                       {"KW", "3"}, {"pad", "1"}, {"layout", "nchw8c"}});
  const Sketch sketch = cpu_sketches(dag, CpuTargetSpec{8, 2}).at(0);
  int inside = 0, outside = 0;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    Decider sampler(seed);
    const Trace trace = apply_sketch(sketch, dag, sampler).trace;
    const State state = replay(dag, trace);
    const Stage& tile = state.stage("Y.local");
    const std::vector<std::string> loops = tile.leaf_names();
    auto position = [&](const std::string& loop) { return std::find(loops.begin(), loops.end(), loop) - loops.begin(); };
    const auto end = static_cast<std::ptrdiff_t>(loops.size());
    if (position("fo.2") == end || position("ow.2") == end || position("oh.2") == end) continue;
    auto extent = [&](const std::string& loop) { return tile.vars[tile.find_var(loop)].extent; };
    const int64_t pixels = extent("oh.2") * extent("ow.2") * (position("n.2") < end ? extent("n.2") : 1);
    CAPTURE(seed, trace_to_json(trace, true));
    const bool weights_inside = position("fo.2") > position("ow.2");
    CHECK(weights_inside == (extent("fo.2") <= pixels));
    CHECK(loops.back().rfind("fi", 0) == 0);  // the vector stays innermost
    (weights_inside ? inside : outside) += 1;
  }
  CHECK(inside > 0);
  CHECK(inside + outside >= 10);
}

TEST_CASE("CPU sketches: a depthwise convolution tiles its window, a row reduction does not", "[search][sketch]") {
  const OpParams depthwise = {{"N", "1"}, {"C", "6"}, {"H", "13"}, {"W", "19"}, {"F", "6"}, {"groups", "6"},
                              {"KH", "3"}, {"KW", "3"}, {"pad", "1"}, {"bias", "1"}, {"act", "relu"}};
  ComputeDAG dw = build_op("conv2d", depthwise);
  CHECK(find_contraction(dw) == nullptr);  // the weight misses n, y, x; the input misses nothing
  REQUIRE(find_window_product(dw) != nullptr);
  std::vector<Sketch> sketches = cpu_sketches(dw, host_spec());
  REQUIRE(sketches.size() == 2);
  CHECK(sketches[0].name == "cpu/window_tiling");
  CHECK(sketches[1].name == "cpu/row_reduction");
  // sum over k of x[i,k] * x[i,k]: both reads index every output axis.
  ComputeDAG rms = build_op("rmsnorm", {{"rows", "13"}, {"cols", "61"}});
  CHECK(find_window_product(rms) == nullptr);
  CHECK(cpu_sketches(rms, host_spec()).at(0).name == "cpu/row_reduction");
  // A dense convolution stays a contraction.
  ComputeDAG conv = build_op("conv2d", {{"N", "1"}, {"C", "3"}, {"H", "7"}, {"W", "13"}, {"F", "5"}, {"KH", "3"},
                                        {"KW", "3"}});
  CHECK(cpu_sketches(conv, host_spec()).at(0).name == "cpu/multi_level_tiling");
}

TEST_CASE("CPU default of a short window: a vector of one row's adjacent outputs, computing right", "[search]") {
  // A strided depthwise window (as a pool's): the output row (38 wide, a few vectors) is split by the
  // vector width, the window inside, the lanes innermost; the other axes fused and parallel. Fusing
  // every axis into the vector instead found each lane's read by division (a ResNet-50 max pooling
  // 3.7 ms on two cores, 0.76 ms with this and its padding by rows; a depthwise 144-channel 56x56
  // convolution 3.35 -> 1.20 ms).
  ComputeDAG dag = build_op("conv2d", {{"N", "1"}, {"C", "6"}, {"H", "13"}, {"W", "75"}, {"F", "6"}, {"groups", "6"},
                                       {"KH", "3"}, {"KW", "3"}, {"pad", "1"}, {"stride", "2"}});
  const CpuTargetSpec spec = host_spec();
  Trace t = default_schedule(dag, spec);
  INFO(trace_to_json(t, true));
  CHECK(has_split(t, "ow", {spec.vector_lanes}));
  CHECK(has_annotation(t, "ow.1", Annotation::Vectorize));
  // The padding, computed up front, likewise by rows: a vector of a row's values.
  CHECK(has_split(t, "pw", {spec.vector_lanes}));
  CHECK(has_annotation(t, "pw.1", Annotation::Vectorize));
  HostTensors inputs = make_random_inputs(dag, 3);
  CHECK(check_cpu_kernel(build_cpu_kernel(dag, t), inputs, evaluate_reference(dag, inputs), dag).correct);
}

TEST_CASE("CPU default of a convolution in channel blocks: rows that divide the output, 7 accumulators",
          "[search]") {
  // One block of 16 output channels is one vector, so the register tile takes more output columns:
  // 7 of a 28-column tile for 112 columns (a 32-column tile left a bounds test on every accumulation
  // and 4 accumulators: ResNet-50's 7x7 stride-2 convolution 1.27 -> 0.96 ms on two cores).
  for (const char* w : {"223", "111", "27"}) {  // stride 2, pad 3, 7x7: 112, 56 and 14 columns
    ComputeDAG dag = build_op("conv2d", {{"N", "1"}, {"C", "3"}, {"H", "9"}, {"W", w}, {"F", "20"}, {"KH", "7"},
                                         {"KW", "7"}, {"stride", "2"}, {"pad", "3"}, {"bias", "1"}, {"act", "relu"},
                                         {"layout", "nchw-to-nchw16c"}});
    const CpuTargetSpec spec{16, 2};
    Trace t = default_schedule(dag, spec);
    INFO("W=" << w << "\n" << trace_to_json(t, true));
    const int64_t columns = dag.ops().back().shape[3];
    if (columns > 28) CHECK(has_split(t, "ow1", {28}));  // the output stage's tile of columns
    CHECK(has_split(t, "ow", {7}));                        // the contraction's register tile
    LowerOptions options;
    const std::string ir = to_string(lower(replay(dag, t), "conv", options));
    INFO(ir);
    // The padding is inlined: its bounds tests are decided before the window's loops, and no test
    // of the output's columns is left (a tile that does not divide them would test each one).
    CHECK(ir.find("allocate pad") == std::string::npos);
    CHECK(ir.find("< " + std::to_string(columns) + ")") == std::string::npos);
    HostTensors inputs = make_random_inputs(dag, 5);
    CHECK(check_cpu_kernel(build_cpu_kernel(dag, t), inputs, evaluate_reference(dag, inputs), dag).correct);
  }
}

TEST_CASE("CPU default of a convolution in channel blocks: two blocks of output channels per register tile",
          "[search]") {
  // 4 blocks of 16 output channels: the tile takes 2 of them by 7 columns, 14 accumulators, so each
  // broadcast input feeds two FMAs. With 8 lanes (16 vector registers) it takes 6 columns of 2.
  ComputeDAG dag = build_op("conv2d", {{"N", "1"}, {"C", "32"}, {"H", "14"}, {"W", "14"}, {"F", "64"}, {"KH", "3"},
                                       {"KW", "3"}, {"pad", "1"}, {"layout", "nchw16c"}});
  Trace t = default_schedule(dag, CpuTargetSpec{16, 2});
  INFO(trace_to_json(t, true));
  CHECK(has_split(t, "fo", {2}));
  CHECK(has_split(t, "ow", {7}));
  HostTensors inputs = make_random_inputs(dag, 5);
  ReferenceTensors reference = evaluate_reference(dag, inputs);
  CHECK(check_cpu_kernel(build_cpu_kernel(dag, t), inputs, reference, dag).correct);

  ComputeDAG avx2 = build_op("conv2d", {{"N", "1"}, {"C", "16"}, {"H", "14"}, {"W", "12"}, {"F", "32"}, {"KH", "3"},
                                        {"KW", "3"}, {"pad", "1"}, {"layout", "nchw8c"}});
  Trace t8 = default_schedule(avx2, CpuTargetSpec{8, 2});
  INFO(trace_to_json(t8, true));
  CHECK(has_split(t8, "fo", {2}));
  CHECK(has_split(t8, "ow", {6}));

  // Three blocks (48 channels, or 24 in blocks of 8) all go in the tile where 32 registers hold
  // their accumulators; with 16 registers, and for five blocks, the tile keeps one.
  ComputeDAG three = build_op("conv2d", {{"N", "1"}, {"C", "16"}, {"H", "14"}, {"W", "14"}, {"F", "48"}, {"KH", "3"},
                                         {"KW", "3"}, {"pad", "1"}, {"layout", "nchw16c"}});
  Trace t3 = default_schedule(three, CpuTargetSpec{16, 2});
  CHECK(has_split(t3, "fo", {3}));
  HostTensors three_inputs = make_random_inputs(three, 6);
  CHECK(check_cpu_kernel(build_cpu_kernel(three, t3), three_inputs, evaluate_reference(three, three_inputs), three)
            .correct);
  CHECK_FALSE(has_split(default_schedule(three, CpuTargetSpec{8, 2}), "fo", {3}));
  // Four blocks under a window whose row tile takes rows in fours: 4 by 4 with 32 registers. A
  // pointwise convolution, and a row of 14, keep two blocks.
  auto four = [](const char* width, const char* window) {
    return build_op("conv2d", {{"N", "1"}, {"C", "32"}, {"H", "9"}, {"W", width}, {"F", "64"}, {"KH", window},
                               {"KW", window}, {"pad", std::string(window) == "3" ? "1" : "0"}, {"layout", "nchw16c"}});
  };
  ComputeDAG wide = four("28", "3");
  const Trace t4 = default_schedule(wide, CpuTargetSpec{16, 2});
  INFO(trace_to_json(t4, true));
  CHECK(has_split(t4, "fo", {4}));
  CHECK(has_split(t4, "ow", {4}));
  HostTensors four_inputs = make_random_inputs(wide, 7);
  CHECK(check_cpu_kernel(build_cpu_kernel(wide, t4), four_inputs, evaluate_reference(wide, four_inputs), wide).correct);
  CHECK(has_split(default_schedule(four("28", "1"), CpuTargetSpec{16, 2}), "fo", {2}));
  CHECK(has_split(default_schedule(four("14", "3"), CpuTargetSpec{16, 2}), "fo", {2}));
  ComputeDAG five = build_op("conv2d", {{"N", "1"}, {"C", "16"}, {"H", "14"}, {"W", "14"}, {"F", "80"}, {"KH", "1"},
                                        {"KW", "1"}, {"layout", "nchw16c"}});
  const Trace t5 = default_schedule(five, CpuTargetSpec{16, 2});
  CHECK_FALSE(has_split(t5, "fo", {2}));
  CHECK_FALSE(has_split(t5, "fo", {3}));
}

TEST_CASE("CPU default of a convolution in blocks of 8 with 16 vector registers: tiles that divide their axes",
          "[search]") {
  // AVX2: a register tile of r outputs of a row by b blocks, r dividing the row and b the blocks,
  // 8 accumulators or more, one register spare, the fewest loads per FMA; rows of 7 take one block;
  // a prime row (13) keeps 6 by 2, its last tile tested. The smaller of rows and blocks is the inner
  // loop of the tile.
  struct Want {
    int64_t width, filters, rows, blocks, window;
  };
  // Without a window (pointwise), rows of 7 take 2 by 4, the last tile of the row tested.
  for (const Want& want : {Want{14, 32, 2, 4, 3}, Want{28, 32, 4, 2, 3}, Want{7, 64, 7, 1, 3}, Want{13, 32, 6, 2, 3},
                           Want{28, 24, 4, 2, 3}, Want{7, 64, 2, 4, 1}, Want{14, 32, 2, 4, 1}}) {
    ComputeDAG dag = build_op("conv2d", {{"N", "1"}, {"C", "24"}, {"H", "5"}, {"W", std::to_string(want.width)},
                                         {"F", std::to_string(want.filters)}, {"KH", std::to_string(want.window)},
                                         {"KW", std::to_string(want.window)}, {"pad", want.window == 3 ? "1" : "0"},
                                         {"layout", "nchw8c"}});
    const Trace t = default_schedule(dag, CpuTargetSpec{8, 2});
    CAPTURE(want.width, want.filters, want.window, trace_to_json(t, true));
    const State state = replay(dag, t);
    const Stage& tile = state.stage("Y.local");
    const std::vector<std::string> loops = tile.leaf_names();
    auto extent = [&](const std::string& loop) { return tile.vars[tile.find_var(loop)].extent; };
    auto position = [&](const std::string& loop) { return std::find(loops.begin(), loops.end(), loop) - loops.begin(); };
    REQUIRE(position("ow.1") < static_cast<std::ptrdiff_t>(loops.size()));
    CHECK(extent("ow.1") == want.rows);
    if (want.blocks > 1) {
      REQUIRE(position("fo.1") < static_cast<std::ptrdiff_t>(loops.size()));
      CHECK(extent("fo.1") == want.blocks);
      CHECK((position("fo.1") < position("ow.1")) == (want.blocks > want.rows));
    } else {
      CHECK(position("fo.1") == static_cast<std::ptrdiff_t>(loops.size()));
    }
    if (host_vector_lanes() >= 8) {
      HostTensors inputs = make_random_inputs(dag, 11);
      CHECK(check_cpu_kernel(build_cpu_kernel(dag, t), inputs, evaluate_reference(dag, inputs), dag).correct);
    }
  }
  // A pointwise convolution over 64 channels with rows of 28: 6 by 2, the row's last tile tested.
  ComputeDAG pointwise = build_op("conv2d", {{"N", "1"}, {"C", "64"}, {"H", "3"}, {"W", "28"}, {"F", "32"},
                                             {"KH", "1"}, {"KW", "1"}, {"layout", "nchw8c"}});
  const Trace tp = default_schedule(pointwise, CpuTargetSpec{8, 2});
  CHECK(has_split(tp, "ow", {6}));
  CHECK(has_split(tp, "fo", {2}));
  if (host_vector_lanes() >= 8) {
    HostTensors inputs = make_random_inputs(pointwise, 14);
    CHECK(check_cpu_kernel(build_cpu_kernel(pointwise, tp), inputs, evaluate_reference(pointwise, inputs), pointwise)
              .correct);
  }
  // A stem over an image in NCHW (7x7, stride 2, rows of 28): of the tiles as good by loads, the
  // one of more blocks, and the window's seven columns unrolled.
  ComputeDAG stem = build_op("conv2d", {{"N", "1"}, {"C", "3"}, {"H", "23"}, {"W", "55"}, {"F", "32"}, {"KH", "7"},
                                        {"KW", "7"}, {"stride", "2"}, {"pad", "3"}, {"layout", "nchw-to-nchw8c"}});
  const Trace ts = default_schedule(stem, CpuTargetSpec{8, 2});
  INFO(trace_to_json(ts, true));
  CHECK(has_split(ts, "ow", {2}));
  CHECK(has_split(ts, "fo", {4}));
  CHECK(has_annotation(ts, "rw", Annotation::Unroll));
  if (host_vector_lanes() >= 8) {
    HostTensors inputs = make_random_inputs(stem, 13);
    CHECK(check_cpu_kernel(build_cpu_kernel(stem, ts), inputs, evaluate_reference(stem, inputs), stem).correct);
  }
}

TEST_CASE("CPU default of a convolution in channel blocks: weights past L1 are read in chunks of channels",
          "[search]") {
  // 3x3 over 96 channels, two blocks of output channels a register tile: 108 KiB of weights per
  // tile. The contraction is computed per output tile with its channels in chunks of 16 (18 KiB of
  // weights) outside the register tiles; a row of 12 outputs is two tiles of 6, unrolled.
  ComputeDAG dag = build_op("conv2d", {{"N", "1"}, {"C", "96"}, {"H", "23"}, {"W", "23"}, {"F", "32"}, {"KH", "3"},
                                       {"KW", "3"}, {"stride", "2"}, {"pad", "1"}, {"layout", "nchw16c"}});
  const Trace t = default_schedule(dag, CpuTargetSpec{16, 2});
  INFO(trace_to_json(t, true));
  CHECK(has_split(t, "rc", {16}));
  CHECK(has_split(t, "ow", {6}));
  CHECK(has_annotation(t, "ow.0", Annotation::Unroll));
  // Computed at the parallel tile loop, the chunk loop outside the register tiles' loops.
  std::string parallel, at;
  std::vector<std::string> order;
  for (const Step& s : t.steps) {
    if (s.kind == StepKind::Annotate && s.annotation == Annotation::Parallel && s.stage == "Y") parallel = s.loop;
    if (s.kind == StepKind::ComputeAt && s.stage == "Y.local") at = s.target_loop;
    if (s.kind == StepKind::Reorder && s.stage == "Y.local") order = s.loops;
  }
  CHECK(!parallel.empty());
  CHECK(at == parallel);
  auto position = [&](const std::string& loop) { return std::find(order.begin(), order.end(), loop) - order.begin(); };
  CHECK(position("rc.0") < position("ow.0"));
  CHECK(position("ow.0") < position("rc.1"));
  CHECK(position("rc.1") < static_cast<std::ptrdiff_t>(order.size()));
  HostTensors inputs = make_random_inputs(dag, 9);
  CHECK(check_cpu_kernel(build_cpu_kernel(dag, t), inputs, evaluate_reference(dag, inputs), dag).correct);

  // Weights that fit (3x3 over 16 channels, 18 KiB) and a pointwise convolution (no window; 64 KiB a
  // tile, two tiles a row) keep a register tile's whole reduction innermost.
  auto splits_rc = [](const Trace& trace) {
    return std::any_of(trace.steps.begin(), trace.steps.end(),
                       [](const Step& s) { return s.kind == StepKind::Split && s.loop == "rc"; });
  };
  ComputeDAG narrow = build_op("conv2d", {{"N", "1"}, {"C", "16"}, {"H", "14"}, {"W", "14"}, {"F", "64"},
                                          {"KH", "3"}, {"KW", "3"}, {"pad", "1"}, {"layout", "nchw16c"}});
  CHECK_FALSE(splits_rc(default_schedule(narrow, CpuTargetSpec{16, 2})));
  ComputeDAG pointwise = build_op("conv2d", {{"N", "1"}, {"C", "512"}, {"H", "14"}, {"W", "14"}, {"F", "64"},
                                             {"KH", "1"}, {"KW", "1"}, {"layout", "nchw16c"}});
  CHECK_FALSE(splits_rc(default_schedule(pointwise, CpuTargetSpec{16, 2})));
  // With 16 vector registers a pointwise convolution's register tiles are narrower (2 by 4 on a
  // row of 7, 64 KiB of weights over 512 channels): its channels go in chunks too, numerics checked
  // with the row's last tile tested, at stride 2.
  ComputeDAG pointwise8 = build_op("conv2d", {{"N", "1"}, {"C", "512"}, {"H", "13"}, {"W", "13"}, {"F", "32"},
                                              {"KH", "1"}, {"KW", "1"}, {"stride", "2"}, {"layout", "nchw8c"}});
  const Trace tp = default_schedule(pointwise8, CpuTargetSpec{8, 2});
  INFO(trace_to_json(tp, true));
  CHECK(splits_rc(tp));
  CHECK(has_split(tp, "ow", {2}));
  if (host_vector_lanes() >= 8) {
    HostTensors p_inputs = make_random_inputs(pointwise8, 12);
    CHECK(check_cpu_kernel(build_cpu_kernel(pointwise8, tp), p_inputs, evaluate_reference(pointwise8, p_inputs),
                           pointwise8)
              .correct);
  }

  // Blocks of 8 (AVX2's lanes), 3x3 over 120 channels at 13x13 (68 KiB a tile): chunks of 40. With
  // 16 lanes the same blocks of 8 hold as many bytes; 72 channels (41 KiB a tile) fit.
  ComputeDAG avx2 = build_op("conv2d", {{"N", "1"}, {"C", "120"}, {"H", "13"}, {"W", "13"}, {"F", "32"}, {"KH", "3"},
                                        {"KW", "3"}, {"pad", "1"}, {"layout", "nchw8c"}});
  const Trace t8 = default_schedule(avx2, CpuTargetSpec{8, 2});
  INFO(trace_to_json(t8, true));
  CHECK(has_split(t8, "rc", {40}));
  CHECK(has_split(default_schedule(avx2, CpuTargetSpec{16, 2}), "rc", {40}));
  ComputeDAG fits = build_op("conv2d", {{"N", "1"}, {"C", "72"}, {"H", "13"}, {"W", "13"}, {"F", "32"}, {"KH", "3"},
                                        {"KW", "3"}, {"pad", "1"}, {"layout", "nchw8c"}});
  CHECK_FALSE(splits_rc(default_schedule(fits, CpuTargetSpec{16, 2})));
  if (host_vector_lanes() >= 8) {
    HostTensors avx2_inputs = make_random_inputs(avx2, 10);
    CHECK(check_cpu_kernel(build_cpu_kernel(avx2, t8), avx2_inputs, evaluate_reference(avx2, avx2_inputs), avx2)
              .correct);
  }
}

TEST_CASE("CPU default of a convolution in channel blocks: the smaller operand's loop innermost in the tasks",
          "[search]") {
  // Weights smaller than the input (a stride-2 1x1 convolution at 56x56): the tasks take output
  // channels innermost, so neighbouring tasks read the same input rows. Weights larger (3x3, 64 -> 64
  // at 7x7): output channels outermost, each core keeps to its own weights.
  ComputeDAG wide = build_op("conv2d", {{"N", "1"}, {"C", "64"}, {"H", "56"}, {"W", "56"}, {"F", "64"}, {"KH", "1"},
                                        {"KW", "1"}, {"stride", "2"}, {"layout", "nchw16c"}});
  const Trace tw = default_schedule(wide, CpuTargetSpec{16, 2});
  INFO(trace_to_json(tw, true));
  CHECK(has_annotation(tw, "n@oh@fo.0", Annotation::Parallel));
  ComputeDAG deep = build_op("conv2d", {{"N", "1"}, {"C", "64"}, {"H", "7"}, {"W", "7"}, {"F", "64"}, {"KH", "3"},
                                        {"KW", "3"}, {"pad", "1"}, {"layout", "nchw16c"}});
  const Trace td = default_schedule(deep, CpuTargetSpec{16, 2});
  INFO(trace_to_json(td, true));
  CHECK(has_annotation(td, "n@fo.0@oh", Annotation::Parallel));
  // Its padding is inlined, its bounds tests hoisted out of the window's loops by the lowering
  // (computed up front, the padded copy of the input cost a pass over memory).
  CHECK(std::any_of(td.steps.begin(), td.steps.end(), [](const Step& st) {
    return st.kind == StepKind::ComputeInline && st.stage == "pad";
  }));
  HostTensors inputs = make_random_inputs(deep, 8);
  CHECK(check_cpu_kernel(build_cpu_kernel(deep, td), inputs, evaluate_reference(deep, inputs), deep).correct);
}

TEST_CASE("CPU default of a depthwise convolution in channel blocks: padding inlined, a row of accumulators",
          "[search]") {
  // Rows in parallel, 8 (or a length near 8 that divides the row) adjacent outputs per register
  // tile with the window outside it, and the padding inlined: the lowering decides its bounds tests
  // once per tile at the border, and the tiles inside the row read the input select-free
  // (MobileNetV2's 144-channel 56x56 depthwise convolution 0.09 -> 0.04 ms on two cores against its
  // padded rows computed in each task). Odd rows (61 and 31 outputs) leave a tail tile; strides 1
  // and 2, blocks of 16 and 8, with an epilogue.
  const std::vector<std::vector<std::pair<std::string, std::string>>> cases = {
      {{"C", "32"}, {"H", "9"}, {"W", "61"}, {"stride", "1"}, {"layout", "nchw16c"}, {"bias", "1"}, {"act", "relu"}},
      {{"C", "24"}, {"H", "7"}, {"W", "61"}, {"stride", "2"}, {"layout", "nchw8c"}},
      {{"C", "16"}, {"H", "5"}, {"W", "56"}, {"stride", "1"}, {"layout", "nchw16c"}},
  };
  for (const auto& extra : cases) {
    std::map<std::string, std::string> params = {{"N", "1"}, {"KH", "3"}, {"KW", "3"}, {"pad", "1"}};
    for (const auto& [k, v] : extra) params[k] = v;
    params["F"] = params["groups"] = params["C"];
    ComputeDAG dag = build_op("conv2d", params);
    Trace t = default_schedule(dag, CpuTargetSpec{16, 2});
    INFO(params["W"] << " " << params["layout"] << "\n" << trace_to_json(t, true));
    const int64_t row = dag.ops().back().shape[3];
    CHECK(std::any_of(t.steps.begin(), t.steps.end(), [&](const Step& s) {
      return s.kind == StepKind::Split && s.factors.size() == 1 && s.factors[0] >= 4 && s.factors[0] <= 8 &&
             (row % s.factors[0] == 0 || s.factors[0] == 8);
    }));
    CHECK(std::any_of(t.steps.begin(), t.steps.end(), [](const Step& s) {
      return s.kind == StepKind::ComputeInline && s.stage == "pad";
    }));
    // Some copy of the window's row loop (the tile's taps unrolled inside it) reads no select.
    LoweredFunc f = lower(replay(dag, t), "depthwise");
    std::vector<Stmt> windows;
    visit(f.body, [&](const Stmt& x) {
      if (x->op == StmtOp::For && x->var == "rh") windows.push_back(x);
    });
    REQUIRE_FALSE(windows.empty());
    CHECK(std::any_of(windows.begin(), windows.end(),
                      [](const Stmt& w) { return schedtest::count_selects(w) == 0; }));
    HostTensors inputs = make_random_inputs(dag, 7);
    CHECK(check_cpu_kernel(build_cpu_kernel(dag, t), inputs, evaluate_reference(dag, inputs), dag).correct);
  }
}

TEST_CASE("CPU default of a matrix product: row tiles, the reduction in chunks, the weights packed per chunk",
          "[search]") {
  // With 32 vector registers: tiles of 128 rows (fewer where that leaves under 32 tasks) by 64
  // columns, 8 x 2-vector register tiles, K in chunks of 128 (a divisor of K where one is at least
  // 64) with B's chunk copied to a local tile inside the chunk loop. Odd shapes keep their tails.
  struct Case {
    const char* op;
    OpParams params;
    int64_t rows, chunk;  // the expected row tile and reduction chunk (0: none)
  };
  const std::vector<Case> cases = {
      {"matmul", {{"M", "1024"}, {"N", "256"}, {"K", "768"}}, 128, 128},
      {"matmul", {{"M", "1000"}, {"N", "77"}, {"K", "1000"}}, 40, 125},  // 40 and 125 divide 1000
      {"matmul", {{"M", "197"}, {"N", "771"}, {"K", "61"}}, 64, 0},
      {"dense", {{"M", "61"}, {"N", "130"}, {"K", "771"}, {"bias", "1"}, {"act", "gelu"}}, 16, 128},
      {"batch_matmul", {{"B", "3"}, {"M", "61"}, {"N", "197"}, {"K", "300"}}, 16, 100},
  };
  for (const Case& c : cases) {
    ComputeDAG dag = build_op(c.op, c.params);
    Trace t = default_schedule(dag, CpuTargetSpec{16, 2});
    CAPTURE(c.op, c.params, trace_to_json(t, true));
    const std::string out = dag.ops().back().name;
    const bool rows_split = std::any_of(t.steps.begin(), t.steps.end(), [&](const Step& s) {
      return s.kind == StepKind::Split && s.stage == out && s.factors == std::vector<int64_t>{c.rows};
    });
    CHECK(rows_split);
    const bool chunked = std::any_of(t.steps.begin(), t.steps.end(), [&](const Step& s) {
      return s.kind == StepKind::Split && s.loop == "k" && s.factors == std::vector<int64_t>{c.chunk};
    });
    CHECK(chunked == (c.chunk > 0));
    auto read = std::find_if(t.steps.begin(), t.steps.end(), [](const Step& s) { return s.kind == StepKind::CacheRead; });
    REQUIRE(read != t.steps.end());
    const std::string packed = cache_stage_name(read->stage, MemScope::Local);
    const bool at_chunk = std::any_of(t.steps.begin(), t.steps.end(), [&](const Step& s) {
      return s.kind == StepKind::ComputeAt && s.stage == packed && s.target_loop == "k.0";
    });
    CHECK(at_chunk == (c.chunk > 0));
    HostTensors inputs = make_random_inputs(dag, 7);
    CHECK(check_cpu_kernel(build_cpu_kernel(dag, t), inputs, evaluate_reference(dag, inputs), dag).correct);
  }
  // A weight shared by every leading axis (activations [sequence 24, batch 8, features]): the
  // leading axes fold into the rows, a tile of whole batches, and the weights are packed once per
  // chunk for all of them.
  ComputeDAG folded = parse_dag_text(
      "X = placeholder(float32[24, 8, 300])\n"
      "W = placeholder(float32[300, 200])\n"
      "Y[s:24, b:8, j:200] = sum(k:300; (X[s, b, k] * W[k, j]))  : float32\n");
  Trace tf = default_schedule(folded, CpuTargetSpec{16, 2});
  INFO(trace_to_json(tf, true));
  CHECK(std::any_of(tf.steps.begin(), tf.steps.end(), [](const Step& s) {
    return s.kind == StepKind::Fuse && s.stage == "Y" && s.loops == std::vector<std::string>{"s", "b"};
  }));
  HostTensors folded_inputs = make_random_inputs(folded, 8);
  CHECK(check_cpu_kernel(build_cpu_kernel(folded, tf), folded_inputs, evaluate_reference(folded, folded_inputs),
                         folded)
            .correct);
}

TEST_CASE("CPU default of a one-row matrix-vector product: chunks of columns in parallel, computing right",
          "[search]") {
  // A classifier at batch 1 (as a model's Gemm with B stored [N, K] becomes): one output row, so the
  // rows' parallel loop had one iteration and the whole product ran on one core (ResNet-50's
  // 2048 -> 1000 classifier took 0.39 ms on 16 cores). Odd N and K leave tails.
  const std::string text =
      "A = placeholder(float32[1, 771])\n"
      "B = placeholder(float32[1000, 771])\n"
      "bias = placeholder(float32[1000])\n"
      "gemv[n:1000] = sum(k:771; (A[0, k] * B[n, k]))  : float32\n"
      "Y[i:1, j:1000] = (gemv[j] + bias[j])  : float32\n";
  ComputeDAG dag = parse_dag_text(text);
  Trace t = default_schedule(dag, CpuTargetSpec{16, 2});
  INFO(trace_to_json(t, true));
  CHECK(has_split(t, "j", {2, 16}));
  CHECK(has_annotation(t, "i@j.0", Annotation::Parallel));
  CHECK(has_annotation(t, "j.2", Annotation::Vectorize));
  HostTensors inputs = make_random_inputs(dag, 5);
  CHECK(check_cpu_kernel(build_cpu_kernel(dag, t), inputs, evaluate_reference(dag, inputs), dag).correct);
  // Read at another column than its own, each chunk would need other chunks' dot products: rows stay
  // the parallel loop, and the result stays right.
  ComputeDAG reversed = parse_dag_text(
      "A = placeholder(float32[1, 61])\n"
      "B = placeholder(float32[1000, 61])\n"
      "gemv[n:1000] = sum(k:61; (A[0, k] * B[n, k]))  : float32\n"
      "Y[i:1, j:1000] = gemv[(999 - j)]  : float32\n");
  Trace tr = default_schedule(reversed, CpuTargetSpec{16, 2});
  INFO(trace_to_json(tr, true));
  CHECK_FALSE(has_split(tr, "j", {2, 16}));
  HostTensors reversed_inputs = make_random_inputs(reversed, 6);
  CHECK(check_cpu_kernel(build_cpu_kernel(reversed, tr), reversed_inputs, evaluate_reference(reversed, reversed_inputs),
                         reversed)
            .correct);
  // A single row of a softmax reduces the whole row: its rows stay the parallel loop.
  ComputeDAG softmax = build_op("softmax", {{"rows", "1"}, {"cols", "1000"}});
  Trace ts = default_schedule(softmax, CpuTargetSpec{16, 2});
  INFO(trace_to_json(ts, true));
  CHECK_FALSE(std::any_of(ts.steps.begin(), ts.steps.end(),
                          [](const Step& s) { return s.kind == StepKind::Split && s.factors.size() == 2; }));
}

TEST_CASE("16-bit contractions are scheduled as contractions: the widening casts are looked through",
          "[search][half]") {
  // Without it the GPU default of a bfloat16 4096^3 matmul was a reduction per output across a warp:
  // 549 ms against float32's 4.9 ms on an H100.
  const std::vector<std::pair<std::string, OpParams>> cases = {
      {"matmul", {{"M", "61"}, {"N", "197"}, {"K", "13"}}},
      {"dense", {{"M", "7"}, {"N", "61"}, {"K", "13"}, {"bias", "1"}, {"act", "relu"}}},
      {"conv2d", {{"N", "1"}, {"C", "16"}, {"H", "9"}, {"W", "9"}, {"F", "32"}, {"KH", "3"}, {"KW", "3"},
                  {"pad", "1"}, {"layout", "nchw16c"}}},
  };
  for (const auto& [op, params] : cases) {
    OpParams half = params;
    half["dtype"] = "bfloat16";
    ComputeDAG f32 = build_op(op, params), bf16 = build_op(op, half);
    INFO(op);
    REQUIRE(find_contraction(bf16) != nullptr);
    auto count = [](const Trace& t, StepKind kind) {
      return std::count_if(t.steps.begin(), t.steps.end(), [&](const Step& s) { return s.kind == kind; });
    };
    const Trace gpu32 = default_gpu_schedule(f32, GpuTargetSpec{}), gpu16 = default_gpu_schedule(bf16, GpuTargetSpec{});
    if (op == "conv2d") {  // no tensor-core path: tiled on the CUDA cores as float32 is
      CHECK(count(gpu16, StepKind::CacheRead) == count(gpu32, StepKind::CacheRead));
      CHECK(count(gpu16, StepKind::CacheRead) >= 2);  // both operands staged in shared memory
    } else {
      // On a warpgroup's tensor cores: both operands staged in swizzled shared tiles, read from
      // there; the product and its epilogue tensorized.
      CHECK(count(gpu16, StepKind::CacheRead) == 2);
      CHECK(count(gpu16, StepKind::StorageSwizzle) == 2);
      CHECK(count(gpu16, StepKind::Tensorize) == 2);
      CHECK(count(gpu32, StepKind::Tensorize) == 0);
      // On a warp's: both operands staged in shared memory, then in fragments.
      GpuTargetSpec warp_only;
      warp_only.warpgroup_mma = false;
      const Trace warp16 = default_gpu_schedule(bf16, warp_only);
      CHECK(count(warp16, StepKind::CacheRead) == 4);
      CHECK(count(warp16, StepKind::Tensorize) == 4);  // two loads, the product, the store
    }
    const Trace cpu32 = default_schedule(f32, host_spec()), cpu16 = default_schedule(bf16, host_spec());
    CHECK(count(cpu16, StepKind::Split) >= count(cpu32, StepKind::Split));
  }
}

TEST_CASE("search proposals compute what the reference interpreter computes", "[search][property]") {
  for (const OpCase& c : op_cases()) {
    ComputeDAG dag = build_op(c.op, c.params);
    HostTensors inputs = make_random_inputs(dag, 11);
    ReferenceTensors reference = evaluate_reference(dag, inputs);
    SearchOptions options;
    options.population = 24;
    options.generations = 2;
    SearchTarget target;
    target.cpu = host_spec();
    SearchPolicy policy(dag, target, options, 3);
    FeatureHashModel model;
    int checked = 0;
    // Round one: fresh samples; round two: mutants and crossovers of the measured ones.
    for (int round = 0; round < 2; ++round) {
      std::vector<Proposal> batch = round == 0 ? policy.ask(8, *make_random_model(5)) : policy.ask(8, model);
      for (const Proposal& p : batch) {
        CAPTURE(c.op, round, trace_to_json(p.trace));
        CHECK_FALSE(policy.measured(p.trace));
        CpuKernel kernel = build_cpu_kernel(dag, p.trace);
        CheckOutcome outcome = check_cpu_kernel(kernel, inputs, reference, dag);
        CHECK(outcome.correct);
        // Pretend latency: anything positive, distinct per schedule.
        policy.tell(p.trace, 1e-3 * (1 + checked));
        ++checked;
      }
    }
    CHECK(checked >= 8);
  }
}

TEST_CASE("the search never proposes a schedule it was told about, nor one twice", "[search]") {
  ComputeDAG dag = build_op("matmul", {{"M", "64"}, {"N", "64"}, {"K", "64"}});
  SearchOptions options;
  options.population = 32;
  options.generations = 2;
  SearchTarget target;
  target.cpu = host_spec();
  SearchPolicy policy(dag, target, options, 9);
  FeatureHashModel model;
  std::set<std::string> told;
  for (int round = 0; round < 4; ++round) {
    std::vector<Proposal> batch = policy.ask(16, model);
    REQUIRE_FALSE(batch.empty());
    std::set<std::string> keys;
    for (const Proposal& p : batch) {
      std::string key = trace_steps_key(p.trace);
      CHECK(keys.insert(key).second);
      CHECK(told.count(key) == 0);
      CHECK_FALSE(p.trace.decisions.empty());
    }
    for (const Proposal& p : batch) {
      policy.tell(p.trace, round == 0 ? std::nan("") : 1e-3);
      told.insert(trace_steps_key(p.trace));
    }
  }
}

TEST_CASE("evolution derives its proposals from the measured schedules' decisions", "[search]") {
  ComputeDAG dag = build_op("softmax", {{"rows", "61"}, {"cols", "127"}});
  SearchOptions options;
  options.population = 4;  // the four measured schedules, no fresh samples
  options.generations = 1;
  options.random_ratio = 0;
  options.crossover_ratio = 0;
  SearchTarget target;
  target.cpu = host_spec();
  SearchPolicy policy(dag, target, options, 4);
  std::unique_ptr<CostModel> random = make_random_model(2);
  std::vector<Proposal> first = policy.ask(4, *random);
  REQUIRE(first.size() == 4);
  for (const Proposal& p : first) policy.tell(p.trace, 1e-3);
  // The population is the measured schedules, so the ranked proposals are their one-decision mutants.
  FeatureHashModel model;
  std::vector<Proposal> second = policy.ask(8, model);
  REQUIRE_FALSE(second.empty());
  int one_decision_apart = 0;
  for (const Proposal& p : second)
    for (const Proposal& parent : first) {
      if (p.trace.decisions.size() != parent.trace.decisions.size()) continue;
      int changed = 0;
      for (size_t i = 0; i < p.trace.decisions.size(); ++i)
        changed += p.trace.decisions[i].values != parent.trace.decisions[i].values;
      if (changed == 1) {
        ++one_decision_apart;
        break;
      }
    }
  CHECK(one_decision_apart > 0);
}

TEST_CASE("random strategy samples sketches only and rejects unknown strategies", "[search]") {
  ComputeDAG dag = build_op("layernorm", {{"rows", "13"}, {"cols", "127"}});
  SearchOptions options;
  options.strategy = "random";
  SearchTarget target;
  target.cpu = host_spec();
  SearchPolicy policy(dag, target, options, 1);
  FeatureHashModel model;
  CHECK(policy.ask(5, model).size() == 5);
  options.strategy = "annealing";
  CHECK_THROWS_WITH(SearchPolicy(dag, target, options, 1), Catch::Contains("annealing"));
}

TEST_CASE("GPU sketches lower within the GPU's limits", "[search][gpu]") {
  for (const OpCase& c : op_cases()) {
    ComputeDAG dag = build_op(c.op, c.params);
    SearchTarget target;
    target.gpu = true;
    SearchPolicy policy(dag, target, SearchOptions{}, 2);
    std::unique_ptr<CostModel> random = make_random_model(3);
    std::vector<Proposal> batch = policy.ask(6, *random);
    CAPTURE(c.op);
    CHECK(batch.size() >= 3);
    for (const Proposal& p : batch) {
      // Lowered on its own within the spec's limits (48 KiB of shared memory, more on the tensor
      // cores; 1024 threads).
      LowerOptions options;
      options.target = LowerTarget::Gpu;
      options.gpu_limits.max_shared_bytes = shared_limit(GpuTargetSpec{}, p.trace);
      options.gpu_limits.max_threads_per_block = GpuTargetSpec{}.max_threads_per_block;
      CHECK_NOTHROW(lower(replay(dag, p.trace), "proposal", options));
    }
  }
}

TEST_CASE("task scheduler: one round each first, then by weighted expected gain", "[search][scheduler]") {
  TaskScheduler s({1.0, 1.0, 4.0});
  CHECK(*s.next() == 0);
  s.record(0, 10, 0.5);
  CHECK(*s.next() == 1);
  s.record(1, 10, 1.0);
  CHECK(*s.next() == 2);
  s.record(2, 10, 0.5);
  // The heavier task gains most from the same history.
  CHECK(s.gain(2) == Approx(4 * s.gain(0)));
  CHECK(*s.next() == 2);
  s.finish(2);
  // Same best latency now, but task 1 just improved (backward gradient) and task 0 did not.
  s.record(0, 20, 0.5);
  s.record(1, 20, 0.5);
  CHECK(s.gain(1) > s.gain(0));
  CHECK(*s.next() == 1);
  // A slower task has more to gain (forward gradient ~ best / trials).
  s.record(0, 30, 0.5);
  s.record(1, 30, 0.25);
  s.record(1, 40, 0.25);
  s.record(1, 50, 0.25);
  s.record(1, 60, 0.25);
  CHECK(*s.next() == 0);
  s.finish(0);
  // A task whose candidates all failed gets a second round first, then goes last.
  TaskScheduler f({1.0, 1.0});
  f.record(0, 10, std::numeric_limits<double>::infinity());
  f.record(1, 10, 1.0);
  CHECK(*f.next() == 0);
  f.record(0, 20, std::numeric_limits<double>::infinity());
  CHECK(*f.next() == 0);
  f.record(0, 30, std::numeric_limits<double>::infinity());
  CHECK(*f.next() == 1);
  s.finish(1);
  CHECK_FALSE(s.next().has_value());
  CHECK_THROWS(TaskScheduler({1.0, 0.0}));
}

TEST_CASE("task scheduler: unrelated workloads by relative gain, and a task that stops improving stops",
          "[search][scheduler]") {
  // Model latency: the slow task's absolute gain wins. Geometric mean of speed-ups: the same
  // relative gain counts alike, so the fast task that improves faster (relatively) wins.
  for (SchedulerObjective objective : {SchedulerObjective::ModelLatency, SchedulerObjective::GeometricMeanSpeedup}) {
    SchedulerOptions o;
    o.objective = objective;
    TaskScheduler s({1.0, 1.0}, o);
    s.record(0, 10, 10e-3);
    s.record(1, 10, 10e-6);
    s.record(0, 20, 9e-3);  // 10% better
    s.record(1, 20, 8e-6);  // 20% better
    CHECK(*s.next() == (objective == SchedulerObjective::ModelLatency ? 0u : 1u));
  }
  SchedulerOptions o;
  o.plateau_rounds = 3;
  TaskScheduler p({1.0, 1.0}, o);
  for (int64_t round = 1; round <= 3; ++round) {
    p.record(0, round * 10, 1.0);                               // never better
    p.record(1, round * 10, 1.0 / static_cast<double>(round));  // better every round
  }
  CHECK_FALSE(p.plateaued(0));  // three rounds, not yet three without a gain
  p.record(0, 40, 0.995);       // under 1%: no gain
  p.record(1, 40, 0.2);
  CHECK(p.plateaued(0));
  CHECK_FALSE(p.plateaued(1));
  CHECK(*p.next() == 1);
  p.finish(1);
  CHECK_FALSE(p.next().has_value());  // the plateaued task gets no more rounds
  // Off by default.
  TaskScheduler never({1.0});
  for (int64_t round = 1; round <= 10; ++round) never.record(0, round, 1.0);
  CHECK_FALSE(never.plateaued(0));
}

TEST_CASE("GPU row sketch stages a row read by several passes in shared memory", "[search][gpu]") {
  ComputeDAG dag = build_op("softmax", {{"rows", "7"}, {"cols", "61"}});
  std::vector<Sketch> sketches = gpu_sketches(dag, GpuTargetSpec{});
  Decider d(1, {{"rows.threads", {32}}, {"rows.stage_in_shared", {1}}});
  SketchResult r = apply_sketch(sketches[0], dag, d);
  INFO(trace_to_json(r.trace, true));
  bool staged = false;
  for (const Step& s : r.trace.steps) staged = staged || (s.kind == StepKind::CacheRead && s.scope == MemScope::Shared);
  CHECK(staged);
  LowerOptions options;
  options.target = LowerTarget::Gpu;
  CHECK_NOTHROW(lower(replay(dag, r.trace), "staged", options));
}

// Found on the H100: two staged rows of 768 floats for 8 rows a block fill the 48 KiB of shared
// memory exactly, and the arrays that combine a row's two warps pushed the launch over the limit
// (CUDA_ERROR_INVALID_VALUE). The verifier counts them, so the schedule fails to lower instead.
TEST_CASE("GPU limits count the shared arrays that combine a reduction across warps", "[search][gpu]") {
  ComputeDAG dag = build_op("bias_residual_layernorm", {{"rows", "16"}, {"cols", "768"}});
  std::vector<Sketch> sketches = gpu_sketches(dag, GpuTargetSpec{});
  LowerOptions options;
  options.target = LowerTarget::Gpu;
  options.gpu_limits.max_shared_bytes = GpuTargetSpec{}.max_shared_bytes;
  auto lowered = [&](int64_t per_block) {
    Decider d(1, {{"rows.threads", {64}},
                  {"rows.stage_in_shared", {1}},
                  {"rows.combine_by_shuffles", {1}},
                  {"rows.per_block", {per_block}},
                  {"rows.unroll", {1}},
                  {"rows.output_vector", {1}}});
    return replay(dag, apply_sketch(sketches[0], dag, d).trace);
  };
  CHECK_THROWS_WITH(lower(lowered(8), "full", options),
                    Catch::Contains("49280 bytes of shared memory (128 of them to combine reductions across warps)"));
  CHECK_NOTHROW(lower(lowered(4), "half", options));
}

TEST_CASE("GPU sketch of a depthwise convolution runs each short window in one thread", "[search][gpu]") {
  ComputeDAG dag = build_op("conv2d", {{"N", "2"},
                                       {"C", "3"},
                                       {"H", "13"},
                                       {"W", "7"},
                                       {"F", "3"},
                                       {"KH", "3"},
                                       {"KW", "3"},
                                       {"pad", "1"},
                                       {"groups", "3"}});
  std::vector<Sketch> sketches = gpu_sketches(dag, GpuTargetSpec{});
  Decider d(1);
  SketchResult r = apply_sketch(sketches[0], dag, d);
  INFO(trace_to_json(r.trace, true));
  bool rfactor = false;
  for (const Step& s : r.trace.steps) rfactor = rfactor || s.kind == StepKind::RFactor;
  CHECK_FALSE(rfactor);
  REQUIRE(r.trace.decisions.size() == 5);
  CHECK(r.trace.decisions[0].name == "elementwise.threads");
  CHECK(r.trace.decisions[1].name == "short.outputs_per_thread");
  CHECK(r.trace.decisions[2].name == "short.rows_per_block");
  CHECK(r.trace.decisions[3].name == "short.rows_per_thread");
  CHECK(r.trace.decisions[4].name == "short.unroll_window");
  LowerOptions options;
  options.target = LowerTarget::Gpu;
  CHECK_NOTHROW(lower(replay(dag, r.trace), "depthwise", options));

  // Two rows a thread: the output's row axis split [blocks, threadIdx.y, 2 unrolled], inside the
  // thread's column loop, and the register tile's row loop unrolled too.
  Decider two(1, {{"elementwise.threads", {32}},
                  {"short.outputs_per_thread", {4}},
                  {"short.rows_per_block", {2}},
                  {"short.rows_per_thread", {2}},
                  {"short.unroll_window", {1}}});
  Trace t = apply_sketch(sketches[0], dag, two).trace;
  INFO(trace_to_json(t, true));
  CHECK(has_split(t, "oh", {2, 2}));
  CHECK(has_annotation(t, "oh.2", Annotation::Unroll));
  CHECK_NOTHROW(lower(replay(dag, t), "two rows", options));
}

TEST_CASE("GPU default of a depthwise convolution: 4 outputs a thread, 4 rows a block, no guarded tail",
          "[search][gpu]") {
  // 112 columns = 28 threads x 4 outputs exactly; rows of the block on threadIdx.y.
  ComputeDAG dag = build_op("conv2d", {{"N", "2"},
                                       {"C", "8"},
                                       {"H", "12"},
                                       {"W", "112"},
                                       {"F", "8"},
                                       {"KH", "3"},
                                       {"KW", "3"},
                                       {"pad", "1"},
                                       {"groups", "8"}});
  Trace t = default_gpu_schedule(dag, GpuTargetSpec{});
  INFO(trace_to_json(t, true));
  CHECK(has_split(t, "ow", {28, 4}));
  CHECK(has_annotation(t, "oh.1", Annotation::ThreadY));
  LowerOptions options;
  options.target = LowerTarget::Gpu;
  std::string ir = to_string(lower(replay(dag, t), "depthwise", options));
  INFO(ir);
  CHECK(ir.find("if (") == std::string::npos);
}

TEST_CASE("GPU default of a long or batched matrix product: 8 x 4 outputs a thread, reduction 32 at a time, twice",
          "[search][gpu]") {
  auto pragma = [](const Trace& t, const std::string& name) {
    for (const Step& s : t.steps)
      if (s.kind == StepKind::Pragma && s.pragma == name) return s.value;
    return int64_t{0};
  };
  LowerOptions options;
  options.target = LowerTarget::Gpu;
  // 771 x 700 outputs (143 blocks of 64 x 64) of 261 products each, with bias and gelu: the
  // reduction in steps of 32 (the last one guarded), the next step fetched during this one's
  // products; each thread 8 rows by 4 columns. The tiles do not divide the shape, so every product
  // is guarded: only a thread's tile is unrolled, and the CUDA source stays small enough for NVRTC
  // to compile quickly (the whole step unrolled made 548 KB of it).
  ComputeDAG dense = build_op("dense", {{"M", "771"}, {"N", "700"}, {"K", "261"}, {"bias", "1"}, {"act", "gelu"}});
  Trace t = default_gpu_schedule(dense, GpuTargetSpec{});
  INFO(trace_to_json(t, true));
  CHECK(has_split(t, "k", {32}));
  CHECK(pragma(t, "double_buffer") == 1);
  CHECK(pragma(t, "auto_unroll_max_step") == 64);
  CHECK(has_split(t, "i1", {8, 8}));
  CHECK(has_split(t, "j1", {16, 4}));
  CHECK(emit_cuda(lower(replay(dense, t), "dense", options)).source.size() < 100 * 1000);
  // Tiles that divide the shape: the whole step unrolled (no guard in it).
  ComputeDAG square = build_op("matmul", {{"M", "1024"}, {"N", "768"}, {"K", "768"}});
  Trace whole = default_gpu_schedule(square, GpuTargetSpec{});
  CHECK(pragma(whole, "double_buffer") == 1);
  CHECK(pragma(whole, "auto_unroll_max_step") == 1024);
  CHECK_NOTHROW(lower(replay(square, whole), "square", options));

  // A batched product of 64 products (attention's scores) where the tiles divide it; not one they
  // do not divide, nor a 1x1 convolution of 64 channels (a product too, but of an image's rows).
  ComputeDAG scores = build_op("batch_matmul", {{"B", "96"}, {"M", "128"}, {"N", "128"}, {"K", "64"}});
  const Trace scores_default = default_gpu_schedule(scores, GpuTargetSpec{});
  CHECK(pragma(scores_default, "double_buffer") == 1);
  CHECK(pragma(scores_default, "auto_unroll_max_step") == 1024);
  CHECK_NOTHROW(lower(replay(scores, scores_default), "scores", options));
  ComputeDAG odd_scores = build_op("batch_matmul", {{"B", "3"}, {"M", "197"}, {"N", "771"}, {"K", "100"}});
  CHECK(pragma(default_gpu_schedule(odd_scores, GpuTargetSpec{}), "double_buffer") == 0);
  ComputeDAG pointwise = build_op("conv2d", {{"N", "1"}, {"C", "64"}, {"H", "56"}, {"W", "56"}, {"F", "256"},
                                             {"KH", "1"}, {"KW", "1"}});
  CHECK(pragma(default_gpu_schedule(pointwise, GpuTargetSpec{}), "double_buffer") == 0);
  // Nor where the reduction is short in a plain product, the input padded (a 3x3 convolution) or
  // the blocks few (split-K there).
  ComputeDAG short_product = build_op("matmul", {{"M", "1024"}, {"N", "1024"}, {"K", "128"}});
  CHECK(pragma(default_gpu_schedule(short_product, GpuTargetSpec{}), "double_buffer") == 0);
  ComputeDAG conv = build_op("conv2d", {{"N", "16"}, {"C", "256"}, {"H", "14"}, {"W", "14"}, {"F", "256"},
                                        {"KH", "3"}, {"KW", "3"}, {"pad", "1"}});
  CHECK(pragma(default_gpu_schedule(conv, GpuTargetSpec{}), "double_buffer") == 0);
  ComputeDAG few = build_op("matmul", {{"M", "97"}, {"N", "61"}, {"K", "771"}});
  CHECK(pragma(default_gpu_schedule(few, GpuTargetSpec{}), "double_buffer") == 0);
}

TEST_CASE("GPU tiles fold short rows into the axis before them when the same operand alone reads both",
          "[search][gpu]") {
  // A transformer's product as torch exports it: activations [sequence 24, batch 8, 96] by one
  // weight matrix, plus a bias. Rows of 8 would leave 7/8 of each 64-row block idle; folded, the
  // 192 rows tile like a matrix's.
  ComputeDAG dag = parse_dag_text(
      "X = placeholder(float32[24, 8, 96])\n"
      "W = placeholder(float32[96, 72])\n"
      "bias = placeholder(float32[72])\n"
      "mm[s:24, b:8, n:72] = sum(k:96; (X[s, b, k] * W[k, n]))  : float32\n"
      "Y[i:24, j:8, l:72] = (mm[i, j, l] + bias[l])  : float32\n");
  auto folds = [](const Trace& t) {
    return std::any_of(t.steps.begin(), t.steps.end(), [](const Step& s) {
      return s.kind == StepKind::Fuse && s.stage == "Y" && s.loops == std::vector<std::string>{"i", "j"};
    });
  };
  LowerOptions options;
  options.target = LowerTarget::Gpu;
  Trace t = default_gpu_schedule(dag, GpuTargetSpec{});
  INFO(trace_to_json(t, true));
  CHECK(folds(t));
  CHECK(has_split(t, "i@j", {16, 4}));
  CHECK_FALSE(has_annotation(t, "i", Annotation::BlockZ));
  CHECK_NOTHROW(lower(replay(dag, t), "folded", options));
  int folded = 0;
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    Trace r = random_gpu_schedule(dag, seed, GpuTargetSpec{});
    folded += folds(r);
    CHECK_NOTHROW(lower(replay(dag, r), "random", options));
  }
  CHECK(folded > 0);
  // BERT-base's QKV product at batch 8: 1024 rows folded from [128, 8] by 2304 columns, 576 blocks
  // in the pipelined tiles. Each block stages only its own 8 x 8 rows (64 rows by 32 of the
  // reduction, twice): the whole sequence would not fit the shared memory.
  ComputeDAG qkv = parse_dag_text(
      "X = placeholder(float32[128, 8, 768])\n"
      "W = placeholder(float32[768, 2304])\n"
      "Y[i:128, j:8, l:2304] = sum(k:768; (X[i, j, k] * W[k, l]))  : float32\n");
  Trace q = default_gpu_schedule(qkv, GpuTargetSpec{});
  INFO(trace_to_json(q, true));
  CHECK(folds(q));
  CHECK(std::any_of(q.steps.begin(), q.steps.end(),
                    [](const Step& s) { return s.kind == StepKind::Pragma && s.pragma == "double_buffer"; }));
  CHECK_NOTHROW(lower(replay(qkv, q), "qkv", options));

  // A batch of products reads its batch axis in both operands: the batch stays on the blocks.
  ComputeDAG bmm = build_op("batch_matmul", {{"B", "12"}, {"M", "8"}, {"N", "64"}, {"K", "32"}});
  Trace b = default_gpu_schedule(bmm, GpuTargetSpec{});
  INFO(trace_to_json(b, true));
  CHECK(std::none_of(b.steps.begin(), b.steps.end(),
                     [](const Step& s) { return s.kind == StepKind::Fuse && !s.stage.ends_with(".shared"); }));
  CHECK(has_annotation(b, "b", Annotation::BlockZ));
}

TEST_CASE("GPU contractions with few outputs and a long reduction split it (split-K)", "[search][gpu]") {
  auto rfactors = [](const Trace& t) {
    std::vector<Step> out;
    for (const Step& s : t.steps)
      if (s.kind == StepKind::RFactor) out.push_back(s);
    return out;
  };
  LowerOptions options;
  options.target = LowerTarget::Gpu;
  // A 3x3 convolution of 100 channels into 61 at 7x7: one block of 64 x 64 outputs per row of the
  // image, 7 in all. The default splits the 100 channels into 8 parts of 13 (the last guarded:
  // 104 > 100), the parts first among the partial sums' axes (blocks), the sum in the epilogue's
  // kernel, one output per thread.
  ComputeDAG conv = build_op("conv2d", {{"N", "1"}, {"C", "100"}, {"H", "7"}, {"W", "7"}, {"F", "61"}, {"KH", "3"},
                                        {"KW", "3"}, {"pad", "1"}, {"bias", "1"}, {"act", "relu"}});
  Trace t = default_gpu_schedule(conv, GpuTargetSpec{});
  INFO(trace_to_json(t, true));
  std::vector<Step> rf = rfactors(t);
  REQUIRE(rf.size() == 1);
  CHECK(rf[0].stage == "conv");
  CHECK(rf[0].loop == "rc.0");
  CHECK(rf[0].value == 0);
  CHECK(has_split(t, "rc", {13}));
  const State s = replay(conv, t);
  CHECK(s.op("conv.rf").axes[0].extent == 8);
  CHECK(s.stage("conv.rf").scope == MemScope::Global);
  CHECK(s.stage("conv").scope == MemScope::Local);
  LoweredFunc f;
  REQUIRE_NOTHROW(f = lower(s, "split", options));

  // A matmul whose output fills its blocks keeps its reduction whole, and the search is not asked.
  ComputeDAG big = build_op("matmul", {{"M", "2048"}, {"N", "1024"}, {"K", "1024"}});
  CHECK(rfactors(default_gpu_schedule(big, GpuTargetSpec{})).empty());
  Decider d(3);
  Trace sampled = apply_sketch(gpu_sketches(big, GpuTargetSpec{})[0], big, d).trace;
  for (const TraceDecision& dec : sampled.decisions) CHECK(dec.name != "split_k");

  // A matmul of few outputs and a long reduction (97 x 61 by 771; no epilogue, so the sum over
  // the parts goes through registers): each offered split lowers, and 4 parts split k by 193.
  ComputeDAG mm = build_op("matmul", {{"M", "97"}, {"N", "61"}, {"K", "771"}});
  for (int64_t parts : {1, 2, 4, 8}) {
    Decider given(1, {{"split_k", {parts}}});
    Trace p = apply_sketch(gpu_sketches(mm, GpuTargetSpec{})[0], mm, given).trace;
    INFO(parts << ": " << trace_to_json(p, true));
    CHECK(rfactors(p).size() == (parts > 1 ? 1u : 0u));
    if (parts == 4) CHECK(has_split(p, "k", {193}));
    CHECK_NOTHROW(lower(replay(mm, p), "parts", options));
  }
}

TEST_CASE("GPU contraction sketch: the staged tiles in two to four copies, fetched that many steps ahead less one",
          "[search][gpu]") {
  LowerOptions options;
  options.target = LowerTarget::Gpu;
  // 197 x 771 outputs of 261 products: no tile divides them, so the last step's fetch is guarded.
  ComputeDAG mm = build_op("matmul", {{"M", "197"}, {"N", "771"}, {"K", "261"}});
  for (int64_t copies : {2, 3, 4}) {
    Decider given(5, {{"block.rows", {64}}, {"block.cols", {64}}, {"thread.rows", {8}}, {"thread.cols", {4}},
                      {"reduce.tile", {16}}, {"stage.a", {1}}, {"stage.b", {1}}, {"stage.double_buffer", {1}},
                      {"stage.copies", {copies}}, {"split_k", {1}}});
    Trace t = apply_sketch(gpu_sketches(mm, GpuTargetSpec{})[0], mm, given).trace;
    INFO(copies << ": " << trace_to_json(t, true));
    const bool pipelined = std::any_of(t.steps.begin(), t.steps.end(), [&](const Step& s) {
      return s.kind == StepKind::Pragma &&
             (copies == 2 ? s.pragma == "double_buffer" && s.value == 1 : s.pragma == "pipeline_stages" && s.value == copies);
    });
    CHECK(pipelined);
    LoweredFunc f;
    REQUIRE_NOTHROW(f = lower(replay(mm, t), "copies", options));
    const std::string ir = to_string(f);
    // Each operand's tile of 64 x 16 in `copies` copies.
    CHECK(ir.find("A.shared[float32 * " + std::to_string(64 * 16 * copies) + "], shared") != std::string::npos);
    CHECK(ir.find("B.shared[float32 * " + std::to_string(64 * 16 * copies) + "], shared") != std::string::npos);
    CHECK_NOTHROW(emit_cuda(f));
  }
}

TEST_CASE("GPU default pads on all its threads, with or without an epilogue, and computes a Select epilogue in "
          "the contraction's kernel", "[search][gpu]") {
  auto pad_threads = [](const Trace& t) {
    return std::any_of(t.steps.begin(), t.steps.end(), [](const Step& s) {
      return s.kind == StepKind::Annotate && s.stage == "pad" && s.annotation == Annotation::ThreadX;
    });
  };
  // A stride-2 convolution at odd sizes, its output the contraction itself (no bias, no activation).
  ComputeDAG plain = build_op("conv2d", {{"N", "1"}, {"C", "13"}, {"H", "61"}, {"W", "61"}, {"F", "19"}, {"KH", "3"},
                                         {"KW", "3"}, {"stride", "2"}, {"pad", "1"}});
  const Trace t = default_gpu_schedule(plain, GpuTargetSpec{});
  INFO(trace_to_json(t, true));
  CHECK(pad_threads(t));
  LowerOptions options;
  options.target = LowerTarget::Gpu;
  const CudaProgram p = emit_cuda(lower(replay(plain, t), "plain", options));
  for (const CudaLaunch& l : p.launches) CHECK(l.block[0] * l.block[1] * l.block[2] >= 32);
  // A LeakyRelu epilogue (a Select) is the epilogue's, not a padded input: inlined, no scratch.
  ComputeDAG leaky = parse_dag_text(
      "A = placeholder(float32[61, 45])\nB = placeholder(float32[45, 77])\n"
      "P[i:61, j:77] = sum(k:45; (A[i, k] * B[k, j]))  : float32\n"
      "L[i1:61, j1:77] = select((P[i1, j1] > 0.0f), P[i1, j1], (0.01f * P[i1, j1]))  : float32\n"
      "Y[i2:61, j2:77] = (L[i2, j2] + 1.0f)  : float32\n");
  const State s = replay(leaky, default_gpu_schedule(leaky, GpuTargetSpec{}));
  CHECK(s.stage("L").loc == ComputeLoc::Inline);
  CHECK(emit_cuda(lower(s, "leaky", options)).scratch.empty());
}

TEST_CASE("GPU default keeps its scratch within the target's budget: a padded input past it is read through "
          "its bounds tests", "[search][gpu]") {
  // The 3x3 convolution of 100 channels into 61 at 7x7 again: its padded input takes 100 x 9 x 9
  // floats (32400 bytes), its 8 parts of partial sums 8 x 61 x 7 x 7 floats (95648 bytes).
  ComputeDAG conv = build_op("conv2d", {{"N", "1"}, {"C", "100"}, {"H", "7"}, {"W", "7"}, {"F", "61"}, {"KH", "3"},
                                        {"KW", "3"}, {"pad", "1"}, {"bias", "1"}, {"act", "relu"}});
  std::string pad;
  for (const Operation& op : conv.ops())
    if (!op.is_placeholder && op.body->op == ExprOp::Select) pad = op.name;
  REQUIRE(!pad.empty());
  LowerOptions options;
  options.target = LowerTarget::Gpu;
  struct Scratch {
    ComputeLoc pad;
    int64_t bytes = 0;
  };
  auto scratch_of = [&](int64_t budget) {
    GpuTargetSpec target;
    target.max_scratch_bytes = budget;
    const Trace t = default_gpu_schedule(conv, target);
    INFO(budget << ": " << trace_to_json(t, true));
    const State s = replay(conv, t);
    Scratch out{s.stage(pad).loc};
    for (const BufferParam& p : emit_cuda(lower(s, "budget", options)).scratch)
      out.bytes += num_elements(p) * dtype_bytes(p.dtype);
    return out;
  };
  const Scratch unlimited = scratch_of(0);
  CHECK(unlimited.pad == ComputeLoc::Root);
  CHECK(unlimited.bytes == 32400 + 95648);
  // One byte short of both: the padded input and 4 parts (47824 bytes); then the padded input alone.
  const Scratch four_parts = scratch_of(32400 + 95647);
  CHECK(four_parts.pad == ComputeLoc::Root);
  CHECK(four_parts.bytes == 32400 + 47824);
  const Scratch padded_only = scratch_of(32400 + 11955);
  CHECK(padded_only.pad == ComputeLoc::Root);
  CHECK(padded_only.bytes == 32400);
  // Short of the padded input: read through its bounds tests, the budget left to the parts (2).
  const Scratch inlined = scratch_of(32399);
  CHECK(inlined.pad == ComputeLoc::Inline);
  CHECK(inlined.bytes == 23912);
  const Scratch none = scratch_of(1);
  CHECK(none.pad == ComputeLoc::Inline);
  CHECK(none.bytes == 0);
  // Counted as a model's memory plan places buffers, in whole lines of 64 bytes: the padded input
  // takes 32448 bytes, past a budget of 32400.
  GpuTargetSpec lines;
  lines.max_scratch_bytes = 32400;
  lines.scratch_alignment = 64;
  CHECK(replay(conv, default_gpu_schedule(conv, lines)).stage(pad).loc == ComputeLoc::Inline);
  lines.max_scratch_bytes = 32448;
  CHECK(replay(conv, default_gpu_schedule(conv, lines)).stage(pad).loc == ComputeLoc::Root);
}
