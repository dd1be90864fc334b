// Building a schedule for the GPU (replay -> lower for the GPU -> CUDA C -> NVRTC cubin) and
// checking or timing it on the device through CudaRuntime.
#pragma once

#include <string>
#include <vector>

#include "codegen/cuda/cuda_backend.h"
#include "measure/device_buffers.h"
#include "measure/cpu_kernel.h"
#include "schedule/lower/lower.h"

namespace tessel {

struct CudaBuild {
  LoweredFunc func;
  CudaProgram program;
  std::vector<char> cubin;  // empty until compiled
};

// Lowering for the GPU within `device`'s limits (threads, grid, block, opt-in shared memory).
LowerOptions gpu_lower_options(const CudaDeviceInfo& device);

// Lowers and prints; with `compile`, also runs NVRTC for `arch`. Throws ScheduleError / CompileError.
CudaBuild build_cuda_kernel(const ComputeDAG& dag, const Trace& trace, const std::string& arch, bool compile = true,
                            const CudaDeviceInfo& device = default_cuda_device_info());

// Runs the build once on `inputs` (outputs poisoned with NaN) and compares with `reference`.
CheckOutcome check_cuda_kernel(CudaRuntime& rt, const CudaBuild& build, const HostTensors& inputs,
                               const ReferenceTensors& reference, const ComputeDAG& dag);

}  // namespace tessel
