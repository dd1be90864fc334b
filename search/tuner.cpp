#include "search/tuner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>

#include "costmodel/blas.h"
#include "costmodel/xgb_model.h"
#include "schedule/te/error.h"
#include "search/default_schedule.h"
#include "search/gpu_schedule.h"
#include "search/schedule_timings.h"
#include "search/task_scheduler.h"

namespace tessel {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// A candidate this much slower than the default schedule will not win: its run is cut off (recorded
// as run_timeout) instead of costing the session seconds per sample.
constexpr double kSlowerThanDefault = 10;
constexpr double kMinRunTimeout_s = 0.5;

struct TaskRun {
  std::unique_ptr<Measurer> measurer;
  double measurer_setup_s = 0;  // a measurer started before the rounds: counted in the first one's setup
  std::unique_ptr<SearchPolicy> policy;
  Trace default_trace;
  ScheduleTimings timings;
  TaskStatus status;
  bool had_round = false;  // in this session
};

// Best and default latencies from the timings, by the rule replay uses.
void refresh_latencies(TaskRun& run) {
  ScheduleTimings::Latencies l = run.timings.latencies();
  run.status.best_s = l.best_s;
  run.status.best_trace_json = l.best_json;
  run.status.default_s = l.default_s;
}

// The options of a new XGBoost model from the tune options.
XGBoostModelOptions new_model_options(const TuneOptions& options) {
  XGBoostModelOptions xgb;
  xgb.seed = options.seed;
  xgb.objective = objective_from_name(options.objective, "--objective");
  xgb.input = model_input_from_name(options.model_input, "--model-input", options.target == "cuda");
  check_objective_fits_input(xgb.objective, xgb.input);
  xgb.mlp = mlp_network_options(options.mlp_network, "--mlp-network");
  xgb.mlp_weight = resolve_mlp_weight(options.mlp_weight, xgb.input, xgb.mlp, "--mlp-weight");
  return xgb;
}

std::unique_ptr<CostModel> make_model(const TuneOptions& options) {
  if (options.model == "random") return make_random_model(options.seed);
  std::unique_ptr<XGBoostModel> model;
  if (!options.model_path.empty()) model = XGBoostModel::load(options.model_path);
  else model = std::make_unique<XGBoostModel>(new_model_options(options));
  // A model with a neural ranker needs OpenBLAS: loaded now, so that a missing library stops the
  // session before its first round rather than after it.
  if (model->options().mlp_weight > 0) blas::core_name();
  return model;
}

bool ok(const MeasureRecord& r) { return r.error == ErrorCode::Ok && r.median_s > 0; }

}  // namespace

void check_tune_options(const TuneOptions& options) {
  if (options.target != "llvm" && options.target != "cuda")
    throw InputError("--target must be llvm or cuda, not '" + options.target + "'");
  if (options.trials < 1) throw InputError("--trials must be at least 1");
  if (options.batch < 0) throw InputError("--batch must not be negative");
  if (options.retime_leaders < 0) throw InputError("--retime-leaders must not be negative");
  if (options.retime_timings < 1) throw InputError("--retime-timings must be at least 1");
  if (!options.yardstick.empty() && options.yardstick != "default" && options.yardstick != "none")
    throw InputError("--yardstick must be default or none, not '" + options.yardstick + "'");
  if (options.search.population < 2) throw InputError("--population must be at least 2");
  if (options.search.generations < 0) throw InputError("--generations must not be negative");
  if (!(options.search.crossover_ratio >= 0 && options.search.crossover_ratio <= 1) ||
      !(options.search.random_ratio >= 0 && options.search.random_ratio <= 1))
    throw InputError("search ratios must lie in [0, 1]");
  if (options.search_target.gpu != (options.target == "cuda"))
    throw InputError("the search target does not match --target " + options.target);
  if (options.model != "xgboost" && options.model != "random")
    throw InputError("--model-kind must be xgboost or random, not '" + options.model + "'");
  check_objective_fits_input(objective_from_name(options.objective, "--objective"),
                             model_input_from_name(options.model_input, "--model-input", options.target == "cuda"));
  const double mlp_weight = resolve_mlp_weight(
      options.mlp_weight, model_input_from_name(options.model_input, "--model-input", options.target == "cuda"),
      mlp_network_options(options.mlp_network, "--mlp-network"), "--mlp-weight");
  if (!options.mlp_network.empty() && mlp_weight == 0)
    throw InputError("--mlp-network " + options.mlp_network +
                     " names the neural ranker of a programs model with a weight above 0; this model has none");
  if (options.model == "random" && !options.model_path.empty())
    throw InputError("--model FILE is an XGBoost model; it cannot be used with the random model");
  if (options.time_budget_s < 0) throw InputError("--time-budget-s must not be negative");
  if (options.search.strategy != "evolution" && options.search.strategy != "random")
    throw InputError("--strategy must be evolution or random, not '" + options.search.strategy + "'");
  if (!options.model_path.empty() && !std::filesystem::is_regular_file(options.model_path))
    throw InputError("cannot read cost model '" + options.model_path + "': no such file");
}

