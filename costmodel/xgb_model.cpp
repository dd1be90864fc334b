// XGBoostModel's predictions and updates: the programs packed into the trees' input rows
// (training_set.h), trees grown through XGBoost's C API (xgb_booster.h) with a custom objective on
// program scores (program_objectives.h) or on pairs of programs (pairwise_ranking.h), and, for a
// programs model, a neural ranker blended in (mlp_blend.cpp). The file format is in
// xgb_model_file.cpp.
#include "costmodel/xgb_model.h"

#include <random>

#include "costmodel/pairwise_ranking.h"
#include "costmodel/program_objectives.h"
#include "costmodel/training_set.h"

namespace tessel {

xgb::Booster::Params XGBoostModel::booster_params(const XGBoostModelOptions& o) {
  xgb::Booster::Params params = {
      {"verbosity", "0"},
      {"tree_method", "hist"},
      {"max_depth", std::to_string(o.max_depth)},
      {"eta", std::to_string(o.eta)},
      {"min_child_weight", std::to_string(o.min_child_weight)},  // rows carry small weights: 0 lets trees split them
      {"lambda", std::to_string(o.lambda)},
      {"subsample", std::to_string(o.subsample)},
      {"colsample_bytree", std::to_string(o.colsample)},
      {"base_score", "0"},  // a program's score is a sum of its input rows: start every row at 0
      {"disable_default_eval_metric", "1"},
      {"seed", std::to_string(o.seed % 2147483647ULL)},
  };
  if (o.nthread > 0) params.emplace_back("nthread", std::to_string(o.nthread));
  return params;
}

XGBoostModel::XGBoostModel(const XGBoostModelOptions& options) : options_(options), mlp_(options.mlp) {
  TESSEL_CHECK(options_in_range(options), "XGBoostModelOptions out of range");
}

XGBoostModel::~XGBoostModel() = default;

bool XGBoostModel::trained() const { return booster_.rounds() > 0; }

int XGBoostModel::num_trees() const { return booster_.rounds(); }

std::vector<double> XGBoostModel::predict(const std::vector<ProgramFeatures>& programs) {
  if (options_.input == XGBoostModelOptions::Input::Pairs) return predict_with_reference(programs, {});
  std::vector<double> scores(programs.size(), 0.0);
  if (!trained() || programs.empty()) return scores;
  auto features_of = [&](size_t i) -> const ProgramFeatures& { return programs[i]; };
  xgb::Packed packed = xgb::pack(programs.size(), options_.input, features_of);
  const size_t rows = packed.first_row.back();
  if (rows == 0) return scores;
  xgb::Matrix m(packed.values, rows, packed.width);
  std::vector<float> preds = booster_.predict(m, rows);
  for (size_t p = 0; p < programs.size(); ++p)
    for (size_t i = packed.first_row[p]; i < packed.first_row[p + 1]; ++i) scores[p] += preds[i];
  if (options_.mlp_weight == 0 || !mlp_.trained()) return scores;
  return blend(std::move(scores), xgb::mlp_inputs(packed, programs.size(), mlp_.row_width() > 0, features_of));
}

std::vector<double> XGBoostModel::predict_with_reference(const std::vector<ProgramFeatures>& programs,
                                                         const std::vector<ProgramFeatures>& reference) {
  if (options_.input != XGBoostModelOptions::Input::Pairs) return predict(programs);
  if (!trained() || programs.empty()) return std::vector<double>(programs.size(), 0.0);
  return xgb::predicted_win_shares(booster_, programs, reference, options_.anchors);
}

void XGBoostModel::update(const std::vector<TrainingSample>& samples) {
  if (samples.empty()) return;
  samples_.insert(samples_.end(), samples.begin(), samples.end());
  samples_seen_ += static_cast<int64_t>(samples.size());
  if (options_.input == XGBoostModelOptions::Input::Pairs) {
    update_pairs();
    return;
  }

  auto features_of = [&](size_t i) -> const ProgramFeatures& { return samples_[i].features; };
  xgb::Packed packed = xgb::pack(samples_.size(), options_.input, features_of);
  const size_t rows = packed.first_row.back();
  if (rows == 0) return;
  std::vector<double> labels = xgb::normalized_throughput(samples_);
  std::vector<int> groups = xgb::group_ids(samples_);
  xgb::Matrix m(packed.values, rows, packed.width);

  const int rounds = begin_update(m);
  booster_.boost(m, rows, rounds,
                 [&](const std::vector<float>& preds, std::vector<float>& grad, std::vector<float>& hess) {
                   if (options_.objective == XGBoostModelOptions::Objective::Rank) {
                     xgb::rank_gradients(preds, packed, labels, groups, grad, hess);
                   } else {
                     xgb::packsum_gradients(preds, packed, labels, grad, hess);
                   }
                 });
  if (options_.mlp_weight > 0) {
    std::vector<float> preds = booster_.predict(m, rows);
    train_mlp(xgb::mlp_inputs(packed, samples_.size(), options_.mlp.encoder > 0, features_of), labels, groups,
              std::vector<double>(preds.begin(), preds.end()));
  }
}

int XGBoostModel::begin_update(const xgb::Matrix& training) {
  const int trees = booster_.rounds();
  if (trees > 0 && trees + options_.rounds_per_update <= options_.max_trees) return options_.rounds_per_update;
  booster_.create(&training, booster_params(options_));
  ++retrains_;
  return options_.retrain_rounds;
}

// Input Pairs: pairs drawn afresh from all samples (the generator seeded by the options' seed and
// the sample count, so training is deterministic), then trees fitted to them as for the other inputs.
void XGBoostModel::update_pairs() {
  std::vector<double> labels = xgb::normalized_throughput(samples_);
  std::vector<int> groups = xgb::group_ids(samples_);
  std::mt19937_64 rng(options_.seed ^ (0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(samples_.size())));
  xgb::TrainingPairs pairs = xgb::training_pairs(labels, groups, options_.pair_partners, rng);
  if (pairs.pairs.empty()) return;  // no group holds two programs of different speed yet
  std::vector<std::vector<float>> summaries;
  summaries.reserve(samples_.size());
  for (const TrainingSample& s : samples_) summaries.push_back(program_summary(s.features));
  const int width = xgb::input_width(options_.input);
  std::vector<float> values;
  values.reserve(pairs.pairs.size() * static_cast<size_t>(width));
  for (auto [a, b] : pairs.pairs) xgb::append_pair_row(summaries[a], summaries[b], values);
  xgb::Matrix m(values, pairs.pairs.size(), width);
  const int rounds = begin_update(m);
  booster_.boost(m, pairs.pairs.size(), rounds,
                 [&](const std::vector<float>& margins, std::vector<float>& grad, std::vector<float>& hess) {
                   xgb::pair_logistic_gradients(margins, pairs.targets, grad, hess);
                 });
}

}  // namespace tessel
