// The neural ranker learns a nonlinear ranking that carries over to groups it has not seen, trains
// deterministically, round-trips through JSON and refuses damaged weights; blended into the
// XGBoost model it ranks and saves with it.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "costmodel/mlp_ranker.h"
#include "costmodel/ranking_metrics.h"
#include "costmodel/xgb_model.h"
#include "schedule/ops/op_library.h"
#include "schedule/te/error.h"
#include "search/random_schedule.h"

using namespace tessel;

namespace {

constexpr int kWidth = 10;

// Groups of programs with random features; a program's latency depends on an interaction of two
// columns and a bend in a third (no sum of single-column terms ranks it), the group's own scale
// multiplying it, as a workload's size would.
struct Data {
  std::vector<float> rows;
  std::vector<double> latencies, labels;
  std::vector<int> groups;
};

Data make_data(int first_group, int groups, int per_group, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Data d;
  for (int g = first_group; g < first_group + groups; ++g) {
    const double scale = std::exp2(g % 7);
    std::vector<double> group_latency;
    for (int p = 0; p < per_group; ++p) {
      float x[kWidth];
      for (float& v : x) v = normal(rng);
      x[9] = static_cast<float>(g % 7);  // the group's size, as the features would show it
      d.rows.insert(d.rows.end(), x, x + kWidth);
      const double speed = x[0] * x[1] + std::max(0.0f, x[2]) - 0.5 * x[3] * x[3];
      d.latencies.push_back(scale * std::exp(-speed));
      d.groups.push_back(g);
      group_latency.push_back(d.latencies.back());
    }
    const double best = *std::min_element(group_latency.begin(), group_latency.end());
    for (double l : group_latency) d.labels.push_back(best / l);
  }
  return d;
}

MlpOptions small_options() {
  MlpOptions o;
  o.hidden1 = 32;
  o.hidden2 = 16;
  o.epochs = 150;
  o.groups_per_step = 4;
  o.nthread = 2;
  o.seed = 3;
  return o;
}

RankingMetrics metrics(const std::vector<double>& scores, const Data& d) {
  std::vector<std::string> names;
  for (int g : d.groups) names.push_back(std::to_string(g));
  return evaluate_ranking(scores, d.latencies, names);
}

}  // namespace

TEST_CASE("the neural ranker ranks programs of groups it has not seen", "[costmodel][mlp]") {
  const Data train = make_data(0, 40, 30, 1), test = make_data(100, 10, 30, 2);
  MlpRanker ranker(small_options());
  CHECK_FALSE(ranker.trained());
  ranker.train(train.rows, kWidth, train.labels, train.groups);
  REQUIRE(ranker.trained());
  RankingMetrics m = metrics(ranker.predict(test.rows), test);
  INFO("pairwise accuracy " << m.pairwise_accuracy << " over " << m.pairs << " pairs, top-5% recall " << m.top_recall);
  CHECK(m.pairwise_accuracy > 0.85);

  // Deterministic given options and data; the JSON round trip keeps every weight.
  MlpRanker again(small_options());
  again.train(train.rows, kWidth, train.labels, train.groups);
  CHECK(again.predict(test.rows) == ranker.predict(test.rows));
  MlpRanker loaded = MlpRanker::from_json(nlohmann::json::parse(ranker.to_json().dump()));
  CHECK(loaded.predict(test.rows) == ranker.predict(test.rows));
  CHECK(loaded.options().epochs == 150);

  // With dropout it learns too, and differs.
  MlpOptions dropped = small_options();
  dropped.dropout = 0.2;
  MlpRanker with_dropout(dropped);
  with_dropout.train(train.rows, kWidth, train.labels, train.groups);
  CHECK(with_dropout.predict(test.rows) != ranker.predict(test.rows));
  CHECK(metrics(with_dropout.predict(test.rows), test).pairwise_accuracy > 0.85);
  CHECK(MlpRanker::from_json(with_dropout.to_json()).options().dropout == 0.2);
  // A file written before dropout and the encoder existed reads as neither.
  nlohmann::json old = ranker.to_json();
  old.erase("dropout");
  old.erase("encoder");
  CHECK(MlpRanker::from_json(old).predict(test.rows) == ranker.predict(test.rows));

  // Drawing a few programs of each group a step learns the ranking too.
  MlpOptions drawn = small_options();
  drawn.programs_per_group = 8;
  MlpRanker sampled(drawn);
  sampled.train(train.rows, kWidth, train.labels, train.groups);
  CHECK(metrics(sampled.predict(test.rows), test).pairwise_accuracy > 0.8);
}

