#include "measure/device_buffers.h"

#include <algorithm>

#include "schedule/te/error.h"

namespace tessel {

DeviceBuffers::DeviceBuffers(CudaRuntime& rt, const std::vector<BufferParam>& params) : rt_(rt), params_(params) {
  for (const BufferParam& p : params_) pointers_.push_back(rt_.alloc(std::max<int64_t>(num_elements(p), 1) * 4));
}

DeviceBuffers::~DeviceBuffers() {
  for (uint64_t p : pointers_) {
    try {
      rt_.free(p);
    } catch (const Error&) {  // a context poisoned by a fault: its memory goes with it
    }
  }
}

void DeviceBuffers::set_inputs(const HostTensors& inputs) {
  for (size_t i = 0; i < params_.size(); ++i) {
    if (params_[i].is_output) continue;
    auto it = inputs.find(params_[i].name);
    if (it == inputs.end() || static_cast<int64_t>(it->second.size()) != num_elements(params_[i]))
      throw InputError("no (or wrongly sized) values for input " + params_[i].name);
    set_input(i, it->second.data());
  }
}

void DeviceBuffers::set_input(size_t i, const float* values) {
  rt_.copy_to_device(pointers_.at(i), values, num_elements(params_[i]) * 4);
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

}  // namespace tessel
