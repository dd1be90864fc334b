#include "search/tune_config.h"

#include "schedule/te/error.h"
#include "schedule/te/json_fields.h"

namespace tessel {

void apply_tune_config(const std::string& path, TuneOptions& options) {
  const nlohmann::json root = parse_json_file(path);
  const JsonObject config(root, path + ": ");
  config.allow_only({"costmodel", "search", "leaders", "scheduling"});
  if (std::optional<JsonObject> scheduling = config.object("scheduling")) {
    scheduling->allow_only({"objective", "plateau_rounds", "plateau_gain"});
    if (std::optional<std::string> objective = scheduling->string("objective")) {
      if (*objective == "latency")
        options.scheduling.objective = SchedulerObjective::ModelLatency;
      else if (*objective == "geomean")
        options.scheduling.objective = SchedulerObjective::GeometricMeanSpeedup;
      else
        throw InputError(scheduling->field("objective") + ": '" + *objective + "' is not latency or geomean");
    }
    if (std::optional<int64_t> rounds = scheduling->integer("plateau_rounds", 0, 100000))
      options.scheduling.plateau_rounds = static_cast<int>(*rounds);
    options.scheduling.plateau_gain =
        scheduling->number("plateau_gain", 0, 0.99).value_or(options.scheduling.plateau_gain);
  }
  if (const nlohmann::json* section = root.contains("costmodel") ? &root.at("costmodel") : nullptr)
    options.costmodel = cost_model_choice_from_json(*section, config.field("costmodel"));
  if (std::optional<JsonObject> search = config.object("search")) {
    search->allow_only(
        {"strategy", "population", "generations", "batch", "crossover_ratio", "random_ratio", "measured_seeds"});
    SearchOptions& s = options.search;
    if (std::optional<std::string> strategy = search->string("strategy")) {
      if (*strategy != "evolution" && *strategy != "random")
        throw InputError(search->field("strategy") + ": '" + *strategy + "' is not evolution or random");
      s.strategy = *strategy;
    }
    s.population = static_cast<int>(search->integer("population", 2, 100000).value_or(s.population));
    s.generations = static_cast<int>(search->integer("generations", 0, 1000).value_or(s.generations));
    if (std::optional<int64_t> batch = search->integer("batch", 1, 100000)) options.batch = static_cast<int>(*batch);
    s.crossover_ratio = search->number("crossover_ratio", 0, 1).value_or(s.crossover_ratio);
    s.random_ratio = search->number("random_ratio", 0, 1).value_or(s.random_ratio);
    s.measured_seeds = static_cast<int>(search->integer("measured_seeds", 0, 100000).value_or(s.measured_seeds));
  }
  if (std::optional<JsonObject> leaders = config.object("leaders")) {
    leaders->allow_only({"retime", "timings", "spread", "yardstick"});
    LeaderOptions& l = options.leaders;
    l.leaders = static_cast<int>(leaders->integer("retime", 0, 1000).value_or(l.leaders));
    l.timings = static_cast<int>(leaders->integer("timings", 1, 1000).value_or(l.timings));
    l.spread = leaders->boolean("spread").value_or(l.spread);
    if (std::optional<bool> yardstick = leaders->boolean("yardstick")) l.yardstick = yardstick;
  }
}

CostModelChoice read_cost_model_config(const std::string& path) {
  const nlohmann::json root = parse_json_file(path);
  const JsonObject config(root, path + ": ");
  config.allow_only({"costmodel", "search", "leaders", "scheduling"});
  if (!root.contains("costmodel")) return {};
  return cost_model_choice_from_json(root.at("costmodel"), config.field("costmodel"));
}

}  // namespace tessel
