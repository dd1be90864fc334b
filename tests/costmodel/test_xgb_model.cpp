// The XGBoost cost model learns a synthetic ranking of real programs' features, grows incrementally,
// round-trips through its file and rejects files it cannot use; the ranking metrics count right.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "costmodel/ranking_metrics.h"
#include "costmodel/xgb_model.h"
#include "schedule/ops/op_library.h"
#include "schedule/te/error.h"
#include "search/random_schedule.h"

using namespace tessel;

namespace {

// Random schedules of a small matmul, each with a synthetic latency that is a known function of its
// features: throughput grows with every row's vector length, so a sum over rows (what the model
// fits) can represent it exactly.
struct Synthetic {
  std::vector<ProgramFeatures> features;
  std::vector<double> latencies;
};

const Synthetic& synthetic() {
  static const Synthetic data = [] {
    Synthetic s;
    ComputeDAG dag = build_op("matmul", {{"M", "64"}, {"N", "48"}, {"K", "32"}});
    const auto& names = feature_names();
    const int vec = static_cast<int>(std::find(names.begin(), names.end(), "vec_len") - names.begin());
    for (uint64_t seed = 0; seed < 240; ++seed) {
      ProgramFeatures f = features_of_schedule(dag, random_schedule(dag, seed, CpuTargetSpec{16, 2}), FeatureTarget{});
      double throughput = 1;
      for (int r = 0; r < f.rows; ++r) {
        const float* row = f.values.data() + static_cast<size_t>(r) * feature_width();
        throughput += row[vec];
      }
      s.latencies.push_back(1e-3 / throughput);
      s.features.push_back(std::move(f));
    }
    return s;
  }();
  return data;
}

std::vector<TrainingSample> samples(size_t begin, size_t end) {
  std::vector<TrainingSample> out;
  for (size_t i = begin; i < end; ++i)
    out.push_back(TrainingSample{synthetic().features[i], "matmul/llvm", synthetic().latencies[i]});
  return out;
}

RankingMetrics held_out_metrics(XGBoostModel& model, size_t begin, size_t end) {
  std::vector<ProgramFeatures> programs(synthetic().features.begin() + begin, synthetic().features.begin() + end);
  std::vector<double> latencies(synthetic().latencies.begin() + begin, synthetic().latencies.begin() + end);
  return evaluate_ranking(model.predict(programs), latencies, std::vector<std::string>(programs.size(), "g"));
}

XGBoostModelOptions test_options() {
  XGBoostModelOptions o;
  o.nthread = 2;
  o.seed = 7;
  o.max_depth = 3;  // a few hundred programs: deeper trees learn the training set, not the function
  o.eta = 0.1;
  o.retrain_rounds = 60;
  o.rounds_per_update = 15;
  o.objective = XGBoostModelOptions::Objective::PackSum;  // the rank objective has its own test below
  return o;
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("tessel_costmodel_" + std::to_string(getpid()) + "_" + name)).string();
}

}  // namespace

TEST_CASE("the model ranks held-out programs by a synthetic latency", "[costmodel][xgb]") {
  XGBoostModel model(test_options());
  CHECK_FALSE(model.trained());
  CHECK(model.predict({synthetic().features[0]}) == std::vector<double>{0.0});
  model.update(samples(0, 180));
  REQUIRE(model.trained());
  RankingMetrics m = held_out_metrics(model, 180, 240);
  INFO("pairwise accuracy " << m.pairwise_accuracy << " over " << m.pairs << " pairs");
  CHECK(m.pairs > 1000);
  CHECK(m.pairwise_accuracy > 0.9);
}

TEST_CASE("the pairwise rank objective ranks held-out programs too and saves its options", "[costmodel][xgb]") {
  XGBoostModelOptions o = test_options();
  o.objective = XGBoostModelOptions::Objective::Rank;
  o.lambda = 2;
  o.colsample = 0.8;
  XGBoostModel model(o);
  model.update(samples(0, 180));
  RankingMetrics m = held_out_metrics(model, 180, 240);
  INFO("pairwise accuracy " << m.pairwise_accuracy << " over " << m.pairs << " pairs");
  CHECK(m.pairwise_accuracy > 0.9);
  const std::string path = temp_path("rank.json");
  model.save(path);
  std::unique_ptr<XGBoostModel> loaded = XGBoostModel::load(path);
  std::filesystem::remove(path);
  CHECK(loaded->options().objective == XGBoostModelOptions::Objective::Rank);
  CHECK(loaded->options().lambda == 2);
  CHECK(loaded->options().colsample == Approx(0.8));
}

