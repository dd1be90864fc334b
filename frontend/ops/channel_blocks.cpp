// The internal ops of the CPU channel-block layout (frontend/channel_blocks.h). A blocked tensor is
// [N, C/b, H, W, b]: channel c at block c / b, lane c % b.
//
//   ToNCHWc   x [N, C, H, W]        → [N, C/b, H, W, b]   attribute `block` = b        (injective)
//   FromNCHWc y [N, C/b, H, W, b]   → [N, C, H, W]                                     (injective)
//   ConvNCHWc x, W, bias            → [N, F/b, OH, OW, b]  the Conv's own attributes    (contraction)
//
// ConvNCHWc's weights are repacked once, when the layout pass makes the node: W[F/b, C, KH, KW, b]
// (a depthwise one W[F/b, KH, KW, b]), the bias [F/b, b]. Its input is blocked (any block size) or
// NCHW: the product reads one input value per reduction step and broadcasts it over the output's
// lanes, so only the output's block is a vector. Its stages have the conv2d template's form with
// layout=nchw16c (schedule/ops/conv_ops.cpp), so the schedules tile it the same way.
#include "frontend/ops/window.h"

namespace tessel::onnx_ops {
namespace {

using Inputs = std::vector<LazyTensor>;
using Outputs = std::vector<LazyTensor>;

Outputs to_blocks_op(const OpContext& ctx, const Inputs& in) {
  const LazyTensor& x = input_of_type(ctx, in, 0, DType::Float32);
  const int64_t b = ctx.node.int_attr("block").value_or(0);
  if (x.rank() != 4 || b < 1 || x.shape()[1] % b != 0)
    ctx.fail("takes [N, C, H, W] with C a multiple of attribute 'block' (" + std::to_string(b) + ")");
  const std::vector<int64_t>& s = x.shape();
  const TensorInfo& info = checked_output(ctx, DType::Float32, {s[0], s[1] / b, s[2], s[3], b});
  return {LazyTensor(info, [x, b](const std::vector<Expr>& i) {
    return x.at({i[0], scaled(i[1], b) + i[4], i[2], i[3]});
  })};
}

Outputs from_blocks_op(const OpContext& ctx, const Inputs& in) {
  const LazyTensor& y = input_of_type(ctx, in, 0, DType::Float32);
  if (y.rank() != 5) ctx.fail("takes [N, C/b, H, W, b]");
  const std::vector<int64_t>& s = y.shape();
  const int64_t b = s[4];
  const TensorInfo& info = checked_output(ctx, DType::Float32, {s[0], s[1] * b, s[2], s[3]});
  return {LazyTensor(info, [y, b](const std::vector<Expr>& i) {
    const Expr lane = make_int(b);
    return y.at({i[0], i[1] / lane, i[2], i[3], i[1] % lane});
  })};
}

// conv[n, fo, oh, ow, fi] = sum over (c, kh, kw) of X[n, c, ...] * W[fo, c, kh, kw, fi]; a depthwise
// one (attribute group = C) sums over (kh, kw) of X[n, fo, ..., fi] * W[fo, kh, kw, fi].
Outputs conv_blocked_op(const OpContext& ctx, const Inputs& in) {
  const LazyTensor& x = input_of_type(ctx, in, 0, DType::Float32);
  const LazyTensor& w = input_of_type(ctx, in, 1, DType::Float32);
  const bool blocked_input = x.rank() == 5;
  if (x.rank() != 4 && !blocked_input) ctx.fail("input 0 must be [N, C, H, W] or [N, C/b, H, W, b]");
  const int64_t channels = blocked_input ? x.shape()[1] * x.shape()[4] : x.shape()[1];
  const int64_t groups = ctx.node.int_attr("group").value_or(1);
  const bool depthwise = groups != 1;
  if (depthwise && (groups != channels || w.rank() != 4 || w.shape()[0] * w.shape()[3] != channels))
    ctx.fail("a grouped convolution in channel blocks must be depthwise (group = C = F)");
  if (!depthwise && (w.rank() != 5 || w.shape()[1] != channels))
    ctx.fail("the weights (input 1) must be [F/b, C, KH, KW, b] with C = " + std::to_string(channels));
  const int64_t b = w.shape().back();
  if (depthwise && (!blocked_input || x.shape()[4] != b))
    ctx.fail("a depthwise convolution in channel blocks reads its input in the weights' blocks");
  const std::vector<int64_t> kernel = depthwise ? std::vector<int64_t>{w.shape()[1], w.shape()[2]}
                                                : std::vector<int64_t>{w.shape()[2], w.shape()[3]};
  const Window win = read_window(ctx, {x.shape()[2], x.shape()[3]}, {kernel, true, false});
  const TensorInfo& info =
      checked_output(ctx, DType::Float32, {x.shape()[0], w.shape()[0], win.output[0], win.output[1], b});
  const LazyTensor src = as_read(ctx, pad_for_window(ctx, x, win, 0.0), "conv_input");
  const LazyTensor weights = as_read(ctx, w, "conv_weights");
  const int64_t cb = blocked_input ? x.shape()[4] : 1;
  std::vector<int64_t> extents = depthwise ? kernel : std::vector<int64_t>{channels, kernel[0], kernel[1]};
  LazyTensor conv = ctx.builder.reduce(
      "conv", info, extents, ReduceKind::Sum, [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
        const Expr& kh = r[r.size() - 2];
        const Expr& kw = r.back();
        const Expr y = window_index(win, 0, i[2], kh), x_at = window_index(win, 1, i[3], kw);
        if (depthwise) return src.at({i[0], i[1], y, x_at, i[4]}) * weights.at({i[1], kh, kw, i[4]});
        const Expr lane = make_int(cb);
        Expr value = blocked_input ? src.at({i[0], r[0] / lane, y, x_at, r[0] % lane}) : src.at({i[0], r[0], y, x_at});
        return value * weights.at({i[1], r[0], kh, kw, i[4]});
      });
  if (!ctx.has_input(2)) return {conv};
  const LazyTensor& bias = input_of_type(ctx, in, 2, DType::Float32);
  if (bias.shape() != std::vector<int64_t>{w.shape()[0], b}) ctx.fail("the bias (input 2) must be [F/b, b]");
  return {LazyTensor(info, [conv, bias](const std::vector<Expr>& i) { return conv.at(i) + bias.at({i[1], i[4]}); })};
}

}  // namespace

void add_channel_block_ops(std::vector<OpSpec>& table) {
  table.push_back({kConvBlocked, OpPattern::OutEwiseFusable, conv_blocked_op, "Conv", true});
  table.push_back({kToBlocks, OpPattern::Injective, to_blocks_op, "", true});
  table.push_back({kFromBlocks, OpPattern::Injective, from_blocks_op, "", true});
}

}  // namespace tessel::onnx_ops
