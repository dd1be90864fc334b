// The blend of the trees with the neural ranker (XGBoostModelOptions::mlp_weight): each model's
// scores divided by their typical spread within a task of the training set, so that the weight is
// the ranker's share of the vote whatever the two models' scales.
#include <cmath>
#include <map>
#include <numeric>

#include "costmodel/xgb_model.h"

namespace tessel {

namespace {

// The mean over groups of two or more programs of the standard deviation of their scores: how far
// apart one model's scores of one task typically lie (1 when no group has two programs).
double typical_spread(const std::vector<double>& scores, const std::vector<int>& groups) {
  std::map<int, std::vector<double>> by_group;
  for (size_t i = 0; i < scores.size(); ++i) by_group[groups[i]].push_back(scores[i]);
  double sum = 0;
  int counted = 0;
  for (const auto& [g, v] : by_group) {
    if (v.size() < 2) continue;
    double mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size()), sq = 0;
    for (double x : v) sq += (x - mean) * (x - mean);
    sum += std::sqrt(sq / static_cast<double>(v.size()));
    ++counted;
  }
  return counted > 0 && sum > 0 ? sum / counted : 1.0;
}

}  // namespace

std::vector<double> XGBoostModel::blend(std::vector<double> tree_scores, const MlpInputs& inputs) const {
  std::vector<double> mlp = mlp_.predict(inputs);
  for (size_t p = 0; p < tree_scores.size(); ++p)
    tree_scores[p] = tree_scores[p] / tree_spread_ + options_.mlp_weight * mlp[p] / mlp_spread_;
  return tree_scores;
}

void XGBoostModel::train_mlp(const MlpInputs& inputs, const std::vector<double>& labels, const std::vector<int>& groups,
                             const std::vector<double>& tree_scores) {
  if (mlp_loaded_ && mlp_.trained()) {
    // A loaded ranker learned from samples this model no longer holds: it goes on from its weights.
    mlp_.train(inputs, program_summary_width(), feature_width(), labels, groups, true);
  } else {
    MlpOptions o = options_.mlp;
    if (o.nthread == 0) o.nthread = options_.nthread;
    o.seed ^= options_.seed;
    mlp_ = MlpRanker(o);
    mlp_.train(inputs, program_summary_width(), feature_width(), labels, groups);
  }
  if (!mlp_.trained()) return;
  tree_spread_ = typical_spread(tree_scores, groups);
  mlp_spread_ = typical_spread(mlp_.predict(inputs), groups);
}

}  // namespace tessel
