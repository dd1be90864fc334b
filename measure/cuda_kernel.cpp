#include "measure/cuda_kernel.h"

#include "measure/host_buffers.h"
#include "schedule/lower/lower.h"
#include "schedule/te/error.h"

namespace tessel {

LowerOptions gpu_lower_options(const CudaDeviceInfo& device) {
  LowerOptions options;
  options.target = LowerTarget::Gpu;
  options.gpu_limits.max_threads_per_block = device.max_threads_per_block;
  for (int d = 0; d < 3; ++d) {
    options.gpu_limits.max_block[d] = device.max_block[d];
    options.gpu_limits.max_grid[d] = device.max_grid[d];
  }
  options.gpu_limits.max_shared_bytes = device.max_shared_per_block_optin;
  return options;
}

CudaBuild build_cuda_kernel(const ComputeDAG& dag, const Trace& trace, const std::string& arch, bool compile,
                            const CudaDeviceInfo& device) {
  CudaBuild b{lower(replay(dag, trace), "kernel", gpu_lower_options(device)), {}, {}};
  b.program = emit_cuda(b.func);
  if (compile) b.cubin = nvrtc_compile(b.program, arch);
  return b;
}

CheckOutcome check_cuda_kernel(CudaRuntime& rt, const CudaBuild& build, const HostTensors& inputs,
                               const ReferenceTensors& reference, const ComputeDAG& dag) {
  std::unique_ptr<CudaModule> module = rt.load(build.program, build.cubin);
  DeviceBuffers buffers(rt, build.func.params);
  buffers.set_inputs(inputs);
  buffers.poison_outputs();
  module->run(buffers.args());
  rt.synchronize();
  return compare_outputs(build.func.params, [&](const std::string& name) { return buffers.read(name); }, reference,
                         dag);
}

}  // namespace tessel
