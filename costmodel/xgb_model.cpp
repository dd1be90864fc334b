// XGBoost through its C API with a custom objective: Ansor's pack-sum squared error
// (python/tvm/auto_scheduler/cost_model/xgb_model.py). A program's score is the sum of its rows'
// predictions; the loss is sum_p w_p (s_p - y_p)^2 / 2 over programs p, with y_p the program's
// throughput relative to the best of its group and w_p = max(y_p, kMinWeight). Its gradient with
// respect to a row's prediction is the program's w_p (s_p - y_p), shared by every row of the
// program. Ansor also gives each row the hessian w_p; a leaf holding all n rows of a program then
// moves the program's score n times too far (d^2/dv^2 of w_p (s_p + n v - y_p)^2 / 2 is w_p n^2, the
// n rows supply n w_p). We give each row w_p n instead: the Newton step is then exact for such a leaf
// and held-out ranking improves markedly (0.87 -> 0.98 pairwise in tests/costmodel's synthetic
// ranking with depth 3, eta 0.1, 200 trees).
// XGBoosterBoostOneIter grows one tree from these. The rows are a program's store rows (input
// Rows) or its one summary row (input Programs: n = 1, and pack-sum is plain weighted regression).
// The rank objective below shares the same packing. Input Pairs has rows of two programs each and
// its own loss (logistic, on which of the two is faster; boost_pairs).
#include "costmodel/xgb_model.h"

#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <sstream>

namespace tessel {

namespace {

// Failed and slow programs still pull their score toward their label, if less than fast ones (Ansor
// weights by the label alone, so its failures teach nothing and its slow programs little: on a few
// hundred samples that ranked held-out programs 0.91 right in pairs, against 0.98 with this floor).
constexpr double kMinWeight = 0.3;
constexpr const char* kFileFormat = "tessel-cost-model";
// 2: the options name the model's input (rows or programs); a tessel reading version 1 only would
// take a programs model for a rows one. 3: a neural ranker is blended in (mlp_weight); its weights and
// both models' spreads are saved. A model without a trained ranker is still written as version 2,
// which an earlier tessel reads (it ignores the options it does not know).
constexpr int kFileVersion = 3;

void check(int rc, const char* call) {
  if (rc != 0) throw XGBoostError(std::string("XGBoost: ") + call + " failed: " + XGBGetLastError());
}

// Owns a DMatrix handle.
class Matrix {
 public:
  Matrix(const std::vector<float>& values, size_t rows, int width) {
    check(XGDMatrixCreateFromMat(values.data(), rows, static_cast<bst_ulong>(width),
                                 std::numeric_limits<float>::quiet_NaN(), &handle_),
          "XGDMatrixCreateFromMat");
  }
  ~Matrix() { XGDMatrixFree(handle_); }
  Matrix(const Matrix&) = delete;
  Matrix& operator=(const Matrix&) = delete;
  DMatrixHandle get() const { return handle_; }