namespace {

constexpr int kRowWidth = 4;

// Programs of 1 to 6 rows: a program's latency is the sum over its rows of a bend in one column times
// another (as a program's time is the sum of its loop nests'); its summary holds only the row count and
// its first row, so the ranking needs the rows.
MlpInputs make_program_rows(int first_group, int groups, int per_group, uint64_t seed, std::vector<double>& latencies,
                            std::vector<double>& labels, std::vector<int>& group_of) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> count(1, 6);
  MlpInputs in;
  in.first_row.push_back(0);
  for (int g = first_group; g < first_group + groups; ++g) {
    std::vector<double> group_latency;
    for (int p = 0; p < per_group; ++p) {
      const int rows = count(rng);
      double time = 0;
      for (int r = 0; r < rows; ++r) {
        float x[kRowWidth];
        for (float& v : x) v = normal(rng);
        in.rows.insert(in.rows.end(), x, x + kRowWidth);
        time += std::exp(0.5 * std::max(0.0f, x[0]) * (1.5f + x[1]));
      }
      in.first_row.push_back(in.first_row.back() + static_cast<size_t>(rows));
      const float* first = &in.rows[in.first_row[in.first_row.size() - 2] * kRowWidth];
      in.summaries.push_back(static_cast<float>(rows));
      in.summaries.insert(in.summaries.end(), first, first + kRowWidth);
      latencies.push_back(time);
      group_of.push_back(g);
      group_latency.push_back(time);
    }
    const double best = *std::min_element(group_latency.begin(), group_latency.end());
    for (double l : group_latency) labels.push_back(best / l);
  }
  return in;
}

}  // namespace

TEST_CASE("a neural ranker with a row encoder learns what only the rows show", "[costmodel][mlp]") {
  std::vector<double> lat, labels, test_lat, test_labels;
  std::vector<int> groups, test_groups;
  const MlpInputs train = make_program_rows(0, 40, 30, 11, lat, labels, groups);
  const MlpInputs test = make_program_rows(100, 10, 30, 12, test_lat, test_labels, test_groups);
  const int summary_width = 1 + kRowWidth;
  auto accuracy = [&](const std::vector<double>& scores) {
    std::vector<std::string> names;
    for (int g : test_groups) names.push_back(std::to_string(g));
    return evaluate_ranking(scores, test_lat, names).pairwise_accuracy;
  };
  MlpOptions o = small_options();
  o.encoder = 16;
  o.hidden2 = 0;
  o.dropout = 0.1;
  MlpRanker ranker(o);
  ranker.train(train, summary_width, kRowWidth, labels, groups);
  REQUIRE(ranker.trained());
  CHECK(ranker.row_width() == kRowWidth);
  const std::vector<double> scores = ranker.predict(test);
  const double with_rows = accuracy(scores);
  MlpRanker summaries_only(small_options());
  summaries_only.train(train.summaries, summary_width, labels, groups);
  const double without = accuracy(summaries_only.predict(test.summaries));
  INFO("pairwise accuracy with the rows " << with_rows << ", the summaries alone " << without);
  CHECK(with_rows > 0.85);
  CHECK(with_rows > without + 0.05);

  // Deterministic; the JSON round trip keeps the encoder; damage to it is named.
  MlpRanker again(o);
  again.train(train, summary_width, kRowWidth, labels, groups);
  CHECK(again.predict(test) == scores);
  const nlohmann::json j = ranker.to_json();
  CHECK(MlpRanker::from_json(nlohmann::json::parse(j.dump())).predict(test) == scores);
  nlohmann::json bad = j;
  bad["encoder_layers"][1]["bias"].erase(0);
  CHECK_THROWS_WITH(MlpRanker::from_json(bad), Catch::Contains("encoder layer 2 has the wrong shape"));
  bad = j;
  bad["row_scale"].erase(0);
  CHECK_THROWS_WITH(MlpRanker::from_json(bad), Catch::Contains("row width"));
  bad = j;
  bad["layers"].erase(1);
  CHECK_THROWS_WITH(MlpRanker::from_json(bad), Catch::Contains("1 layers, its options make 2"));
  // An encoder needs the rows: summaries alone, or rows that do not add up, fail a check.
  CHECK_THROWS(ranker.predict(test.summaries));
  MlpInputs short_rows = test;
  short_rows.rows.pop_back();
  CHECK_THROWS(ranker.predict(short_rows));
  MlpRanker fresh(o);
  CHECK_THROWS(fresh.train(train.summaries, summary_width, labels, groups));
}

