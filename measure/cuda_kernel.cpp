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

DeviceBuffers::DeviceBuffers(CudaRuntime& rt, const std::vector<BufferParam>& params) : rt_(rt), params_(params) {
  for (const BufferParam& p : params_) pointers_.push_back(rt_.alloc(std::max<int64_t>(num_elements(p), 1) * 4));
}

DeviceBuffers::~DeviceBuffers() {
  for (uint64_t p : pointers_) rt_.free(p);
}

void DeviceBuffers::set_inputs(const HostTensors& inputs) {
  for (size_t i = 0; i < params_.size(); ++i) {
    if (params_[i].is_output) continue;
    auto it = inputs.find(params_[i].name);
    if (it == inputs.end() || static_cast<int64_t>(it->second.size()) != num_elements(params_[i]))
      throw InputError("no (or wrongly sized) values for input " + params_[i].name);
    rt_.copy_to_device(pointers_[i], it->second.data(), num_elements(params_[i]) * 4);
  }
}

void DeviceBuffers::poison_outputs() {
  for (size_t i = 0; i < params_.size(); ++i)
    if (params_[i].is_output) rt_.fill_nan(pointers_[i], num_elements(params_[i]));
}

std::vector<float> DeviceBuffers::read(const std::string& name) const {
  for (size_t i = 0; i < params_.size(); ++i)
    if (params_[i].name == name) {
      std::vector<float> out(num_elements(params_[i]));
      rt_.copy_to_host(out.data(), pointers_[i], num_elements(params_[i]) * 4);
      return out;
    }
  throw InputError("no buffer named " + name);
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