 private:
  DMatrixHandle handle_ = nullptr;
};

bool succeeded(double latency) { return std::isfinite(latency) && latency > 0; }

int input_width(XGBoostModelOptions::Input input) {
  switch (input) {
    case XGBoostModelOptions::Input::Rows: return feature_width();
    case XGBoostModelOptions::Input::Programs: return program_summary_width();
    case XGBoostModelOptions::Input::Pairs: return 2 * program_summary_width();
  }
  return 0;
}

// The model's input rows of every program, concatenated; `first_row[p]` .. `first_row[p + 1]` are
// program p's: its store rows, or its one summary row.
struct Packed {
  std::vector<float> values;
  std::vector<size_t> first_row{0};
  int width = 0;
};

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

// Input Pairs: the row of programs a and b (their summaries): a - b, then (a + b) / 2.
void append_pair_row(const std::vector<float>& a, const std::vector<float>& b, std::vector<float>& out) {
  for (size_t j = 0; j < a.size(); ++j) out.push_back(a[j] - b[j]);
  for (size_t j = 0; j < a.size(); ++j) out.push_back(0.5f * (a[j] + b[j]));
}

// The training pairs of input Pairs: every sample with up to `partners` others of its group and a
// different label, drawn at random (the generator seeded by the caller), in both orders; target 1
// where the first program is the faster.
struct TrainingPairs {
  std::vector<std::pair<size_t, size_t>> pairs;
  std::vector<float> targets;
};

TrainingPairs training_pairs(const std::vector<double>& labels, const std::vector<int>& groups, int partners,
                             std::mt19937_64& rng) {
  std::map<int, std::vector<size_t>> members;
  for (size_t p = 0; p < labels.size(); ++p) members[groups[p]].push_back(p);
  TrainingPairs out;
  std::vector<size_t> others, drawn;
  for (const auto& [group, idx] : members) {
    for (size_t a : idx) {
      others.clear();
      for (size_t b : idx)
        if (labels[b] != labels[a]) others.push_back(b);
      drawn.clear();
      std::sample(others.begin(), others.end(), std::back_inserter(drawn), static_cast<size_t>(partners), rng);
      for (size_t b : drawn)
        for (auto [x, y] : {std::pair{a, b}, std::pair{b, a}}) {
          out.pairs.emplace_back(x, y);
          out.targets.push_back(labels[x] > labels[y] ? 1.0f : 0.0f);
        }
    }
  }
  return out;
}

// Throughput relative to the best successful program of the same group; 0 for failures.
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

// The group of every sample as an index (order of first appearance).
std::vector<int> group_ids(const std::vector<TrainingSample>& samples) {
  std::map<std::string, int> ids;
  std::vector<int> out;
  out.reserve(samples.size());
  for (const TrainingSample& s : samples) out.push_back(ids.emplace(s.group, static_cast<int>(ids.size())).first->second);
  return out;
}

nlohmann::json options_to_json(const XGBoostModelOptions& o) {
  return {{"max_depth", o.max_depth},           {"eta", o.eta},
          {"rounds_per_update", o.rounds_per_update}, {"retrain_rounds", o.retrain_rounds},
          {"max_trees", o.max_trees},           {"nthread", o.nthread},
          {"seed", o.seed},                     {"objective", objective_name(o.objective)},
          {"lambda", o.lambda},                 {"min_child_weight", o.min_child_weight},
          {"subsample", o.subsample},           {"colsample", o.colsample},
          {"input", model_input_name(o.input)}, {"pair_partners", o.pair_partners},
          {"anchors", o.anchors},               {"mlp_weight", o.mlp_weight},
          {"mlp", MlpRanker::options_to_json(o.mlp)}};
}

XGBoostModelOptions options_from_json(const nlohmann::json& j) {
  XGBoostModelOptions o;
  o.max_depth = j.at("max_depth").get<int>();
  o.eta = j.at("eta").get<double>();
  o.rounds_per_update = j.at("rounds_per_update").get<int>();
  o.retrain_rounds = j.at("retrain_rounds").get<int>();
  o.max_trees = j.at("max_trees").get<int>();
  o.nthread = j.at("nthread").get<int>();
  o.seed = j.at("seed").get<uint64_t>();
  // Absent from models saved before these options existed: the defaults of then.
  // An unknown name sets max_depth 0, which options_in_range refuses.
  if (auto objective = objective_named(j.value("objective", std::string("packsum")))) o.objective = *objective;
  else o.max_depth = 0;
  // Models saved before the option existed scored rows.
  if (auto input = model_input_named(j.value("input", std::string("rows")))) o.input = *input;
  else o.max_depth = 0;
  o.lambda = j.value("lambda", 1.0);
  o.min_child_weight = j.value("min_child_weight", 0.0);
  o.subsample = j.value("subsample", 1.0);
  o.colsample = j.value("colsample", 1.0);
  o.pair_partners = j.value("pair_partners", o.pair_partners);
  o.anchors = j.value("anchors", o.anchors);
  o.mlp_weight = j.value("mlp_weight", 0.0);
  if (j.contains("mlp")) o.mlp = MlpRanker::options_from_json(j.at("mlp"));
  return o;
}

// The mean over groups of two or more programs of the standard deviation of their scores: how far
// apart one model's scores of one task typically lie (1 when no group has two programs).
double typical_spread(const std::vector<double>& scores, const std::vector<int>& groups) {
  std::map<int, std::vector<double>> by_group;
  for (size_t i = 0; i < scores.size(); ++i) by_group[groups[i]].push_back(scores[i]);
  double sum = 0;
  int counted = 0;
  for (const auto& [g, v] : by_group) {
    if (v.size() < 2) continue;
    double mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size()), sq = 0;
    for (double x : v) sq += (x - mean) * (x - mean);
    sum += std::sqrt(sq / static_cast<double>(v.size()));
    ++counted;
  }
  return counted > 0 && sum > 0 ? sum / counted : 1.0;
}

}  // namespace

