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
void add_channel_block_ops(std::vector<OpSpec>& table);  // channel_blocks.cpp: ConvNCHWc, ToNCHWc, FromNCHWc

// Numpy-style broadcasting of `shapes` (InputError naming the node when they do not broadcast).
std::vector<int64_t> broadcast_shape(const OpContext& ctx, const std::vector<std::vector<int64_t>>& shapes);
// The element of `t` that output index `out` (of a broadcast result of rank out.size()) reads.
Expr read_broadcast(const LazyTensor& t, const std::vector<Expr>& out);
// A negative axis counts from the end; InputError naming the node outside [-rank, rank).
int64_t normalize_axis(const OpContext& ctx, int64_t axis, int64_t rank);

// The node's output k as shape inference gave it, once the definition's own `dtype` and `shape`
// agree with it (InputError naming the node otherwise: the op's semantics and the model's recorded
// shapes disagree, and computing either would be wrong).
const TensorInfo& checked_output(const OpContext& ctx, DType dtype, const std::vector<int64_t>& shape, size_t k = 0);
// Input k, which must be present and hold `dtype` (InputError naming the node otherwise).
const LazyTensor& input_of_type(const OpContext& ctx, const std::vector<LazyTensor>& inputs, size_t k, DType dtype);
// Whether the node has an output k that a later node or the graph's outputs read.
bool output_used(const OpContext& ctx, size_t k);

}  // namespace tessel::onnx_ops
