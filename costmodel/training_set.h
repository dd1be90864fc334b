// What the learned cost model trains on and predicts from: the programs' input rows packed into one
// matrix (their store rows, or one summary row each), the neural ranker's inputs, and the labels:
// throughput normalized within each task, failures 0, and the task of every sample as an index.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "costmodel/cost_model.h"
#include "costmodel/mlp_ranker.h"
#include "costmodel/xgb_options.h"
#include "schedule/te/error.h"

namespace tessel::xgb {

// The columns of one input row of the trees: a feature row, a program summary, or a pair of them.
int input_width(XGBoostModelOptions::Input input);

// The model's input rows of every program, concatenated; `first_row[p]` .. `first_row[p + 1]` are
// program p's: its store rows, or its one summary row.
struct Packed {
  std::vector<float> values;
  std::vector<size_t> first_row{0};
  int width = 0;
};

// The rows of `n` programs (`features_of(i)` the i-th's features) for input Rows or Programs.
template <typename GetFeatures>
Packed pack(size_t n, XGBoostModelOptions::Input input, GetFeatures features_of) {
  TESSEL_CHECK(input != XGBoostModelOptions::Input::Pairs, "cost model: pairs are not packed per program");
  Packed p;
  p.width = input_width(input);
  const size_t width = static_cast<size_t>(feature_width());
  for (size_t i = 0; i < n; ++i) {
    const ProgramFeatures& f = features_of(i);
    TESSEL_CHECK(f.values.size() == static_cast<size_t>(f.rows) * width,
                 "cost model: program features do not match the feature width");
    if (input == XGBoostModelOptions::Input::Rows) {
      p.values.insert(p.values.end(), f.values.begin(), f.values.end());
      p.first_row.push_back(p.first_row.back() + static_cast<size_t>(f.rows));
    } else {
      std::vector<float> summary = program_summary(f);
      p.values.insert(p.values.end(), summary.begin(), summary.end());
      p.first_row.push_back(p.first_row.back() + 1);
    }
  }
  return p;
}

// The neural ranker's inputs: the programs' summaries (`packed`, input Programs) and, for a ranker with a
// row encoder, every program's feature rows.
template <typename GetFeatures>
MlpInputs mlp_inputs(const Packed& packed, size_t n, bool with_rows, GetFeatures features_of) {
  MlpInputs in;
  in.summaries = packed.values;
  if (!with_rows) return in;
  in.first_row.push_back(0);
  for (size_t i = 0; i < n; ++i) {
    const ProgramFeatures& f = features_of(i);
    in.rows.insert(in.rows.end(), f.values.begin(), f.values.end());
    in.first_row.push_back(in.first_row.back() + static_cast<size_t>(f.rows));
  }
  return in;
}

// Throughput relative to the best successful program of the same group; 0 for failures (a latency
// that is not finite and positive), below every success.
std::vector<double> normalized_throughput(const std::vector<TrainingSample>& samples);

// The group of every sample as an index (order of first appearance).
std::vector<int> group_ids(const std::vector<TrainingSample>& samples);

}  // namespace tessel::xgb