struct XGBoostModel::Impl {
  BoosterHandle booster = nullptr;

  ~Impl() { reset(); }
  void reset() {
    if (booster) XGBoosterFree(booster);
    booster = nullptr;
  }

  // A fresh booster (caching predictions for `cache` when given) with the training parameters.
  void create(const XGBoostModelOptions& o, DMatrixHandle cache) {
    reset();
    check(XGBoosterCreate(cache ? &cache : nullptr, cache ? 1 : 0, &booster), "XGBoosterCreate");
    set_params(o);
  }

  void set_params(const XGBoostModelOptions& o) {
    auto set = [&](const char* name, const std::string& value) {
      check(XGBoosterSetParam(booster, name, value.c_str()), "XGBoosterSetParam");
    };
    set("verbosity", "0");
    set("tree_method", "hist");
    set("max_depth", std::to_string(o.max_depth));
    set("eta", std::to_string(o.eta));
    set("min_child_weight", std::to_string(o.min_child_weight));  // rows carry small weights: 0 lets trees split them
    set("lambda", std::to_string(o.lambda));
    set("subsample", std::to_string(o.subsample));
    set("colsample_bytree", std::to_string(o.colsample));
    set("base_score", "0");        // a program's score is a sum of its input rows: start every row at 0
    set("disable_default_eval_metric", "1");
    set("seed", std::to_string(o.seed % 2147483647ULL));
    if (o.nthread > 0) set("nthread", std::to_string(o.nthread));
  }

  int trees() const {
    if (!booster) return 0;
    int rounds = 0;
    check(XGBoosterBoostedRounds(booster, &rounds), "XGBoosterBoostedRounds");
    return rounds;
  }

  // One prediction per row of `m` (raw margins: the sum of the trees).
  std::vector<float> predict_rows(const Matrix& m, size_t rows) const {
    const char* config =
        R"({"type": 1, "training": false, "iteration_begin": 0, "iteration_end": 0, "strict_shape": false})";
    const bst_ulong* shape = nullptr;
    bst_ulong dim = 0;
    const float* result = nullptr;
    check(XGBoosterPredictFromDMatrix(booster, m.get(), config, &shape, &dim, &result),
          "XGBoosterPredictFromDMatrix");
    return std::vector<float>(result, result + rows);
  }

  // `rounds` trees fitted to the objective on all samples.
  void boost(const Matrix& m, const Packed& packed, const std::vector<double>& labels, const std::vector<int>& groups,
             XGBoostModelOptions::Objective objective, int rounds) {
    const size_t rows = packed.first_row.back();
    std::vector<float> grad(rows), hess(rows);
    for (int r = 0; r < rounds; ++r) {
      std::vector<float> preds = predict_rows(m, rows);
      if (objective == XGBoostModelOptions::Objective::Rank) {
        rank_gradients(preds, packed, labels, groups, grad, hess);
      } else {
        packsum_gradients(preds, packed, labels, grad, hess);
      }
      check(XGBoosterBoostOneIter(booster, m.get(), grad.data(), hess.data(), rows), "XGBoosterBoostOneIter");
    }
  }

