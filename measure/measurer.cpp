#include "measure/measurer.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "measure/artifact.h"
#include "measure/timer.h"
#include "measure/work_dir.h"
#include "measure/workload_data.h"
#include "schedule/te/error.h"

namespace tessel {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

}  // namespace

RunSettings default_run_settings(TargetKind target) {
  RunSettings s;
  if (target == TargetKind::Cuda) {
    s.min_time_s = 0.05;
    s.flush = true;
  }
  return s;
}

std::optional<bool> settings_flush(const std::string& settings_json) {
  nlohmann::json j = nlohmann::json::parse(settings_json, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  for (const char* key : {"flush", "flush_l2"})
    if (auto it = j.find(key); it != j.end() && it->is_boolean()) return it->get<bool>();
  return std::nullopt;
}

Measurer::Measurer(const ComputeDAG& dag, MeasureOptions options) : dag_(dag), options_(std::move(options)) {
  if (options_.build_timeout_s <= 0 || options_.run_timeout_s <= 0)
    throw InputError("timeouts must be positive");
  if (options_.runner_path.empty()) options_.runner_path = default_runner_path();
  options_.run.budget_s = std::min(options_.run.budget_s, options_.run_timeout_s * 0.5);

  work_dir_ = std::make_unique<WorkDir>();
  const std::string& dir = work_dir_->path();
  try {
    HostTensors inputs = make_random_inputs(dag_, options_.input_seed);
    write_workload_data(dir + "/workload.data", dag_, inputs, evaluate_reference(dag_, inputs));

    RunnerOptions r;
    r.executable = options_.runner_path;
    r.target = options_.target;
    r.workload_path = dir + "/workload.data";
    r.threads = options_.threads;
    r.pin = options_.pin;
    r.timeout_s = options_.run_timeout_s;
    r.log_path = dir + "/runner.log";
    r.gpu = options_.gpu;
    runner_ = std::make_unique<RunnerClient>(r);
    nlohmann::json hello = nlohmann::json::parse(runner_->start());
    if (options_.target == TargetKind::Cuda) device_ = device_info_from_json(hello.at("device").dump());

    nlohmann::json settings = nlohmann::json::parse(run_settings_to_json(options_.run));
    settings["target"] = target_kind_name(options_.target);
    // Without an L2 flush, a CUDA sample is one graph replay of a batch of runs (see CudaRuntime::time).
    settings["timer"] = options_.target != TargetKind::Cuda ? "steady_clock"
                        : options_.run.flush                 ? "cuda events"
                                                             : "cuda events, batches replayed as cuda graphs where the driver has them";
    settings["input_seed"] = options_.input_seed;
    settings["run_timeout_s"] = options_.run_timeout_s;
    settings["build_timeout_s"] = options_.build_timeout_s;
    if (options_.target == TargetKind::Llvm) {
      settings["threads"] = hello.value("threads", 0);
      settings["pinned"] = hello.value("pinned", false);
    } else {
      settings["device"] = device_.name;
      if (options_.gpu >= 0) settings["gpu"] = options_.gpu;  // which of the host's GPUs it ran on
    }
    settings["tolerance"] = nlohmann::json::object();
    for (DType d : {DType::Float32, DType::Float16, DType::BFloat16}) {
      const Tolerance tol = tolerance_for(d);
      settings["tolerance"][to_string(d)] = {{"rtol", tol.rtol}, {"atol", tol.atol}};
    }
    settings_json_ = settings.dump();
  } catch (...) {
    runner_.reset();
    work_dir_.reset();
    throw;
  }
}

void Measurer::set_run_timeout(double seconds) {
  if (!(seconds > 0)) throw InputError("run timeout must be positive, not " + std::to_string(seconds) + " s");
  options_.run_timeout_s = seconds;
  runner_->set_timeout(seconds);
  nlohmann::json settings = nlohmann::json::parse(settings_json_);
  settings["run_timeout_s"] = seconds;
  settings_json_ = settings.dump();
}

Measurer::~Measurer() {
  runner_.reset();  // before the folder it reads goes
  work_dir_.reset();
}

std::vector<MeasureResult> Measurer::measure(const std::vector<Candidate>& candidates,
                                             const std::function<void(size_t, const MeasureResult&)>& on_result) {
  std::vector<MeasureResult> results(candidates.size());
  // A schedule that comes more than once in a batch (the tuner's yardstick does) is built once and
  // run each time it comes; build[i] is candidate i's build task.
  std::vector<BuildTask> tasks;
  std::vector<size_t> build(candidates.size());
  std::vector<size_t> runs_left;
  std::map<std::pair<std::string, Fault>, size_t> seen;
  for (size_t i = 0; i < candidates.size(); ++i) {
    auto [it, fresh] = seen.try_emplace({trace_to_json(candidates[i].trace), candidates[i].fault}, tasks.size());
    if (fresh) {
      tasks.push_back({&candidates[i].trace, candidates[i].fault, next_index_++});
      runs_left.push_back(0);
    }
    build[i] = it->second;
    ++runs_left[it->second];
  }

  BuilderOptions b;
  b.target = options_.target;
  b.device = options_.target == TargetKind::Cuda ? device_ : CudaDeviceInfo{};
  b.jobs = options_.builders;
  b.timeout_s = options_.build_timeout_s;
  b.work_dir = work_dir_->path();
  auto t0 = Clock::now();
  size_t built = 0;
  std::vector<BuildResult> builds = build_candidates(dag_, tasks, b, [&](size_t task, const BuildResult& r) {
    if (on_build_) on_build_(++built, tasks.size());
    if (r.error == ErrorCode::Ok) return;
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (build[i] != task) continue;
      results[i].error = r.error;
      results[i].message = r.message;
      results[i].build_s = r.build_s;
      if (on_result) on_result(i, results[i]);
    }
  });
  build_wall_s_ += since(t0);

  t0 = Clock::now();
  for (size_t i = 0; i < candidates.size(); ++i) {
    const BuildResult& artifact = builds[build[i]];
    if (artifact.error != ErrorCode::Ok) continue;
    RunOutcome run;
    try {
      run = runner_->run(artifact.artifact_path, options_.run);
    } catch (const Error& e) {  // the runner could not be restarted: this candidate cannot run
      run.error = ErrorCode::RuntimeError;
      run.message = e.what();
    }
    MeasureResult& r = results[i];
    r.error = run.error;
    r.message = run.message.size() > 2000 ? run.message.substr(0, 2000) + "... (truncated)" : run.message;
    r.samples_s = run.samples_s;
    r.median_s = median(run.samples_s);
    r.build_s = artifact.build_s;
    r.run_s = run.run_s;
    if (r.error == ErrorCode::Ok && r.samples_s.empty()) {
      r.error = ErrorCode::Unknown;
      r.message = "the runner returned no samples";
    }
    if (candidates[i].fault != Fault::None)
      r.message = std::string("injected fault '") + to_string(candidates[i].fault) + "'" +
                  (r.message.empty() ? "" : ": " + r.message);
    if (on_result) on_result(i, r);
    // Once its last run is over the artifact is not needed again; keep the work directory small
    // over long sessions.
    if (--runs_left[build[i]] > 0) continue;
    std::error_code ec;
    std::filesystem::remove(artifact.binary_path, ec);
    std::filesystem::remove(artifact.artifact_path, ec);
  }
  run_wall_s_ += since(t0);
  return results;
}

}  // namespace tessel
