// A small neural ranker of programs: their summaries (and optionally every feature row, through a
// shared encoder summed over the program's rows) into one or two hidden layers of rectified linear
// units and one score, trained with the same pairwise logistic loss as the trees' rank objective
// (every pair of one group whose labels differ, each group's pairs scaled by 1/(n - 1)). Held out on
// the H100 log it ranks better than the trees alone and better still added to them, the two making
// different mistakes (experiments/results/costmodel/README.md). A batch's layers are matrix products through OpenBLAS (cblas_sgemm), threaded by it.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace tessel {

struct MlpOptions {
  int encoder = 0;            // with a width here, every feature row of a program passes through two ReLU
                              // layers of this width, summed over the program's rows, beside the summary
                              // (deep sets, TenSet's MLP design); 0: the summary alone
  int hidden1 = 256;
  int hidden2 = 128;          // 0: one hidden layer
  int epochs = 300;           // passes over the groups of the training set
  int groups_per_step = 64;   // groups whose programs make one gradient step
  int programs_per_group = 16;  // of each group in a step, this many programs drawn at random (0: all; not 1)
  int min_steps = 200;        // at least this many steps, however few the groups (a tuner's first tasks)
  double learning_rate = 1e-3;  // Adam's
  double weight_decay = 1e-5;   // L2 on every weight and bias, added to the gradient
  double dropout = 0.0;         // in training, each input of the last hidden layer zeroed with this chance
                                // (the rest scaled up to keep the mean)
  int nthread = 0;              // 0: every CPU this process may run on
  uint64_t seed = 0;
};

// What the ranker reads of n programs: a summary each and, for a ranker with a row encoder, their
// feature rows.
struct MlpInputs {
  std::vector<float> summaries;  // n x the summary width
  std::vector<float> rows;       // every program's rows, program after program (the row width each)
  std::vector<size_t> first_row;  // n + 1 entries: program i's rows are rows first_row[i] to first_row[i + 1]
};

class MlpRanker {
 public:
  explicit MlpRanker(const MlpOptions& options = {});

  // Trains from scratch, or with `resume` and a trained ranker of these widths, goes on from its
  // weights and standardization (a ranker loaded from a file, given samples it has not seen).
  // `labels` higher = faster (failures 0, below every success); `groups` the program's group: only
  // programs of one group are compared. `row_width` only with an encoder (its inputs' rows then
  // filled). Deterministic for given options, data, thread count and CPU (OpenBLAS splits its
  // products by thread count and picks its kernels by CPU). Sets OpenBLAS's thread count (a
  // process-wide setting) to nthread's.
  void train(const MlpInputs& inputs, int summary_width, int row_width, const std::vector<double>& labels,
             const std::vector<int>& groups, bool resume = false);
  // The same for a ranker without an encoder: one summary row of `width` values per program.
  void train(const std::vector<float>& summaries, int width, const std::vector<double>& labels,
             const std::vector<int>& groups, bool resume = false);
  // One score per program, higher = predicted faster; fails a check before training.
  std::vector<double> predict(const MlpInputs& inputs) const;
  std::vector<double> predict(const std::vector<float>& summaries) const;
  bool trained() const { return width_ > 0; }
  int width() const { return width_; }          // the summary's
  int row_width() const { return row_width_; }  // 0 without an encoder
  const MlpOptions& options() const { return options_; }

  // The options alone, as to_json writes them (options_from_json throws InputError when they are out
  // of range; a file written before the encoder and dropout existed reads as neither).
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
  struct Pass;  // one batch's activations (mlp_ranker.cpp)

 private:
  void initialize(const MlpInputs& inputs, int summary_width, int row_width, std::mt19937_64& rng);
  // The network's input of `programs` (indices into `inputs`): standardized summaries, and with an
  // encoder the standardized rows and their programs' first rows, into `pass`.
  void load_batch(const MlpInputs& inputs, const std::vector<size_t>& programs, Pass& pass) const;
  void forward(Pass& pass, bool dropout) const;
  void backward(Pass& pass, bool dropout, const std::vector<float>& d_score, std::vector<Layer>& grads) const;
  std::vector<Layer*> parameters();
  MlpOptions options_;
  int width_ = 0, row_width_ = 0;
  std::vector<float> shift_, scale_;          // summary standardization: (max(x, floor) - shift) * scale
  std::vector<float> row_shift_, row_scale_;  // the rows' (with an encoder)
  std::vector<Layer> encoder_;  // two layers, or none
  std::vector<Layer> head_;     // the hidden layers and the score's
};

}  // namespace tessel