  // Input Pairs: `rounds` trees fitted to the logistic loss of each pair row's margin m against its
  // target t (1: the first program is faster): gradient sigma(m) - t, hessian sigma(m) (1 - sigma(m)).
  void boost_pairs(const Matrix& m, const std::vector<float>& targets, int rounds) {
    const size_t rows = targets.size();
    std::vector<float> grad(rows), hess(rows);
    for (int r = 0; r < rounds; ++r) {
      std::vector<float> preds = predict_rows(m, rows);
      for (size_t i = 0; i < rows; ++i) {
        const double p = 1.0 / (1.0 + std::exp(-static_cast<double>(preds[i])));
        grad[i] = static_cast<float>(p - targets[i]);
        hess[i] = static_cast<float>(std::max(p * (1.0 - p), 1e-6));
      }
      check(XGBoosterBoostOneIter(booster, m.get(), grad.data(), hess.data(), rows), "XGBoosterBoostOneIter");
    }
  }

  static void packsum_gradients(const std::vector<float>& preds, const Packed& packed, const std::vector<double>& labels,
                                std::vector<float>& grad, std::vector<float>& hess) {
    for (size_t p = 0; p + 1 < packed.first_row.size(); ++p) {
      size_t begin = packed.first_row[p], end = packed.first_row[p + 1];
      double sum = 0;
      for (size_t i = begin; i < end; ++i) sum += preds[i];
      double weight = std::max(labels[p], kMinWeight);
      double rows = static_cast<double>(end - begin);
      for (size_t i = begin; i < end; ++i) {
        grad[i] = static_cast<float>(weight * (sum - labels[p]));
        hess[i] = static_cast<float>(weight * rows);
      }
    }
  }

  // Pairwise logistic loss log(1 + exp(-(s_i - s_j))) over the pairs of one group with label i >
  // label j, scaled by 1/(n - 1) for a group of n programs so that every program carries about the
  // same weight whatever its group's size. A row gets its program's gradient and the program's
  // hessian times its row count (the exact Newton step for a leaf holding all of a program's rows,
  // as in the pack-sum objective).
  static void rank_gradients(const std::vector<float>& preds, const Packed& packed, const std::vector<double>& labels,
                             const std::vector<int>& groups, std::vector<float>& grad, std::vector<float>& hess) {
    const size_t n = labels.size();
    std::vector<double> score(n, 0.0), g(n, 0.0), h(n, 0.0);
    for (size_t p = 0; p < n; ++p)
      for (size_t i = packed.first_row[p]; i < packed.first_row[p + 1]; ++i) score[p] += preds[i];
    std::map<int, std::vector<size_t>> members;
    for (size_t p = 0; p < n; ++p) members[groups[p]].push_back(p);
    for (const auto& [group, idx] : members) {
      if (idx.size() < 2) continue;
      const double scale = 1.0 / static_cast<double>(idx.size() - 1);
      for (size_t a = 0; a < idx.size(); ++a)
        for (size_t b = a + 1; b < idx.size(); ++b) {
          size_t hi = idx[a], lo = idx[b];
          if (labels[hi] == labels[lo]) continue;
          if (labels[hi] < labels[lo]) std::swap(hi, lo);
          // d(loss)/d(s_hi) = -sigma(-(s_hi - s_lo)); the hessian is sigma (1 - sigma) for both.
          const double sig = 1.0 / (1.0 + std::exp(score[hi] - score[lo]));
          g[hi] -= scale * sig;
          g[lo] += scale * sig;
          const double curvature = scale * sig * (1.0 - sig);
          h[hi] += curvature;
          h[lo] += curvature;
        }
    }
    for (size_t p = 0; p < n; ++p) {
      const double rows = static_cast<double>(packed.first_row[p + 1] - packed.first_row[p]);
      for (size_t i = packed.first_row[p]; i < packed.first_row[p + 1]; ++i) {
        grad[i] = static_cast<float>(g[p]);
        hess[i] = static_cast<float>(std::max(h[p], 1e-6) * rows);
      }
    }
  }
};

XGBoostModel::XGBoostModel(const XGBoostModelOptions& options)
    : options_(options), mlp_(options.mlp), impl_(std::make_unique<Impl>()) {
  TESSEL_CHECK(options_in_range(options), "XGBoostModelOptions out of range");
}

XGBoostModel::~XGBoostModel() = default;

bool XGBoostModel::trained() const { return impl_->trees() > 0; }

int XGBoostModel::num_trees() const { return impl_->trees(); }

