#include "frontend/ops/op_families.h"

namespace tessel::onnx_ops {

void add_elementwise_ops(std::vector<OpSpec>& table) { (void)table; }

}  // namespace tessel::onnx_ops
