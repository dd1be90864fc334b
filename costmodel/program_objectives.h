// The two losses on program scores the trees are fitted to (XGBoostModelOptions::Objective), as the
// gradient and hessian of every input row: a program's score is the sum of its rows' predictions, so
// each row gets its program's gradient.
#pragma once

#include <vector>

#include "costmodel/training_set.h"

namespace tessel::xgb {

// Pack-sum squared error to `labels` (throughput normalized within a group); see the .cpp for the
// derivation and the weights.
void packsum_gradients(const std::vector<float>& preds, const Packed& packed, const std::vector<double>& labels,
                       std::vector<float>& grad, std::vector<float>& hess);

// Pairwise logistic loss over the programs of one group (`groups`) whose labels differ.
void rank_gradients(const std::vector<float>& preds, const Packed& packed, const std::vector<double>& labels,
                    const std::vector<int>& groups, std::vector<float>& grad, std::vector<float>& hess);

}  // namespace tessel::xgb
