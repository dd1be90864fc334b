// Shared by the constant folds (constant_fold.cpp: shapes, casts, reshapes; constant_fold_ops.cpp:
// indexing and arithmetic): index arithmetic on row-major TensorData. Internal to the front end.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "frontend/constant_fold.h"

namespace tessel::fold {

using Shape = std::vector<int64_t>;
using Inputs = std::vector<FoldInput>;
using Outputs = std::optional<std::vector<TensorData>>;

// InputError "node 'N' (OP): message".
[[noreturn]] void fail(const Node& node, const std::string& message);
// Input k's data; null when it is absent or not constant.
const TensorData* constant(const Inputs& in, size_t k);
Outputs one(TensorData data);

// The element count, or -1 when an extent is negative or the extents (zeros counted as ones, since
// they still make loops) pass kMaxFoldElements.
int64_t small_count(const Shape& shape);
Shape strides_of(const Shape& shape);
// For each element of `out` in row-major order, base + sum of index[d] * step[d]: the source
// element a broadcast, a slice or an expand reads. `out` must have a small_count.
std::vector<int64_t> strided_index(const Shape& out, int64_t base, const Shape& step);
// The source index of each element of `out` that `in` broadcasts to (numpy rules, aligned right).
std::vector<int64_t> broadcast_index(const Shape& in, const Shape& out);
// The shape all of `shapes` broadcast to; InputError naming the node when they do not.
Shape broadcast_shapes(const std::vector<const Shape*>& shapes, const Node& node);
// The elements of `src` at `index`, as a tensor of `shape`; any dtype.
TensorData take(const TensorData& src, Shape shape, const std::vector<int64_t>& index);
TensorData reshaped(const TensorData& src, Shape shape);
int64_t normalized_axis(int64_t axis, int64_t rank, const Node& node);

// The folds of constant_fold_ops.cpp.
Outputs fold_concat(const Node& node, const Inputs& in, int64_t opset);
Outputs fold_gather(const Node& node, const Inputs& in, int64_t opset);
Outputs fold_slice(const Node& node, const Inputs& in, int64_t opset);
Outputs fold_range(const Node& node, const Inputs& in, int64_t opset);
Outputs fold_equal(const Node& node, const Inputs& in, int64_t opset);
Outputs fold_where(const Node& node, const Inputs& in, int64_t opset);
Outputs fold_arithmetic(const Node& node, const Inputs& in, int64_t opset);  // Add, Sub, Mul, Div, Mod
Outputs fold_extreme(const Node& node, const Inputs& in, int64_t opset);     // Max, Min
Outputs fold_neg(const Node& node, const Inputs& in, int64_t opset);

}  // namespace tessel::fold
