// Building a schedule for the GPU (replay -> lower for the GPU -> CUDA C -> NVRTC cubin) and
// checking or timing it on the device through CudaRuntime.
#pragma once

#include <string>
#include <vector>

#include "codegen/cuda/cuda_backend.h"
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

// Device memory for one kernel's parameters, freed on destruction.
class DeviceBuffers {
 public:
  DeviceBuffers(CudaRuntime& rt, const std::vector<BufferParam>& params);
  ~DeviceBuffers();
  void set_inputs(const HostTensors& inputs);
  void poison_outputs();
  std::vector<float> read(const std::string& name) const;
  const std::vector<uint64_t>& args() const { return pointers_; }

 private:
  CudaRuntime& rt_;
  std::vector<BufferParam> params_;
  std::vector<uint64_t> pointers_;
};

// Runs the build once on `inputs` (outputs poisoned with NaN) and compares with `reference`.
CheckOutcome check_cuda_kernel(CudaRuntime& rt, const CudaBuild& build, const HostTensors& inputs,
                               const ReferenceTensors& reference, const ComputeDAG& dag);

}  // namespace tessel
