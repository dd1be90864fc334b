// Leave-one-workload-out evaluation of the cost model in one process, for trying model options
// quickly: the samples of a tuning log are extracted once (and cached in a file), then for every
// workload a model is trained on the others and ranks that one's programs. Prints the pairwise
// accuracy and top-5% recall per held-out workload and their means (the numbers `tessel model eval`
// prints after `tessel model train --exclude-workload`, which experiments/tune/model_eval.sh runs).
//
//   transfer_eval --db LOG [--target llvm|cuda] [--cache FILE] [--objective packsum|rank] [--input rows|programs|pairs]
//                 [--rounds N] [--depth D] [--eta E] [--lambda L] [--mcw W] [--subsample S] [--colsample C]
//                 [--partners N] [--anchors N] [--folds K [--only-folds I,J,...]] [--drop COLS] [--rel 1|2] [--dump FILE] [--scores FILE] [--bag N]
//                 [--train-records N] [--mlp W [--mlp-epochs N] [--mlp-hidden H] [--mlp-groups G] [--mlp-draw P] [--mlp-lr R] [--mlp-dropout D]
//                 [--mlp-hidden2 H2] [--mlp-encoder E] [--mlp-threads T]] [--threads T]
//
// --bag N: N models per round, seeds 0 to N-1 (useful with --subsample or --colsample below 1: with
// every row and column each model is the same), a program scored by the mean over the models of
// its score standardized within its held-out workload.
// --also-input I: as many models again with input I (rows, programs or pairs), their standardized
// scores added to the others': an ensemble of two views of the programs.
//
// --mlp W: blend a neural ranker into the programs model with weight W (XGBoostModelOptions::mlp_weight;
// a large W, such as 1000, ranks by the neural ranker alone); --mlp-epochs, --mlp-hidden (the first
// layer's width, the second's half of it; --mlp-hidden2 after it sets the second's, 0 for none), --mlp-groups,
// --mlp-draw, --mlp-lr, --mlp-dropout, --mlp-encoder (the row encoder's width), --mlp-threads (OpenBLAS's
// threads; 0, the default, as many as the trees'): its MlpOptions. --threads: the trees' (0, the
// default: every CPU). Each fold's (or workload's) training time goes to stderr.
// --train-records N: train on at most the first N records (in log order) of each training workload;
// the held-out workloads are ranked on all of theirs. How much the records per workload are worth.
//
// --folds K: instead of one model per held-out workload, K models, each trained without the
// workloads of one fold (the i-th workload in first-record order is in fold i mod K) and ranking
// each of them: the same question, K models instead of one per workload (for the slower inputs).
// --only-folds I,J,...: only those folds (numbered from 0), for splitting one evaluation over machines;
// the printed mean is over their workloads alone (average the per-workload lines of all the parts).
//
// --dump writes the samples as CSV (program, workload, latency_s, then the feature columns; one line
// per row of a program; after --rel and --drop have rewritten them) and exits: for exploring
// features outside C++. The cache is per target: one built for llvm is not read for --target cuda.
//
// --scores writes every ranked program's held-out score as CSV (program, as --dump numbers them,
// workload, group, latency_s, score): for blending with scores computed elsewhere on the same folds.
//
// --drop zeroes the listed columns (comma-separated feature names, or a prefix ending in '*') in
// training and evaluation alike: an ablation without rebuilding the features.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "costmodel/ranking_metrics.h"
#include "costmodel/xgb_model.h"
#include "costmodel/feature_layout.h"
#include "schedule/te/dag_parser.h"
#include "search/log_samples.h"

