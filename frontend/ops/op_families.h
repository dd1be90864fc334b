// Private to frontend/: each family of ONNX ops adds its definitions to the table (explicit
// registration, no static constructors), and the helpers the families share.
#pragma once

#include <vector>

#include "frontend/op_library.h"

namespace tessel::onnx_ops {

void add_elementwise_ops(std::vector<OpSpec>& table);  // elementwise.cpp: unary, binary, Where, Cast ...
void add_tensor_ops(std::vector<OpSpec>& table);       // tensor.cpp: Reshape, Transpose, Slice, Concat, Gather ...
void add_nn_ops(std::vector<OpSpec>& table);           // nn.cpp: Conv, Gemm, MatMul, pooling
void add_reduce_ops(std::vector<OpSpec>& table);       // reduce.cpp: Reduce*, Softmax, LayerNormalization

// Numpy-style broadcasting of `shapes` (InputError naming the node when they do not broadcast).
std::vector<int64_t> broadcast_shape(const OpContext& ctx, const std::vector<std::vector<int64_t>>& shapes);
// The element of `t` that output index `out` (of a broadcast result of rank out.size()) reads.
Expr read_broadcast(const LazyTensor& t, const std::vector<Expr>& out);
// A negative axis counts from the end; InputError naming the node outside [-rank, rank).
int64_t normalize_axis(const OpContext& ctx, int64_t axis, int64_t rank);

}  // namespace tessel::onnx_ops
