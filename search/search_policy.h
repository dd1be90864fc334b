// The search for one task (a workload on a target), in ask/tell form: ask() proposes a batch of
// schedules never measured before, tell() hands back their measured latencies.
//
// Evolutionary search, after Ansor: a population seeded with the best measured schedules and fresh
// sketch samples evolves for a few generations by mutation (one decision changed: a tile length, an
// unroll depth, a compute location, the parallel granularity, a thread count) and crossover (each
// stage's decisions taken from one of two parents of the same sketch), every child ranked by the cost
// model. A round measures the best-ranked new schedules plus a small share of fresh random ones.
// Duplicates are removed by the steps' structural key, across the population and the log.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "costmodel/cost_model.h"
#include "search/sketch.h"

namespace tessel {

// Every option of the search, saved with each tuning session.
struct SearchOptions {
  std::string strategy = "evolution";  // "evolution" or "random" (fresh sketch samples only)
  int population = 192;                // schedules per generation
  int generations = 3;
  double crossover_ratio = 0.3;        // share of children made by crossover
  double random_ratio = 0.05;          // share of each batch sampled fresh, unranked
  int measured_seeds = 32;             // best measured schedules seeding each population
  int max_fresh_attempts = 20;         // rounds of fresh samples for a batch before the space counts as exhausted
};

// What the search needs of the target.
struct SearchTarget {
  bool gpu = false;
  CpuTargetSpec cpu;
  GpuTargetSpec gpu_spec;
};

// A schedule the search proposes, with what the model saw of it.
struct Proposal {
  Trace trace;
  ProgramFeatures features;
  double score = 0;
};

class SearchPolicy {
 public:
  SearchPolicy(const ComputeDAG& dag, const SearchTarget& target, const SearchOptions& options, uint64_t seed);

  // Up to `n` schedules that are valid on the target and were never told; fewer only when the
  // space is exhausted. `model` ranks them (untrained: the first batch is random samples).
  std::vector<Proposal> ask(int n, CostModel& model);

  // A measured schedule: latency in seconds, or a non-finite / non-positive value for a failure.
  void tell(const Trace& trace, double latency_s);

  // A schedule measured outside the search (the default): never proposed.
  void reserve(const Trace& trace) { measured_keys_.insert(trace_steps_key(trace)); }

  // Whether a schedule with these steps was told (or reserved) already.
  bool measured(const Trace& trace) const { return measured_keys_.count(trace_steps_key(trace)) > 0; }
  // Features of a valid schedule for this target; nullopt when it does not lower.
  std::optional<ProgramFeatures> features(const Trace& trace) const;
  // The same for many schedules, lowered on every core (lowering is what a search round costs).
  std::vector<std::optional<ProgramFeatures>> features(const std::vector<const Trace*>& traces) const;

  const std::vector<Sketch>& sketches() const { return sketches_; }

 private:
  struct Individual {
    SketchResult schedule;
    std::string key;  // trace_steps_key
    ProgramFeatures features;
    double score = 0;
  };

  // Sketch applications are cheap; lowering them for their features is not, so candidates are
  // proposed first and evaluated together, on every core, after duplicates are dropped.
  std::optional<SketchResult> apply(const Sketch& sketch, std::vector<TraceDecision> decisions);
  std::optional<SketchResult> fresh();
  std::optional<SketchResult> mutate(const Individual& parent);
  std::optional<SketchResult> crossover(const Individual& a, const Individual& b);
  // The valid ones, with features, in order; `seen` keys are skipped and extended.
  std::vector<Individual> evaluate(std::vector<SketchResult> schedules, std::unordered_set<std::string>& seen);
  const Sketch* sketch_named(const std::string& name) const;
  std::vector<Individual> initial_population(std::unordered_set<std::string>& seen);
  // Programs of the round's initial population a relative model scores against (predict_with_reference).
  static constexpr size_t kReferencePrograms = 64;
  void score(std::vector<Individual>& individuals, CostModel& model, const std::vector<ProgramFeatures>& reference);

  ComputeDAG dag_;
  SearchTarget target_;
  SearchOptions options_;
  std::mt19937_64 rng_;
  std::vector<Sketch> sketches_;
  std::unordered_set<std::string> measured_keys_;
  struct Measured {
    Trace trace;
    double latency_s;
  };
  std::vector<Measured> measured_ok_;  // successful ones, best first
};

}  // namespace tessel