MeasureRecord make_record(const WorkloadInfo& workload, const TargetInfo& target, const Trace& trace,
                          const MeasureResult& result, const std::string& settings_json) {
  MeasureRecord rec;
  rec.workload = workload;
  rec.target = target;
  rec.trace_json = trace_to_json(trace);
  rec.samples_s = result.samples_s;
  rec.median_s = result.median_s;
  rec.error = result.error;
  rec.error_message = result.message;
  rec.build_s = result.build_s;
  rec.run_s = result.run_s;
  rec.settings_json = settings_json;
  return rec;
}

TimeSplit& TimeSplit::operator+=(const TimeSplit& o) {
  setup_s += o.setup_s;
  search_s += o.search_s;
  measure_s += o.measure_s;
  learn_s += o.learn_s;
  retime_s += o.retime_s;
  return *this;
}

void check_flush_matches(const TuningLog& log, const std::string& workload_key, const TargetInfo& target, bool flush,
                         const std::string& workload_name) {
  for (const auto& [id, settings_json] : log.settings(workload_key, target)) {
    std::optional<bool> logged = settings_flush(settings_json);
    if (!logged || *logged == flush) continue;
    const bool gpu = target.kind == "cuda";
    throw InputError("the tuning log holds timings of " + workload_name + " (workload " + workload_key + ") on " +
                     target.kind + " " + target.arch + " taken " + (*logged ? "with " : "without ") +
                     (gpu ? "an L2 flush" : "a cache flush") + " before every sample (record " + std::to_string(id) +
                     "); this command times " + (flush ? "with one" : "without one") +
                     ", and the two do not compare: use another --db, or time as the log did (" +
                     (gpu ? "--no-flush-l2 times without" : "on the CPU only `tessel measure --flush-cache` times with one") +
                     ")");
  }
}

std::string resolved_yardstick(const TuneOptions& options) {
  if (!options.yardstick.empty()) return options.yardstick;
  return options.target == "cuda" ? "none" : "default";
}

std::string tune_options_json(const TuneOptions& o) {
  nlohmann::json j;
  j["target"] = o.target;
  j["trials"] = o.trials;
  j["batch"] = o.batch;
  j["seed"] = o.seed;
  j["time_budget_s"] = o.time_budget_s;
  j["model"] = o.model;
  j["model_path"] = o.model_path;
  j["objective"] = o.objective;
  j["model_input"] = o.model_input;
  j["mlp_weight"] = o.mlp_weight;
  j["mlp_network"] = o.mlp_network;
  j["retime_leaders"] = o.retime_leaders;
  j["retime_timings"] = o.retime_timings;
  j["retime_spread"] = o.retime_spread;
  j["yardstick"] = o.yardstick;
  j["search"] = {{"strategy", o.search.strategy},         {"population", o.search.population},
                 {"generations", o.search.generations},   {"crossover_ratio", o.search.crossover_ratio},
                 {"random_ratio", o.search.random_ratio}, {"measured_seeds", o.search.measured_seeds}};
  j["search"]["max_fresh_attempts"] = o.search.max_fresh_attempts;
  j["cpu"] = {{"vector_lanes", o.search_target.cpu.vector_lanes}, {"threads", o.search_target.cpu.num_threads}};
  j["gpu"] = {{"max_threads_per_block", o.search_target.gpu_spec.max_threads_per_block},
              {"max_shared_bytes", o.search_target.gpu_spec.max_shared_bytes}};
  j["measure"] = {{"builders", o.measure.builders},
                  {"build_timeout_s", o.measure.build_timeout_s},
                  {"run_timeout_s", o.measure.run_timeout_s},
                  {"min_time_s", o.measure.run.min_time_s},
                  {"budget_s", o.measure.run.budget_s},
                  {"flush", o.measure.run.flush}};
  return j.dump();
}

