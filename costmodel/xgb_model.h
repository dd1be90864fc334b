// The learned cost model: gradient-boosted trees (XGBoost) that score every store row of a program
// and sum the rows into the program's score (Ansor's design), or score one summary vector per
// program, trained on throughput normalized within each task; or that tell which of two programs of
// a task is the faster, a program's score being its predicted share of wins. The model remembers
// every sample it has seen and grows incrementally; it saves to and loads from one JSON file.
// Its options are in xgb_options.h; its parts in training_set, program_objectives, pairwise_ranking,
// mlp_blend, xgb_booster and xgb_model_file.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "costmodel/cost_model.h"
#include "costmodel/mlp_ranker.h"
#include "costmodel/xgb_booster.h"
#include "costmodel/xgb_options.h"

namespace tessel {

class XGBoostModel : public CostModel {
 public:
  explicit XGBoostModel(const XGBoostModelOptions& options = {});
  ~XGBoostModel() override;
  XGBoostModel(const XGBoostModel&) = delete;
  XGBoostModel& operator=(const XGBoostModel&) = delete;

  // Reads a model saved by save(). Throws InputError naming `path` when the file is missing, is not
  // a tessel cost model, or was trained on another feature version or width. The samples the model
  // was trained on are not saved: a loaded model predicts, and later updates learn from new samples
  // only (continuing from the loaded trees).
  static std::unique_ptr<XGBoostModel> load(const std::string& path);
  // Writes the trees and the metadata (feature version and width, options, sample count) as one
  // JSON file. Throws InputError when the file cannot be written.
  void save(const std::string& path) const override;

  std::vector<double> predict(const std::vector<ProgramFeatures>& programs) override;
  std::vector<double> predict_with_reference(const std::vector<ProgramFeatures>& programs,
                                             const std::vector<ProgramFeatures>& reference) override;
  // Appends `samples` to the training set and adds rounds_per_update trees fitted to all of it, or
  // retrains from scratch when the model has no trees yet or would pass max_trees.
  void update(const std::vector<TrainingSample>& samples) override;
  bool trained() const override;
  std::string name() const override { return "xgboost"; }

  const XGBoostModelOptions& options() const { return options_; }
  int num_trees() const;
  // Samples seen, including those of the model this one was loaded from.
  int64_t num_samples() const { return samples_seen_; }
  // Retrainings from scratch so far (the first training included).
  int num_retrains() const { return retrains_; }

 private:
  // XGBoost's parameters for these options, in the order they are set.
  static xgb::Booster::Params booster_params(const XGBoostModelOptions& o);
  void update_pairs();
  // The trees the next update adds: rounds_per_update, or, with no trees yet or past max_trees, a
  // fresh booster (caching predictions for `training`) and retrain_rounds.
  int begin_update(const xgb::Matrix& training);
  // The trees' scores blended with the trained neural ranker's of the same programs (see mlp_weight).
  std::vector<double> blend(std::vector<double> tree_scores, const MlpInputs& inputs) const;
  void train_mlp(const MlpInputs& inputs, const std::vector<double>& labels, const std::vector<int>& groups,
                 const std::vector<double>& tree_scores);
  XGBoostModelOptions options_;
  MlpRanker mlp_;
  bool mlp_loaded_ = false;                      // mlp_ came from a file: updates go on from its weights
  double tree_spread_ = 1.0, mlp_spread_ = 1.0;  // typical score spread within a training group
  xgb::Booster booster_;
  std::vector<TrainingSample> samples_;
  int64_t samples_seen_ = 0;
  int retrains_ = 0;
};

}  // namespace tessel
