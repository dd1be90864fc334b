// The labels the cost model learns: throughput within a task, and the task of every sample.
#include "costmodel/training_set.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace tessel::xgb {

namespace {

bool succeeded(double latency) { return std::isfinite(latency) && latency > 0; }

}  // namespace

int input_width(XGBoostModelOptions::Input input) {
  switch (input) {
    case XGBoostModelOptions::Input::Rows:
      return feature_width();
    case XGBoostModelOptions::Input::Programs:
      return program_summary_width();
    case XGBoostModelOptions::Input::Pairs:
      return 2 * program_summary_width();
  }
  return 0;
}

std::vector<double> normalized_throughput(const std::vector<TrainingSample>& samples) {
  std::map<std::string, double> best;
  for (const TrainingSample& s : samples)
    if (succeeded(s.latency_s)) {
      auto [it, inserted] = best.emplace(s.group, s.latency_s);
      if (!inserted) it->second = std::min(it->second, s.latency_s);
    }
  std::vector<double> labels;
  labels.reserve(samples.size());
  for (const TrainingSample& s : samples)
    labels.push_back(succeeded(s.latency_s) ? best.at(s.group) / s.latency_s : 0.0);
  return labels;
}

std::vector<int> group_ids(const std::vector<TrainingSample>& samples) {
  std::map<std::string, int> ids;
  std::vector<int> out;
  out.reserve(samples.size());
  for (const TrainingSample& s : samples)
    out.push_back(ids.emplace(s.group, static_cast<int>(ids.size())).first->second);
  return out;
}

}  // namespace tessel::xgb
