#include "search/tune_options.h"

#include <nlohmann/json.hpp>

#include "schedule/te/error.h"

namespace tessel {

void validate_tune_options(const TuneOptions& o) {
  if (o.trials < 1) throw InputError("the trial budget must be at least 1");
  if (o.batch && *o.batch < 1) throw InputError("search.batch must be at least 1");
  if (o.time_budget_s && !(*o.time_budget_s > 0 && *o.time_budget_s < 1e12))
    throw InputError("the time budget must be a positive number of seconds");
  if (o.leaders.leaders < 0) throw InputError("leaders.retime must not be negative");
  if (o.leaders.timings < 1) throw InputError("leaders.timings must be at least 1");
  if (o.scheduling.plateau_rounds && *o.scheduling.plateau_rounds < 0)
    throw InputError("scheduling.plateau_rounds must not be negative");
  if (!(o.scheduling.plateau_gain >= 0 && o.scheduling.plateau_gain < 1))
    throw InputError("scheduling.plateau_gain must lie in [0, 1)");
  if (o.search.population < 2) throw InputError("search.population must be at least 2");
  if (o.search.generations < 0) throw InputError("search.generations must not be negative");
  if (!(o.search.crossover_ratio >= 0 && o.search.crossover_ratio <= 1) ||
      !(o.search.random_ratio >= 0 && o.search.random_ratio <= 1))
    throw InputError("search ratios must lie in [0, 1]");
  if (o.search.strategy != "evolution" && o.search.strategy != "random")
    throw InputError("search.strategy must be evolution or random, not '" + o.search.strategy + "'");
  check_cost_model_choice(o.costmodel, o.target, o.model_path);
  if (o.save_model_path && o.costmodel.kind == CostModelKind::Random)
    throw InputError("the random cost model has nothing to save");
}

int resolved_batch(const TuneOptions& o) { return o.batch.value_or(o.target == TargetKind::Cuda ? 64 : 32); }

bool resolved_yardstick(const TuneOptions& o) { return o.leaders.yardstick.value_or(o.target == TargetKind::Llvm); }

SearchTarget search_target(const TuneOptions& o) { return SearchTarget{o.target == TargetKind::Cuda, o.cpu, o.gpu}; }

SchedulerOptions scheduler_options(const TuneOptions& o) {
  SchedulerOptions s;
  s.objective = o.scheduling.objective.value_or(o.shared_budget ? SchedulerObjective::ModelLatency
                                                                : SchedulerObjective::GeometricMeanSpeedup);
  s.plateau_rounds = o.scheduling.plateau_rounds.value_or(o.shared_budget ? 5 : 0);
  s.plateau_gain = o.scheduling.plateau_gain;
  return s;
}

MeasureOptions measure_options(const TuneOptions& o) {
  MeasureOptions m = o.measure;
  m.target = o.target;
  return m;
}

std::string tune_options_json(const TuneOptions& o, const CostModel& model) {
  auto optional = [](const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
  nlohmann::json j;
  j["target"] = target_kind_name(o.target);
  j["trials"] = o.trials;
  j["shared_budget"] = o.shared_budget;
  j["batch"] = resolved_batch(o);
  j["seed"] = o.seed;
  j["time_budget_s"] = optional(o.time_budget_s);
  j["model_path"] = optional(o.model_path);
  nlohmann::json cm = {{"kind", model.name()}};
  if (const auto* xgb = dynamic_cast<const XGBoostModel*>(&model)) {
    const XGBoostModelOptions& x = xgb->options();
    cm["objective"] = objective_name(x.objective);
    cm["input"] = model_input_name(x.input);
    cm["mlp_weight"] = x.mlp_weight;
    cm["network"] = x.mlp_weight > 0 ? nlohmann::json(mlp_network_name(x.mlp)) : nlohmann::json();
  }
  j["costmodel"] = cm;
  j["leaders"] = {{"retime", o.leaders.leaders},
                  {"timings", o.leaders.timings},
                  {"spread", o.leaders.spread},
                  {"yardstick", resolved_yardstick(o)}};
  const SchedulerOptions scheduler = scheduler_options(o);
  j["scheduling"] = {{"objective", scheduler.objective == SchedulerObjective::ModelLatency ? "latency" : "geomean"},
                     {"plateau_rounds", scheduler.plateau_rounds},
                     {"plateau_gain", scheduler.plateau_gain}};
  j["search"] = {{"strategy", o.search.strategy},
                 {"population", o.search.population},
                 {"generations", o.search.generations},
                 {"crossover_ratio", o.search.crossover_ratio},
                 {"random_ratio", o.search.random_ratio},
                 {"measured_seeds", o.search.measured_seeds},
                 {"max_fresh_attempts", o.search.max_fresh_attempts}};
  j["cpu"] = {{"vector_lanes", o.cpu.vector_lanes}, {"threads", o.cpu.num_threads}};
  j["gpu"] = {{"max_threads_per_block", o.gpu.max_threads_per_block},
              {"max_shared_bytes", o.gpu.max_shared_bytes},
              {"max_shared_bytes_tensor_core", o.gpu.max_shared_bytes_tensor_core}};
  j["measure"] = {{"builders", o.measure.builders},           {"build_timeout_s", o.measure.build_timeout_s},
                  {"run_timeout_s", o.measure.run_timeout_s}, {"min_time_s", o.measure.run.min_time_s},
                  {"budget_s", o.measure.run.budget_s},       {"flush", o.measure.run.flush}};
  return j.dump();
}

}  // namespace tessel