namespace {

using namespace tessel;

struct Scale {
  double flops = 1, param_bytes = 1;
};

struct Data {
  std::string target;  // the records' target kind
  std::vector<TrainingSample> samples;
  std::vector<std::string> keys;
  std::map<std::string, Scale> scale;  // per workload key
};

std::map<std::string, Scale> scales_of(const TuningLog& log) {
  std::map<std::string, Scale> out;
  for (const MeasureRecord& r : log.best_per_workload_target()) {
    ComputeDAG dag = parse_dag_text(r.workload.text);
    Scale s;
    s.flops = std::max(dag.flops(), 1.0);
    s.param_bytes = 0;
    for (const Operation& op : dag.ops())
      if (op.is_placeholder || dag.consumers(op.name).empty()) s.param_bytes += 4.0 * static_cast<double>(op.num_elements());
    out[r.workload.key] = s;
  }
  return out;
}

// log2 of x / scale for a column holding log2(1 + x); -40 for x = 0.
float relative(float v, double scale) {
  double x = std::exp2(static_cast<double>(v)) - 1.0;
  return x <= 0 ? -40.0f : static_cast<float>(std::log2(x / scale));
}

// --rel 1: operation counts and the iteration count per flop of the workload; 2: also bytes and
// cache lines per byte of the workload's inputs and outputs.
void make_relative(Data& d, int level) {
  using namespace feature;
  for (size_t i = 0; i < d.samples.size(); ++i) {
    Scale sc = d.scale.at(d.keys[i]);
    ProgramFeatures& f = d.samples[i].features;
    if (level == 3) {  // the program's own float operations instead of the workload's flops
      double ops = 0;
      for (int r = 0; r < f.rows; ++r)
        for (int c = kFloatAddSub; c <= kFloatAct; ++c) ops += std::exp2(f.values[static_cast<size_t>(r) * kWidth + c]) - 1;
      sc.flops = std::max(ops, 1.0);
    }
    for (int r = 0; r < f.rows; ++r) {
      float* row = f.values.data() + static_cast<size_t>(r) * kWidth;
      for (int c = kFloatAddSub; c <= kCast; ++c) row[c] = relative(row[c], sc.flops);
      row[kOuterProd] = relative(row[kOuterProd], sc.flops);
      if (level >= 2) {
        for (int b = 0; b < kMaxBuffers; ++b) {
          if (row[buffer_column(b, kBytes)] == 0) continue;  // unused block
          for (BufferColumn c : {kBytes, kUniqueBytes}) row[buffer_column(b, c)] = relative(row[buffer_column(b, c)], sc.param_bytes);
          for (BufferColumn c : {kLines, kUniqueLines}) row[buffer_column(b, c)] = relative(row[buffer_column(b, c)], sc.param_bytes / 64);
        }
      }
    }
  }
}

void write_string(std::ofstream& out, const std::string& s) {
  uint64_t n = s.size();
  out.write(reinterpret_cast<const char*>(&n), sizeof n);
  out.write(s.data(), static_cast<std::streamsize>(n));
}

std::string read_string(std::ifstream& in) {
  uint64_t n = 0;
  in.read(reinterpret_cast<char*>(&n), sizeof n);
  std::string s(n, '\0');
  in.read(s.data(), static_cast<std::streamsize>(n));
  return s;
}

void save_cache(const std::string& path, const Data& d) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  int64_t header[4] = {kFeatureVersion, feature_width(), static_cast<int64_t>(d.samples.size()),
                       static_cast<int64_t>(d.scale.size())};
  out.write(reinterpret_cast<const char*>(header), sizeof header);
  write_string(out, d.target);
  for (const auto& [key, sc] : d.scale) {
    write_string(out, key);
    out.write(reinterpret_cast<const char*>(&sc), sizeof sc);
  }
  for (size_t i = 0; i < d.samples.size(); ++i) {
    const TrainingSample& s = d.samples[i];
    write_string(out, s.group);
    write_string(out, d.keys[i]);
    out.write(reinterpret_cast<const char*>(&s.latency_s), sizeof s.latency_s);
    int64_t rows = s.features.rows;
    out.write(reinterpret_cast<const char*>(&rows), sizeof rows);
    out.write(reinterpret_cast<const char*>(s.features.values.data()),
              static_cast<std::streamsize>(s.features.values.size() * sizeof(float)));
  }
}

