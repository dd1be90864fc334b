// Ranking metrics over programs grouped by task.
#include "costmodel/ranking_metrics.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "schedule/te/error.h"

namespace tessel {

namespace {

bool succeeded(double latency) { return std::isfinite(latency) && latency > 0; }

}  // namespace

RankingMetrics evaluate_ranking(const std::vector<double>& scores, const std::vector<double>& latencies,
                                const std::vector<std::string>& groups, double top_fraction) {
  TESSEL_CHECK(scores.size() == latencies.size() && scores.size() == groups.size(),
               "evaluate_ranking: scores, latencies and groups differ in length");
  std::map<std::string, std::vector<size_t>> members;
  for (size_t i = 0; i < groups.size(); ++i) members[groups[i]].push_back(i);

  RankingMetrics m;
  m.programs = static_cast<int64_t>(scores.size());
  double concordant = 0, recall_sum = 0, recall_weight = 0;
  for (const auto& [group, idx] : members) {
    std::vector<size_t> ok;
    for (size_t i : idx)
      if (succeeded(latencies[i])) ok.push_back(i);
    // Pairs: a tie in scores counts half.
    for (size_t a = 0; a < ok.size(); ++a)
      for (size_t b = a + 1; b < ok.size(); ++b) {
        double la = latencies[ok[a]], lb = latencies[ok[b]];
        if (la == lb) continue;
        ++m.pairs;
        double sa = scores[ok[a]], sb = scores[ok[b]];
        if (sa == sb) concordant += 0.5;
        else if ((la < lb) == (sa > sb)) concordant += 1;
      }
    if (ok.empty()) continue;
    const size_t n = idx.size();
    size_t k = std::min(ok.size(), static_cast<size_t>(std::ceil(top_fraction * static_cast<double>(n))));
    k = std::max<size_t>(k, 1);
    std::vector<size_t> by_latency = ok, by_score = idx;
    std::stable_sort(by_latency.begin(), by_latency.end(), [&](size_t a, size_t b) { return latencies[a] < latencies[b]; });
    std::stable_sort(by_score.begin(), by_score.end(), [&](size_t a, size_t b) { return scores[a] > scores[b]; });
    std::vector<size_t> true_top(by_latency.begin(), by_latency.begin() + k);
    std::vector<size_t> predicted_top(by_score.begin(), by_score.begin() + k);
    std::sort(true_top.begin(), true_top.end());
    std::sort(predicted_top.begin(), predicted_top.end());
    std::vector<size_t> both;
    std::set_intersection(true_top.begin(), true_top.end(), predicted_top.begin(), predicted_top.end(),
                          std::back_inserter(both));
    recall_sum += static_cast<double>(n) * static_cast<double>(both.size()) / static_cast<double>(k);
    recall_weight += static_cast<double>(n);
  }
  m.pairwise_accuracy = m.pairs ? concordant / static_cast<double>(m.pairs) : 0;
  m.top_recall = recall_weight > 0 ? recall_sum / recall_weight : 0;
  return m;
}

}  // namespace tessel
