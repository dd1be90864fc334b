// How well scores rank measured programs within their tasks: the numbers a cost model's evaluation
// reports and the tests hold the model to.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tessel {

struct RankingMetrics {
  double pairwise_accuracy = 0;  // of the pairs below, the share the scores order like the latencies
  double top_recall = 0;         // |true top-k ∩ predicted top-k| / k, averaged over groups by size
  int64_t pairs = 0;             // pairs of successful programs of one group with distinct latencies
  int64_t programs = 0;          // programs scored (failed ones included)
};

// scores[i] (higher = predicted faster), latencies[i] (seconds; not finite or <= 0 = failed) and
// groups[i] (the task) describe program i. Pairs and the top-k only compare programs of one group;
// a failed program is never in the true top-k, k = ceil(top_fraction x group size).
RankingMetrics evaluate_ranking(const std::vector<double>& scores, const std::vector<double>& latencies,
                                const std::vector<std::string>& groups, double top_fraction = 0.05);

}  // namespace tessel