bool load_cache(const std::string& path, Data& d) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  int64_t header[4];
  in.read(reinterpret_cast<char*>(header), sizeof header);
  if (!in || header[0] != kFeatureVersion || header[1] != feature_width()) return false;
  if (read_string(in) != d.target) return false;  // another target's samples
  for (int64_t i = 0; i < header[3]; ++i) {
    std::string key = read_string(in);
    Scale sc;
    in.read(reinterpret_cast<char*>(&sc), sizeof sc);
    d.scale[key] = sc;
  }
  for (int64_t i = 0; i < header[2]; ++i) {
    TrainingSample s;
    s.group = read_string(in);
    d.keys.push_back(read_string(in));
    in.read(reinterpret_cast<char*>(&s.latency_s), sizeof s.latency_s);
    int64_t rows = 0;
    in.read(reinterpret_cast<char*>(&rows), sizeof rows);
    s.features.rows = static_cast<int>(rows);
    s.features.values.resize(static_cast<size_t>(rows) * feature_width());
    in.read(reinterpret_cast<char*>(s.features.values.data()),
            static_cast<std::streamsize>(s.features.values.size() * sizeof(float)));
    d.samples.push_back(std::move(s));
  }
  return static_cast<bool>(in);
}

std::vector<int> columns_named(const std::string& list) {
  std::vector<int> cols;
  std::stringstream ss(list);
  std::string item;
  const auto& names = feature_names();
  while (std::getline(ss, item, ',')) {
    bool prefix = !item.empty() && item.back() == '*';
    std::string stem = prefix ? item.substr(0, item.size() - 1) : item;
    bool found = false;
    for (int c = 0; c < feature_width(); ++c)
      if (prefix ? names[c].rfind(stem, 0) == 0 : names[c] == stem) cols.push_back(c), found = true;
    if (!found) {
      // "*.bytes": the column in every buffer block
      for (int c = 0; c < feature_width(); ++c) {
        auto dot = names[c].find('.');
        if (item.rfind("*.", 0) == 0 && dot != std::string::npos && names[c].substr(dot) == item.substr(1))
          cols.push_back(c), found = true;
      }
    }
    if (!found) throw InputError("--drop: no column '" + item + "'");
  }
  return cols;
}

}  // namespace

