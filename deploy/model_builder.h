// tessel build: a model and its tuning log in, a deployable model file out (runtime/model_artifact.h),
// with no search. For every task the best correct record of its workload on this target in the log
// (the ranking rule the tuner uses, database/schedule_ranking.h), or its default schedule when the
// log has none; the kernels compiled in parallel, once per task; weights, the execution plan and its
// static memory plan (deploy/memory_plan.h) and every kernel's provenance written beside them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "codegen/cuda/cuda_backend.h"
#include "frontend/model.h"
#include "schedule/target_kind.h"

namespace tessel {

struct BuildOptions {
  TargetKind target = TargetKind::Llvm;
  std::optional<std::string> db;  // the tuning log (none: every kernel on its default schedule)
  CudaDeviceInfo device;          // cuda: what to compile for (the GPU found, or an H100's limits)
  std::string device_name;        // the CPU or GPU the build is for, recorded in the file
  // cuda: every kernel's scratch within what the values held at its step leave of 1.2x the values'
  // liveness bound, so that a context's memory stays within weights + 1.2x the bound; a task whose
  // best schedule needs more takes its best that fits (slower, noted in the report). Off: the fastest
  // schedules, whatever their scratch. No effect on llvm builds (their kernels take no scratch).
  bool memory_target = true;
  // Workload keys built on their default schedule whatever the log holds (a whole-model check, such
  // as the demo's, found the log's best slower inside the model than the default).
  std::vector<std::string> default_for;
};

struct BuiltTask {
  std::string key, name;
  int weight = 0;
  int64_t record_id = -1;         // -1: its default schedule
  bool default_trace = true;      // the schedule built is the default's (a record of it, or none)
  double estimate_s = 0;          // its roofline share of the model's latency comes from this
  std::optional<double> tuned_s;  // the log's latency estimate of the chosen schedule
};

struct BuildReport {
  std::vector<BuiltTask> tasks;
  int64_t kernels = 0;
  int64_t weight_bytes = 0, arena_bytes = 0, live_bound_bytes = 0;
  double seconds = 0;
  std::vector<std::string> notes;  // e.g. a log record whose schedule no longer applies
};

// Builds `model` into `out_path`. Throws Error (InputError for bad input) naming the task, the
// record or the file.
BuildReport build_model(const Model& model, const BuildOptions& options, const std::string& out_path);

}  // namespace tessel
