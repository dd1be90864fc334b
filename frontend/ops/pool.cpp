// The pools: MaxPool and AveragePool (N-d, strided, padded, ceil_mode; MaxPool dilated) and the
// global pools. Each is one reduction stage over the window, reading a padded copy of the input
// when a window reaches outside it (-inf for max, 0 for average, so the reduction needs no test);
// AveragePool's division by the window's element count stays in the epilogue.
//
// Pattern kind: all four are OutEwiseFusable, as TVM marks its pools (global ones included): the
// pooled value is a stage an elementwise epilogue may join, and nothing fuses into its input.
#include <cmath>
#include <limits>

#include "frontend/ops/window.h"

namespace tessel::onnx_ops {
namespace {

using Inputs = std::vector<LazyTensor>;
using Outputs = std::vector<LazyTensor>;

// The input: [N, C, spatial...], or with `lanes` (the pools tessel's CPU layout makes, see
// frontend/channel_blocks.h) [N, C/b, spatial..., b], whose last axis passes through unchanged.
const LazyTensor& pool_input(const OpContext& ctx, const Inputs& in, bool lanes) {
  const LazyTensor& x = input_of_type(ctx, in, 0, DType::Float32);
  if (x.rank() < (lanes ? 4 : 3))
    ctx.fail("input 0 must be [N, C, spatial...] (rank >= 3), not rank " + std::to_string(x.rank()));
  return x;
}

std::vector<int64_t> spatial_of(const LazyTensor& x, bool lanes) {
  return {x.shape().begin() + 2, x.shape().end() - (lanes ? 1 : 0)};
}

std::vector<int64_t> pooled_shape(const LazyTensor& x, const std::vector<int64_t>& spatial, bool lanes) {
  std::vector<int64_t> shape = {x.shape()[0], x.shape()[1]};
  shape.insert(shape.end(), spatial.begin(), spatial.end());
  if (lanes) shape.push_back(x.shape().back());
  return shape;
}

// pool[n, c, o...] = kind over r... of padded[n, c, o * stride + r * dilation] (and the lane).
LazyTensor window_reduce(const OpContext& ctx, const char* hint, const TensorInfo& info, const LazyTensor& src,
                         const Window& w, ReduceKind kind, bool lanes) {
  return ctx.builder.reduce(hint, info, w.kernel, kind, [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
    std::vector<Expr> at = {i[0], i[1]};
    for (size_t d = 0; d < w.dims(); ++d) at.push_back(window_index(w, d, i[2 + d], r[d]));
    if (lanes) at.push_back(i.back());
    return src.at(at);
  });
}

Outputs max_pool_op(const OpContext& ctx, const Inputs& in, bool lanes) {
  const LazyTensor& x = pool_input(ctx, in, lanes);
  if (output_used(ctx, 1)) ctx.fail("its Indices output is read; tessel computes the pooled values only");
  const Window w = read_window(ctx, spatial_of(x, lanes), {{}, true, true});
  const TensorInfo& info = checked_output(ctx, DType::Float32, pooled_shape(x, w.output, lanes));
  const LazyTensor src = pad_for_window(ctx, x, w, -std::numeric_limits<double>::infinity());
  return {window_reduce(ctx, "max_pool", info, src, w, ReduceKind::Max, lanes)};
}

// How many elements window o averages along d: the window clipped to the input, or with
// count_include_pad to the padded input — ceil_mode's last window may reach past even that, and
// those positions never count (PyTorch's and onnxruntime's rule).
int64_t window_count(const Window& w, size_t d, int64_t o, bool include_pad) {
  const int64_t start = o * w.strides[d] - w.pads_begin[d], end = start + w.kernel[d];
  if (include_pad) return std::min(end, w.input[d] + w.pads_end[d]) - start;
  return std::min(end, w.input[d]) - std::max<int64_t>(start, 0);
}

Expr window_count(const Window& w, size_t d, const Expr& o, bool include_pad) {
  const Expr start = scaled(o, w.strides[d]) - make_int(w.pads_begin[d]), end = start + make_int(w.kernel[d]);
  if (include_pad) return min(end, make_int(w.input[d] + w.pads_end[d])) - start;
  return min(end, make_int(w.input[d])) - max(start, make_int(0));
}

// The divisor of output element i as a float expression: the product of the per-axis counts, with
// the axes whose count is the same for every window folded into one constant.
Expr average_divisor(const Window& w, bool include_pad, const std::vector<Expr>& i) {
  int64_t constant = 1;
  Expr varying;
  for (size_t d = 0; d < w.dims(); ++d) {
    bool uniform = true;
    for (int64_t o = 1; o < w.output[d]; ++o)
      uniform &= window_count(w, d, o, include_pad) == window_count(w, d, 0, include_pad);
    if (uniform) {
      constant *= window_count(w, d, 0, include_pad);
      continue;
    }
    Expr count = window_count(w, d, i[2 + d], include_pad);
    varying = varying ? varying * count : count;
  }
  if (!varying) return make_float(static_cast<double>(constant));
  return make_cast(kFloat32, constant == 1 ? varying : varying * make_int(constant));
}

Outputs average_pool_op(const OpContext& ctx, const Inputs& in, bool lanes) {
  const LazyTensor& x = pool_input(ctx, in, lanes);
  const bool include_pad = ctx.node.int_attr("count_include_pad").value_or(0) != 0;
  const Window w = read_window(ctx, spatial_of(x, lanes), {{}, false, true});
  const TensorInfo& info = checked_output(ctx, DType::Float32, pooled_shape(x, w.output, lanes));
  const LazyTensor src = pad_for_window(ctx, x, w, 0.0);
  const LazyTensor sum = window_reduce(ctx, "avg_pool", info, src, w, ReduceKind::Sum, lanes);
  return {LazyTensor(info, [sum, w, include_pad](const std::vector<Expr>& i) {
    return sum.at(i) / average_divisor(w, include_pad, i);
  })};
}

// The global pools reduce into an [N, C] stage ([N, C/b, b] with lanes; no unit axes for the
// schedules to tile); the output's unit spatial axes and the mean's division are the epilogue.
Outputs global_pool_op(const OpContext& ctx, const Inputs& in, bool is_max, bool lanes) {
  const LazyTensor& x = pool_input(ctx, in, lanes);
  const std::vector<int64_t> spatial = spatial_of(x, lanes);
  const TensorInfo& info =
      checked_output(ctx, DType::Float32, pooled_shape(x, std::vector<int64_t>(spatial.size(), 1), lanes));
  TensorInfo pooled{DType::Float32, {x.shape()[0], x.shape()[1]}};
  if (lanes) pooled.shape.push_back(x.shape().back());
  int64_t count = 1;
  for (int64_t e : spatial) count *= e;
  LazyTensor pool = ctx.builder.reduce(is_max ? "global_max_pool" : "global_avg_pool", pooled, spatial,
                                       is_max ? ReduceKind::Max : ReduceKind::Sum,
                                       [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
                                         std::vector<Expr> at = {i[0], i[1]};
                                         at.insert(at.end(), r.begin(), r.end());
                                         if (lanes) at.push_back(i[2]);
                                         return x.at(at);
                                       });
  return {LazyTensor(info, [pool, is_max, count, lanes](const std::vector<Expr>& i) {
    Expr v = lanes ? pool.at({i[0], i[1], i.back()}) : pool.at({i[0], i[1]});
    return is_max ? v : v / make_float(static_cast<double>(count));
  })};
}

}  // namespace

void add_pool_ops(std::vector<OpSpec>& table) {
  table.push_back({"MaxPool", OpPattern::OutEwiseFusable,
                   [](const OpContext& c, const Inputs& in) { return max_pool_op(c, in, false); }});
  table.push_back({"AveragePool", OpPattern::OutEwiseFusable,
                   [](const OpContext& c, const Inputs& in) { return average_pool_op(c, in, false); }});
  table.push_back({kMaxPoolBlocked, OpPattern::OutEwiseFusable,
                   [](const OpContext& c, const Inputs& in) { return max_pool_op(c, in, true); }, "MaxPool", true});
  table.push_back({kAveragePoolBlocked, OpPattern::OutEwiseFusable,
                   [](const OpContext& c, const Inputs& in) { return average_pool_op(c, in, true); }, "AveragePool",
                   true});
  table.push_back({"GlobalMaxPool", OpPattern::OutEwiseFusable,
                   [](const OpContext& c, const Inputs& in) { return global_pool_op(c, in, true, false); }});
  table.push_back({"GlobalAveragePool", OpPattern::OutEwiseFusable,
                   [](const OpContext& c, const Inputs& in) { return global_pool_op(c, in, false, false); }});
  table.push_back({kGlobalMaxPoolBlocked, OpPattern::OutEwiseFusable,
                   [](const OpContext& c, const Inputs& in) { return global_pool_op(c, in, true, true); },
                   "GlobalMaxPool", true});
  table.push_back({kGlobalAveragePoolBlocked, OpPattern::OutEwiseFusable,
                   [](const OpContext& c, const Inputs& in) { return global_pool_op(c, in, false, true); },
                   "GlobalAveragePool", true});
}

}  // namespace tessel::onnx_ops