TEST_CASE("the neural ranker stays untrained without a pair to learn and refuses damaged weights", "[costmodel][mlp]") {
  MlpRanker ranker(small_options());
  // Two groups whose programs all run alike: nothing to rank.
  ranker.train(std::vector<float>(4 * kWidth, 1.0f), kWidth, {1, 1, 0.5, 0.5}, {0, 0, 1, 1});
  CHECK_FALSE(ranker.trained());
  CHECK_THROWS(ranker.predict(std::vector<float>(kWidth, 0.0f)));

  const Data d = make_data(0, 4, 10, 5);
  ranker.train(d.rows, kWidth, d.labels, d.groups);
  nlohmann::json j = ranker.to_json();
  nlohmann::json bad = j;
  bad["layers"][1]["weight"].erase(0);
  CHECK_THROWS_WITH(MlpRanker::from_json(bad), Catch::Contains("layer 2 has the wrong shape"));
  bad = j;
  bad["scale"].erase(0);
  CHECK_THROWS_WITH(MlpRanker::from_json(bad), Catch::Contains("do not match its width"));
  bad = j;
  bad["hidden1"] = 0;
  CHECK_THROWS_WITH(MlpRanker::from_json(bad), Catch::Contains("options out of range"));
}

TEST_CASE("a programs model blends the neural ranker in and saves it", "[costmodel][mlp][xgb]") {
  // Random schedules of a small matmul, faster with wider vectors in every row (as test_xgb_model).
  ComputeDAG dag = build_op("matmul", {{"M", "64"}, {"N", "48"}, {"K", "32"}});
  const auto& names = feature_names();
  const int vec = static_cast<int>(std::find(names.begin(), names.end(), "vec_len") - names.begin());
  std::vector<TrainingSample> samples;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    ProgramFeatures f = features_of_schedule(dag, random_schedule(dag, seed, CpuTargetSpec{16, 2}), FeatureTarget{});
    double throughput = 1;
    for (int r = 0; r < f.rows; ++r) throughput += f.values[static_cast<size_t>(r) * feature_width() + vec];
    samples.push_back(TrainingSample{std::move(f), "matmul/llvm", 1e-3 / throughput});
  }
  XGBoostModelOptions o;
  o.nthread = 2;
  o.seed = 7;
  o.max_depth = 3;
  o.retrain_rounds = 40;
  o.input = XGBoostModelOptions::Input::Programs;
  o.mlp_weight = 1.0;
  o.mlp = small_options();
  o.mlp.epochs = 1;
  o.mlp.min_steps = 100;
  XGBoostModel model(o);
  model.update(std::vector<TrainingSample>(samples.begin(), samples.begin() + 150));
  std::vector<ProgramFeatures> probe;
  std::vector<double> latencies;
  for (size_t i = 150; i < samples.size(); ++i) {
    probe.push_back(samples[i].features);
    latencies.push_back(samples[i].latency_s);
  }
  std::vector<double> blended = model.predict(probe);
  RankingMetrics m = evaluate_ranking(blended, latencies, std::vector<std::string>(probe.size(), "g"));
  INFO("pairwise accuracy " << m.pairwise_accuracy);
  CHECK(m.pairwise_accuracy > 0.9);

  const std::string path =
      (std::filesystem::temp_directory_path() / ("tessel_mlp_" + std::to_string(getpid()) + ".json")).string();
  model.save(path);
  std::unique_ptr<XGBoostModel> loaded = XGBoostModel::load(path);
  CHECK(loaded->options().mlp_weight == 1.0);
  CHECK(loaded->options().mlp.seed == o.mlp.seed);
  CHECK(loaded->options().mlp.min_steps == 100);
  CHECK(loaded->predict(probe) == blended);
  // Updated with a few new samples, a loaded model goes on from its ranker instead of learning anew
  // from those alone.
  {
    std::unique_ptr<XGBoostModel> resumed = XGBoostModel::load(path);
    std::vector<TrainingSample> few(samples.begin() + 150, samples.begin() + 160);
    resumed->update(few);
    XGBoostModel fresh(o);
    fresh.update(few);
    RankingMetrics r = evaluate_ranking(resumed->predict(probe), latencies, std::vector<std::string>(probe.size(), "g"));
    RankingMetrics f = evaluate_ranking(fresh.predict(probe), latencies, std::vector<std::string>(probe.size(), "g"));
    INFO("resumed " << r.pairwise_accuracy << ", fresh on 10 samples " << f.pairwise_accuracy);
    CHECK(r.pairwise_accuracy > 0.85);
    CHECK(r.pairwise_accuracy > f.pairwise_accuracy);
  }
  // Without its neural ranker the same trees score differently: the blend is really in the scores.
  XGBoostModelOptions trees_only = o;
  trees_only.mlp_weight = 0;
  XGBoostModel plain(trees_only);
  plain.update(std::vector<TrainingSample>(samples.begin(), samples.begin() + 150));
  CHECK(plain.predict(probe) != blended);
  // A ranker with a row encoder reads every program's rows, saves and loads with the model, and a
  // loaded one goes on learning from new samples' rows.
  {
    XGBoostModelOptions with_encoder = o;
    with_encoder.mlp.encoder = 8;
    with_encoder.mlp.hidden2 = 0;
    XGBoostModel rows_model(with_encoder);
    rows_model.update(std::vector<TrainingSample>(samples.begin(), samples.begin() + 150));
    const std::vector<double> scores = rows_model.predict(probe);
    CHECK(scores != blended);
    CHECK(evaluate_ranking(scores, latencies, std::vector<std::string>(probe.size(), "g")).pairwise_accuracy > 0.85);
    const std::string encoder_path = path + ".encoder";
    rows_model.save(encoder_path);
    std::unique_ptr<XGBoostModel> reloaded = XGBoostModel::load(encoder_path);
    CHECK(reloaded->options().mlp.encoder == 8);
    CHECK(reloaded->predict(probe) == scores);
    reloaded->update(std::vector<TrainingSample>(samples.begin() + 150, samples.begin() + 160));
    CHECK(reloaded->predict(probe) != scores);
    std::filesystem::remove(encoder_path);
  }
  // Without a trained ranker the file stays version 2, which an earlier tessel reads.
  const std::string plain_path = path + ".plain";
  plain.save(plain_path);
  nlohmann::json p;
  std::ifstream(plain_path) >> p;
  CHECK(p["format_version"] == 2);
  std::filesystem::remove(plain_path);

  nlohmann::json j;
  std::ifstream(path) >> j;
  j["mlp"]["layers"][0]["bias"].erase(0);
  std::ofstream(path, std::ios::trunc) << j.dump();
  CHECK_THROWS_WITH(XGBoostModel::load(path), Catch::Contains(path) && Catch::Contains("layer 1 has the wrong shape"));
  std::filesystem::remove(path);
}
