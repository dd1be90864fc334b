// The builder pool: compiles candidate schedules in parallel, each in its own forked process with a
// deadline, so a compiler crash or a build that never ends costs one candidate, never the session.
// Builds write artifacts (see artifact.h) into a work directory for the runners.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "codegen/cuda/cuda_backend.h"
#include "measure/error_code.h"
#include "measure/fault_injection.h"
#include "schedule/target_kind.h"
#include "schedule/state/trace.h"
#include "schedule/te/parallel.h"  // available_cores

namespace tessel {

struct BuildTask {
  const Trace* trace = nullptr;
  Fault fault = Fault::None;  // test-only fault to add to the kernel
  int64_t index = 0;          // the candidate's number, for file names and messages
};

struct BuilderOptions {
  TargetKind target = TargetKind::Llvm;
  CudaDeviceInfo device;        // cuda: the architecture and limits to build for
  int jobs = 0;                 // builders at once; 0: every core
  double timeout_s = 15;
  std::string work_dir;         // artifacts and build logs go here
};

struct BuildResult {
  ErrorCode error = ErrorCode::Ok;
  std::string message;
  double build_s = 0;
  std::string artifact_path;  // the manifest, when error is Ok
  std::string binary_path;    // the .so or .cubin it names
};

// Builds every task; results in task order. `on_done(i, result)` is called in the calling thread as
// each build finishes. The calling process never runs a compiler itself.
std::vector<BuildResult> build_candidates(const ComputeDAG& dag, const std::vector<BuildTask>& tasks,
                                          const BuilderOptions& options,
                                          const std::function<void(size_t, const BuildResult&)>& on_done = {});

// One build in the calling process (what each builder process runs).
BuildResult build_one(const ComputeDAG& dag, const BuildTask& task, const BuilderOptions& options);

}  // namespace tessel
