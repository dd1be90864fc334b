// The measurement harness's batch API, made for an ask/tell search: hand it candidate schedules,
// get one result per candidate back, each with its error code.
//
//   Measurer m(dag, options);          // reference outputs computed once; runner worker started
//   auto results = m.measure(batch);   // builder pool (forked, every core) -> runner (one process)
//
// A candidate that fails to build, crashes, hangs, poisons the GPU or computes a wrong answer costs
// one result; the batch goes on. Builds of a batch finish before any of it is timed, so compilers
// never compete with a timed kernel for the cores.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codegen/cuda/cuda_backend.h"
#include "measure/builder.h"
#include "measure/run_settings.h"
#include "measure/runner_client.h"
#include "measure/work_dir.h"

namespace tessel {

struct MeasureOptions {
  TargetKind target = TargetKind::Llvm;
  int builders = 0;             // parallel builds; 0: every core
  double build_timeout_s = 15;
  double run_timeout_s = 10;
  RunSettings run;              // see default_run_settings
  int threads = 0;              // llvm: kernel threads (0: every core)
  bool pin = true;              // llvm: pin the kernel threads to cores
  uint64_t input_seed = 1;      // make_random_inputs seed of the checked inputs
  std::string runner_path;      // default: default_runner_path()
  int gpu = -1;                 // cuda: the GPU to run on, by index (-1: the first one visible)
};

// The default timing for a target: 100 ms of samples on the CPU without cache flush, 50 ms on the
// GPU with an L2 flush before every sample.
RunSettings default_run_settings(TargetKind target);

// Whether a record's measurement settings (Measurer::settings_json, or what `tessel run --record`
// writes) flushed the caches before every sample: their "flush" field, or "flush_l2" as `tessel run`
// wrote it before; nullopt when they say neither. Timings taken with and without a flush do not
// compare: without one, a kernel whose data fits in L2 reads it from there.
std::optional<bool> settings_flush(const std::string& settings_json);

struct Candidate {
  Trace trace;
  Fault fault = Fault::None;  // for tests of the harness (tessel measure --inject)
};

struct MeasureResult {
  ErrorCode error = ErrorCode::Ok;
  std::string message;             // why it failed: compiler log, signal, CUDA error name, mismatch
  std::vector<double> samples_s;   // every timed run (Ok only)
  double median_s = 0;
  double build_s = 0, run_s = 0;
  // The settings this candidate ran under, where they differ between the candidates of one batch
  // (a batch spread over several GPUs); empty: the measurer's settings_json().
  std::string settings_json;
};

// What a search measures through: the Measurer below, or a stand-in where a test of the tuning loop
// needs timings it can predict.
class CandidateMeasurer {
 public:
  virtual ~CandidateMeasurer() = default;
  // One result per candidate, in order. `on_result(i, result)` is called as candidate i's result is
  // known.
  virtual std::vector<MeasureResult> measure(const std::vector<Candidate>& candidates,
                                             const std::function<void(size_t, const MeasureResult&)>& on_result = {}) = 0;
  // Called in the calling thread as each build of a batch finishes: (builds done, builds in batch).
  virtual void on_build_progress(std::function<void(size_t, size_t)> callback) = 0;
  // Changes the run timeout for the next candidates; recorded in settings_json().
  virtual void set_run_timeout(double seconds) = 0;
  // Every setting that affects the numbers, as JSON (stored with each record).
  virtual const std::string& settings_json() const = 0;
};

class Measurer : public CandidateMeasurer {
 public:
  // Computes the reference, writes it for the runners and starts the runner. Throws Error when the
  // runner cannot start, InputError for bad options and for a target whose device this machine does
  // not have ("no CUDA device: ...").
  Measurer(const ComputeDAG& dag, MeasureOptions options);
  ~Measurer() override;
  Measurer(const Measurer&) = delete;
  Measurer& operator=(const Measurer&) = delete;

  // `on_result(i, result)` is called as candidate i's result is known (build failures first).
  std::vector<MeasureResult> measure(const std::vector<Candidate>& candidates,
                                     const std::function<void(size_t, const MeasureResult&)>& on_result = {}) override;

  void on_build_progress(std::function<void(size_t, size_t)> callback) override { on_build_ = std::move(callback); }

  // A search cuts off candidates far slower than what it already has.
  void set_run_timeout(double seconds) override;

  // The GPU the runner found (cuda only).
  const CudaDeviceInfo& device() const { return device_; }
  const std::string& settings_json() const override { return settings_json_; }
  int runner_starts() const { return runner_ ? runner_->starts() : 0; }
  double build_wall_s() const { return build_wall_s_; }
  double run_wall_s() const { return run_wall_s_; }

 private:
  ComputeDAG dag_;
  MeasureOptions options_;
  std::unique_ptr<WorkDir> work_dir_;
  std::unique_ptr<RunnerClient> runner_;
  CudaDeviceInfo device_;
  std::string settings_json_;
  int64_t next_index_ = 0;
  std::function<void(size_t, size_t)> on_build_;
  double build_wall_s_ = 0, run_wall_s_ = 0;
};

}  // namespace tessel
