// tessel measure: builds and measures candidate schedules through the measurement harness (builder
// pool, runner workers) as one tuning session, recording every candidate in the tuning log. With
// --random-schedules it is random search: the first end-to-end tuning loop.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "codegen/llvm/llvm_backend.h"
#include "measure/measurer.h"
#include "schedule/te/error.h"
#include "search/default_schedule.h"
#include "search/gpu_schedule.h"
#include "search/random_schedule.h"
#include "search/tuning_records.h"
#include "tools/commands.h"
#include "tools/format_duration.h"
#include "tools/tuning_log_glue.h"
#include "tools/workload.h"

namespace tessel {
namespace {

using Clock = std::chrono::steady_clock;

// The live status line: redrawn in place on a terminal, silent otherwise.
class ProgressLine {
 public:
  ProgressLine(bool enabled, int64_t total) : enabled_(enabled), total_(total), start_(Clock::now()) {}

  // `building` is "", or the build progress of the current batch ("building 3/16").
  void update(int64_t done, int64_t errors, double best_s, int64_t best_index, const std::string& building = "") {
    if (!enabled_) return;
    double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
    std::ostringstream line;
    line << "  measured " << done << "/" << total_ << (building.empty() ? "" : "  " + building) << "  errors "
         << errors << "  best "
         << (best_index >= 0 ? format_duration(best_s) + " (#" + std::to_string(best_index) + ")" : std::string("-"))
         << "  " << std::fixed << std::setprecision(1) << (elapsed > 0 ? done / elapsed : 0.0) << " cand/s";
    std::string text = line.str();
    std::cerr << "\r" << text << std::string(last_width_ > text.size() ? last_width_ - text.size() : 0, ' ')
              << std::flush;
    last_width_ = text.size();
  }

  void finish() {
    if (enabled_ && last_width_) std::cerr << "\r" << std::string(last_width_, ' ') << "\r" << std::flush;
  }