std::vector<double> XGBoostModel::predict(const std::vector<ProgramFeatures>& programs) {
  if (options_.input == XGBoostModelOptions::Input::Pairs) return predict_with_reference(programs, {});
  std::vector<double> scores(programs.size(), 0.0);
  if (!trained() || programs.empty()) return scores;
  Packed packed = pack(programs.size(), options_.input, [&](size_t i) -> const ProgramFeatures& { return programs[i]; });
  const size_t rows = packed.first_row.back();
  if (rows == 0) return scores;
  Matrix m(packed.values, rows, packed.width);
  std::vector<float> preds = impl_->predict_rows(m, rows);
  for (size_t p = 0; p < programs.size(); ++p)
    for (size_t i = packed.first_row[p]; i < packed.first_row[p + 1]; ++i) scores[p] += preds[i];
  if (options_.mlp_weight == 0 || !mlp_.trained()) return scores;
  return blend(std::move(scores), mlp_inputs(packed, programs.size(), mlp_.row_width() > 0,
                                             [&](size_t i) -> const ProgramFeatures& { return programs[i]; }));
}

std::vector<double> XGBoostModel::blend(std::vector<double> tree_scores, const MlpInputs& inputs) const {
  std::vector<double> mlp = mlp_.predict(inputs);
  for (size_t p = 0; p < tree_scores.size(); ++p)
    tree_scores[p] = tree_scores[p] / tree_spread_ + options_.mlp_weight * mlp[p] / mlp_spread_;
  return tree_scores;
}

void XGBoostModel::train_mlp(const MlpInputs& inputs, const std::vector<double>& labels, const std::vector<int>& groups,
                             const std::vector<double>& tree_scores) {
  if (mlp_loaded_ && mlp_.trained()) {
    // A loaded ranker learned from samples this model no longer holds: it goes on from its weights.
    mlp_.train(inputs, program_summary_width(), feature_width(), labels, groups, true);
  } else {
    MlpOptions o = options_.mlp;
    if (o.nthread == 0) o.nthread = options_.nthread;
    o.seed ^= options_.seed;
    mlp_ = MlpRanker(o);
    mlp_.train(inputs, program_summary_width(), feature_width(), labels, groups);
  }
  if (!mlp_.trained()) return;
  tree_spread_ = typical_spread(tree_scores, groups);
  mlp_spread_ = typical_spread(mlp_.predict(inputs), groups);
}

std::vector<double> XGBoostModel::predict_with_reference(const std::vector<ProgramFeatures>& programs,
                                                         const std::vector<ProgramFeatures>& reference) {
  if (options_.input != XGBoostModelOptions::Input::Pairs) return predict(programs);
  std::vector<double> scores(programs.size(), 0.0);
  if (!trained() || programs.empty()) return scores;
  std::vector<std::vector<float>> summaries, anchors;
  for (const ProgramFeatures& f : programs) summaries.push_back(program_summary(f));
  if (!reference.empty()) {
    for (const ProgramFeatures& f : reference) anchors.push_back(program_summary(f));
  } else {  // `anchors` programs of the batch, evenly spaced
    const size_t n = summaries.size(), k = std::min(n, static_cast<size_t>(options_.anchors));
    for (size_t i = 0; i < k; ++i) anchors.push_back(summaries[k == 1 ? 0 : i * (n - 1) / (k - 1)]);
  }
  // A program against itself (as an anchor of its own batch) says nothing: those pairs are left out.
  std::vector<double> wins(programs.size(), 0.0);
  std::vector<int> counted(programs.size(), 0);
  const int width = input_width(options_.input);
  constexpr size_t kChunkRows = 16384;  // bounds the pair matrix of a large batch
  std::vector<float> values;
  std::vector<size_t> owner;
  auto flush = [&] {
    if (owner.empty()) return;
    Matrix m(values, owner.size(), width);
    std::vector<float> margins = impl_->predict_rows(m, owner.size());
    for (size_t r = 0; r < owner.size(); ++r) {
      wins[owner[r]] += 1.0 / (1.0 + std::exp(-static_cast<double>(margins[r])));
      ++counted[owner[r]];
    }
    values.clear();
    owner.clear();
  };
  for (size_t p = 0; p < summaries.size(); ++p)
    for (const std::vector<float>& anchor : anchors) {
      if (anchor == summaries[p]) continue;
      append_pair_row(summaries[p], anchor, values);
      owner.push_back(p);
      if (owner.size() == kChunkRows) flush();
    }
  flush();
  for (size_t p = 0; p < scores.size(); ++p) scores[p] = counted[p] > 0 ? wins[p] / counted[p] : 0.5;
  return scores;
}