static int run(int argc, char** argv) {
  std::string db, cache, drop, dump, scores_path, input, also_input, only_folds, target = "llvm";
  int rel = 0, folds = 0, bag = 1, train_records = 0;
  bool self = false;  // --self: train on the even records of the workload itself, rank its odd ones
  XGBoostModelOptions options;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw InputError(a + " needs a value");
      return argv[++i];
    };
    if (a == "--db") db = next();
    else if (a == "--target") target = next();
    else if (a == "--cache") cache = next();
    else if (a == "--objective") options.objective = objective_from_name(next(), "--objective");
    else if (a == "--input") input = next();
    else if (a == "--rounds") options.retrain_rounds = std::stoi(next()), options.max_trees = std::max(options.max_trees, options.retrain_rounds);
    else if (a == "--depth") options.max_depth = std::stoi(next());
    else if (a == "--eta") options.eta = std::stod(next());
    else if (a == "--lambda") options.lambda = std::stod(next());
    else if (a == "--mcw") options.min_child_weight = std::stod(next());
    else if (a == "--subsample") options.subsample = std::stod(next());
    else if (a == "--colsample") options.colsample = std::stod(next());
    else if (a == "--partners") options.pair_partners = std::stoi(next());
    else if (a == "--anchors") options.anchors = std::stoi(next());
    else if (a == "--folds") folds = std::stoi(next());
    else if (a == "--only-folds") only_folds = next();
    else if (a == "--drop") drop = next();
    else if (a == "--rel") rel = std::stoi(next());
    else if (a == "--self") self = true;
    else if (a == "--dump") dump = next();
    else if (a == "--scores") scores_path = next();
    else if (a == "--bag") bag = std::stoi(next());
    else if (a == "--train-records") train_records = std::stoi(next());
    else if (a == "--also-input") also_input = next();
    else if (a == "--mlp") options.mlp_weight = std::stod(next());
    else if (a == "--mlp-epochs") options.mlp.epochs = std::stoi(next());
    else if (a == "--mlp-hidden") options.mlp.hidden1 = std::stoi(next()), options.mlp.hidden2 = options.mlp.hidden1 / 2;
    else if (a == "--mlp-groups") options.mlp.groups_per_step = std::stoi(next());
    else if (a == "--mlp-draw") options.mlp.programs_per_group = std::stoi(next());
    else if (a == "--mlp-lr") options.mlp.learning_rate = std::stod(next());
    else if (a == "--mlp-dropout") options.mlp.dropout = std::stod(next());
    else if (a == "--mlp-hidden2") options.mlp.hidden2 = std::stoi(next());
    else if (a == "--mlp-encoder") options.mlp.encoder = std::stoi(next());
    else if (a == "--mlp-threads") options.mlp.nthread = std::stoi(next());
    else if (a == "--threads") options.nthread = std::stoi(next());
    else {
      std::cerr << "unknown argument " << a << "\n";
      return 2;
    }
  }
  // As `tessel model train`: the target's default input unless --input names one.
  options.input = model_input_from_name(input, "--input", target == "cuda");
  check_objective_fits_input(options.objective, options.input);
  if (folds < 0 || (folds > 0 && self)) throw InputError("--folds must be positive and cannot go with --self");
  if (bag < 1) throw InputError("--bag must be at least 1");
  if (train_records < 0) throw InputError("--train-records cannot be negative");
  if (rel > 0 && kFeatureVersion >= 2) {
    // Version 2 already divides the arithmetic counts by the program's float operations; dividing
    // again would measure nothing meaningful.
    std::cerr << "error: --rel rewrites the absolute counts of feature version 1; this build has feature version "
              << kFeatureVersion << ", whose counts are already relative (build at 22beeb8 for the --rel rows)\n";
    return 2;
  }
  if (target != "llvm" && target != "cuda") throw InputError("--target must be llvm or cuda, not '" + target + "'");
  Data d;
  d.target = target;
  if (cache.empty() || !load_cache(cache, d)) {
    d = Data{};
    d.target = target;
    TuningLog log = TuningLog::open(db, TuningLog::Mode::ReadOnly);
    LogSampleFilter filter;
    filter.target_kind = target;
    LogSamples s = samples_from_log(log, filter);
    d.samples = std::move(s.samples);
    d.keys = std::move(s.workload_keys);
    d.scale = scales_of(log);
    if (!cache.empty()) save_cache(cache, d);
  }
  if (rel > 0) make_relative(d, rel);
  if (!drop.empty()) {
    std::vector<int> cols = columns_named(drop);
    for (TrainingSample& s : d.samples)
      for (int r = 0; r < s.features.rows; ++r)
        for (int c : cols) s.features.values[static_cast<size_t>(r) * feature_width() + c] = 0;
  }
  if (!dump.empty()) {
    std::ofstream out(dump);
    out << "program,workload,latency_s";
    for (const std::string& name : feature_names()) out << ',' << name;
    out << '\n';
    for (size_t i = 0; i < d.samples.size(); ++i) {
      const ProgramFeatures& f = d.samples[i].features;
      for (int r = 0; r < f.rows; ++r) {
        out << i << ',' << d.keys[i] << ',' << d.samples[i].latency_s;
        for (int c = 0; c < feature_width(); ++c) out << ',' << f.values[static_cast<size_t>(r) * feature_width() + c];
        out << '\n';
      }
    }
    std::cerr << "wrote " << d.samples.size() << " programs to " << dump << "\n";
    return out ? 0 : 1;
  }
  std::vector<std::string> keys;
  for (const std::string& k : d.keys)
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);

  std::ofstream scores_out;
  if (!scores_path.empty()) {
    scores_out.open(scores_path);
    if (!scores_out) throw InputError("cannot write --scores file '" + scores_path + "'");
    scores_out << "program,workload,group,latency_s,score\n";
  }
  double sum_pw = 0, sum_rec = 0;
  std::printf("%-18s %9s %10s %12s\n", "held out", "programs", "pairwise", "top-5% recall");
  // Each round trains one model and ranks the workloads it held out: every workload alone, or with
  // --folds the workloads of one fold together (the i-th workload is in fold i mod K).
  std::vector<std::vector<std::string>> rounds;
  for (size_t w = 0; w < keys.size(); ++w) {
    const size_t round = folds > 0 ? w % static_cast<size_t>(folds) : w;
    if (round == rounds.size()) rounds.emplace_back();
    rounds[round].push_back(keys[w]);
  }
  std::set<size_t> chosen;
  if (!only_folds.empty()) {
    if (folds == 0) throw InputError("--only-folds needs --folds");
    std::stringstream list(only_folds);
    for (std::string item; std::getline(list, item, ',');) {
      const int f = std::stoi(item);
      if (f < 0 || f >= folds) throw InputError("--only-folds: fold " + item + " is not in 0.." + std::to_string(folds - 1));
      chosen.insert(static_cast<size_t>(f));
    }
  }
  size_t evaluated = 0;
  for (size_t round = 0; round < rounds.size(); ++round) {
    if (!chosen.empty() && chosen.count(round) == 0) continue;
    const std::vector<std::string>& held = rounds[round];
    evaluated += held.size();
    std::vector<TrainingSample> train;
    std::vector<bool> ranked(d.samples.size(), false);
    size_t seen = 0;
    std::map<std::string, int> taken;  // training records so far, per workload (--train-records)
    for (size_t i = 0; i < d.samples.size(); ++i) {
      const bool mine = std::find(held.begin(), held.end(), d.keys[i]) != held.end();
      if (self && !mine) continue;  // --self: the workload's even records train, its odd ones are ranked
      if (mine && (!self || seen++ % 2 == 1)) ranked[i] = true;
      else if (train_records == 0 || taken[d.keys[i]]++ < train_records) train.push_back(d.samples[i]);
    }
    std::vector<std::unique_ptr<XGBoostModel>> models;
    const auto train_start = std::chrono::steady_clock::now();
    for (int view = 0; view < (also_input.empty() ? 1 : 2); ++view)
      for (int m = 0; m < bag; ++m) {
        XGBoostModelOptions o = options;
        o.seed = static_cast<uint64_t>(m);
        if (view == 1) o.input = model_input_from_name(also_input, "--also-input", target == "cuda");
        models.push_back(std::make_unique<XGBoostModel>(o));
        models.back()->update(train);
      }
    std::fprintf(stderr, "%s %zu: trained on %zu records in %.1f s\n", folds > 0 ? "fold" : "workload", round,
                 train.size(), std::chrono::duration<double>(std::chrono::steady_clock::now() - train_start).count());
    for (const std::string& k : held) {
      std::vector<ProgramFeatures> test;
      std::vector<double> lat;
      std::vector<std::string> groups;
      std::vector<size_t> index;
      for (size_t i = 0; i < d.samples.size(); ++i)
        if (ranked[i] && d.keys[i] == k) {
          index.push_back(i);
          test.push_back(d.samples[i].features);
          lat.push_back(d.samples[i].latency_s);
          groups.push_back(d.samples[i].group);
        }
      std::vector<double> score(test.size(), 0.0);
      for (const auto& model : models) {
        std::vector<double> p = model->predict(test);
        double mean = 0, var = 0;
        for (double v : p) mean += v / static_cast<double>(p.size());
        for (double v : p) var += (v - mean) * (v - mean) / static_cast<double>(p.size());
        const double sd = var > 0 ? std::sqrt(var) : 1.0;
        for (size_t i = 0; i < p.size(); ++i) score[i] += (p[i] - mean) / sd;
      }
      if (scores_out.is_open()) {
        scores_out.precision(9);
        for (size_t j = 0; j < index.size(); ++j)
          scores_out << index[j] << ',' << k << ',' << groups[j] << ',' << lat[j] << ',' << score[j] << '\n';
        scores_out.flush();
      }
      RankingMetrics m = evaluate_ranking(score, lat, groups);
      std::printf("%-18s %9zu %10.3f %12.3f\n", k.c_str(), test.size(), m.pairwise_accuracy, m.top_recall);
      std::fflush(stdout);
      sum_pw += m.pairwise_accuracy;
      sum_rec += m.top_recall;
    }
  }
  std::printf("%-18s %9s %10.3f %12.3f\n", "mean", "", sum_pw / static_cast<double>(evaluated),
              sum_rec / static_cast<double>(evaluated));
  return 0;
}

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
}
