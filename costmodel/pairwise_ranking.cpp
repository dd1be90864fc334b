// Pairs of programs for the cost model: drawn for training, scored by the trees as wins and losses.
#include "costmodel/pairwise_ranking.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>

#include "costmodel/training_set.h"

namespace tessel::xgb {

void append_pair_row(const std::vector<float>& a, const std::vector<float>& b, std::vector<float>& out) {
  for (size_t j = 0; j < a.size(); ++j) out.push_back(a[j] - b[j]);
  for (size_t j = 0; j < a.size(); ++j) out.push_back(0.5f * (a[j] + b[j]));
}

TrainingPairs training_pairs(const std::vector<double>& labels, const std::vector<int>& groups, int partners,
                             std::mt19937_64& rng) {
  std::map<int, std::vector<size_t>> members;
  for (size_t p = 0; p < labels.size(); ++p) members[groups[p]].push_back(p);
  TrainingPairs out;
  std::vector<size_t> others, drawn;
  for (const auto& [group, idx] : members) {
    for (size_t a : idx) {
      others.clear();
      for (size_t b : idx)
        if (labels[b] != labels[a]) others.push_back(b);
      drawn.clear();
      std::sample(others.begin(), others.end(), std::back_inserter(drawn), static_cast<size_t>(partners), rng);
      for (size_t b : drawn)
        for (auto [x, y] : {std::pair{a, b}, std::pair{b, a}}) {
          out.pairs.emplace_back(x, y);
          out.targets.push_back(labels[x] > labels[y] ? 1.0f : 0.0f);
        }
    }
  }
  return out;
}

void pair_logistic_gradients(const std::vector<float>& margins, const std::vector<float>& targets,
                             std::vector<float>& grad, std::vector<float>& hess) {
  for (size_t i = 0; i < targets.size(); ++i) {
    const double p = 1.0 / (1.0 + std::exp(-static_cast<double>(margins[i])));
    grad[i] = static_cast<float>(p - targets[i]);
    hess[i] = static_cast<float>(std::max(p * (1.0 - p), 1e-6));
  }
}

std::vector<double> predicted_win_shares(const Booster& booster, const std::vector<ProgramFeatures>& programs,
                                         const std::vector<ProgramFeatures>& reference, int anchors) {
  std::vector<double> scores(programs.size(), 0.0);
  std::vector<std::vector<float>> summaries, opponents;
  for (const ProgramFeatures& f : programs) summaries.push_back(program_summary(f));
  if (!reference.empty()) {
    for (const ProgramFeatures& f : reference) opponents.push_back(program_summary(f));
  } else {  // `anchors` programs of the batch, evenly spaced
    const size_t n = summaries.size(), k = std::min(n, static_cast<size_t>(anchors));
    for (size_t i = 0; i < k; ++i) opponents.push_back(summaries[k == 1 ? 0 : i * (n - 1) / (k - 1)]);
  }
  // A program against itself (as an anchor of its own batch) says nothing: those pairs are left out.
  std::vector<double> wins(programs.size(), 0.0);
  std::vector<int> counted(programs.size(), 0);
  const int width = input_width(XGBoostModelOptions::Input::Pairs);
  constexpr size_t kChunkRows = 16384;  // bounds the pair matrix of a large batch
  std::vector<float> values;
  std::vector<size_t> owner;
  auto flush = [&] {
    if (owner.empty()) return;
    Matrix m(values, owner.size(), width);
    std::vector<float> margins = booster.predict(m, owner.size());
    for (size_t r = 0; r < owner.size(); ++r) {
      wins[owner[r]] += 1.0 / (1.0 + std::exp(-static_cast<double>(margins[r])));
      ++counted[owner[r]];
    }
    values.clear();
    owner.clear();
  };
  for (size_t p = 0; p < summaries.size(); ++p)
    for (const std::vector<float>& opponent : opponents) {
      if (opponent == summaries[p]) continue;
      append_pair_row(summaries[p], opponent, values);
      owner.push_back(p);
      if (owner.size() == kChunkRows) flush();
    }
  flush();
  for (size_t p = 0; p < scores.size(); ++p) scores[p] = counted[p] > 0 ? wins[p] / counted[p] : 0.5;
  return scores;
}

}  // namespace tessel::xgb
