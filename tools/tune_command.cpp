// tessel tune: searches schedules for one workload or a suite's cases on one target, recording every
// measured candidate in the tuning log (search/tuner.h). Shows a live table per task on a terminal
// (one line per round otherwise) and a final before/after table.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "codegen/llvm/llvm_backend.h"
#include "schedule/te/error.h"
#include "search/tuner.h"
#include "tools/commands.h"
#include "tools/format_duration.h"
#include "tools/tuning_log_glue.h"
#include "tools/workload.h"

namespace tessel {
namespace {

std::vector<Workload> workloads_of(const TuneArgs& args) {
  const WorkloadArgs& w = args.workload;
  if (!w.op.empty()) {
    if (!w.suite.empty() || !args.cases.empty() || args.all)
      throw InputError("give either --op with --param, or --suite with --case/--all, not both");
    return {workload_of_args(w)};
  }
  if (w.suite.empty()) throw InputError("nothing to tune: give --op NAME [--param K=V ...] or --suite FILE --case NAME|--all");
  if (args.all) {
    if (!args.cases.empty()) throw InputError("--all tunes every case of the suite; drop --case");
    return load_suite(w.suite);
  }
  if (args.cases.empty()) throw InputError("--suite needs --case NAME (repeatable) or --all");
  std::vector<Workload> out;
  for (const std::string& name : args.cases) out.push_back(resolve_workload("", {}, w.suite, name));
  return out;
}

std::string speedup(const TaskStatus& s) {
  if (s.default_s <= 0 || s.best_s <= 0) return "-";
  std::ostringstream out;
  out << std::fixed << std::setprecision(2) << s.default_s / s.best_s << "x";
  return out.str();
}

std::string split(const TimeSplit& t) {
  char buffer[160];
  std::snprintf(buffer, sizeof buffer, "setup %.1f s, search %.1f s, build+run %.1f s, learn %.1f s, retime %.1f s",
                t.setup_s, t.search_s, t.measure_s, t.learn_s, t.retime_s);
  return buffer;
}

std::string eta(const TaskStatus& s) {
  if (s.done) return "done";
  int64_t session_trials = s.trials - s.trials_at_start;
  if (session_trials <= 0) return "-";
  double left = s.seconds / static_cast<double>(session_trials) * static_cast<double>(s.budget - s.trials);
  char buffer[32];
  if (left < 60) std::snprintf(buffer, sizeof buffer, "%.0fs", left);
  else std::snprintf(buffer, sizeof buffer, "%dm%02ds", static_cast<int>(left / 60), static_cast<int>(left) % 60);
  return buffer;
}

std::string table(const std::vector<TaskStatus>& tasks, bool final_table, const std::vector<double>& flops) {
  size_t width = 4;
  for (const TaskStatus& s : tasks) width = std::max(width, s.name.size());
  std::ostringstream out;
  out << std::left << std::setw(static_cast<int>(width)) << "task" << std::right << std::setw(12) << "trials"
      << std::setw(8) << "errors" << std::setw(13) << "default" << std::setw(13) << "best" << std::setw(9)
      << "speedup" << std::setw(final_table ? 11 : 9) << (final_table ? "GFLOP/s" : "ETA") << "\n";
  for (size_t i = 0; i < tasks.size(); ++i) {
    const TaskStatus& s = tasks[i];
    std::string trials = std::to_string(s.trials) + "/" + std::to_string(s.budget);
    std::string rate = "-";
    if (final_table && s.best_s > 0 && flops[i] > 0) {
      std::ostringstream r;
      r << std::fixed << std::setprecision(1) << flops[i] / s.best_s / 1e9;
      rate = r.str();
    }
    out << std::left << std::setw(static_cast<int>(width)) << s.name << std::right << std::setw(12) << trials
        << std::setw(8) << s.errors << std::setw(13) << (s.default_s > 0 ? format_duration(s.default_s) : "-")
        << std::setw(13) << (s.best_s > 0 ? format_duration(s.best_s) : "-") << std::setw(9) << speedup(s)
        << std::setw(final_table ? 11 : 9) << (final_table ? rate : eta(s)) << "\n";
  }
  return out.str();
}

// The live display: the whole table redrawn in place on a terminal.
class LiveTable {
 public:
  explicit LiveTable(bool enabled) : enabled_(enabled) {}
  void draw(const std::string& text, const std::string& status) {
    if (!enabled_) return;
    clear();
    std::string all = text + status + "\n";
    std::cerr << all << std::flush;
    lines_ = static_cast<int>(std::count(all.begin(), all.end(), '\n'));
  }
  void clear() {
    if (!enabled_) return;
    for (int i = 0; i < lines_; ++i) std::cerr << "\033[1A\033[2K";
    lines_ = 0;
  }

