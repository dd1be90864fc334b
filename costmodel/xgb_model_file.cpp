// The learned cost model's file: one JSON object with a format name and version, the feature
// version and width the model was trained on, its options, the trees (XGBoost's JSON model) and the
// neural ranker's weights. A reader refuses a file of another format, feature version or width.
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "costmodel/training_set.h"
#include "costmodel/xgb_model.h"

namespace tessel {

namespace {

constexpr const char* kFileFormat = "tessel-cost-model";
// 2: the options name the model's input (rows or programs); a tessel reading version 1 only would
// take a programs model for a rows one. 3: a neural ranker is blended in (mlp_weight); its weights and
// both models' spreads are saved. A model without a trained ranker is still written as version 2,
// which an earlier tessel reads (it ignores the options it does not know).
constexpr int kFileVersion = 3;

nlohmann::json options_to_json(const XGBoostModelOptions& o) {
  return {{"max_depth", o.max_depth},
          {"eta", o.eta},
          {"rounds_per_update", o.rounds_per_update},
          {"retrain_rounds", o.retrain_rounds},
          {"max_trees", o.max_trees},
          {"nthread", o.nthread},
          {"seed", o.seed},
          {"objective", objective_name(o.objective)},
          {"lambda", o.lambda},
          {"min_child_weight", o.min_child_weight},
          {"subsample", o.subsample},
          {"colsample", o.colsample},
          {"input", model_input_name(o.input)},
          {"pair_partners", o.pair_partners},
          {"anchors", o.anchors},
          {"mlp_weight", o.mlp_weight},
          {"mlp", MlpRanker::options_to_json(o.mlp)}};
}

XGBoostModelOptions options_from_json(const nlohmann::json& j) {
  XGBoostModelOptions o;
  o.max_depth = j.at("max_depth").get<int>();
  o.eta = j.at("eta").get<double>();
  o.rounds_per_update = j.at("rounds_per_update").get<int>();
  o.retrain_rounds = j.at("retrain_rounds").get<int>();
  o.max_trees = j.at("max_trees").get<int>();
  o.nthread = j.at("nthread").get<int>();
  o.seed = j.at("seed").get<uint64_t>();
  // Absent from models saved before these options existed: the defaults of then.
  // An unknown name sets max_depth 0, which options_in_range refuses.
  if (auto objective = objective_named(j.value("objective", std::string("packsum"))))
    o.objective = *objective;
  else
    o.max_depth = 0;
  // Models saved before the option existed scored rows.
  if (auto input = model_input_named(j.value("input", std::string("rows"))))
    o.input = *input;
  else
    o.max_depth = 0;
  o.lambda = j.value("lambda", 1.0);
  o.min_child_weight = j.value("min_child_weight", 0.0);
  o.subsample = j.value("subsample", 1.0);
  o.colsample = j.value("colsample", 1.0);
  o.pair_partners = j.value("pair_partners", o.pair_partners);
  o.anchors = j.value("anchors", o.anchors);
  o.mlp_weight = j.value("mlp_weight", 0.0);
  if (j.contains("mlp")) o.mlp = MlpRanker::options_from_json(j.at("mlp"));
  return o;
}

}  // namespace

void XGBoostModel::save(const std::string& path) const {
  nlohmann::json file = {{"format", kFileFormat},
                         {"format_version", mlp_.trained() ? kFileVersion : 2},
                         {"feature_version", kFeatureVersion},
                         {"feature_width", feature_width()},
                         {"options", options_to_json(options_)},
                         {"num_samples", samples_seen_},
                         {"num_retrains", retrains_},
                         {"booster", nullptr},
                         {"mlp", nullptr},
                         {"spreads", {tree_spread_, mlp_spread_}}};
  if (mlp_.trained()) file["mlp"] = mlp_.to_json();
  if (booster_.exists()) file["booster"] = nlohmann::json::parse(booster_.to_json());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << file.dump() << "\n";
  out.close();
  if (!out) throw InputError("cannot write the cost model to '" + path + "'");
}

std::unique_ptr<XGBoostModel> XGBoostModel::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read cost model '" + path + "': no such file or not readable");
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json file;
  try {
    file = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception&) {
    throw InputError("'" + path + "' is not a tessel cost model (not JSON); train one from a tuning log");
  }
  if (!file.is_object() || file.value("format", "") != kFileFormat)
    throw InputError("'" + path + "' is not a tessel cost model; train one from a tuning log");
  try {
    if (file.at("format_version").get<int>() > kFileVersion)
      throw InputError("cost model '" + path + "' comes from a newer tessel (format version " +
                       std::to_string(file.at("format_version").get<int>()) + ")");
    int version = file.at("feature_version").get<int>(), width = file.at("feature_width").get<int>();
    if (version != kFeatureVersion || width != feature_width())
      throw InputError("cost model '" + path + "' was trained on features version " + std::to_string(version) +
                       " (width " + std::to_string(width) + "), this tessel extracts version " +
                       std::to_string(kFeatureVersion) + " (width " + std::to_string(feature_width()) +
                       "); retrain it from its tuning log");
    XGBoostModelOptions options;
    try {
      options = options_from_json(file.at("options"));
    } catch (const InputError& e) {
      throw InputError("cost model '" + path + "' is damaged: " + e.what());
    }
    if (!options_in_range(options)) throw InputError("cost model '" + path + "' is damaged: options out of range");
    auto model = std::make_unique<XGBoostModel>(options);
    model->samples_seen_ = file.at("num_samples").get<int64_t>();
    model->retrains_ = file.at("num_retrains").get<int>();
    if (file.contains("mlp") && !file.at("mlp").is_null()) {
      try {
        model->mlp_ = MlpRanker::from_json(file.at("mlp"));
      } catch (const InputError& e) {
        throw InputError("cost model '" + path + "' is damaged: " + e.what());
      }
      model->mlp_loaded_ = true;
      if (model->mlp_.width() != program_summary_width())
        throw InputError("cost model '" + path + "' is damaged: its neural ranker reads " +
                         std::to_string(model->mlp_.width()) + " columns, a program summary has " +
                         std::to_string(program_summary_width()));
      if (model->mlp_.row_width() != 0 && model->mlp_.row_width() != feature_width())
        throw InputError("cost model '" + path + "' is damaged: its neural ranker's encoder reads rows of " +
                         std::to_string(model->mlp_.row_width()) + " columns, a feature row has " +
                         std::to_string(feature_width()));
      auto spreads = file.at("spreads").get<std::vector<double>>();
      if (spreads.size() != 2 || !(spreads[0] > 0) || !(spreads[1] > 0))
        throw InputError("cost model '" + path + "' is damaged: its score spreads are not two positive numbers");
      model->tree_spread_ = spreads[0];
      model->mlp_spread_ = spreads[1];
    }
    const nlohmann::json& booster = file.at("booster");
    if (!booster.is_null()) {
      model->booster_.create(nullptr, booster_params(model->options_));
      std::string error;
      if (!model->booster_.load_json(booster.dump(), &error))
        throw InputError("cost model '" + path + "': XGBoost cannot read its trees: " + error);
      // XGBoost predicts on fewer columns than its trees were grown on (the rest read as missing):
      // trees and input must agree exactly, or the scores would be silently wrong.
      const uint64_t columns = model->booster_.num_features();
      const int expected = xgb::input_width(model->options_.input);
      if (columns != static_cast<uint64_t>(expected))
        throw InputError("cost model '" + path + "' is damaged: its trees read " + std::to_string(columns) +
                         " columns, its input '" + model_input_name(model->options_.input) + "' has " +
                         std::to_string(expected));
      model->booster_.set_params(booster_params(model->options_));
    }
    return model;
  } catch (const nlohmann::json::exception& e) {
    throw InputError("cost model '" + path + "' is damaged: " + e.what());
  }
}

}  // namespace tessel