TEST_CASE("a model scoring program summaries ranks held-out programs and saves its input", "[costmodel][xgb]") {
  for (auto objective : {XGBoostModelOptions::Objective::Rank, XGBoostModelOptions::Objective::PackSum}) {
    XGBoostModelOptions o = test_options();
    o.objective = objective;
    o.input = XGBoostModelOptions::Input::Programs;
    XGBoostModel model(o);
    model.update(samples(0, 180));
    RankingMetrics m = held_out_metrics(model, 180, 240);
    INFO(objective_name(objective) << ": pairwise accuracy " << m.pairwise_accuracy << " over " << m.pairs << " pairs");
    CHECK(m.pairwise_accuracy > 0.9);
    const std::string path = temp_path("programs.json");
    model.save(path);
    std::unique_ptr<XGBoostModel> loaded = XGBoostModel::load(path);
    CHECK(loaded->options().input == XGBoostModelOptions::Input::Programs);
    std::vector<ProgramFeatures> probe(synthetic().features.begin() + 180, synthetic().features.begin() + 200);
    CHECK(loaded->predict(probe) == model.predict(probe));
    // Trees grown on summaries under a file that says rows (as a file from before the option would
    // read): XGBoost would predict on the narrower rows, so load refuses it.
    nlohmann::json j;
    std::ifstream(path) >> j;
    j["options"].erase("input");
    std::ofstream(path, std::ios::trunc) << j.dump();
    CHECK_THROWS_WITH(XGBoostModel::load(path), Catch::Contains(path) && Catch::Contains("its trees read 478 columns") &&
                                                    Catch::Contains("'rows' has 159"));
    std::filesystem::remove(path);
  }
  // A file written before the option (format version 1, no input) scored rows, and loads as such.
  XGBoostModel rows(test_options());
  rows.update(samples(0, 60));
  const std::string path = temp_path("v1.json");
  rows.save(path);
  nlohmann::json j;
  std::ifstream(path) >> j;
  j["format_version"] = 1;
  j["options"].erase("input");
  std::ofstream(path, std::ios::trunc) << j.dump();
  std::unique_ptr<XGBoostModel> v1 = XGBoostModel::load(path);
  // A file naming an input or objective this tessel does not know is refused, not read as a default.
  for (const auto& [key, value] : {std::pair<std::string, std::string>{"input", "stores"}, {"objective", "lambdamart"}}) {
    nlohmann::json bad = j;
    bad["format_version"] = 2;
    bad["options"][key] = value;
    std::ofstream(path, std::ios::trunc) << bad.dump();
    CHECK_THROWS_WITH(XGBoostModel::load(path), Catch::Contains(path) && Catch::Contains("options out of range"));
  }
  std::filesystem::remove(path);
  CHECK(v1->options().input == XGBoostModelOptions::Input::Rows);
  std::vector<ProgramFeatures> probe(synthetic().features.begin() + 180, synthetic().features.begin() + 200);
  CHECK(v1->predict(probe) == rows.predict(probe));

  CHECK(default_model_input(true) == XGBoostModelOptions::Input::Programs);
  CHECK(default_model_input(false) == XGBoostModelOptions::Input::Rows);
  CHECK(model_input_named("programs") == XGBoostModelOptions::Input::Programs);
  CHECK_FALSE(model_input_named("stores").has_value());
}

