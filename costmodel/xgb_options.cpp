// The cost model's options by name, their defaults and their ranges; and, until their callers move
// to the flag-free versions, the functions that build their messages from the caller's setting name.
#include "costmodel/xgb_options.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "schedule/te/error.h"

namespace tessel {

namespace {

// A new programs model's neural-ranker weight (default_mlp_weight): the summary network's, and the
// deepsets network's (held out on the 654-workload H100 log at weights 1, 1.5, 2 and 3 the blend ranked
// 0.847, 0.849, 0.849 and 0.849 pairwise).
constexpr double kSummaryMlpWeight = 1.0;
constexpr double kDeepsetsMlpWeight = 2.0;

}  // namespace

bool options_in_range(const XGBoostModelOptions& o) {
  return o.max_depth > 0 && o.eta > 0 && o.rounds_per_update > 0 && o.retrain_rounds > 0 &&
         o.max_trees >= o.retrain_rounds && o.nthread >= 0 && o.lambda >= 0 && o.min_child_weight >= 0 &&
         o.subsample > 0 && o.subsample <= 1 && o.colsample > 0 && o.colsample <= 1 && o.pair_partners > 0 &&
         o.anchors > 0 && objective_fits_input(o.objective, o.input) && o.mlp_weight >= 0 &&
         (o.mlp_weight == 0 || o.input == XGBoostModelOptions::Input::Programs);
}

const char* objective_name(XGBoostModelOptions::Objective o) {
  return o == XGBoostModelOptions::Objective::Rank ? "rank" : "packsum";
}

std::optional<XGBoostModelOptions::Objective> objective_named(std::string_view name) {
  for (auto o : {XGBoostModelOptions::Objective::Rank, XGBoostModelOptions::Objective::PackSum})
    if (name == objective_name(o)) return o;
  return std::nullopt;
}

const char* model_input_name(XGBoostModelOptions::Input input) {
  switch (input) {
    case XGBoostModelOptions::Input::Rows:
      return "rows";
    case XGBoostModelOptions::Input::Programs:
      return "programs";
    case XGBoostModelOptions::Input::Pairs:
      return "pairs";
  }
  return "?";
}

std::optional<XGBoostModelOptions::Input> model_input_named(std::string_view name) {
  for (auto i :
       {XGBoostModelOptions::Input::Rows, XGBoostModelOptions::Input::Programs, XGBoostModelOptions::Input::Pairs})
    if (name == model_input_name(i)) return i;
  return std::nullopt;
}

XGBoostModelOptions::Input default_model_input(bool gpu) {
  return gpu ? XGBoostModelOptions::Input::Programs : XGBoostModelOptions::Input::Rows;
}

bool objective_fits_input(XGBoostModelOptions::Objective objective, XGBoostModelOptions::Input input) {
  return !(input == XGBoostModelOptions::Input::Pairs && objective == XGBoostModelOptions::Objective::PackSum);
}

std::optional<MlpOptions> mlp_network_named(std::string_view name) {
  MlpOptions o;
  if (name == "summary") return o;
  if (name != "deepsets") return std::nullopt;
  o.encoder = 512;
  o.hidden1 = 256;
  o.hidden2 = 0;
  o.dropout = 0.2;
  return o;
}

std::string mlp_network_name(const MlpOptions& o) {
  // Compared by design alone: threads and seed are not part of it.
  auto design = [](MlpOptions x) {
    x.nthread = 0;
    x.seed = 0;
    return MlpRanker::options_to_json(x);
  };
  for (const char* name : {"summary", "deepsets"})
    if (design(o) == design(*mlp_network_named(name))) return name;
  return "custom";
}

double default_mlp_weight(XGBoostModelOptions::Input input, const MlpOptions& network) {
  if (input != XGBoostModelOptions::Input::Programs) return 0.0;
  return network.encoder > 0 ? kDeepsetsMlpWeight : kSummaryMlpWeight;
}

}  // namespace tessel
