// The model-free baseline: uniform random scores, so that an ablation runs the same search without
// learning anything. Deterministic given the seed.
#include <random>

#include "costmodel/cost_model.h"
#include "schedule/te/error.h"

namespace tessel {

namespace {

class RandomModel : public CostModel {
 public:
  explicit RandomModel(uint64_t seed) : rng_(seed) {}

  std::vector<double> predict(const std::vector<ProgramFeatures>& programs) override {
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    std::vector<double> scores(programs.size());
    for (double& s : scores) s = uniform(rng_);
    return scores;
  }
  void update(const std::vector<TrainingSample>&) override {}
  bool trained() const override { return false; }
  std::string name() const override { return "random"; }
  void save(const std::string&) const override {
    throw InputError("the random cost model has nothing to save: it learns nothing");
  }

 private:
  std::mt19937_64 rng_;
};

}  // namespace

std::unique_ptr<CostModel> make_random_model(uint64_t seed) { return std::make_unique<RandomModel>(seed); }

}  // namespace tessel
