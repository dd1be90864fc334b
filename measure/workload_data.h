// The data every candidate of a workload is checked with: the input values and the reference outputs
// (float64, from the reference interpreter), computed once per workload and written to one file that
// runner workers map read-only. A kernel that writes out of bounds into it faults instead of quietly
// corrupting the reference the next candidates are judged by.
//
// File layout: "TESSELWD1\n", a one-line JSON manifest naming each tensor (name, shape, role, dtype,
// byte offset, tolerance), padding to a page boundary, then each tensor's values at a page-aligned
// offset in native byte order (the file is written and read on the same host).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schedule/interpreter/reference_interpreter.h"

namespace tessel {

// How far an output may be from the reference (see compare_with_reference), by element type.
struct Tolerance {
  double rtol = 1e-4;
  double atol = 1e-5;
};
Tolerance tolerance_for(DType dtype);

// Writes inputs (float32) and the reference of every DAG output (float64). Throws Error on I/O failure.
void write_workload_data(const std::string& path, const ComputeDAG& dag, const HostTensors& inputs,
                         const ReferenceTensors& reference);

// A workload data file mapped read-only.
class WorkloadData {
 public:
  struct Tensor {
    std::string name;
    std::vector<int64_t> shape;
    bool is_output = false;
    int64_t elements = 0;
    const float* input = nullptr;        // inputs
    const double* reference = nullptr;   // outputs
    Tolerance tolerance;
  };

  // Throws Error naming the file when it is missing, truncated or not a workload data file.
  static WorkloadData map(const std::string& path);
  WorkloadData(WorkloadData&& other) noexcept;
  WorkloadData& operator=(WorkloadData&& other) noexcept;
  WorkloadData(const WorkloadData&) = delete;
  WorkloadData& operator=(const WorkloadData&) = delete;
  ~WorkloadData();

  // nullptr when the file holds no tensor of that name.
  const Tensor* find(const std::string& name) const;
  const std::vector<Tensor>& tensors() const { return tensors_; }

 private:
  WorkloadData() = default;
  void* base_ = nullptr;
  size_t size_ = 0;
  std::vector<Tensor> tensors_;
};

}  // namespace tessel
