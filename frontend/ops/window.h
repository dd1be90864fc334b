// Private to frontend/ops: what Conv and the pools share. The geometry of a window sliding over the
// spatial axes of an [N, C, spatial...] tensor (kernel, strides, dilations, pads given or from
// auto_pad, the output extents as ONNX shape inference computes them), the padded copy of the input
// a window reads, and the operands of a contraction kept as plain tensor reads.
#pragma once

#include <string>
#include <vector>

#include "frontend/ops/op_families.h"

namespace tessel::onnx_ops {

struct Window {
  std::vector<int64_t> input;  // spatial extents of the input
  std::vector<int64_t> kernel, strides, dilations;
  std::vector<int64_t> pads_begin, pads_end;
  std::vector<int64_t> output;  // spatial extents of the output

  size_t dims() const { return input.size(); }
  // Input positions one window covers along d, holes of the dilation included.
  int64_t span(size_t d) const { return (kernel[d] - 1) * dilations[d] + 1; }
};

// Which window attributes the op has (an attribute an op does not have is refused when present).
struct WindowAttributes {
  std::vector<int64_t> kernel;  // Conv: the weights' spatial extents; empty: kernel_shape is required
  bool dilations = false;
  bool ceil_mode = false;
};

// The window of the node's attributes over spatial extents `input`. InputError naming the node for
// an attribute of the wrong length or range, pads together with auto_pad, a kernel larger than the
// padded input, or (ceil_mode) a last window that lies wholly past the padded input.
Window read_window(const OpContext& ctx, const std::vector<int64_t>& input, const WindowAttributes& attributes);

// The padded-input position window `o` reads at kernel offset `r` along d: o * stride + r * dilation.
Expr window_index(const Window& w, size_t d, const Expr& o, const Expr& r);

// x [N, C, spatial...] (or in channel blocks, [N, C/b, spatial..., b], whose last axis is carried
// through) as a stage where every position a window reads exists: x's value inside,
// `fill` in the padding (and past it, where ceil_mode's last window reaches). x itself when no
// window reads outside x. Its body is one select, the shape the default schedule and the sketches
// recognise as padding (computed once up front rather than tested in the inner loop).
LazyTensor pad_for_window(const OpContext& ctx, const LazyTensor& x, const Window& w, double fill);

// `t` when reading it is one tensor read, else `t` materialized as a stage. A contraction's body
// must be a product of two reads for the schedules to recognise it (search/schedule_patterns.h); an
// elementwise prologue fused into a matmul's operand would otherwise hide it.
LazyTensor as_read(const OpContext& ctx, const LazyTensor& t, const std::string& hint);

// a * k, leaving out a multiplication by one so the DAG text stays readable.
Expr scaled(const Expr& a, int64_t k);

void add_pool_ops(std::vector<OpSpec>& table);  // pool.cpp: MaxPool, AveragePool, the global pools

}  // namespace tessel::onnx_ops
