// Test support: runs a model's partition on this CPU in this process — every subgraph compiled with
// the default CPU schedule through LLVM and run in the partition's order, values kept by name — so
// that the front end can be checked end to end against torch's and ONNX's reference outputs.
#pragma once

#include <map>
#include <string>

#include "frontend/model.h"

namespace tessel_test {

// The model outputs from `inputs` (by graph input name). Throws what compilation throws.
std::map<std::string, tessel::TensorData> run_model_cpu(const tessel::Model& model,
                                                        const std::map<std::string, tessel::TensorData>& inputs);

// max |got - want| <= rtol * max |want| + atol over the tensor (the bar the model tests use), with a
// description of the worst element when it fails ("" when it passes).
std::string compare_tensors(const tessel::TensorData& got, const tessel::TensorData& want, double rtol, double atol);

}  // namespace tessel_test