 private:
  bool enabled_;
  int lines_ = 0;
};

}  // namespace

int cmd_tune(const TuneArgs& args) {
  if (args.db.empty()) throw InputError("tessel tune needs --db PATH (the tuning log is the session's memory)");
  if (args.trials <= 0) throw InputError("tessel tune needs --trials N (the budget per workload, N >= 1)");
  if (args.target != "llvm" && args.target != "cuda") throw InputError("unknown --target '" + args.target + "' (llvm or cuda)");
  if (args.target != "llvm" && args.threads) throw InputError("--threads is for --target llvm");
  if (args.target != "cuda" && !args.flush_l2) throw InputError("--no-flush-l2 is for --target cuda");
  std::vector<Workload> workloads = workloads_of(args);

  TuneOptions options;
  options.target = args.target;
  options.trials = args.trials;
  options.batch = args.batch;
  options.retime_leaders = args.retime_leaders;
  options.retime_timings = args.retime_timings;
  options.retime_spread = !args.retime_back_to_back;
  options.yardstick = args.yardstick;
  options.seed = args.seed;
  options.time_budget_s = args.time_budget_s;
  options.model = args.model_kind;
  if (!args.objective.empty() && !args.model.empty())
    throw InputError("--objective is for a new cost model; --model " + args.model + " keeps the objective it was trained with");
  if (!args.objective.empty()) options.objective = args.objective;
  if (!args.model_input.empty() && !args.model.empty())
    throw InputError("--model-input is for a new cost model; --model " + args.model + " keeps the input it was trained with");
  options.model_input = args.model_input;
  if (args.mlp_weight >= 0 && !args.model.empty())
    throw InputError("--mlp-weight is for a new cost model; --model " + args.model + " keeps the blend it was trained with");
  options.mlp_weight = args.mlp_weight;
  if (!args.mlp_network.empty() && !args.model.empty())
    throw InputError("--mlp-network is for a new cost model; --model " + args.model + " keeps the network it was trained with");
  options.mlp_network = args.mlp_network;
  options.model_path = args.model;
  options.save_model_path = args.save_model;
  options.search.strategy = args.strategy;
  if (args.population > 0) options.search.population = args.population;
  if (args.generations >= 0) options.search.generations = args.generations;
  options.search_target.gpu = args.target == "cuda";
  options.search_target.cpu = CpuTargetSpec{host_vector_lanes(), args.threads > 0 ? args.threads : available_cores()};
  options.measure.target = args.target;
  options.measure.builders = args.builders;
  options.measure.threads = args.threads;
  options.measure.run = default_run_settings(args.target);
  if (args.min_time_ms > 0) options.measure.run.min_time_s = args.min_time_ms * 1e-3;
  if (args.target == "cuda") options.measure.run.flush = args.flush_l2;
  // A search measures many slow candidates: one second of samples at most tells them apart.
  options.measure.run.budget_s = 1;

  std::vector<TuneTask> tasks;
  std::vector<double> flops;
  for (const Workload& w : workloads) {
    tasks.push_back(TuneTask{w.name, w.dag, 1});
    flops.push_back(w.dag.flops());
  }
  check_tune_options(options);
  // Open the log first: a bad path should fail before minutes of work, not after.
  TuningLog log = TuningLog::open(args.db, TuningLog::Mode::ReadWrite);

  const bool live = isatty(STDERR_FILENO) && !args.verbose;
  LiveTable display(live);
  std::vector<TaskStatus> last;
  int round = 0;
  TuneCallbacks callbacks;
  callbacks.on_note = [&](const std::string& text) {
    display.clear();
    std::cerr << "note: " << text << "\n";
    if (!last.empty()) display.draw(table(last, false, flops), "");
  };
  callbacks.on_build = [&](size_t task, size_t built, size_t total) {
    if (!last.empty())
      display.draw(table(last, false, flops), "  " + tasks[task].name + ": building " + std::to_string(built) + "/" +
                                                  std::to_string(total));
  };
  callbacks.on_round = [&](const std::vector<TaskStatus>& statuses, size_t current) {
    last = statuses;
    ++round;
    const TaskStatus& s = statuses[current];
    if (live) {
      display.draw(table(statuses, false, flops), "  round " + std::to_string(round) + ": " + s.name);
    } else {
      std::cerr << "round " << round << ": " << s.name << " " << s.trials << "/" << s.budget << " trials, best "
                << (s.best_s > 0 ? format_duration(s.best_s) : "-") << " (" << speedup(s) << " over default), ETA "
                << eta(s) << " [" << split(s.last_round) << "]\n";
    }
  };
  std::cerr << "tuning " << tasks.size() << " task" << (tasks.size() == 1 ? "" : "s") << " on " << args.target
            << ", " << args.trials << " trials each, log " << args.db << "\n";
  std::vector<TaskStatus> result = tune(tasks, log, options,
                                        [&](const Measurer& m) {
                                          return args.target == "cuda" ? cuda_target(m.device()) : host_llvm_target();
                                        },
                                        callbacks);
  display.clear();
  std::cout << table(result, true, flops);
  int64_t measured = 0;
  for (const TaskStatus& s : result) measured += s.trials - s.trials_at_start;
  std::cout << measured << " candidates measured this session and recorded in " << args.db << "\n";
  TimeSplit time;
  for (const TaskStatus& s : result) time += s.time;
  if (measured > 0) std::cout << "time in rounds: " << split(time) << "\n";
  int64_t retimes = 0;
  for (const TaskStatus& s : result) retimes += s.retimes;
  if (retimes > 0)
    std::cout << "default and best: the upper median of each schedule's timings (its trial and " << retimes
              << " retimes of the leaders in the log; retimes are not trials"
              << (resolved_yardstick(options) == "default"
                      ? "; a schedule with retimes counts those alone, each relative to the default timed beside it"
                      : "")
              << ")\n";
  return 0;
}

}  // namespace tessel
