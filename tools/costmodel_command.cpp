// tessel costmodel train / eval: the cost model pre-trained from a tuning log, and how well it ranks
// the records of a workload it has (or has not) seen.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>

#include "costmodel/blas.h"
#include "costmodel/ranking_metrics.h"
#include "costmodel/xgb_model.h"
#include "schedule/te/error.h"
#include "search/cost_model_choice.h"
#include "search/log_samples.h"
#include "search/tune_config.h"
#include "tools/commands.h"

namespace tessel {
namespace {

TuningLog open_log(const std::string& db) {
  if (db.empty()) throw InputError("--db PATH is required");
  if (!is_postgres_url(db) && !std::filesystem::exists(db)) throw InputError("tuning log '" + db + "' does not exist");
  return TuningLog::open(db, TuningLog::Mode::ReadOnly);
}

// The workload keys with records of `target` in the log.
std::set<std::string> workloads_of(const TuningLog& log, TargetKind target) {
  std::set<std::string> keys;
  for (const MeasureRecord& r : log.best_per_workload_target())
    if (r.target.kind == target_kind_name(target)) keys.insert(r.workload.key);
  return keys;
}

void require_workload(const std::set<std::string>& keys, const std::string& key, const TuningLog& log,
                      TargetKind target) {
  if (keys.count(key)) return;
  std::string known;
  for (const std::string& k : keys) known += (known.empty() ? "" : ", ") + k;
  throw InputError("unknown workload key '" + key + "': tuning log '" + log.path() + "' has no successful " +
                   target_kind_name(target) + " record of it (workloads: " + (known.empty() ? "none" : known) + ")");
}

// The samples of the log at args.db for args.target: only those of `workloads`, or all but those
// when `exclude` (every sample when `workloads` is empty).
LogSamples samples_of(const CostModelArgs& args, const std::vector<std::string>& workloads, bool exclude) {
  TuningLog log = open_log(args.db);
  const std::set<std::string> known = workloads_of(log, args.target);
  for (const std::string& k : workloads) require_workload(known, k, log, args.target);
  LogSampleFilter filter;
  filter.target = args.target;
  (exclude ? filter.exclude_workloads : filter.only_workloads) =
      std::set<std::string>(workloads.begin(), workloads.end());
  LogSamples s = samples_from_log(log, filter);
  for (const std::string& why : s.skipped) std::cerr << "warning: skipped " << why << "\n";
  if (s.samples.empty())
    throw InputError("tuning log '" + log.path() + "' has no usable " + target_kind_name(args.target) +
                     " records to learn from" +
                     (exclude && !workloads.empty() ? " outside the excluded workloads" : ""));
  return s;
}

}  // namespace

int cmd_costmodel_train(const CostModelArgs& args) {
  if (args.output.empty()) throw InputError("-o PATH (where to save the model) is required");
  const CostModelChoice choice = args.config ? read_cost_model_config(*args.config) : CostModelChoice{};
  if (choice.kind != CostModelKind::XGBoost) throw InputError("costmodel.kind: only an xgboost model can be trained");
  // Trained once on a whole log, a model can afford the better network: deepsets unless told.
  const XGBoostModelOptions options = new_model_options(choice, args.target, RankerNetwork::DeepSets, 0);
  if (options.mlp_weight > 0) blas::core_name();  // OpenBLAS missing: say so now, not after the trees
  LogSamples s = samples_of(args, args.exclude_workloads, true);
  std::set<std::string> groups;
  for (const TrainingSample& t : s.samples) groups.insert(t.group);

  auto t0 = std::chrono::steady_clock::now();
  XGBoostModel model(options);
  model.update(s.samples);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  model.save(args.output);

  std::printf("samples: %zu (%zu skipped)\n", s.samples.size(), s.skipped.size());
  std::printf("groups: %zu\n", groups.size());
  std::printf("objective: %s\n", objective_name(options.objective));
  std::printf("input: %s\n", model_input_name(options.input));
  std::printf("neural ranker weight: %g\n", options.mlp_weight);
  if (options.mlp_weight > 0)
    std::printf("neural ranker: %s (products by OpenBLAS, %s kernels)\n", mlp_network_name(options.mlp).c_str(),
                blas::core_name().c_str());
  std::printf("trees: %d\n", model.num_trees());
  std::printf("training time: %.2f s\n", seconds);
  std::printf("saved: %s\n", args.output.c_str());
  return 0;
}

int cmd_costmodel_eval(const CostModelArgs& args) {
  if (args.model.empty()) throw InputError("--model PATH is required");
  std::unique_ptr<XGBoostModel> model = XGBoostModel::load(args.model);
  LogSamples s = samples_of(args, args.holdout_workloads, false);

  // Scores are compared within a group only, and a pairs model's are relative to the programs it
  // is given: each group is scored on its own.
  std::vector<double> latencies, scores(s.samples.size());
  std::vector<std::string> groups;
  std::map<std::string, std::vector<size_t>> by_group;
  for (size_t i = 0; i < s.samples.size(); ++i) {
    latencies.push_back(s.samples[i].latency_s);
    groups.push_back(s.samples[i].group);
    by_group[s.samples[i].group].push_back(i);
  }
  for (const auto& [group, idx] : by_group) {
    std::vector<ProgramFeatures> programs;
    for (size_t i : idx) programs.push_back(s.samples[i].features);
    std::vector<double> sc = model->predict(programs);
    for (size_t k = 0; k < idx.size(); ++k) scores[idx[k]] = sc[k];
  }

  auto print = [](const std::string& name, const RankingMetrics& m) {
    std::printf("%-18s %9lld %8lld %10.3f %12.3f\n", name.c_str(), static_cast<long long>(m.programs),
                static_cast<long long>(m.pairs), m.pairwise_accuracy, m.top_recall);
  };
  std::map<std::string, std::vector<size_t>> by_workload;
  for (size_t i = 0; i < s.samples.size(); ++i) by_workload[s.workload_keys[i]].push_back(i);
  std::printf("%-18s %9s %8s %10s %12s\n", "workload", "programs", "pairs", "pairwise", "top-5% recall");
  double sum_pairwise = 0, sum_recall = 0;
  for (const auto& [key, idx] : by_workload) {
    std::vector<double> sc, lat;
    std::vector<std::string> gr;
    for (size_t i : idx) {
      sc.push_back(scores[i]);
      lat.push_back(latencies[i]);
      gr.push_back(groups[i]);
    }
    const RankingMetrics m = evaluate_ranking(sc, lat, gr);
    print(key, m);
    sum_pairwise += m.pairwise_accuracy;
    sum_recall += m.top_recall;
  }
  // "overall" pools every workload's pairs (a workload with more programs counts more); "mean" weighs
  // each workload alike, as the acceptance figures and transfer_eval do.
  print("overall", evaluate_ranking(scores, latencies, groups));
  if (by_workload.size() > 1)
    std::printf("%-18s %9s %8s %10.3f %12.3f\n", "mean", "", "", sum_pairwise / static_cast<double>(by_workload.size()),
                sum_recall / static_cast<double>(by_workload.size()));
  return 0;
}

}  // namespace tessel
