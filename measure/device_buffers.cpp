#include "measure/device_buffers.h"

#include <algorithm>

#include "measure/typed_values.h"
#include "schedule/te/error.h"

namespace tessel {

DeviceBuffers::DeviceBuffers(CudaRuntime& rt, const std::vector<BufferParam>& params) : rt_(rt), params_(params) {
  for (const BufferParam& p : params_)
    pointers_.push_back(rt_.alloc(std::max<int64_t>(num_elements(p), 1) * element_bytes(p.dtype)));
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
  const BufferParam& p = params_.at(i);
  const int64_t n = num_elements(p);
  if (p.dtype == DType::Float32) return rt_.copy_to_device(pointers_[i], values, n * 4);
  std::vector<uint8_t> typed(static_cast<size_t>(n * element_bytes(p.dtype)));
  store_values(p.dtype, values, n, typed.data());
  rt_.copy_to_device(pointers_[i], typed.data(), static_cast<int64_t>(typed.size()));
}

void DeviceBuffers::poison_outputs() {
  for (size_t i = 0; i < params_.size(); ++i)
    if (params_[i].is_output) {
      if (params_[i].dtype == DType::Float32) {
        rt_.fill_nan(pointers_[i], num_elements(params_[i]));
        continue;
      }
      std::vector<uint8_t> poison(static_cast<size_t>(num_elements(params_[i]) * element_bytes(params_[i].dtype)));
      poison_values(params_[i].dtype, num_elements(params_[i]), poison.data());
      rt_.copy_to_device(pointers_[i], poison.data(), static_cast<int64_t>(poison.size()));
    }
}

std::vector<float> DeviceBuffers::read(const std::string& name) const {
  for (size_t i = 0; i < params_.size(); ++i)
    if (params_[i].name == name) {
      const int64_t n = num_elements(params_[i]);
      std::vector<uint8_t> raw(static_cast<size_t>(n * element_bytes(params_[i].dtype)));
      rt_.copy_to_host(raw.data(), pointers_[i], static_cast<int64_t>(raw.size()));
      return load_values(params_[i].dtype, raw.data(), n);
    }
  throw InputError("no buffer named " + name);
}

}  // namespace tessel
