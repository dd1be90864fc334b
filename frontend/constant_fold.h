// Evaluating one node over constant inputs, directly on TensorData: the shape computations that
// exporters emit (Shape → Gather → Unsqueeze → Concat → Reshape, ConstantOfShape, Range) and the
// small arithmetic around them. Each fold computes its outputs' shapes and dtypes from its inputs
// and attributes alone, so the ONNX importer can use it where shape inference left a shape unknown,
// and simplify() where shapes are all known.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "frontend/graph.h"

namespace tessel {

// Outputs past this many elements are not folded: the node stays, and the weights stay small.
inline constexpr int64_t kMaxFoldElements = int64_t{1} << 20;

// One input of the node: its type and, for a constant, its data. Shape and Size need only the type;
// an input left out (an optional one) has neither (`info` null).
struct FoldInput {
  const TensorInfo* info = nullptr;
  const TensorData* data = nullptr;
};

// Whether fold_node knows the op type.
bool is_foldable_op(const std::string& op_type);

// The node's outputs (one per node output), or nullopt when it is not folded: an op fold_node does
// not know, an input it needs that is not constant, a cast to a type tessel does not hold, or an
// output past kMaxFoldElements. InputError naming the node for constant inputs that break the op's
// rules (an index out of range, a reshape to another element count, shapes that do not broadcast).
std::optional<std::vector<TensorData>> fold_node(const Node& node, const std::vector<FoldInput>& inputs, int64_t opset);

}  // namespace tessel
