// The cost model: scores candidate programs so that the search measures only the promising ones.
// Scores are comparable within one task (workload + target) and, for a model of relative scores,
// one reference set of programs (predict_with_reference); higher means faster. The one interface the
// search uses; the learned model (XGBoostModel, xgb_model.h) and the random one implement it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "costmodel/features.h"
#include "schedule/te/error.h"

namespace tessel {

// One measured program. `group` names its task (workload key + "/" + target kind); a latency that
// is not finite and positive marks a candidate that failed (it trains as throughput 0).
struct TrainingSample {
  ProgramFeatures features;
  std::string group;
  double latency_s = 0;
};

class CostModel {
 public:
  virtual ~CostModel() = default;
  // One score per program, higher = predicted faster.
  virtual std::vector<double> predict(const std::vector<ProgramFeatures>& programs) = 0;
  // The same, for a model whose scores are relative (a program's predicted share of wins against
  // others): scored against `reference`, so that the scores of several calls with one reference
  // are comparable. Models that score each program on its own ignore the reference.
  virtual std::vector<double> predict_with_reference(const std::vector<ProgramFeatures>& programs,
                                                     const std::vector<ProgramFeatures>& reference) {
    (void)reference;
    return predict(programs);
  }
  // Adds measured samples to what the model learns from and updates it.
  virtual void update(const std::vector<TrainingSample>& samples) = 0;
  // Whether predictions carry information yet (false before the first update with data).
  virtual bool trained() const = 0;
  virtual std::string name() const = 0;
  // Writes what the model has learned to `path` (a learned model loads it back). Throws InputError
  // when the file cannot be written or the model has nothing to save.
  virtual void save(const std::string& path) const {
    (void)path;
    throw InputError("the " + name() + " cost model has nothing to save");
  }
};

// Uniform random scores: the search without a model (for ablations), deterministic given the seed.
std::unique_ptr<CostModel> make_random_model(uint64_t seed);

}  // namespace tessel
