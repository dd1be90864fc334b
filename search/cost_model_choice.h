// Which cost model a tuning session (or `tessel costmodel train`) builds, as a user chooses it in the
// "costmodel" section of a tuning config (docs/tuning_config.md). Unset fields take the defaults that
// won the ablations; errors name the config field, never a command-line flag.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>

#include "costmodel/xgb_model.h"
#include "costmodel/xgb_options.h"
#include "schedule/target_kind.h"

namespace tessel {

enum class CostModelKind { XGBoost, Random };
// The neural ranker a programs model blends into its trees: the program summary alone (cheap to
// retrain every round), or deep sets over every feature row beside it (ranks better, about 14x the
// arithmetic; see MlpOptions).
enum class RankerNetwork { Summary, DeepSets };

struct CostModelChoice {
  CostModelKind kind = CostModelKind::XGBoost;              // random: no model (for ablations)
  std::optional<XGBoostModelOptions::Objective> objective;  // unset: rank
  std::optional<XGBoostModelOptions::Input> input;          // unset: programs on cuda, rows on llvm
  std::optional<RankerNetwork> network;                     // unset: the caller's default
  std::optional<double> mlp_weight;                         // unset: the input's and network's default
};

const char* cost_model_kind_name(CostModelKind kind);
const char* ranker_network_name(RankerNetwork network);

// The options of a new XGBoost model for `target` from `choice`, `default_network` standing for an
// unset network. Throws InputError naming the config field when the choice cannot train (packsum
// with pairs, a ranker weight or network without the programs input, a weight that is not finite).
XGBoostModelOptions new_model_options(const CostModelChoice& choice, TargetKind target, RankerNetwork default_network,
                                      uint64_t seed);

// Throws InputError when make_cost_model would refuse the choice (checked before a session starts).
void check_cost_model_choice(const CostModelChoice& choice, TargetKind target,
                             const std::optional<std::string>& model_path);

// The session's model: a new one from `choice`, or the model saved at `model_path` (which keeps the
// objective, input and ranker it was trained with: a choice of those with a path is an InputError).
// A model with a neural ranker loads OpenBLAS now, so that a missing library stops the session
// before its first round.
std::unique_ptr<CostModel> make_cost_model(const CostModelChoice& choice, TargetKind target,
                                           const std::optional<std::string>& model_path, uint64_t seed);

// The "costmodel" section of a config; `where` names it in errors ("FILE: costmodel").
CostModelChoice cost_model_choice_from_json(const nlohmann::json& section, const std::string& where);

}  // namespace tessel