void XGBoostModel::update(const std::vector<TrainingSample>& samples) {
  if (samples.empty()) return;
  samples_.insert(samples_.end(), samples.begin(), samples.end());
  samples_seen_ += static_cast<int64_t>(samples.size());
  if (options_.input == XGBoostModelOptions::Input::Pairs) {
    update_pairs();
    return;
  }

  Packed packed =
      pack(samples_.size(), options_.input, [&](size_t i) -> const ProgramFeatures& { return samples_[i].features; });
  const size_t rows = packed.first_row.back();
  if (rows == 0) return;
  std::vector<double> labels = normalized_throughput(samples_);
  std::vector<int> groups = group_ids(samples_);
  Matrix m(packed.values, rows, packed.width);

  impl_->boost(m, packed, labels, groups, options_.objective, begin_update(m.get()));
  if (options_.mlp_weight > 0) {
    std::vector<float> preds = impl_->predict_rows(m, rows);
    train_mlp(mlp_inputs(packed, samples_.size(), options_.mlp.encoder > 0,
                         [&](size_t i) -> const ProgramFeatures& { return samples_[i].features; }),
              labels, groups, std::vector<double>(preds.begin(), preds.end()));
  }
}

int XGBoostModel::begin_update(DMatrixHandle training) {
  const int trees = impl_->trees();
  if (trees > 0 && trees + options_.rounds_per_update <= options_.max_trees) return options_.rounds_per_update;
  impl_->create(options_, training);
  ++retrains_;
  return options_.retrain_rounds;
}

// Input Pairs: pairs drawn afresh from all samples (the generator seeded by the options' seed and
// the sample count, so training is deterministic), then trees fitted to them as for the other inputs.
void XGBoostModel::update_pairs() {
  std::vector<double> labels = normalized_throughput(samples_);
  std::vector<int> groups = group_ids(samples_);
  std::mt19937_64 rng(options_.seed ^ (0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(samples_.size())));
  TrainingPairs pairs = training_pairs(labels, groups, options_.pair_partners, rng);
  if (pairs.pairs.empty()) return;  // no group holds two programs of different speed yet
  std::vector<std::vector<float>> summaries;
  summaries.reserve(samples_.size());
  for (const TrainingSample& s : samples_) summaries.push_back(program_summary(s.features));
  const int width = input_width(options_.input);
  std::vector<float> values;
  values.reserve(pairs.pairs.size() * static_cast<size_t>(width));
  for (auto [a, b] : pairs.pairs) append_pair_row(summaries[a], summaries[b], values);
  Matrix m(values, pairs.pairs.size(), width);
  impl_->boost_pairs(m, pairs.targets, begin_update(m.get()));
}

