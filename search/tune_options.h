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
#include "search/task_scheduler.h"

namespace tessel {

// How the tuner settles which schedule is the best on a noisy machine (search/leader_retiming.h).
struct LeaderOptions {
  int leaders = 3;                // fastest schedules re-timed after each round (0: none)
  int timings = 3;                // timings (the trial's included) a leader is brought up to
  bool spread = true;             // one timing a round per schedule (false: all at once)
  std::optional<bool> yardstick;  // time the default around each retime; unset: on for llvm, off for cuda
};

// How the session shares its trials among tasks (search/task_scheduler.h). Unset fields: a model's
// tasks (a shared budget) minimise its latency and stop a task after 5 rounds without a 1% gain; a
// suite's cases (a budget each) maximise the geometric mean of their speed-ups and never stop early.
struct SchedulingOptions {
  std::optional<SchedulerObjective> objective;
  std::optional<int> plateau_rounds;
  double plateau_gain = 0.01;
};

struct TuneOptions {
  TargetKind target = TargetKind::Llvm;
  int64_t trials = 200;        // counted over the whole log: per task, or for all of them
  bool shared_budget = false;  // `trials` is the total of every task's (a model's budget)
  std::optional<int> batch;    // candidates per round; unset: 32 (llvm) or 64 (cuda)
  uint64_t seed = 0;
  std::optional<double> time_budget_s;         // stop after the round that passes it, then settle leaders
  CostModelChoice costmodel;                   // a new model's design
  std::optional<std::string> model_path;       // a pre-trained XGBoost model to start from instead
  std::optional<std::string> save_model_path;  // where to save the model at the end
  LeaderOptions leaders;
  SchedulingOptions scheduling;
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
SchedulerOptions scheduler_options(const TuneOptions& options);
MeasureOptions measure_options(const TuneOptions& options);

// The options as saved with the session, `model` being the one the session uses (a loaded model
// keeps its own objective, input and ranker).
std::string tune_options_json(const TuneOptions& options, const CostModel& model);

}  // namespace tessel