TEST_CASE("a pairs model ranks held-out programs against a reference and saves its input", "[costmodel][xgb]") {
  XGBoostModelOptions o = test_options();
  o.objective = XGBoostModelOptions::Objective::Rank;
  o.input = XGBoostModelOptions::Input::Pairs;
  o.pair_partners = 8;
  o.anchors = 16;
  XGBoostModel model(o);
  CHECK(model.predict({synthetic().features[0]}) == std::vector<double>{0.0});  // untrained
  model.update(samples(0, 180));
  REQUIRE(model.trained());
  RankingMetrics m = held_out_metrics(model, 180, 240);  // scored against 16 programs of the batch
  INFO("pairwise accuracy " << m.pairwise_accuracy << " over " << m.pairs << " pairs");
  CHECK(m.pairwise_accuracy > 0.9);

  // Scores are shares of predicted wins; against a given reference a program's score does not
  // depend on the batch it is scored in.
  std::vector<ProgramFeatures> reference(synthetic().features.begin() + 200, synthetic().features.begin() + 210);
  std::vector<ProgramFeatures> batch(synthetic().features.begin() + 180, synthetic().features.begin() + 200);
  std::vector<double> in_batch = model.predict_with_reference(batch, reference);
  for (double s : in_batch) CHECK((s >= 0 && s <= 1));
  CHECK(model.predict_with_reference({batch[3]}, reference).front() == Approx(in_batch[3]).epsilon(1e-6));
  CHECK(model.predict_with_reference({batch[11]}, reference).front() == Approx(in_batch[11]).epsilon(1e-6));
  // The fastest of the reference beats more of it than the slowest does.
  std::vector<double> ref_latency(synthetic().latencies.begin() + 200, synthetic().latencies.begin() + 210);
  auto fastest = std::min_element(ref_latency.begin(), ref_latency.end()) - ref_latency.begin();
  auto slowest = std::max_element(ref_latency.begin(), ref_latency.end()) - ref_latency.begin();
  std::vector<double> ref_scores = model.predict_with_reference(reference, reference);
  CHECK(ref_scores[static_cast<size_t>(fastest)] > ref_scores[static_cast<size_t>(slowest)]);

  const std::string path = temp_path("pairs.json");
  model.save(path);
  std::unique_ptr<XGBoostModel> loaded = XGBoostModel::load(path);
  std::filesystem::remove(path);
  CHECK(loaded->options().input == XGBoostModelOptions::Input::Pairs);
  CHECK(loaded->options().pair_partners == 8);
  CHECK(loaded->options().anchors == 16);
  CHECK(loaded->predict(batch) == model.predict(batch));
  // Updates add trees on pairs drawn afresh from every sample.
  const int trees = model.num_trees();
  model.update(samples(210, 240));
  CHECK(model.num_trees() == trees + o.rounds_per_update);

  // Deterministic given the seed (the pairs are drawn from a generator seeded by it).
  XGBoostModel again(o);
  again.update(samples(0, 180));
  CHECK(again.predict(batch) == loaded->predict(batch));

  CHECK(model_input_named("pairs") == XGBoostModelOptions::Input::Pairs);
  CHECK_FALSE(objective_fits_input(XGBoostModelOptions::Objective::PackSum, XGBoostModelOptions::Input::Pairs));
  CHECK(objective_fits_input(XGBoostModelOptions::Objective::PackSum, XGBoostModelOptions::Input::Programs));
}

TEST_CASE("updates add trees to the model instead of retraining it", "[costmodel][xgb]") {
  XGBoostModel model(test_options());
  model.update(samples(0, 60));
  CHECK(model.num_trees() == 60);
  CHECK(model.num_retrains() == 1);
  double first = held_out_metrics(model, 180, 240).pairwise_accuracy;
  model.update(samples(60, 120));
  model.update(samples(120, 180));
  CHECK(model.num_trees() == 90);
  CHECK(model.num_retrains() == 1);
  CHECK(model.num_samples() == 180);
  double later = held_out_metrics(model, 180, 240).pairwise_accuracy;
  INFO("held-out pairwise accuracy after 60 samples " << first << ", after 180 " << later);
  CHECK(later > first);
  CHECK(later > 0.85);
}

