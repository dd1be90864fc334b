// The harness's side of a runner worker (tessel-runner, see runner_main.cpp): starts it, sends one
// candidate at a time, enforces the run timeout, and restarts the worker after it crashed, hung or
// poisoned its CUDA context. Every outcome comes back as a RunOutcome with its error code.
#pragma once

#include <string>
#include <vector>

#include "measure/child_process.h"
#include "measure/error_code.h"
#include "measure/run_settings.h"
#include "schedule/target_kind.h"

namespace tessel {

struct RunnerOptions {
  std::string executable;     // tessel-runner
  TargetKind target = TargetKind::Llvm;
  std::string workload_path;  // the workload data file (workload_data.h)
  int threads = 0;            // llvm: worker threads (0: every core)
  bool pin = true;            // llvm: pin threads to cores
  double timeout_s = 10;      // a candidate's checked run must finish within this
  std::string log_path;       // the runner's stderr
  int gpu = -1;               // cuda: the GPU by index among those visible (-1: the first)
};

struct RunOutcome {
  ErrorCode error = ErrorCode::Ok;
  std::string message;
  std::vector<double> samples_s;
  double run_s = 0;  // wall time of the whole request
};

class RunnerClient {
 public:
  explicit RunnerClient(RunnerOptions options);
  ~RunnerClient();
  RunnerClient(const RunnerClient&) = delete;
  RunnerClient& operator=(const RunnerClient&) = delete;

  // Starts the worker if it is not running and returns its hello line (JSON). Throws Error with the
  // worker's reason when it cannot serve (missing executable, bad workload file), InputError when
  // the target's device is not on this machine (no GPU).
  const std::string& start();
  RunOutcome run(const std::string& artifact_path, const RunSettings& settings);
  // Times the worker was (re)started.
  int starts() const { return starts_; }
  // The limit on a candidate's checked run from now on (seconds).
  void set_timeout(double seconds) { options_.timeout_s = seconds; }
  void stop();

 private:
  RunOutcome lost_worker(ErrorCode code, const std::string& what);

  RunnerOptions options_;
  ChildProcess child_;
  std::string hello_;
  int starts_ = 0;
};

// tessel-runner beside the running executable, or $TESSEL_RUNNER when set.
std::string default_runner_path();

}  // namespace tessel