void XGBoostModel::save(const std::string& path) const {
  nlohmann::json file = {{"format", kFileFormat},
                         {"format_version", mlp_.trained() ? kFileVersion : 2},
                         {"feature_version", kFeatureVersion},
                         {"feature_width", feature_width()},
                         {"options", options_to_json(options_)},
                         {"num_samples", samples_seen_},
                         {"num_retrains", retrains_},
                         {"booster", nullptr},
                         {"mlp", nullptr},
                         {"spreads", {tree_spread_, mlp_spread_}}};
  if (mlp_.trained()) file["mlp"] = mlp_.to_json();
  if (impl_->booster) {
    bst_ulong len = 0;
    const char* buffer = nullptr;
    check(XGBoosterSaveModelToBuffer(impl_->booster, R"({"format": "json"})", &len, &buffer),
          "XGBoosterSaveModelToBuffer");
    file["booster"] = nlohmann::json::parse(buffer, buffer + len);
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << file.dump() << "\n";
  out.close();
  if (!out) throw InputError("cannot write the cost model to '" + path + "'");
}

std::unique_ptr<XGBoostModel> XGBoostModel::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read cost model '" + path + "': no such file or not readable");
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json file;
  try {
    file = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception&) {
    throw InputError("'" + path + "' is not a tessel cost model (not JSON); train one with `tessel model train`");
  }
  if (!file.is_object() || file.value("format", "") != kFileFormat)
    throw InputError("'" + path + "' is not a tessel cost model; train one with `tessel model train`");
  try {
    if (file.at("format_version").get<int>() > kFileVersion)
      throw InputError("cost model '" + path + "' comes from a newer tessel (format version " +
                       std::to_string(file.at("format_version").get<int>()) + ")");
    int version = file.at("feature_version").get<int>(), width = file.at("feature_width").get<int>();
    if (version != kFeatureVersion || width != feature_width())
      throw InputError("cost model '" + path + "' was trained on features version " + std::to_string(version) +
                       " (width " + std::to_string(width) + "), this tessel extracts version " +
                       std::to_string(kFeatureVersion) + " (width " + std::to_string(feature_width()) +
                       "); retrain it with `tessel model train`");
    XGBoostModelOptions options;
    try {
      options = options_from_json(file.at("options"));
    } catch (const InputError& e) {
      throw InputError("cost model '" + path + "' is damaged: " + e.what());
    }
    if (!options_in_range(options)) throw InputError("cost model '" + path + "' is damaged: options out of range");
    auto model = std::make_unique<XGBoostModel>(options);
    model->samples_seen_ = file.at("num_samples").get<int64_t>();
    model->retrains_ = file.at("num_retrains").get<int>();
    if (file.contains("mlp") && !file.at("mlp").is_null()) {
      try {
        model->mlp_ = MlpRanker::from_json(file.at("mlp"));
      } catch (const InputError& e) {
        throw InputError("cost model '" + path + "' is damaged: " + e.what());
      }
      model->mlp_loaded_ = true;
      if (model->mlp_.width() != program_summary_width())
        throw InputError("cost model '" + path + "' is damaged: its neural ranker reads " +
                         std::to_string(model->mlp_.width()) + " columns, a program summary has " +
                         std::to_string(program_summary_width()));
      if (model->mlp_.row_width() != 0 && model->mlp_.row_width() != feature_width())
        throw InputError("cost model '" + path + "' is damaged: its neural ranker's encoder reads rows of " +
                         std::to_string(model->mlp_.row_width()) + " columns, a feature row has " +
                         std::to_string(feature_width()));
      auto spreads = file.at("spreads").get<std::vector<double>>();
      if (spreads.size() != 2 || !(spreads[0] > 0) || !(spreads[1] > 0))
        throw InputError("cost model '" + path + "' is damaged: its score spreads are not two positive numbers");
      model->tree_spread_ = spreads[0];
      model->mlp_spread_ = spreads[1];
    }
    const nlohmann::json& booster = file.at("booster");
    if (!booster.is_null()) {
      std::string buffer = booster.dump();
      model->impl_->create(model->options_, nullptr);
      if (XGBoosterLoadModelFromBuffer(model->impl_->booster, buffer.data(), buffer.size()) != 0)
        throw InputError("cost model '" + path + "': XGBoost cannot read its trees: " + XGBGetLastError());
      // XGBoost predicts on fewer columns than its trees were grown on (the rest read as missing):
      // trees and input must agree exactly, or the scores would be silently wrong.
      bst_ulong columns = 0;
      check(XGBoosterGetNumFeature(model->impl_->booster, &columns), "XGBoosterGetNumFeature");
      const int expected = input_width(model->options_.input);
      if (columns != static_cast<bst_ulong>(expected))
        throw InputError("cost model '" + path + "' is damaged: its trees read " + std::to_string(columns) +
                         " columns, its input '" + model_input_name(model->options_.input) + "' has " +
                         std::to_string(expected));
      model->impl_->set_params(model->options_);
    }
    return model;
  } catch (const nlohmann::json::exception& e) {
    throw InputError("cost model '" + path + "' is damaged: " + e.what());
  }
}

}  // namespace tessel
