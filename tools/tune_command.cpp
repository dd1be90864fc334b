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

#include "codegen/cuda/cuda_backend.h"
#include "codegen/llvm/llvm_backend.h"
#include "frontend/model.h"
#include "schedule/te/error.h"
#include "search/tune_config.h"
#include "search/tuner.h"
#include "tools/commands.h"
#include "tools/format_duration.h"
#include "tools/tuning_log_glue.h"
#include "tools/workload.h"

namespace tessel {
namespace {

// What a session tunes: the tasks of a model (weighted by occurrences, one shared budget), or
// workloads given by op template or suite case.
struct Tunables {
  std::vector<TuneTask> tasks;
  std::vector<double> flops;
  std::vector<double> estimate_s;  // roofline estimates of a model's tasks (empty otherwise)
};

std::vector<Workload> workloads_of(const TuneArgs& args) {
  const WorkloadArgs& w = args.workload;
  if (!w.op.empty()) {
    if (!w.suite.empty() || !args.cases.empty() || args.all)
      throw InputError("give either --op with --param, or --suite with --case/--all, not both");
    return {workload_of_args(w)};
  }
  if (w.suite.empty())
    throw InputError("nothing to tune: give --op NAME [--param K=V ...] or --suite FILE --case NAME|--all");
  if (args.all) {
    if (!args.cases.empty()) throw InputError("--all tunes every case of the suite; drop --case");
    std::vector<Workload> all = load_suite(w.suite);
    if (!w.dtype.empty())
      for (Workload& c : all) apply_dtype(c, w.dtype);
    return all;
  }
  if (args.cases.empty()) throw InputError("--suite needs --case NAME (repeatable) or --all");
  std::vector<Workload> out;
  for (const std::string& name : args.cases) {
    out.push_back(resolve_workload("", {}, w.suite, name));
    if (!w.dtype.empty()) apply_dtype(out.back(), w.dtype);
  }
  return out;
}

std::string speedup(const TaskStatus& s) {
  if (!s.default_s || !s.best_s) return "-";
  std::ostringstream out;
  out << std::fixed << std::setprecision(2) << *s.default_s / *s.best_s << "x";
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
  if (left < 60)
    std::snprintf(buffer, sizeof buffer, "%.0fs", left);
  else
    std::snprintf(buffer, sizeof buffer, "%dm%02ds", static_cast<int>(left / 60), static_cast<int>(left) % 60);
  return buffer;
}

std::string table(const std::vector<TaskStatus>& tasks, bool final_table, const std::vector<double>& flops) {
  size_t width = 4;
  for (const TaskStatus& s : tasks) width = std::max(width, s.name.size());
  std::ostringstream out;
  out << std::left << std::setw(static_cast<int>(width)) << "task" << std::right << std::setw(12) << "trials"
      << std::setw(8) << "errors" << std::setw(13) << "default" << std::setw(13) << "best" << std::setw(9) << "speedup"
      << std::setw(final_table ? 11 : 9) << (final_table ? "GFLOP/s" : "ETA") << "\n";
  for (size_t i = 0; i < tasks.size(); ++i) {
    const TaskStatus& s = tasks[i];
    std::string trials = std::to_string(s.trials) + "/" + std::to_string(s.budget);
    std::string rate = "-";
    if (final_table && s.best_s && flops[i] > 0) {
      std::ostringstream r;
      r << std::fixed << std::setprecision(1) << flops[i] / *s.best_s / 1e9;
      rate = r.str();
    }
    out << std::left << std::setw(static_cast<int>(width)) << s.name << std::right << std::setw(12) << trials
        << std::setw(8) << s.errors << std::setw(13) << (s.default_s ? format_duration(*s.default_s) : "-")
        << std::setw(13) << (s.best_s ? format_duration(*s.best_s) : "-") << std::setw(9) << speedup(s)
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

Tunables tunables_of(const TuneArgs& args) {
  Tunables t;
  if (args.model) {
    if (!args.workload.op.empty() || !args.workload.suite.empty() || !args.cases.empty() || args.all)
      throw InputError("give a model, or --op / --suite, not both");
    const Model model = load_model(
        *args.model, import_options(args.input_shapes, args.cpu_channel_blocks, args.workload.dtype), args.target);
    for (size_t i = 0; i < model.tasks.size(); ++i) {
      const ModelTask& m = model.tasks[i];
      t.tasks.push_back(TuneTask{"t" + std::to_string(i) + " " + m.name, m.dag, static_cast<double>(m.weight)});
      t.flops.push_back(m.flops);
      t.estimate_s.push_back(m.estimate_s);
    }
    return t;
  }
  if (!args.input_shapes.empty()) throw InputError("--input-shape is for a model");
  for (const Workload& w : workloads_of(args)) {
    require_fits_in_memory(w);
    t.tasks.push_back(TuneTask{w.name, w.dag, 1});
    t.flops.push_back(w.dag.flops());
  }
  return t;
}

// A model's latency from its tasks' statuses: each task's best (its default, or its roofline
// estimate, until one is measured) times its weight.
double model_latency(const std::vector<TaskStatus>& statuses, const std::vector<double>& estimate_s) {
  double total = 0;
  for (size_t i = 0; i < statuses.size(); ++i)
    total += statuses[i].weight * statuses[i].best_s.value_or(statuses[i].default_s.value_or(estimate_s[i]));
  return total;
}

// The session's options from the command line and the config file: parsed and checked here, once.
TuneOptions tune_options(const TuneArgs& args) {
  if (args.db.empty()) throw InputError("tessel tune needs --db PATH (the tuning log is the session's memory)");
  if (!args.worker && args.session) throw InputError("--session names the shared session of --worker");
  if (args.devices && args.target != TargetKind::Cuda) throw InputError("--devices is for --target cuda");
  if (args.trials <= 0) throw InputError("tessel tune needs --trials N (the budget per workload, N >= 1)");
  if (args.target != TargetKind::Llvm && args.threads) throw InputError("--threads is for --target llvm");
  if (args.target != TargetKind::Cuda && !args.flush_l2) throw InputError("--no-flush-l2 is for --target cuda");
  if (args.target != TargetKind::Llvm && args.flush_cache) throw InputError("--flush-cache is for --target llvm");
  TuneOptions options;
  options.target = args.target;
  options.trials = args.trials;
  options.shared_budget = args.model.has_value();
  options.seed = args.seed;
  options.time_budget_s = args.time_budget_s;
  if (args.config) apply_tune_config(*args.config, options);
  options.model_path = args.costmodel;
  options.save_model_path = args.save_costmodel;
  options.cpu = CpuTargetSpec{host_vector_lanes(), args.threads > 0 ? args.threads : available_cores()};
  options.measure.builders = args.builders;
  options.measure.threads = args.threads;
  options.measure.run = default_run_settings(args.target);
  if (args.min_time_s) options.measure.run.min_time_s = *args.min_time_s;
  if (args.target == TargetKind::Cuda) options.measure.run.flush = args.flush_l2;
  if (args.target == TargetKind::Llvm) options.measure.run.flush = args.flush_cache;
  // A search measures many slow candidates: one second of samples at most tells them apart.
  options.measure.run.budget_s = 1;
  validate_tune_options(options);
  return options;
}

// A shared session's name when --session is not given: the same for every worker started with the
// same tasks, target and budget, so that workers started by one job script find each other.
std::string default_session_name(const std::vector<TuneTask>& tasks, const TuneOptions& options) {
  uint64_t hash = 1469598103934665603ull;  // FNV-1a
  auto mix = [&hash](const std::string& text) {
    for (unsigned char c : text + '\n') hash = (hash ^ c) * 1099511628211ull;
  };
  mix(target_kind_name(options.target));
  mix(std::to_string(options.trials) + (options.shared_budget ? " shared" : " each"));
  for (const TuneTask& t : tasks) mix(t.dag.workload_key());
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
  return std::string("tune-") + hex;
}

// The progress display: a live table on a terminal, a line per round otherwise; for a model, the
// estimated model latency after each round.
TuneCallbacks progress_display(const Tunables& t, bool live, LiveTable& display, std::vector<TaskStatus>& last) {
  const std::vector<TuneTask>& tasks = t.tasks;
  const std::vector<double>& flops = t.flops;
  TuneCallbacks callbacks;
  callbacks.on_note = [&display, &last, &flops](const std::string& text) {
    display.clear();
    std::cerr << "note: " << text << "\n";
    if (!last.empty()) display.draw(table(last, false, flops), "");
  };
  callbacks.on_build = [&display, &last, &flops, &tasks](size_t task, size_t built, size_t total) {
    if (!last.empty())
      display.draw(table(last, false, flops),
                   "  " + tasks[task].name + ": building " + std::to_string(built) + "/" + std::to_string(total));
  };
  callbacks.on_round = [&display, &last, &t, live, round = 0](const std::vector<TaskStatus>& statuses,
                                                              size_t current) mutable {
    last = statuses;
    ++round;
    const TaskStatus& s = statuses[current];
    const std::string model =
        t.estimate_s.empty() ? "" : ", model latency " + format_duration(model_latency(statuses, t.estimate_s));
    if (live) {
      display.draw(table(statuses, false, t.flops), "  round " + std::to_string(round) + ": " + s.name + model);
    } else {
      std::cerr << "round " << round << ": " << s.name << " " << s.trials << " trials, best "
                << (s.best_s ? format_duration(*s.best_s) : "-") << " (" << speedup(s) << " over default)" << model
                << (t.estimate_s.empty() ? ", ETA " + eta(s) : "") << " [" << split(s.last_round) << "]\n";
    }
  };
  return callbacks;
}

void print_summary(const std::vector<TaskStatus>& result, const std::vector<double>& flops, const TuneOptions& options,
                   const std::string& db) {
  std::cout << table(result, true, flops);
  int64_t measured = 0, retimes = 0;
  TimeSplit time;
  for (const TaskStatus& s : result) {
    measured += s.trials - s.trials_at_start;
    retimes += s.retimes;
    time += s.time;
  }
  std::cout << measured << " candidates measured this session and recorded in " << db << "\n";
  if (measured > 0) std::cout << "time in rounds: " << split(time) << "\n";
  if (retimes > 0)
    std::cout << "default and best: the upper median of each schedule's timings (its trial and " << retimes
              << " retimes of the leaders in the log; retimes are not trials"
              << (resolved_yardstick(options)
                      ? "; a schedule with retimes counts those alone, each relative to the default timed beside it"
                      : "")
              << ")\n";
}

// --devices: "all" (every GPU this process sees) or a list of GPU indexes, "0,1".
std::vector<int> parse_gpu_list(const std::string& spec) {
  if (spec == "all") {
    std::string why;
    const int count = cuda_device_count(&why);
    if (count == 0) throw InputError("--devices all: " + why);
    std::vector<int> gpus;
    for (int i = 0; i < count; ++i) gpus.push_back(i);
    return gpus;
  }
  std::vector<int> gpus;
  std::stringstream list(spec);
  std::string item;
  while (std::getline(list, item, ',')) {
    size_t used = 0;
    int gpu = -1;
    try {
      gpu = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || item.empty() || gpu < 0 || gpu > 1023)
      throw InputError("--devices " + spec + ": '" + item + "' is not a GPU index (give all, or e.g. 0,1)");
    if (std::find(gpus.begin(), gpus.end(), gpu) != gpus.end())
      throw InputError("--devices " + spec + ": GPU " + item + " is named twice");
    gpus.push_back(gpu);
  }
  if (gpus.empty()) throw InputError("--devices needs all or a list of GPU indexes, e.g. 0,1");
  return gpus;
}

}  // namespace

int cmd_tune(const TuneArgs& args) {
  const TuneOptions options = tune_options(args);
  const std::vector<int> gpus = args.devices ? parse_gpu_list(*args.devices) : std::vector<int>{};
  const Tunables tunables = tunables_of(args);
  const std::vector<TuneTask>& tasks = tunables.tasks;
  const std::vector<double>& flops = tunables.flops;
  // Open the log first: a bad path should fail before minutes of work, not after.
  TuningLog log = TuningLog::open(args.db, TuningLog::Mode::ReadWrite);
  const bool live = isatty(STDERR_FILENO) && !args.verbose;
  LiveTable display(live);
  std::vector<TaskStatus> last;
  const TuneCallbacks callbacks = progress_display(tunables, live, display, last);
  std::cerr << "tuning " << tasks.size() << " task" << (tasks.size() == 1 ? "" : "s") << " on "
            << target_kind_name(args.target) << ", " << args.trials << " trials " << (args.model ? "in all" : "each")
            << ", log " << log.path()
            << (args.flush_cache ? "; each candidate's inputs evicted from the caches before every sample" : "") << "\n";
  std::unique_ptr<TuningMachine> machine = local_machine(args.target, gpus);
  std::vector<TaskStatus> result;
  if (args.worker) {
    WorkerOptions worker{args.session.value_or(default_session_name(tasks, options)), args.db, args.lease_s};
    std::cerr << "joining tuning session '" << worker.session << "' (workers on any host with this log and "
              << "the same tasks and --trials share it)\n";
    result = tune_as_worker(tasks, log, options, *machine, worker, callbacks);
  } else {
    result = tune(tasks, log, options, *machine, callbacks);
  }
  display.clear();
  print_summary(result, flops, options, log.path());
  if (!tunables.estimate_s.empty())
    std::cout << "model latency (each task's best times its weight): "
              << format_duration(model_latency(result, tunables.estimate_s)) << "\n";
  return 0;
}

}  // namespace tessel
