// Every option of a tuning session: validated once where they enter (validate_tune_options) and
// saved with the session in the log (tune_options_json). Research settings — the cost model's
// design, the search's population, how leaders are re-timed — come from a tuning config file
// (search/tune_config.h, docs/tuning_config.md); the defaults are the ones that won the ablations.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "measure/measurer.h"
#include "schedule/target_kind.h"
#include "search/cost_model_choice.h"
#include "search/search_policy.h"

namespace tessel {

// How the tuner settles which schedule is the best on a noisy machine (search/leader_retiming.h).
struct LeaderOptions {
  int leaders = 3;                // fastest schedules re-timed after each round (0: none)
  int timings = 3;                // timings (the trial's included) a leader is brought up to
  bool spread = true;             // one timing a round per schedule (false: all at once)
  std::optional<bool> yardstick;  // time the default around each retime; unset: on for llvm, off for cuda
};

struct TuneOptions {
  TargetKind target = TargetKind::Llvm;
  int64_t trials = 200;      // per task, counted over the whole log
  std::optional<int> batch;  // candidates per round; unset: 32 (llvm) or 64 (cuda)
  uint64_t seed = 0;
  std::optional<double> time_budget_s;         // stop after the round that passes it, then settle leaders
  CostModelChoice costmodel;                   // a new model's design
  std::optional<std::string> model_path;       // a pre-trained XGBoost model to start from instead
  std::optional<std::string> save_model_path;  // where to save the model at the end
  LeaderOptions leaders;
  SearchOptions search;
  MeasureOptions measure;  // its target is always `target`
  CpuTargetSpec cpu;       // llvm: what the schedules are made for
  GpuTargetSpec gpu;       // cuda
};

// Throws InputError naming the first bad option (tune() calls it too, before anything starts).
void validate_tune_options(const TuneOptions& options);

int resolved_batch(const TuneOptions& options);
bool resolved_yardstick(const TuneOptions& options);
SearchTarget search_target(const TuneOptions& options);
MeasureOptions measure_options(const TuneOptions& options);

// The options as saved with the session, `model` being the one the session uses (a loaded model
// keeps its own objective, input and ranker).
std::string tune_options_json(const TuneOptions& options, const CostModel& model);

}  // namespace tessel