TEST_CASE("passing max_trees retrains from scratch on every sample", "[costmodel][xgb]") {
  XGBoostModelOptions o = test_options();
  o.retrain_rounds = 20;
  o.rounds_per_update = 10;
  o.max_trees = 40;
  XGBoostModel model(o);
  model.update(samples(0, 30));
  model.update(samples(30, 60));
  model.update(samples(60, 90));
  CHECK(model.num_trees() == 40);
  model.update(samples(90, 120));
  CHECK(model.num_trees() == 20);
  CHECK(model.num_retrains() == 2);
}

TEST_CASE("training is deterministic given the seed", "[costmodel][xgb]") {
  XGBoostModel a(test_options()), b(test_options());
  a.update(samples(0, 100));
  b.update(samples(0, 100));
  std::vector<ProgramFeatures> probe(synthetic().features.begin() + 100, synthetic().features.begin() + 140);
  CHECK(a.predict(probe) == b.predict(probe));
}

TEST_CASE("save and load give identical predictions and keep the metadata", "[costmodel][xgb]") {
  XGBoostModel model(test_options());
  model.update(samples(0, 100));
  std::string path = temp_path("model.json");
  model.save(path);
  std::unique_ptr<XGBoostModel> loaded = XGBoostModel::load(path);
  std::vector<ProgramFeatures> probe(synthetic().features.begin() + 100, synthetic().features.begin() + 160);
  CHECK(loaded->predict(probe) == model.predict(probe));
  CHECK(loaded->num_trees() == model.num_trees());
  CHECK(loaded->num_samples() == 100);
  CHECK(loaded->options().max_depth == model.options().max_depth);
  CHECK(loaded->options().seed == 7);
  // A loaded model keeps learning from where it was.
  loaded->update(samples(100, 140));
  CHECK(loaded->num_trees() == model.num_trees() + test_options().rounds_per_update);
  std::filesystem::remove(path);
}

TEST_CASE("load names the file and the problem", "[costmodel][xgb]") {
  auto load_error = [](const std::string& path) -> std::string {
    try {
      XGBoostModel::load(path);
    } catch (const InputError& e) {
      return e.what();
    }
    return "no error";
  };
  std::string missing = temp_path("missing.json");
  CHECK_THAT(load_error(missing), Catch::Contains(missing) && Catch::Contains("cannot read"));

  std::string garbage = temp_path("garbage.json");
  std::ofstream(garbage) << "not json at all";
  CHECK_THAT(load_error(garbage), Catch::Contains(garbage) && Catch::Contains("not a tessel cost model"));

  std::string other = temp_path("other.json");
  std::ofstream(other) << R"({"format": "something-else"})";
  CHECK_THAT(load_error(other), Catch::Contains(other) && Catch::Contains("not a tessel cost model"));

  XGBoostModel model(test_options());
  model.update(samples(0, 40));
  std::string old = temp_path("old.json");
  model.save(old);
  nlohmann::json j;
  std::ifstream(old) >> j;
  j["feature_version"] = kFeatureVersion + 1;
  std::ofstream(old, std::ios::trunc) << j.dump();
  CHECK_THAT(load_error(old), Catch::Contains(old) && Catch::Contains("features version"));

  j["feature_version"] = kFeatureVersion;
  j["feature_width"] = feature_width() - 1;
  std::ofstream(old, std::ios::trunc) << j.dump();
  CHECK_THAT(load_error(old), Catch::Contains(old) && Catch::Contains("width"));

  j["feature_width"] = feature_width();
  j["booster"] = {{"learner", "garbage"}};
  std::ofstream(old, std::ios::trunc) << j.dump();
  CHECK_THAT(load_error(old), Catch::Contains(old) && Catch::Contains("XGBoost"));

  for (const std::string& p : {garbage, other, old}) std::filesystem::remove(p);
}