std::vector<TaskStatus> tune(const std::vector<TuneTask>& tasks, TuningLog& log, const TuneOptions& options,
                             const std::function<TargetInfo(const Measurer&)>& target_of,
                             const TuneCallbacks& callbacks) {
  if (tasks.empty()) throw InputError("nothing to tune: no tasks");
  check_tune_options(options);
  for (size_t i = 0; i < tasks.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (tasks[i].dag.workload_key() == tasks[j].dag.workload_key())
        throw InputError("'" + tasks[j].name + "' and '" + tasks[i].name + "' are the same workload (key " +
                         tasks[i].dag.workload_key() + "); tune it once");
  const bool gpu = options.target == "cuda";
  const int batch = options.batch > 0 ? options.batch : gpu ? 64 : 32;
  const Clock::time_point start = Clock::now();
  auto note = [&](const std::string& text) {
    if (callbacks.on_note) callbacks.on_note(text);
  };
  std::unique_ptr<CostModel> model = make_model(options);
  // The session records the loss of the model it actually uses: a loaded one keeps its own.
  TuneOptions saved = options;
  saved.yardstick = resolved_yardstick(options);
  const bool yardstick = saved.yardstick == "default";
  if (const auto* xgb = dynamic_cast<const XGBoostModel*>(model.get())) {
    saved.objective = objective_name(xgb->options().objective);
    saved.model_input = model_input_name(xgb->options().input);
    saved.mlp_weight = xgb->options().mlp_weight;
    saved.mlp_network = saved.mlp_weight > 0 ? mlp_network_name(xgb->options().mlp) : "none";
  } else {
    saved.objective = saved.model_input = saved.mlp_network = "none";
    saved.mlp_weight = 0;
  }

  std::vector<TaskRun> runs(tasks.size());
  // The first task's measurer names the target (for a GPU: which one, which driver).
  const Clock::time_point setup_start = Clock::now();
  runs[0].measurer = std::make_unique<Measurer>(tasks[0].dag, options.measure);
  runs[0].measurer_setup_s = seconds_since(setup_start);
  const TargetInfo target = target_of(*runs[0].measurer);

  std::vector<double> weights;
  // The log's trial records of each task, learned from once the tasks are read (and only when some
  // task has trials left: a session that only settles leaders trains nothing).
  struct Learned {
    std::string group;
    std::vector<Trace> traces;
    std::vector<double> latencies;
  };
  std::vector<Learned> logged(tasks.size());
  for (size_t i = 0; i < tasks.size(); ++i) {
    const TuneTask& task = tasks[i];
    TaskRun& run = runs[i];
    weights.push_back(task.weight);
    run.policy = std::make_unique<SearchPolicy>(task.dag, options.search_target, options.search,
                                                options.seed * 1000003 + i);
    run.default_trace = gpu ? default_gpu_schedule(task.dag, options.search_target.gpu_spec)
                            : default_schedule(task.dag, options.search_target.cpu);
    run.policy->reserve(run.default_trace);  // measured first, by the tuner; never proposed
    run.timings.set_default(trace_to_json(run.default_trace));
    TaskStatus& s = run.status;
    s.name = task.name;
    s.workload_key = task.dag.workload_key();
    s.budget = options.trials;
    const std::string default_key = trace_steps_key(run.default_trace);
    // Resume: everything the log holds for this task counts and is learned from.
    Learned& learned = logged[i];
    learned.group = s.workload_key + "/" + target.kind;
    check_flush_matches(log, s.workload_key, target, options.measure.run.flush, task.name);
    for (const MeasureRecord& r : log.records(s.workload_key, target)) {
      const bool trial = r.purpose == RecordPurpose::Trial;
      if (trial) ++s.trials;
      else ++s.retimes;
      if (trial && !ok(r)) ++s.errors;
      Trace trace;
      try {
        trace = trace_from_json(r.trace_json, "log record " + std::to_string(r.id));
      } catch (const InputError& e) {
        note(std::string("skipping a record the search cannot read: ") + e.what());
        continue;
      }
      run.timings.add(trace, r.trace_json, r.error, r.median_s, r.reference_s, r.purpose);
      if (!trial) continue;  // a retime repeats a schedule the search was told of already
      run.policy->tell(trace, ok(r) ? r.median_s : std::nan(""));
      if (trace_steps_key(trace) == default_key && !s.default_measured) {
        s.default_measured = true;
        run.timings.set_default(r.trace_json);  // as stored: its decisions may differ from today's default's
      }
      learned.traces.push_back(std::move(trace));
      learned.latencies.push_back(ok(r) ? r.median_s : std::nan(""));
    }
    refresh_latencies(run);
    s.trials_at_start = s.trials;
    s.done = s.trials >= s.budget;
  }
  // Only now, with every task's records read and found usable, does the session enter the log.
  log.begin_session(SessionInfo{"tessel tune: " + tasks[0].name + (tasks.size() > 1 ? " and others" : ""),
                                tune_options_json(saved), std::string("tessel ") + TESSEL_VERSION, "", ""});
  std::vector<TrainingSample> history;
  if (std::any_of(runs.begin(), runs.end(), [](const TaskRun& r) { return !r.status.done; })) {
    for (size_t i = 0; i < runs.size(); ++i) {
      std::vector<const Trace*> traces;
      for (const Trace& t : logged[i].traces) traces.push_back(&t);
      std::vector<std::optional<ProgramFeatures>> features = runs[i].policy->features(traces);  // every core
      for (size_t k = 0; k < features.size(); ++k)
        if (features[k])
          history.push_back(TrainingSample{std::move(*features[k]), logged[i].group, logged[i].latencies[k]});
    }
  }
  logged.clear();
  if (!history.empty()) {
    note("learning from " + std::to_string(history.size()) + " records already in the log (" +
         std::to_string(static_cast<int>(seconds_since(start))) + " s since the start)");
    const Clock::time_point learn_start = Clock::now();
    model->update(history);
    note("learned in " + std::to_string(static_cast<int>(seconds_since(learn_start))) + " s");
  }

  TaskScheduler scheduler(weights);
  for (size_t i = 0; i < runs.size(); ++i)
    if (runs[i].status.done) scheduler.finish(i);

  // The task's measurer, made on first use; a candidate far slower than the default is cut off.
  auto measurer_of = [&](size_t t) -> Measurer& {
    TaskRun& run = runs[t];
    if (!run.measurer) run.measurer = std::make_unique<Measurer>(tasks[t].dag, options.measure);
    if (run.status.default_s > 0)
      run.measurer->set_run_timeout(std::min(options.measure.run_timeout_s,
                                             std::max(kMinRunTimeout_s, kSlowerThanDefault * run.status.default_s)));
    return *run.measurer;
  };
  auto workload_of = [&](size_t t) {
    return WorkloadInfo{runs[t].status.workload_key, tasks[t].dag.to_text(), tasks[t].dag.flops()};
  };
  // Brings the leaders of a task (and its default) up to options.retime_timings timings, or with
  // `spread` one timing nearer (none for a schedule timed in this round). Each pass can reveal a
  // leader that was lucky, which lets the next schedule in; a few passes settle it (settling
  // without `spread` goes on until the leaders hold their timings, at most 4 passes per leader: a
  // pass re-times only schedules still owed timings).
  auto retime_leaders = [&](size_t t, bool spread) {
    TaskRun& run = runs[t];
    const int passes = spread ? options.retime_leaders : 4 * options.retime_leaders;
    for (int pass = 0; pass < passes; ++pass) {
      // With the yardstick (once the default has run correctly): D A D B D, the default owing no
      // timing of its own then, and a round's new leaders re-timed in that round.
      const std::optional<ScheduleTimings::Retime> yard = yardstick ? run.timings.yardstick() : std::nullopt;
      std::vector<ScheduleTimings::Retime> order =
          run.timings.retime_list(options.retime_leaders, options.retime_timings, spread, yard.has_value());
      if (order.empty()) break;
      if (yard) {
        std::vector<ScheduleTimings::Retime> between{*yard};
        for (const ScheduleTimings::Retime& r : order) {
          if (r.json == yard->json) continue;
          between.push_back(r);
          between.push_back(*yard);
        }
        order = std::move(between);
      }
      Measurer& measurer = measurer_of(t);
      std::vector<Candidate> candidates;
      for (const ScheduleTimings::Retime& r : order) candidates.push_back(Candidate{r.trace, Fault::None});
      std::vector<MeasureResult> results = measurer.measure(candidates);
      std::vector<MeasureRecord> records;
      const WorkloadInfo workload = workload_of(t);
      auto ok_median = [&](size_t k) { return results[k].error == ErrorCode::Ok ? results[k].median_s : 0.0; };
      for (size_t k = 0; k < results.size(); ++k) {
        records.push_back(make_record(workload, target, candidates[k].trace, results[k], measurer.settings_json()));
        records.back().trace_json = order[k].json;  // the string its trial is stored under
        records.back().purpose = RecordPurpose::Retime;
        if (!yard) continue;
        if (k % 2 == 0) {  // the default itself: its own median, so that it counts at the level too
          records.back().reference_s = ok_median(k);
          continue;
        }
        // The lower of the neighbouring default timings that ran: a moment's load only slows a timing.
        double before = ok_median(k - 1), after = k + 1 < results.size() ? ok_median(k + 1) : 0.0;
        records.back().reference_s = before > 0 && after > 0 ? std::min(before, after) : std::max(before, after);
      }
      log.append(records);
      for (size_t k = 0; k < results.size(); ++k) {
        run.timings.add(order[k].trace, order[k].json, results[k].error, results[k].median_s, records[k].reference_s,
                        RecordPurpose::Retime);
        ++run.status.retimes;
      }
    }
    refresh_latencies(run);
  };
  // A task done before the session starts gets no round; its leaders (in a log written before
  // retimes existed, or by a session killed while re-timing) are settled here.
  for (size_t i = 0; i < runs.size(); ++i)
    if (runs[i].status.done && !runs[i].timings.retime_list(options.retime_leaders, options.retime_timings).empty()) {
      note(runs[i].status.name + ": re-timing the leaders the log holds");
      retime_leaders(i, false);
    }

  std::vector<TaskStatus> statuses(runs.size());
  auto snapshot = [&]() {
    for (size_t i = 0; i < runs.size(); ++i) statuses[i] = runs[i].status;
    return statuses;
  };
  while (std::optional<size_t> next = scheduler.next()) {
    if (options.time_budget_s > 0 && seconds_since(start) >= options.time_budget_s) {
      note("time budget of " + std::to_string(static_cast<int>(options.time_budget_s)) + " s reached");
      // Leaders still owed timings spread over rounds get them now (of the tasks that had a round
      // in this session), so that the table's best rests on as many timings as a finished task's.
      for (size_t i = 0; i < runs.size(); ++i) {
        if (runs[i].status.done || !runs[i].had_round) continue;
        const Clock::time_point settle_start = Clock::now();
        retime_leaders(i, false);
        const double settle_s = seconds_since(settle_start);
        runs[i].status.seconds += settle_s;
        runs[i].status.time.retime_s += settle_s;
      }
      break;
    }
    const size_t t = *next;
    TaskRun& run = runs[t];
    TaskStatus& s = run.status;
    run.timings.next_round();
    run.had_round = true;
    // The round's time by phase: lap() is the time since the previous lap (or the round's start).
    const Clock::time_point round_start = Clock::now();
    TimeSplit split;
    Clock::time_point mark = round_start;
    auto lap = [&mark] {
      const Clock::time_point now = Clock::now();
      const double elapsed = std::chrono::duration<double>(now - mark).count();
      mark = now;
      return elapsed;
    };
    auto close_round = [&] {
      s.seconds += seconds_since(round_start);
      s.last_round = split;
      s.time += split;
    };
    Measurer& measurer = measurer_of(t);  // the first time: the runner, inputs and reference
    split.setup_s = lap() + run.measurer_setup_s;
    run.measurer_setup_s = 0;
    const int64_t wanted = std::min<int64_t>(batch, s.budget - s.trials);
    std::vector<Trace> traces;
    std::vector<std::optional<ProgramFeatures>> features;
    // The default schedule first: the baseline every speed-up is measured against.
    if (!s.default_measured) {
      traces.push_back(run.default_trace);
      features.push_back(run.policy->features(run.default_trace));
    }
    for (Proposal& p : run.policy->ask(static_cast<int>(wanted - static_cast<int64_t>(traces.size())), *model)) {
      traces.push_back(std::move(p.trace));
      features.push_back(std::move(p.features));
    }
    split.search_s = lap();
    if (traces.empty()) {
      note(s.name + ": no new schedule left to try; stopping at " + std::to_string(s.trials) + " trials");
      retime_leaders(t, false);  // a resumed task can end here without a round
      split.retime_s = lap();
      close_round();
      s.done = true;
      scheduler.finish(t);
      continue;
    }
    std::vector<Candidate> candidates;
    for (const Trace& trace : traces) candidates.push_back(Candidate{trace, Fault::None});
    measurer.on_build_progress([&](size_t built, size_t total) {
      if (callbacks.on_build) callbacks.on_build(t, built, total);
    });
    std::vector<MeasureResult> results = measurer.measure(candidates);

    std::vector<MeasureRecord> records;
    const WorkloadInfo workload = workload_of(t);
    for (size_t k = 0; k < results.size(); ++k)
      records.push_back(make_record(workload, target, traces[k], results[k], measurer.settings_json()));
    log.append(records);  // committed before anything below counts the round
    split.measure_s = lap();

    std::vector<TrainingSample> fresh;
    const std::string group = s.workload_key + "/" + target.kind;
    for (size_t k = 0; k < results.size(); ++k) {
      const MeasureResult& r = results[k];
      bool good = r.error == ErrorCode::Ok && r.median_s > 0;
      double latency = good ? r.median_s : std::nan("");
      run.policy->tell(traces[k], latency);
      ++s.trials;
      if (!good) ++s.errors;
      run.timings.add(traces[k], records[k].trace_json, r.error, r.median_s);
      if (k == 0 && !s.default_measured) s.default_measured = true;
      if (features[k]) fresh.push_back(TrainingSample{*features[k], group, latency});
    }
    model->update(fresh);
    split.learn_s = lap();  // telling the search and the model
    retime_leaders(t, options.retime_spread && s.trials < s.budget);  // the task's last round settles
    split.retime_s = lap();
    close_round();
    scheduler.record(t, s.trials, s.best_s > 0 ? s.best_s : std::numeric_limits<double>::infinity());
    if (s.trials >= s.budget) {
      s.done = true;
      scheduler.finish(t);
    }
    if (callbacks.on_round) callbacks.on_round(snapshot(), t);
  }
  if (!options.save_model_path.empty()) {
    if (auto* xgb = dynamic_cast<XGBoostModel*>(model.get())) {
      xgb->save(options.save_model_path);
      note("cost model saved to " + options.save_model_path);
    }
  }
  return snapshot();
}

}  // namespace tessel