 private:
  bool enabled_;
  int64_t total_;
  Clock::time_point start_;
  size_t last_width_ = 0;
};

struct Planned {
  std::string label;
  Trace trace;
};

std::vector<Planned> plan_candidates(const MeasureArgs& args, const Workload& w, const CpuTargetSpec& cpu) {
  std::vector<Planned> plan;
  bool cuda = args.target == TargetKind::Cuda;
  if (!args.schedule.empty()) {
    Trace t = args.schedule == "default"
                  ? (cuda ? default_gpu_schedule(w.dag, GpuTargetSpec{}) : default_schedule(w.dag, cpu))
                  : load_trace_file(args.schedule);
    plan.push_back({args.schedule == "default" ? "default schedule" : args.schedule, t});
  }
  for (int i = 0; i < args.random_schedules; ++i) {
    uint64_t seed = args.seed + static_cast<uint64_t>(i);
    plan.push_back({"random seed " + std::to_string(seed),
                    cuda ? random_gpu_schedule(w.dag, seed, GpuTargetSpec{}) : random_schedule(w.dag, seed, cpu)});
  }
  return plan;
}

}  // namespace

int cmd_measure(const MeasureArgs& args) {
  if (args.db.empty()) throw InputError("tessel measure needs --db PATH (every candidate is recorded)");
  if (args.random_schedules == 0 && args.schedule.empty())
    throw InputError("nothing to measure: give --random-schedules N and/or --schedule FILE|default");
  if (args.target != TargetKind::Llvm && (args.threads || !args.pin || args.flush_cache))
    throw InputError("--threads, --no-pin and --flush-cache are for --target llvm");
  if (args.target != TargetKind::Cuda && !args.flush_l2) throw InputError("--no-flush-l2 is for --target cuda");
  Workload w = workload_of_args(args.workload);
  require_fits_in_memory(w);
  std::map<int64_t, Fault> faults;
  if (!args.inject.empty()) faults = parse_fault_plan(args.inject);

  CpuTargetSpec cpu{host_vector_lanes(), args.threads > 0 ? args.threads : available_cores()};
  std::vector<Planned> plan = plan_candidates(args, w, cpu);
  for (const auto& [index, fault] : faults)
    if (index >= static_cast<int64_t>(plan.size()))
      throw InputError("--inject: candidate " + std::to_string(index) + " does not exist (this session has " +
                       std::to_string(plan.size()) + ", numbered from 0)");

  // Open the log first: a bad path should fail before minutes of work, not after.
  TuningLog log = TuningLog::open(args.db, TuningLog::Mode::ReadWrite);

  MeasureOptions options;
  options.target = args.target;
  options.builders = args.builders;
  options.build_timeout_s = args.build_timeout_s;
  options.run_timeout_s = args.run_timeout_s;
  options.run = default_run_settings(args.target);
  if (args.min_time_ms > 0) options.run.min_time_s = args.min_time_ms * 1e-3;
  if (args.target == TargetKind::Llvm) options.run.flush = args.flush_cache;
  if (args.target == TargetKind::Cuda) options.run.flush = args.flush_l2;
  options.threads = args.threads;
  options.pin = args.pin;
  Measurer measurer(w.dag, options);

  TargetInfo target = args.target == TargetKind::Cuda ? cuda_target(measurer.device()) : host_llvm_target();
  WorkloadInfo workload = workload_info(w);
  check_flush_matches(log, workload.key, target, options.run.flush, w.name);
  nlohmann::json session_options = nlohmann::json::parse(measurer.settings_json());
  session_options["random_schedules"] = args.random_schedules;
  session_options["seed"] = args.seed;
  session_options["schedule"] = args.schedule;
  session_options["inject"] = args.inject;
  session_options["builders"] = args.builders > 0 ? args.builders : available_cores();
  log.begin_session(SessionInfo{"tessel measure: " + w.name, session_options.dump(),
                                std::string("tessel ") + TESSEL_VERSION, "", ""});

  int builders = args.builders > 0 ? args.builders : available_cores();
  size_t batch = static_cast<size_t>(args.batch > 0 ? args.batch : std::max(8, 4 * builders));
  ProgressLine progress(isatty(STDERR_FILENO) && !args.verbose, static_cast<int64_t>(plan.size()));
  std::map<std::string, int64_t> counts;
  int64_t done = 0, errors = 0, best_index = -1, first_id = 0, last_id = 0;
  double best_s = 0;

  measurer.on_build_progress([&](size_t built, size_t total) {
    progress.update(done, errors, best_s, best_index,
                    built < total ? "building " + std::to_string(built) + "/" + std::to_string(total) : "");
  });
  for (size_t begin = 0; begin < plan.size(); begin += batch) {
    size_t end = std::min(plan.size(), begin + batch);
    std::vector<Candidate> candidates;
    for (size_t i = begin; i < end; ++i) {
      auto f = faults.find(static_cast<int64_t>(i));
      candidates.push_back({plan[i].trace, f == faults.end() ? Fault::None : f->second});
    }
    std::vector<MeasureResult> results =
        measurer.measure(candidates, [&](size_t k, const MeasureResult& r) {
          int64_t index = static_cast<int64_t>(begin + k);
          ++done;
          if (r.error != ErrorCode::Ok) {
            ++errors;
          } else if (best_index < 0 || r.median_s < best_s) {
            best_s = r.median_s;
            best_index = index;
          }
          if (args.verbose)
            std::cout << "#" << index << " " << plan[static_cast<size_t>(index)].label << ": " << to_string(r.error)
                      << (r.error == ErrorCode::Ok ? " " + format_duration(r.median_s) : "")
                      << (r.message.empty() ? "" : "  " + r.message.substr(0, 200)) << "\n"
                      << std::flush;
          progress.update(done, errors, best_s, best_index);
        });

    std::vector<MeasureRecord> records;
    for (size_t k = 0; k < results.size(); ++k) {
      ++counts[to_string(results[k].error)];
      records.push_back(make_record(workload, target, candidates[k].trace, results[k], measurer.settings_json()));
    }
    std::vector<int64_t> ids = log.append(records);
    if (!ids.empty()) {
      if (!first_id) first_id = ids.front();
      last_id = ids.back();
    }
  }
  progress.finish();

  std::cout << w.name << " on " << (args.target == TargetKind::Cuda ? measurer.device().name : target.device_name)
            << " (" << target_kind_name(args.target) << "): " << plan.size() << " candidates measured and recorded in "
            << log.path();
  if (first_id) std::cout << " (records " << first_id << "-" << last_id << ")";
  std::cout << "\n  outcomes:";
  for (const auto& [code, n] : counts) std::cout << " " << code << " " << n;
  std::cout << "\n";
  if (best_index >= 0) {
    double gflops = w.dag.flops() / best_s / 1e9;
    std::cout << "  best: #" << best_index << " (" << plan[static_cast<size_t>(best_index)].label << ") median "
              << format_duration(best_s) << ", " << std::fixed << std::setprecision(1) << gflops << " GFLOP/s\n";
  } else {
    std::cout << "  best: none (no candidate ran correctly)\n";
  }
  std::cout << std::fixed << std::setprecision(2) << "  builds: " << measurer.build_wall_s() << " s wall with "
            << builders << " builder" << (builders == 1 ? "" : "s") << "; runs: " << measurer.run_wall_s()
            << " s wall; runner started " << measurer.runner_starts() << " time"
            << (measurer.runner_starts() == 1 ? "" : "s") << "\n";
  return 0;
}

}  // namespace tessel
