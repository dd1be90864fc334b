// Sketches: schedule generators whose choices are left open as named decisions. A sketch rule
// (cpu_sketches / gpu_sketches) looks at a DAG's structure and derives the loop structure — which
// stages are inlined, tiled at several levels, cached, rfactored or fused into their consumer — and
// a Decider fills in each decision (tile lengths, unroll depth, compute location, parallel
// granularity, thread counts). The trace records the sketch and every decision, so a search
// mutates a decision and rebuilds the steps from the sketch, as TVM MetaSchedule replays a trace.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "schedule/state/trace.h"
#include "search/schedule_patterns.h"
#include "search/target_spec.h"

namespace tessel {

// What a decision chooses; mutators are picked per kind.
enum class DecisionKind : uint8_t { Tile, Unroll, ComputeLocation, Parallel, ThreadBinding, Vector, Structure };
const char* to_string(DecisionKind kind);

// The domain of one decision, as the sketch stated it when asking.
struct DecisionSpace {
  std::string name;
  DecisionKind kind = DecisionKind::Tile;
  int64_t extent = 0;              // Tile: the loop's length
  int levels = 0;                  // Tile: how many inner lengths
  std::vector<int64_t> preferred;  // Tile: lengths worth trying more often (vector widths)
  std::vector<int64_t> options;    // otherwise: the allowed values
};

// Answers a sketch's questions: from `given` decisions when they fit the question's domain (replay
// and mutation), otherwise by sampling (tile lengths need not divide the loop).
class Decider {
 public:
  explicit Decider(uint64_t seed, std::vector<TraceDecision> given = {});

  // Inner lengths l1..l_levels of a loop of `extent` split into levels + 1 loops.
  std::vector<int64_t> tile(const std::string& name, int64_t extent, int levels, DecisionKind kind = DecisionKind::Tile,
                            std::vector<int64_t> preferred = {});
  // One of `options`.
  int64_t choose(const std::string& name, const std::vector<int64_t>& options, DecisionKind kind);

  const std::vector<TraceDecision>& decisions() const { return made_; }
  const std::vector<DecisionSpace>& spaces() const { return spaces_; }
  std::mt19937_64& rng() { return rng_; }

 private:
  const TraceDecision* given(const std::string& name) const;
  void record(DecisionSpace space, std::vector<int64_t> values);

  std::mt19937_64 rng_;
  std::vector<TraceDecision> given_;
  std::vector<TraceDecision> made_;
  std::vector<DecisionSpace> spaces_;
};

// Samples lengths for a tile of `extent` split `levels` times: divisors, powers of two, preferred
// lengths and arbitrary ones, each level within what the outer levels left.
std::vector<int64_t> sample_tile(std::mt19937_64& rng, int64_t extent, int levels, const std::vector<int64_t>& preferred);

struct Sketch {
  std::string name;
  // Builds the steps, asking `decider` for every choice. Steps that do not apply are skipped (see
  // TraceBuilder), so any decisions give a trace that replays.
  std::function<void(Decider&, TraceBuilder&)> build;
};

// A sketch applied with `decider`: the trace, with the sketch name and the decisions made.
struct SketchResult {
  Trace trace;
  std::vector<DecisionSpace> spaces;
};
SketchResult apply_sketch(const Sketch& sketch, const ComputeDAG& dag, Decider& decider);

// The sketch rules, for the CPU and the GPU. Never empty.
std::vector<Sketch> cpu_sketches(const ComputeDAG& dag, const CpuTargetSpec& target);
std::vector<Sketch> gpu_sketches(const ComputeDAG& dag, const GpuTargetSpec& target);

}  // namespace tessel
