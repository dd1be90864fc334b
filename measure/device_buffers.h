// Device memory for one kernel's parameters, freed on destruction: inputs copied in, outputs poisoned
// with NaN before a checked run, results read back.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/cuda/cuda_backend.h"
#include "schedule/interpreter/reference_interpreter.h"

namespace tessel {

class DeviceBuffers {
 public:
  DeviceBuffers(CudaRuntime& rt, const std::vector<BufferParam>& params);
  ~DeviceBuffers();
  DeviceBuffers(const DeviceBuffers&) = delete;
  DeviceBuffers& operator=(const DeviceBuffers&) = delete;

  // Copies each input's values in (throws InputError when one is missing or has the wrong size).
  void set_inputs(const HostTensors& inputs);
  // Copies num_elements(params[i]) floats from `values` into parameter i.
  void set_input(size_t i, const float* values);
  void poison_outputs();
  std::vector<float> read(const std::string& name) const;
  const std::vector<uint64_t>& args() const { return pointers_; }

 private:
  CudaRuntime& rt_;
  std::vector<BufferParam> params_;
  std::vector<uint64_t> pointers_;
};

}  // namespace tessel