TEST_CASE("failed programs train as the slowest and groups are normalized apart", "[costmodel][xgb]") {
  // Two groups whose latencies differ by 1000x: normalized within each group they teach the same
  // ranking.
  std::vector<TrainingSample> train = samples(0, 120);
  for (size_t i = 0; i < 120; ++i)
    train.push_back(TrainingSample{synthetic().features[i], "other/llvm", synthetic().latencies[i] * 1000});
  XGBoostModel model(test_options());
  model.update(train);
  CHECK(held_out_metrics(model, 180, 240).pairwise_accuracy > 0.85);

  // In both groups every fifth program failed (latency NaN, 0, negative or infinite): failures train
  // as throughput 0, below every success, so the model scores them below the programs that ran (a
  // model that took them for fast programs would score them near the top).
  const double failures[] = {std::nan(""), 0.0, -1.0, std::numeric_limits<double>::infinity()};
  auto failed = [](size_t i) { return i % 5 == 2; };
  for (size_t g = 0; g < 2; ++g)
    for (size_t i = 2; i < 120; i += 5) train[g * 120 + i].latency_s = failures[(i / 5) % 4];
  const std::vector<ProgramFeatures> programs(synthetic().features.begin(), synthetic().features.begin() + 120);
  for (auto objective : {XGBoostModelOptions::Objective::PackSum, XGBoostModelOptions::Objective::Rank}) {
    INFO(objective_name(objective));
    XGBoostModelOptions o = test_options();
    o.objective = objective;
    o.max_depth = 6;  // the default depth: trees that fit the training programs, failures included
    o.retrain_rounds = 100;
    XGBoostModel fitted(o);
    fitted.update(train);
    std::vector<double> s = fitted.predict(programs);
    REQUIRE(s.size() == programs.size());
    // Of every pair of a failed and a successful program, the share the model orders failure last.
    int pairs = 0, failure_below = 0;
    for (size_t f = 0; f < s.size(); ++f)
      for (size_t ok = 0; ok < s.size(); ++ok)
        if (failed(f) && !failed(ok)) {
          ++pairs;
          failure_below += s[f] < s[ok];
        }
    const double share = static_cast<double>(failure_below) / pairs;
    INFO("failed programs scored below successful ones in " << share << " of " << pairs << " pairs");
    CHECK(share > 0.95);
  }
}

TEST_CASE("the cost model interface saves a learned model and refuses to save the random one", "[costmodel][xgb]") {
  std::unique_ptr<CostModel> learned = std::make_unique<XGBoostModel>(test_options());
  learned->update(samples(0, 60));
  const std::string path = temp_path("interface.json");
  learned->save(path);
  std::unique_ptr<XGBoostModel> loaded = XGBoostModel::load(path);
  std::filesystem::remove(path);
  std::vector<ProgramFeatures> probe(synthetic().features.begin() + 180, synthetic().features.begin() + 200);
  CHECK(loaded->predict(probe) == learned->predict(probe));

  std::unique_ptr<CostModel> random = make_random_model(1);
  CHECK_THROWS_WITH(random->save(path), Catch::Contains("random cost model has nothing to save"));
  CHECK_FALSE(std::filesystem::exists(path));
}

TEST_CASE("evaluate_ranking counts pairs within groups and top-k recall", "[costmodel][metrics]") {
  const double inf = std::numeric_limits<double>::infinity();
  // Group a: latencies 1 < 2 < 3 < 4, scores order 1 and 2 wrongly; a failed program scored highest.
  // Group b: two programs ranked right.
  std::vector<double> scores = {3, 4, 2, 1, 9, 5, 1};
  std::vector<double> latencies = {1, 2, 3, 4, inf, 1, 2};
  std::vector<std::string> groups = {"a", "a", "a", "a", "a", "b", "b"};
  RankingMetrics m = evaluate_ranking(scores, latencies, groups, 0.2);
  CHECK(m.programs == 7);
  CHECK(m.pairs == 6 + 1);
  CHECK(m.pairwise_accuracy == Approx(6.0 / 7.0));
  // a: k = ceil(0.2 x 5) = 1, predicted top is the failure: recall 0; b: k = 1, recall 1.
  CHECK(m.top_recall == Approx((5 * 0.0 + 2 * 1.0) / 7.0));
  RankingMetrics perfect = evaluate_ranking({4, 3, 2, 1}, {1, 2, 3, 4}, {"g", "g", "g", "g"}, 0.5);
  CHECK(perfect.pairwise_accuracy == 1);
  CHECK(perfect.top_recall == 1);
}
