#include "frontend/ops/window.h"

#include <algorithm>

namespace tessel::onnx_ops {
namespace {

// An ints attribute of one value per spatial dimension (`count` of them), each >= `least`;
// `fallback` when absent.
std::vector<int64_t> per_dim(const OpContext& ctx, const char* name, size_t count, int64_t least,
                             std::vector<int64_t> fallback) {
  std::optional<std::vector<int64_t>> v = ctx.node.ints_attr(name);
  if (!v) return fallback;
  if (v->size() != count)
    ctx.fail("attribute '" + std::string(name) + "' has " + std::to_string(v->size()) + " values; it needs " +
             std::to_string(count));
  for (int64_t x : *v)
    if (x < least) ctx.fail("attribute '" + std::string(name) + "' holds " + std::to_string(x));
  return *v;
}

std::vector<int64_t> read_kernel(const OpContext& ctx, size_t dims, const std::vector<int64_t>& from_weights) {
  if (from_weights.empty()) {
    if (!ctx.node.ints_attr("kernel_shape")) ctx.fail("attribute 'kernel_shape' is required");
    return per_dim(ctx, "kernel_shape", dims, 1, {});
  }
  std::vector<int64_t> k = per_dim(ctx, "kernel_shape", dims, 1, from_weights);
  if (k != from_weights) ctx.fail("attribute 'kernel_shape' disagrees with the weights' shape");
  return k;
}

// auto_pad SAME_UPPER / SAME_LOWER as ONNX shape inference computes it: the total padding makes
// the output ceil(input / stride) long; the odd position goes to the end (UPPER) or the start.
void same_pads(Window& w, bool upper) {
  for (size_t d = 0; d < w.dims(); ++d) {
    const int64_t stride = w.strides[d];
    const int64_t residual = stride > 1 ? w.input[d] % stride : 0;
    const int64_t total = std::max<int64_t>(0, residual == 0 ? w.span(d) - stride : w.span(d) - residual);
    const int64_t small = total / 2, big = total - small;
    w.pads_begin[d] = upper ? small : big;
    w.pads_end[d] = upper ? big : small;
  }
}

void read_pads(const OpContext& ctx, Window& w) {
  const size_t n = w.dims();
  const std::string auto_pad = ctx.node.string_attr("auto_pad").value_or("NOTSET");
  w.pads_begin.assign(n, 0);
  w.pads_end.assign(n, 0);
  if (auto_pad == "NOTSET") {
    std::vector<int64_t> pads = per_dim(ctx, "pads", 2 * n, 0, std::vector<int64_t>(2 * n, 0));
    std::copy(pads.begin(), pads.begin() + n, w.pads_begin.begin());
    std::copy(pads.begin() + n, pads.end(), w.pads_end.begin());
    return;
  }
  if (ctx.node.ints_attr("pads")) ctx.fail("attributes 'pads' and 'auto_pad' = " + auto_pad + " exclude each other");
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER")
    same_pads(w, auto_pad == "SAME_UPPER");
  else if (auto_pad != "VALID")
    ctx.fail("attribute 'auto_pad' = '" + auto_pad + "' is none of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
}

// Output extents: 1 + (padded input - span) / stride, rounded down, or up with ceil_mode.
void compute_output(const OpContext& ctx, Window& w, bool ceil_mode) {
  for (size_t d = 0; d < w.dims(); ++d) {
    const int64_t padded = w.input[d] + w.pads_begin[d] + w.pads_end[d];
    if (padded < w.span(d))
      ctx.fail("the window (" + std::to_string(w.span(d)) + " positions along spatial axis " + std::to_string(d) +
               ") is larger than the padded input (" + std::to_string(padded) + ")");
    const int64_t room = padded - w.span(d), s = w.strides[d];
    const int64_t out = 1 + (ceil_mode ? (room + s - 1) / s : room / s);
    // ONNX 1.12 keeps a last window that starts past the input (PyTorch drops it): a pool would
    // have nothing to take there, so it is refused rather than given a made-up value.
    if (ceil_mode && (out - 1) * s >= w.pads_begin[d] + w.input[d])
      ctx.fail("with ceil_mode, the last window along spatial axis " + std::to_string(d) +
               " starts past the input; PyTorch drops such a window and ONNX keeps it");
    w.output.push_back(out);
  }
}

}  // namespace

Window read_window(const OpContext& ctx, const std::vector<int64_t>& input, const WindowAttributes& attributes) {
  const size_t n = input.size();
  if (n == 0) ctx.fail("input 0 has no spatial axis");
  Window w;
  w.input = input;
  w.kernel = read_kernel(ctx, n, attributes.kernel);
  w.strides = per_dim(ctx, "strides", n, 1, std::vector<int64_t>(n, 1));
  if (!attributes.dilations && ctx.node.ints_attr("dilations")) ctx.fail("attribute 'dilations' is not supported");
  w.dilations = per_dim(ctx, "dilations", n, 1, std::vector<int64_t>(n, 1));
  read_pads(ctx, w);
  const int64_t ceil_mode = ctx.node.int_attr("ceil_mode").value_or(0);
  if (ceil_mode != 0 && !attributes.ceil_mode) ctx.fail("attribute 'ceil_mode' is not supported");
  compute_output(ctx, w, ceil_mode != 0);
  return w;
}

Expr scaled(const Expr& a, int64_t k) { return k == 1 ? a : a * make_int(k); }

Expr window_index(const Window& w, size_t d, const Expr& o, const Expr& r) {
  return scaled(o, w.strides[d]) + scaled(r, w.dilations[d]);
}

LazyTensor pad_for_window(const OpContext& ctx, const LazyTensor& x, const Window& w, double fill) {
  // Padded extent: the pads around the input, or further where ceil_mode's last window reaches.
  std::vector<int64_t> padded = {x.shape()[0], x.shape()[1]};
  bool needed = false;
  for (size_t d = 0; d < w.dims(); ++d) {
    const int64_t reach = (w.output[d] - 1) * w.strides[d] + w.span(d);
    padded.push_back(std::max(w.input[d] + w.pads_begin[d] + w.pads_end[d], reach));
    needed |= padded.back() > w.input[d];
  }
  if (!needed) return x;
  const bool lanes = x.rank() == static_cast<int64_t>(w.dims()) + 3;  // [N, C/b, spatial..., b]
  if (lanes) padded.push_back(x.shape().back());
  return ctx.builder.compute("pad", TensorInfo{x.dtype(), padded}, [&](const std::vector<Expr>& i) {
    std::vector<Expr> at = {i[0], i[1]};
    Expr inside;
    auto require = [&inside](const Expr& c) { inside = inside ? logical_and(inside, c) : c; };
    for (size_t d = 0; d < w.dims(); ++d) {
      const int64_t lo = w.pads_begin[d], hi = lo + w.input[d];
      Expr p = i[2 + d], at_d = lo > 0 ? p - lo : p;
      // The select guards the read; the clamp keeps it in bounds even when both sides are computed.
      if (lo > 0) {
        require(p >= make_int(lo));
        at_d = max(at_d, make_int(0));
      }
      if (hi < padded[2 + d]) {
        require(p < make_int(hi));
        at_d = min(at_d, make_int(w.input[d] - 1));
      }
      at.push_back(at_d);
    }
    if (lanes) at.push_back(i.back());
    return make_select(inside, x.at(at), make_float(fill));
  });
}

LazyTensor as_read(const OpContext& ctx, const LazyTensor& t, const std::string& hint) {
  const Expr probe = t.at(std::vector<Expr>(t.shape().size(), make_int(0)));
  if (probe->op == ExprOp::TensorRead) return t;
  return ctx.builder.materialize(t, hint);
}

}  // namespace tessel::onnx_ops
