// The cost model's pairs input (XGBoostModelOptions::Input::Pairs): the trees read a pair of programs
// of one task and tell whether the first is the faster. Here: drawing the training pairs, a pair's
// input row, the logistic loss on it, and a program's score as its share of predicted wins.
#pragma once

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "costmodel/features.h"
#include "costmodel/xgb_booster.h"

namespace tessel::xgb {

// The row of programs a and b (their summaries): a - b, then (a + b) / 2.
void append_pair_row(const std::vector<float>& a, const std::vector<float>& b, std::vector<float>& out);

// The training pairs: every sample with up to `partners` others of its group and a different label,
// drawn at random (the generator seeded by the caller), in both orders; target 1 where the first
// program is the faster.
struct TrainingPairs {
  std::vector<std::pair<size_t, size_t>> pairs;
  std::vector<float> targets;
};
TrainingPairs training_pairs(const std::vector<double>& labels, const std::vector<int>& groups, int partners,
                             std::mt19937_64& rng);

// The logistic loss of each pair row's margin m against its target t (1: the first program is
// faster): gradient sigma(m) - t, hessian sigma(m) (1 - sigma(m)).
void pair_logistic_gradients(const std::vector<float>& margins, const std::vector<float>& targets,
                             std::vector<float>& grad, std::vector<float>& hess);

// Each program's share of predicted wins against the `reference` programs, or, with no reference,
// against `anchors` evenly spaced programs of the batch; 0.5 for a program with no opponent.
std::vector<double> predicted_win_shares(const Booster& booster, const std::vector<ProgramFeatures>& programs,
                                         const std::vector<ProgramFeatures>& reference, int anchors);

}  // namespace tessel::xgb
