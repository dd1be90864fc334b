// A small neural ranker of program summaries: two hidden layers of rectified linear units and one
// score, trained with the same pairwise logistic loss as the trees' rank objective (every pair of one
// group whose labels differ, each group's pairs scaled by 1/(n - 1)). Held out on the H100 log it
// ranks better than the trees alone and better still added to them, the two making different
// mistakes (experiments/results/costmodel_gpu_2026-11-22/session18/README.md). Plain C++: the
// products are written as row-times-matrix loops that the compiler vectorizes, spread over threads.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace tessel {

struct MlpOptions {
  int hidden1 = 256;
  int hidden2 = 128;
  int epochs = 300;           // passes over the groups of the training set
  int groups_per_step = 64;   // groups whose programs make one gradient step
  int programs_per_group = 16;  // of each group in a step, this many programs drawn at random (0: all; not 1)
  int min_steps = 200;        // at least this many steps, however few the groups (a tuner's first tasks)
  double learning_rate = 1e-3;  // Adam's
  double weight_decay = 1e-5;   // L2 on every weight and bias, added to the gradient
  int nthread = 0;              // 0: every CPU this process may run on
  uint64_t seed = 0;
};

class MlpRanker {
 public:
  explicit MlpRanker(const MlpOptions& options = {});

  // Trains from scratch, or with `resume` and a trained ranker of this width, goes on from its weights
  // and standardization (a ranker loaded from a file, given samples it has not seen). `rows` holds
  // one row of `width` values per program; `labels` higher = faster (failures 0, below every
  // success); `groups` the program's group: only programs of one group are compared. Deterministic
  // for given options, data, thread count and CPU (the gradient is summed over as many parts as
  // threads, and an AVX2 machine rounds fused multiply-adds differently).
  void train(const std::vector<float>& rows, int width, const std::vector<double>& labels,
             const std::vector<int>& groups, bool resume = false);
  // One score per row, higher = predicted faster; fails a check before training.
  std::vector<double> predict(const std::vector<float>& rows) const;
  bool trained() const { return width_ > 0; }
  int width() const { return width_; }
  const MlpOptions& options() const { return options_; }

  // The options alone, as to_json writes them (options_from_json throws InputError when they are out
  // of range).
  static nlohmann::json options_to_json(const MlpOptions& o);
  static MlpOptions options_from_json(const nlohmann::json& j);
  // The options and weights; from_json throws InputError naming what is damaged.
  nlohmann::json to_json() const;
  static MlpRanker from_json(const nlohmann::json& j);

  struct Layer {
    int in = 0, out = 0;
    std::vector<float> weight;  // in x out, row-major: weight[i * out + o]
    std::vector<float> bias;    // out
  };

 private:
  void initialize(const std::vector<float>& rows, int width, std::mt19937_64& rng);
  // One input row as the layers read it: floored, shifted and scaled.
  void standardize(const float* row, float* out) const;
  MlpOptions options_;
  int width_ = 0;
  std::vector<float> shift_, scale_;  // input standardization: (clip(x) - shift) * scale
  Layer layers_[3];
};

}  // namespace tessel
