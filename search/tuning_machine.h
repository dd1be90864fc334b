// Where a tuning session measures: a measurer for each task and the target its records are filed
// under. local_machine() is this machine (runner processes on its CPU or GPU); tests of the tuning
// loop supply a machine whose timings they can predict.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "codegen/cuda/cuda_backend.h"
#include "database/tuning_log.h"
#include "measure/measurer.h"
#include "schedule/target_kind.h"
#include "search/target_spec.h"

namespace tessel {

class TuningMachine {
 public:
  virtual ~TuningMachine() = default;
  // A measurer of `dag`'s candidates (reference computed, runner started). Throws Error when the
  // target cannot be measured here (no GPU, say).
  virtual std::unique_ptr<CandidateMeasurer> measurer(const ComputeDAG& dag, const MeasureOptions& options) = 0;
  // The target the records are filed under; known once a measurer has been made (a GPU's name and
  // driver come from its runner).
  virtual TargetInfo target() const = 0;
  // The GPU measured on, once a measurer has been made; none for the CPU or a machine that does
  // not say (its GPU schedules then keep the options' description).
  virtual std::optional<CudaDeviceInfo> device() const { return std::nullopt; }
};

// `gpus`: with cuda, the GPUs to measure on, by index among those visible (empty: the first one).
// With several, each task's batches are spread over them, one runner per GPU, the builds sharing
// the cores; the GPUs must be of one model (they are one target).
std::unique_ptr<TuningMachine> local_machine(TargetKind kind, const std::vector<int>& gpus = {});

// This machine's CPU as a tuning-log target (kind "llvm").
TargetInfo host_llvm_target();
// A GPU as a tuning-log target (kind "cuda").
TargetInfo cuda_target(const CudaDeviceInfo& device);
// What GPU schedules of `device` may use: its block limits, its multiprocessors, and Hopper's
// warpgroup tensor cores only on sm_90 (other GPUs cannot compile them). The rest from `base`.
GpuTargetSpec gpu_target_spec(const CudaDeviceInfo& device, GpuTargetSpec base = {});

}  // namespace tessel
