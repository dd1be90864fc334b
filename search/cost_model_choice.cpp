#include "search/cost_model_choice.h"

#include <cmath>
#include <filesystem>

#include "costmodel/blas.h"
#include "schedule/te/error.h"
#include "schedule/te/json_fields.h"

namespace tessel {

const char* cost_model_kind_name(CostModelKind kind) { return kind == CostModelKind::Random ? "random" : "xgboost"; }

const char* ranker_network_name(RankerNetwork network) {
  return network == RankerNetwork::DeepSets ? "deepsets" : "summary";
}

XGBoostModelOptions new_model_options(const CostModelChoice& choice, TargetKind target, RankerNetwork default_network,
                                      uint64_t seed) {
  using Input = XGBoostModelOptions::Input;
  XGBoostModelOptions o;
  o.seed = seed;
  o.objective = choice.objective.value_or(XGBoostModelOptions::Objective::Rank);
  o.input = choice.input.value_or(default_model_input(target == TargetKind::Cuda));
  if (!objective_fits_input(o.objective, o.input))
    throw InputError(
        "costmodel.objective packsum cannot train costmodel.input pairs: a pairs model learns which of "
        "two programs is faster, not a score per program (use the objective rank)");
  const bool programs = o.input == Input::Programs;
  // A model without a ranker keeps the summary design on file, whatever the caller's default.
  const RankerNetwork network = choice.network.value_or(programs ? default_network : RankerNetwork::Summary);
  o.mlp = *mlp_network_named(ranker_network_name(network));
  if (choice.mlp_weight) {
    if (!std::isfinite(*choice.mlp_weight) || *choice.mlp_weight < 0)
      throw InputError("costmodel.mlp_weight must be a finite number at least 0");
    if (*choice.mlp_weight > 0 && !programs)
      throw InputError(std::string("costmodel.mlp_weight blends a neural ranker into a model of program summaries; "
                                   "the '") +
                       model_input_name(o.input) +
                       "' input has none (set costmodel.input to programs, or the weight to 0)");
  }
  o.mlp_weight = choice.mlp_weight.value_or(default_mlp_weight(o.input, o.mlp));
  if (choice.network && o.mlp_weight == 0)
    throw InputError(std::string("costmodel.network ") + ranker_network_name(*choice.network) +
                     " names the neural ranker of a programs model with a weight above 0; this model has none");
  return o;
}

void check_cost_model_choice(const CostModelChoice& choice, TargetKind target,
                             const std::optional<std::string>& model_path) {
  if (!model_path) {
    if (choice.kind == CostModelKind::XGBoost) new_model_options(choice, target, RankerNetwork::Summary, 0);
    return;
  }
  if (choice.kind == CostModelKind::Random)
    throw InputError("a saved cost model is an XGBoost model; it cannot be used with the random model");
  const char* kept = choice.objective    ? "objective"
                     : choice.input      ? "input"
                     : choice.network    ? "network"
                     : choice.mlp_weight ? "mlp_weight"
                                         : nullptr;
  if (kept)
    throw InputError(std::string("costmodel.") + kept + " is for a new cost model; the saved model " + *model_path +
                     " keeps the " + kept + " it was trained with");
  if (!std::filesystem::is_regular_file(*model_path))
    throw InputError("cannot read cost model '" + *model_path + "': no such file");
}

std::unique_ptr<CostModel> make_cost_model(const CostModelChoice& choice, TargetKind target,
                                           const std::optional<std::string>& model_path, uint64_t seed) {
  check_cost_model_choice(choice, target, model_path);
  if (choice.kind == CostModelKind::Random) return make_random_model(seed);
  std::unique_ptr<XGBoostModel> model =
      model_path ? XGBoostModel::load(*model_path)
                 : std::make_unique<XGBoostModel>(new_model_options(choice, target, RankerNetwork::Summary, seed));
  if (model->options().mlp_weight > 0) blas::core_name();
  return model;
}

CostModelChoice cost_model_choice_from_json(const nlohmann::json& section, const std::string& where) {
  JsonObject j(section, where);
  j.allow_only({"kind", "objective", "input", "network", "mlp_weight"});
  CostModelChoice c;
  if (std::optional<std::string> kind = j.string("kind")) {
    if (*kind == "random")
      c.kind = CostModelKind::Random;
    else if (*kind != "xgboost")
      throw InputError(j.field("kind") + ": '" + *kind + "' is not xgboost or random");
  }
  if (std::optional<std::string> name = j.string("objective")) {
    c.objective = objective_named(*name);
    if (!c.objective) throw InputError(j.field("objective") + ": '" + *name + "' is not rank or packsum");
  }
  if (std::optional<std::string> name = j.string("input")) {
    c.input = model_input_named(*name);
    if (!c.input) throw InputError(j.field("input") + ": '" + *name + "' is not rows, programs or pairs");
  }
  if (std::optional<std::string> name = j.string("network")) {
    if (*name == "summary")
      c.network = RankerNetwork::Summary;
    else if (*name == "deepsets")
      c.network = RankerNetwork::DeepSets;
    else
      throw InputError(j.field("network") + ": '" + *name + "' is not summary or deepsets");
  }
  c.mlp_weight = j.number("mlp_weight", 0, 1e6);
  if (c.kind == CostModelKind::Random && (c.objective || c.input || c.network || c.mlp_weight))
    throw InputError(j.field("kind") + ": the random model has no objective, input or network");
  return c;
}

}  // namespace tessel
