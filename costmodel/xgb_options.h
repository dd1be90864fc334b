// The options of the learned cost model (XGBoostModel): one plain struct, its objectives, inputs and
// neural-ranker designs by name, and the defaults a new model gets. Names are the settings' own
// ("rank", "programs", "deepsets"); no command-line flag is spelled here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "costmodel/mlp_ranker.h"

namespace tessel {

struct XGBoostModelOptions {
  int max_depth = 6;           // Ansor uses 10; on hundreds of programs that learns noise
  double eta = 0.1;            // learning rate of each tree
  int rounds_per_update = 20;  // trees added on the whole sample set by each update()
  int retrain_rounds = 200;    // trees of a model trained from scratch (first update, and past max_trees)
  int max_trees = 1000;        // past this many trees, update() retrains from scratch
  int nthread = 0;             // 0: every core
  uint64_t seed = 0;
  // The loss on program scores (a program's score is the sum of its input rows' predictions: its
  // store rows, or its one summary row, see `input`):
  //   PackSum: squared error to the throughput normalized within the group (Ansor's pack-sum);
  //   Rank: pairwise logistic loss over the pairs of programs of one group whose throughputs
  //         differ (failures rank below every success), each group's pairs scaled by 1/(n - 1).
  //         Only the order within a group is learned: no group's offset or scale to fit.
  // Rank is the default: the search uses the scores only to order candidates, and on the 8-workload
  // CPU log it ranks better than PackSum both on held-out workloads (pairwise 0.682 vs 0.647) and
  // trained on half of a workload's own records (0.808 vs 0.798), for about 2.4x the training time.
  enum class Objective { PackSum, Rank };
  Objective objective = Objective::Rank;
  // What the trees score: every store row of a program, summed into its score (Ansor's design),
  // one summary vector per program (program_summary: its heaviest row, each column's max and min,
  // its row count), or a pair of programs of one task: the difference of their summaries (the
  // columns are log2 values, so a log ratio, alike for a small and a large workload) and their mean
  // (what kind of programs both are). Pairs train with the logistic loss on "the first is faster"
  // (the objective must be Rank); a program's score is its predicted share of wins against the
  // reference programs (predict_with_reference) or against `anchors` programs of the batch.
  enum class Input { Rows, Programs, Pairs };
  Input input = Input::Rows;
  int pair_partners = 16;         // Pairs: each training program is paired with this many of its task, both orders
  int anchors = 64;               // Pairs: programs of a batch scored against when no reference is given
  double lambda = 1.0;            // L2 regularization of leaf values (XGBoost's reg_lambda)
  double min_child_weight = 0.0;  // least hessian in a leaf
  double subsample = 1.0;         // fraction of rows each tree sees
  double colsample = 1.0;         // fraction of columns each tree sees
  // Input Programs only: above 0, a neural ranker of the same summaries (MlpRanker) is trained beside
  // the trees on every update, and a program's score is the trees' score plus mlp_weight times the
  // ranker's, each divided by its typical spread within a group of the training set (so the weight
  // is the ranker's share of the vote whatever the two models' scales).
  double mlp_weight = 0.0;
  MlpOptions mlp;
};

// Whether every option lies in its range and the objective, input and neural-ranker weight fit
// together (what XGBoostModel's constructor checks and a loaded file must pass).
bool options_in_range(const XGBoostModelOptions& o);

// "rank" or "packsum".
const char* objective_name(XGBoostModelOptions::Objective objective);
// The objective objective_name calls `name`; nullopt for another name.
std::optional<XGBoostModelOptions::Objective> objective_named(std::string_view name);

// "rows", "programs" or "pairs".
const char* model_input_name(XGBoostModelOptions::Input input);
// The input model_input_name calls `name`; nullopt for another name (the empty one included: the
// caller picks the target's default, default_model_input).
std::optional<XGBoostModelOptions::Input> model_input_named(std::string_view name);
// The input a new model gets by default: Programs on the GPU, Rows on the CPU. Held out on the
// 69-workload H100 log, programs rank 0.792 pairwise / 0.414 top-5% recall against rows' 0.762 /
// 0.320; on the 8-workload CPU log 0.674 / 0.058 against 0.682 / 0.104.
XGBoostModelOptions::Input default_model_input(bool gpu);

// Pack-sum fits one score per program, which a pairs model does not have; every other pair fits.
bool objective_fits_input(XGBoostModelOptions::Objective objective, XGBoostModelOptions::Input input);

// The neural ranker's designs by name: "summary" (the default design, MlpOptions{}: the program
// summary through two hidden layers of 256 and 128) and "deepsets" (every feature row through a
// shared encoder of two layers of 512, summed over the program's rows, beside the summary, one hidden
// layer of 256, dropout 0.2: held out on the H100 log the better ranker, about 14 times the
// arithmetic a step). nullopt for another name, the empty one included.
std::optional<MlpOptions> mlp_network_named(std::string_view name);
// The name of the design `o` follows ("summary", "deepsets", or "custom" for other options).
std::string mlp_network_name(const MlpOptions& o);
// The neural ranker's weight a new model of this input and network gets by default (mlp_weight): 0
// but for programs, there 1 for a network of the summary alone and 2 for one with a row encoder.
double default_mlp_weight(XGBoostModelOptions::Input input, const MlpOptions& network);

}  // namespace tessel
