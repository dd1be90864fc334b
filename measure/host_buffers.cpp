#include "measure/host_buffers.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "measure/typed_values.h"
#include "schedule/te/error.h"

namespace tessel {

void HostBuffers::Free::operator()(void* p) const { std::free(p); }

HostBuffers::HostBuffers(const std::vector<BufferParam>& params) : params_(params) {
  for (const BufferParam& p : params_) {
    int64_t n = num_elements(p);
    // Round up to whole cache lines, and a vector's worth of slack past the end.
    size_t bytes = ((static_cast<size_t>(n * element_bytes(p.dtype)) + 64 + 63) / 64) * 64;
    void* mem = std::aligned_alloc(64, bytes);
    if (!mem) throw Error("out of memory allocating " + std::to_string(bytes) + " bytes for " + p.name);
    std::memset(mem, 0, bytes);
    data_.emplace_back(mem);
    sizes_.push_back(n);
    pointers_.push_back(mem);
  }
}

void HostBuffers::set_inputs(const HostTensors& inputs) {
  for (size_t i = 0; i < params_.size(); ++i) {
    if (params_[i].is_output) continue;
    auto it = inputs.find(params_[i].name);
    if (it == inputs.end()) throw InputError("no values for input " + params_[i].name);
    if (static_cast<int64_t>(it->second.size()) != sizes_[i])
      throw InputError("input " + params_[i].name + " has " + std::to_string(it->second.size()) +
                       " values; expected " + std::to_string(sizes_[i]));
    store_values(params_[i].dtype, it->second.data(), sizes_[i], data_[i].get());
  }
}

void HostBuffers::poison_outputs() {
  for (size_t i = 0; i < params_.size(); ++i)
    if (params_[i].is_output) poison_values(params_[i].dtype, sizes_[i], data_[i].get());
}

std::vector<float> HostBuffers::read(const std::string& name) const {
  for (size_t i = 0; i < params_.size(); ++i)
    if (params_[i].name == name) return load_values(params_[i].dtype, data_[i].get(), sizes_[i]);
  throw InputError("no buffer named " + name);
}

int64_t HostBuffers::total_bytes() const {
  int64_t b = 0;
  for (size_t i = 0; i < params_.size(); ++i) b += sizes_[i] * element_bytes(params_[i].dtype);
  return b;
}

}  // namespace tessel
