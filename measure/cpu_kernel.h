// Building a schedule for the CPU (replay -> lower -> LLVM JIT) and checking its output against the
// reference interpreter.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "codegen/llvm/llvm_backend.h"
#include "schedule/interpreter/reference_interpreter.h"
#include "schedule/state/trace.h"

namespace tessel {

struct CpuKernel {
  LoweredFunc func;
  std::unique_ptr<CompiledKernel> kernel;
};

// Throws ScheduleError (the trace does not apply) or CompileError.
CpuKernel build_cpu_kernel(const ComputeDAG& dag, const Trace& trace, const std::string& name = "kernel");

struct CheckOutcome {
  bool correct = false;
  std::string message;  // the first mismatch, or why it could not run
};

// Compares every output among `params`, read through `read`, with `reference`: the first mismatch
// decides the message.
CheckOutcome compare_outputs(const std::vector<BufferParam>& params,
                             const std::function<std::vector<float>(const std::string&)>& read,
                             const ReferenceTensors& reference, const ComputeDAG& dag);

// Runs `kernel` once on `inputs` (outputs poisoned with NaN first) and compares every output with
// `reference`.
CheckOutcome check_cpu_kernel(const CpuKernel& kernel, const HostTensors& inputs, const ReferenceTensors& reference,
                              const ComputeDAG& dag);

}  // namespace tessel
