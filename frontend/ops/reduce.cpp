// The ONNX reductions: ReduceSum / Mean / Max / Min, Softmax, LogSoftmax and LayerNormalization.
// Each reduction is a stage; what follows it per element (the division of a mean, softmax's
// normalization, layernorm's scale and shift) is a LazyTensor its reader inlines. Softmax and
// LayerNormalization keep the stage structure of the softmax and layernorm templates
// (schedule/ops/norm_ops.cpp), so the default schedule and the sketches treat them alike.
#include <functional>
#include <optional>

#include "frontend/ops/tensor_ops.h"

namespace tessel::onnx_ops {
namespace {

// Which input dimensions a reduction folds, and the extents of those folded.
struct ReducedAxes {
  std::vector<bool> mask;  // one per input dimension
  std::vector<int64_t> extents;

  bool empty() const { return extents.empty(); }
  int64_t count() const { return product(extents); }
};

ReducedAxes reduced_axes(const OpContext& ctx, const std::vector<int64_t>& shape, const std::vector<int64_t>& axes) {
  ReducedAxes r{std::vector<bool>(shape.size(), false), {}};
  for (int64_t a : axes) {
    const int64_t d = normalize_axis(ctx, a, static_cast<int64_t>(shape.size()));
    if (r.mask[d]) ctx.fail("axis " + std::to_string(a) + " is given twice");
    r.mask[d] = true;
  }
  for (size_t d = 0; d < shape.size(); ++d)
    if (r.mask[d]) r.extents.push_back(shape[d]);
  return r;
}

// Axes `first`..rank-1 (softmax before opset 13, layernorm).
ReducedAxes trailing_axes(const OpContext& ctx, const std::vector<int64_t>& shape, int64_t first) {
  std::vector<int64_t> axes;
  for (int64_t d = first; d < static_cast<int64_t>(shape.size()); ++d) axes.push_back(d);
  return reduced_axes(ctx, shape, axes);
}

// The input index for kept index `kept` (one per kept dimension, or one per dimension with the
// reduced ones ignored when `keepdims`) and reduction index `r`.
std::vector<Expr> input_index(const ReducedAxes& axes, bool keepdims, const std::vector<Expr>& kept,
                              const std::vector<Expr>& r) {
  std::vector<Expr> idx;
  size_t k = 0, j = 0;
  for (bool reduced : axes.mask) {
    if (reduced) {
      idx.push_back(r[j++]);
      if (keepdims) ++k;
    } else {
      idx.push_back(kept[k++]);
    }
  }
  return idx;
}

// The kept part of a full input index (how an elementwise epilogue reads a row statistic).
std::vector<Expr> kept_index(const ReducedAxes& axes, const std::vector<Expr>& full) {
  std::vector<Expr> kept;
  for (size_t d = 0; d < full.size(); ++d)
    if (!axes.mask[d]) kept.push_back(full[d]);
  return kept;
}

std::vector<int64_t> kept_shape(const ReducedAxes& axes, const std::vector<int64_t>& shape, bool keepdims) {
  std::vector<int64_t> out;
  for (size_t d = 0; d < shape.size(); ++d)
    if (!axes.mask[d] || keepdims) out.push_back(axes.mask[d] ? 1 : shape[d]);
  return out;
}

// One reduction stage over `axes` of `x` of term(x element) (x itself when term is empty).
LazyTensor reduce_stage(const OpContext& ctx, const std::string& hint, const LazyTensor& x, const ReducedAxes& axes,
                        bool keepdims, ReduceKind kind, const std::function<Expr(const Expr&)>& term = nullptr) {
  TensorInfo info{DType::Float32, kept_shape(axes, x.shape(), keepdims)};
  return ctx.builder.reduce(hint, info, axes.extents, kind,
                            [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
                              Expr v = x.at(input_index(axes, keepdims, i, r));
                              return term ? term(v) : v;
                            });
}

void require_float(const OpContext& ctx, const LazyTensor& x) {
  if (x.dtype() != DType::Float32)
    ctx.fail("reduces a tensor of " + to_string(x.dtype()) + " (only float32 reductions are supported)");
}

// Reduce*: axes from the attribute, or from input 1 (ReduceSum from opset 13); none means all
// unless noop_with_empty_axes.
Outputs build_reduce(const OpContext& ctx, const Inputs& in, const char* hint, ReduceKind kind, bool mean) {
  const LazyTensor& x = in[0];
  require_float(ctx, x);
  std::optional<std::vector<int64_t>> axes = ctx.has_input(1) ? constant_ints(ctx, 1) : ctx.node.ints_attr("axes");
  const bool keepdims = ctx.node.int_attr("keepdims").value_or(1) != 0;
  if (!axes || axes->empty()) {
    if (ctx.node.int_attr("noop_with_empty_axes").value_or(0) != 0) return {checked(ctx, 0, x)};
    axes = std::vector<int64_t>();
    for (int64_t d = 0; d < x.rank(); ++d) axes->push_back(d);
  }
  const ReducedAxes reduced = reduced_axes(ctx, x.shape(), *axes);
  LazyTensor sum = reduce_stage(ctx, hint, x, reduced, keepdims, kind);
  check_output(ctx, 0, sum.info());
  if (!mean) return {sum};
  const Expr n = make_float(static_cast<double>(reduced.count()));
  return {LazyTensor(sum.info(), [sum, n](const std::vector<Expr>& i) { return sum.at(i) / n; })};
}

Outputs build_reduce_sum(const OpContext& ctx, const Inputs& in) {
  return build_reduce(ctx, in, "sum", ReduceKind::Sum, false);
}
Outputs build_reduce_mean(const OpContext& ctx, const Inputs& in) {
  return build_reduce(ctx, in, "mean_sum", ReduceKind::Sum, true);
}
Outputs build_reduce_max(const OpContext& ctx, const Inputs& in) {
  return build_reduce(ctx, in, "max", ReduceKind::Max, false);
}
Outputs build_reduce_min(const OpContext& ctx, const Inputs& in) {
  return build_reduce(ctx, in, "min", ReduceKind::Min, false);
}

// Softmax's axes: from opset 13 the one axis (default -1); before, the input is read as 2-D
// [d0 * ... * d(axis-1), d(axis) * ... ] (default axis 1) and each row normalized.
ReducedAxes softmax_axes(const OpContext& ctx, const LazyTensor& x) {
  const bool v13 = ctx.graph.opset >= 13;
  const int64_t axis = normalize_axis(ctx, ctx.node.int_attr("axis").value_or(v13 ? -1 : 1), x.rank());
  return v13 ? reduced_axes(ctx, x.shape(), {axis}) : trailing_axes(ctx, x.shape(), axis);
}

// max, then exp(x - max) as a stage (read twice: by the sum and the output), then its sum; the
// output multiplies by the sum's reciprocal, as the softmax template does.
Outputs build_softmax(const OpContext& ctx, const Inputs& in) {
  const LazyTensor& x = in[0];
  require_float(ctx, x);
  const ReducedAxes axes = softmax_axes(ctx, x);
  LazyTensor row_max = reduce_stage(ctx, "row_max", x, axes, false, ReduceKind::Max);
  LazyTensor exps = ctx.builder.compute("exps", x.info(), [&](const std::vector<Expr>& i) {
    return make_call(MathFn::Exp, {x.at(i) - row_max.at(kept_index(axes, i))});
  });
  LazyTensor row_sum = reduce_stage(ctx, "row_sum", exps, axes, false, ReduceKind::Sum);
  return {checked(ctx, 0, LazyTensor(x.info(), [exps, row_sum, axes](const std::vector<Expr>& i) {
                    return exps.at(i) * (make_float(1.0) / row_sum.at(kept_index(axes, i)));
                  }))};
}

// x - max - log(sum exp(x - max)): exp is read once, inside the sum, so it needs no stage.
Outputs build_log_softmax(const OpContext& ctx, const Inputs& in) {
  const LazyTensor& x = in[0];
  require_float(ctx, x);
  const ReducedAxes axes = softmax_axes(ctx, x);
  LazyTensor row_max = reduce_stage(ctx, "row_max", x, axes, false, ReduceKind::Max);
  TensorInfo rows{DType::Float32, kept_shape(axes, x.shape(), false)};
  LazyTensor row_sum = ctx.builder.reduce(
      "row_sum", rows, axes.extents, ReduceKind::Sum, [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
        return make_call(MathFn::Exp, {x.at(input_index(axes, false, i, r)) - row_max.at(i)});
      });
  return {checked(ctx, 0, LazyTensor(x.info(), [x, row_max, row_sum, axes](const std::vector<Expr>& i) {
                    std::vector<Expr> row = kept_index(axes, i);
                    return x.at(i) - row_max.at(row) - make_call(MathFn::Log, {row_sum.at(row)});
                  }))};
}

// A per-row statistic (shape = the kept dimensions) seen with the normalized dimensions as 1s: how
// LayerNormalization's Mean and InvStdDev outputs are shaped.
LazyTensor with_unit_dims(const LazyTensor& stat, const ReducedAxes& axes, size_t rank) {
  TensorInfo info{DType::Float32, {}};
  size_t kept = 0;
  for (size_t d = 0; d < rank; ++d) info.shape.push_back(axes.mask[d] ? 1 : stat.shape()[kept++]);
  return LazyTensor(info, [stat, axes](const std::vector<Expr>& i) { return stat.at(kept_index(axes, i)); });
}

// The layernorm template's stages over axes [axis, rank): mean_sum, mean, var_sum (of x - mean, two
// passes: no cancellation as in E[x^2] - E[x]^2), rstd; the output is lazy.
Outputs build_layer_norm(const OpContext& ctx, const Inputs& in) {
  const LazyTensor& x = in[0];
  require_float(ctx, x);
  const int64_t axis = normalize_axis(ctx, ctx.node.int_attr("axis").value_or(-1), x.rank());
  const double eps = ctx.node.float_attr("epsilon").value_or(1e-5);
  const ReducedAxes axes = trailing_axes(ctx, x.shape(), axis);
  const LazyTensor scale = in[1];
  const std::optional<LazyTensor> bias = ctx.has_input(2) ? std::optional<LazyTensor>(in[2]) : std::nullopt;
  const std::vector<int64_t> normalized(x.shape().begin() + axis, x.shape().end());
  if (broadcast_shape(ctx, {normalized, scale.shape()}) != normalized ||
      (bias && broadcast_shape(ctx, {normalized, bias->shape()}) != normalized))
    ctx.fail("Scale and B must broadcast to the normalized dimensions");
  const Expr n = make_float(static_cast<double>(axes.count()));
  TensorInfo rows{DType::Float32, kept_shape(axes, x.shape(), false)};
  LazyTensor mean_sum = reduce_stage(ctx, "mean_sum", x, axes, false, ReduceKind::Sum);
  LazyTensor mean = ctx.builder.compute("mean", rows, [&](const std::vector<Expr>& i) { return mean_sum.at(i) / n; });
  LazyTensor var_sum = ctx.builder.reduce("var_sum", rows, axes.extents, ReduceKind::Sum,
                                          [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
                                            Expr centered = x.at(input_index(axes, false, i, r)) - mean.at(i);
                                            return centered * centered;
                                          });
  LazyTensor rstd = ctx.builder.compute("rstd", rows, [&](const std::vector<Expr>& i) {
    return make_call(MathFn::Rsqrt, {var_sum.at(i) / n + make_float(eps)});
  });
  const size_t first = static_cast<size_t>(axis);
  LazyTensor y(x.info(), [x, mean, rstd, scale, bias, axes, first](const std::vector<Expr>& i) {
    std::vector<Expr> row = kept_index(axes, i), col(i.begin() + first, i.end());
    Expr v = (x.at(i) - mean.at(row)) * rstd.at(row) * read_broadcast(scale, col);
    return bias ? v + read_broadcast(*bias, col) : v;
  });
  Outputs outs{checked(ctx, 0, y)};
  const LazyTensor stats[] = {mean, rstd};  // the optional outputs Mean and InvStdDev
  for (size_t k = 1; k < ctx.node.outputs.size() && k < 3; ++k)
    outs.push_back(ctx.node.outputs[k].empty() ? LazyTensor()
                                               : checked(ctx, k, with_unit_dims(stats[k - 1], axes, x.shape().size())));
  return outs;
}

}  // namespace

void add_reduce_ops(std::vector<OpSpec>& table) {
  const OpPattern red = OpPattern::Reduction;
  table.push_back({"ReduceSum", red, build_reduce_sum});
  table.push_back({"ReduceMean", red, build_reduce_mean});
  table.push_back({"ReduceMax", red, build_reduce_max});
  table.push_back({"ReduceMin", red, build_reduce_min});
  table.push_back({"Softmax", red, build_softmax});
  table.push_back({"LogSoftmax", red, build_log_softmax});
  table.push_back({"LayerNormalization", red, build_layer_norm});
}

}  // namespace tessel::onnx_ops
