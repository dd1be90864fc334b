// The ONNX ops that move elements without choosing among them: Flatten, Reshape, Squeeze and
// Unsqueeze (all reshapes: one index map, tensor_ops.h's reshaped), Transpose, Expand and Tile.
#include <algorithm>
#include <optional>

#include "frontend/ops/tensor_ops.h"

namespace tessel::onnx_ops {
namespace {

LazyTensor reshape_to(const OpContext& ctx, const LazyTensor& x, std::vector<int64_t> shape) {
  return checked(ctx, 0, reshaped(x, TensorInfo{x.dtype(), std::move(shape)}));
}

// Squeeze / Unsqueeze take their axes from input 1 from opset 13 on, from an attribute before.
std::optional<std::vector<int64_t>> axes_of(const OpContext& ctx) {
  if (ctx.has_input(1)) return constant_ints(ctx, 1);
  return ctx.node.ints_attr("axes");
}

// Each axis normalized against `rank`; InputError naming the node on a repeat.
std::vector<bool> axis_mask(const OpContext& ctx, const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<bool> mask(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    int64_t d = normalize_axis(ctx, a, rank);
    if (mask[d]) ctx.fail("axis " + std::to_string(a) + " is given twice");
    mask[d] = true;
  }
  return mask;
}

// Reshape's shape input: 0 copies the input's dimension (unless allowzero), -1 takes what is left.
std::vector<int64_t> reshape_target(const OpContext& ctx, const std::vector<int64_t>& in) {
  std::vector<int64_t> shape = constant_ints(ctx, 1);
  const bool allow_zero = ctx.node.int_attr("allowzero").value_or(0) != 0;
  int inferred = -1;
  int64_t known = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0 && !allow_zero) {
      if (d >= in.size()) ctx.fail("shape[" + std::to_string(d) + "] = 0 copies a dimension the input lacks");
      shape[d] = in[d];
    }
    if (shape[d] == -1) {
      if (inferred >= 0) ctx.fail("the shape has more than one -1");
      inferred = static_cast<int>(d);
      continue;
    }
    if (shape[d] <= 0)
      ctx.fail("shape[" + std::to_string(d) + "] = " + std::to_string(shape[d]) + " (empty tensors are not supported)");
    known *= shape[d];
  }
  const int64_t total = product(in);
  if (inferred >= 0) {
    if (total % known != 0)
      ctx.fail("the -1 in the shape cannot be inferred: " + std::to_string(total) + " elements do not divide by " +
               std::to_string(known));
    shape[inferred] = total / known;
  }
  if (product(shape) != total)
    ctx.fail("the shape holds " + std::to_string(product(shape)) + " elements, the input " + std::to_string(total));
  return shape;
}

}  // namespace

Outputs build_flatten(const OpContext& ctx, const Inputs& in) {
  const int64_t rank = in[0].rank();
  int64_t axis = ctx.node.int_attr("axis").value_or(1);
  if (axis != rank) axis = normalize_axis(ctx, axis, rank);  // axis == rank is allowed: [all, 1]
  const size_t a = static_cast<size_t>(axis);
  return {reshape_to(ctx, in[0], {product(in[0].shape(), 0, a), product(in[0].shape(), a)})};
}

Outputs build_reshape(const OpContext& ctx, const Inputs& in) {
  return {reshape_to(ctx, in[0], reshape_target(ctx, in[0].shape()))};
}

Outputs build_squeeze(const OpContext& ctx, const Inputs& in) {
  const std::vector<int64_t>& shape = in[0].shape();
  std::optional<std::vector<int64_t>> axes = axes_of(ctx);
  std::vector<bool> drop(shape.size(), false);
  if (axes && !axes->empty()) {
    drop = axis_mask(ctx, *axes, in[0].rank());
  } else {  // no axes: every unit dimension
    for (size_t d = 0; d < shape.size(); ++d) drop[d] = shape[d] == 1;
  }
  std::vector<int64_t> out;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (drop[d] && shape[d] != 1)
      ctx.fail("axis " + std::to_string(d) + " has extent " + std::to_string(shape[d]) + ", not 1");
    if (!drop[d]) out.push_back(shape[d]);
  }
  return {reshape_to(ctx, in[0], out)};
}

Outputs build_unsqueeze(const OpContext& ctx, const Inputs& in) {
  std::optional<std::vector<int64_t>> axes = axes_of(ctx);
  if (!axes) ctx.fail("needs axes");
  const int64_t rank = in[0].rank() + static_cast<int64_t>(axes->size());
  std::vector<bool> added = axis_mask(ctx, *axes, rank);  // axes count in the output's rank
  std::vector<int64_t> out;
  size_t next = 0;
  for (bool a : added) out.push_back(a ? 1 : in[0].shape()[next++]);
  return {reshape_to(ctx, in[0], out)};
}

Outputs build_transpose(const OpContext& ctx, const Inputs& in) {
  const LazyTensor& x = in[0];
  const size_t rank = x.shape().size();
  std::vector<int64_t> perm = ctx.node.ints_attr("perm").value_or(std::vector<int64_t>{});
  if (perm.empty())  // the default reverses the dimensions
    for (size_t d = rank; d-- > 0;) perm.push_back(static_cast<int64_t>(d));
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  bool is_permutation = sorted.size() == rank;
  for (size_t d = 0; is_permutation && d < rank; ++d) is_permutation = sorted[d] == static_cast<int64_t>(d);
  if (!is_permutation) ctx.fail("perm is not a permutation of the input's " + std::to_string(rank) + " dimensions");
  TensorInfo info{x.dtype(), {}};
  for (int64_t p : perm) info.shape.push_back(x.shape()[p]);
  return {checked(ctx, 0, LazyTensor(info, [x, perm](const std::vector<Expr>& out) {
                    std::vector<Expr> idx(perm.size());
                    for (size_t d = 0; d < perm.size(); ++d) idx[perm[d]] = out[d];
                    return x.at(idx);
                  }))};
}

Outputs build_expand(const OpContext& ctx, const Inputs& in) {
  const LazyTensor& x = in[0];
  TensorInfo info{x.dtype(), broadcast_shape(ctx, {x.shape(), constant_ints(ctx, 1)})};
  return {checked(ctx, 0, LazyTensor(info, [x](const std::vector<Expr>& out) { return read_broadcast(x, out); }))};
}

Outputs build_tile(const OpContext& ctx, const Inputs& in) {
  const LazyTensor& x = in[0];
  std::vector<int64_t> repeats = constant_ints(ctx, 1);
  if (static_cast<int64_t>(repeats.size()) != x.rank())
    ctx.fail("repeats has " + std::to_string(repeats.size()) + " values for an input of rank " +
             std::to_string(x.rank()));
  TensorInfo info{x.dtype(), x.shape()};
  for (size_t d = 0; d < repeats.size(); ++d) {
    if (repeats[d] < 1)
      ctx.fail("repeats[" + std::to_string(d) + "] = " + std::to_string(repeats[d]) +
               " (empty tensors are not supported)");
    info.shape[d] *= repeats[d];
  }
  const std::vector<int64_t> dims = x.shape();
  return {checked(ctx, 0, LazyTensor(info, [x, repeats, dims](const std::vector<Expr>& out) {
                    std::vector<Expr> idx = out;
                    for (size_t d = 0; d < dims.size(); ++d)
                      if (repeats[d] > 1 && dims[d] > 1)
                        idx[d] = out[d] % make_int(dims[d]);
                      else if (dims[d] == 1)
                        idx[d] = make_int(0);
                    return x.at(idx);
                  }))};
}

}  // namespace tessel::onnx_ops
