// Host memory for one kernel call: a 64-byte aligned buffer per parameter of a LoweredFunc (of its
// element type), inputs filled from HostTensors, outputs poisoned before each checked run so a
// kernel that skips an element can never pass (measure/typed_values.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "schedule/interpreter/reference_interpreter.h"
#include "schedule/ir/stmt.h"

namespace tessel {

class HostBuffers {
 public:
  explicit HostBuffers(const std::vector<BufferParam>& params);

  // Copies each input's values in (throws InputError when one is missing or has the wrong size).
  void set_inputs(const HostTensors& inputs);
  void poison_outputs();
  std::vector<float> read(const std::string& name) const;
  void** args() { return pointers_.data(); }
  const std::vector<BufferParam>& params() const { return params_; }
  int64_t total_bytes() const;

 private:
  struct Free {
    void operator()(void* p) const;
  };
  std::vector<BufferParam> params_;
  std::vector<std::unique_ptr<void, Free>> data_;  // each of its parameter's element type
  std::vector<int64_t> sizes_;
  std::vector<void*> pointers_;
};

}  // namespace tessel
