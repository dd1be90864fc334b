// Row-wise reductions over the last axis: softmax, layernorm, rmsnorm, reduce_sum and
// bias_residual_layernorm. Every reduction stage holds only the reduced term; the divisions,
// epsilons and scalings after it are separate elementwise stages the scheduler may inline or fuse.
#include "schedule/ops/op_builders.h"

namespace tessel::ops_detail {

namespace {

// Appends the two-pass layernorm of `source` [rows, cols] with gamma / beta: mean first, then the
// variance of (x - mean), which avoids the cancellation of E[x^2] - E[x]^2.
void append_layernorm(std::vector<Operation>& ops, const std::string& source, int64_t rows, int64_t cols,
                      double eps) {
  Expr n = f32(static_cast<double>(cols));
  Axis i{"i", rows}, k{"k", cols};
  ops.push_back(reduce("mean_sum", {i}, ReduceKind::Sum, {k}, read(source, {i, k})));
  Axis i1{"i1", rows};
  ops.push_back(compute("mean", {i1}, read("mean_sum", {i1}) / n));
  Axis i2{"i2", rows}, k2{"k2", cols};
  Expr centered = read(source, {i2, k2}) - read("mean", {i2});
  ops.push_back(reduce("var_sum", {i2}, ReduceKind::Sum, {k2}, centered * centered));
  Axis i3{"i3", rows};
  ops.push_back(compute("rstd", {i3}, make_call(MathFn::Rsqrt, {read("var_sum", {i3}) / n + f32(eps)})));
  Axis i4{"i4", rows}, j4{"j4", cols};
  Expr normalized = (read(source, {i4, j4}) - read("mean", {i4})) * read("rstd", {i4});
  ops.push_back(compute("Y", {i4, j4}, normalized * read("gamma", {j4}) + read("beta", {j4})));
}

}  // namespace

ComputeDAG build_softmax(const ParamReader& p) {
  int64_t rows = p.positive_int("rows"), cols = p.positive_int("cols");
  std::vector<Operation> ops;
  ops.push_back(placeholder("X", {rows, cols}));
  Axis i{"i", rows}, k{"k", cols};
  ops.push_back(reduce("row_max", {i}, ReduceKind::Max, {k}, read("X", {i, k})));
  Axis i1{"i1", rows}, j1{"j1", cols};
  ops.push_back(compute("exps", {i1, j1}, make_call(MathFn::Exp, {read("X", {i1, j1}) - read("row_max", {i1})})));
  Axis i2{"i2", rows}, k2{"k2", cols};
  ops.push_back(reduce("row_sum", {i2}, ReduceKind::Sum, {k2}, read("exps", {i2, k2})));
  Axis i3{"i3", rows}, j3{"j3", cols};
  // One reciprocal per row, then a multiply per element: a division per element would cost more
  // than the memory traffic (and differs from it by at most an ulp or two).
  ops.push_back(compute("Y", {i3, j3}, read("exps", {i3, j3}) * (f32(1.0) / read("row_sum", {i3}))));
  return ComputeDAG(std::move(ops));
}

ComputeDAG build_layernorm(const ParamReader& p) {
  int64_t rows = p.positive_int("rows"), cols = p.positive_int("cols");
  double eps = p.positive_float("eps");
  std::vector<Operation> ops;
  ops.push_back(placeholder("X", {rows, cols}));
  ops.push_back(placeholder("gamma", {cols}));
  ops.push_back(placeholder("beta", {cols}));
  append_layernorm(ops, "X", rows, cols, eps);
  return ComputeDAG(std::move(ops));
}

ComputeDAG build_rmsnorm(const ParamReader& p) {
  int64_t rows = p.positive_int("rows"), cols = p.positive_int("cols");
  double eps = p.positive_float("eps");
  std::vector<Operation> ops;
  ops.push_back(placeholder("X", {rows, cols}));
  ops.push_back(placeholder("gamma", {cols}));
  Axis i{"i", rows}, k{"k", cols};
  ops.push_back(reduce("sq_sum", {i}, ReduceKind::Sum, {k}, read("X", {i, k}) * read("X", {i, k})));
  Axis i1{"i1", rows};
  Expr mean_sq = read("sq_sum", {i1}) / f32(static_cast<double>(cols));
  ops.push_back(compute("rstd", {i1}, make_call(MathFn::Rsqrt, {mean_sq + f32(eps)})));
  Axis i2{"i2", rows}, j2{"j2", cols};
  ops.push_back(compute("Y", {i2, j2}, read("X", {i2, j2}) * read("rstd", {i2}) * read("gamma", {j2})));
  return ComputeDAG(std::move(ops));
}

ComputeDAG build_reduce_sum(const ParamReader& p) {
  int64_t rows = p.positive_int("rows"), cols = p.positive_int("cols");
  std::vector<Operation> ops;
  ops.push_back(placeholder("X", {rows, cols}));
  Axis i{"i", rows}, k{"k", cols};
  ops.push_back(reduce("Y", {i}, ReduceKind::Sum, {k}, read("X", {i, k})));
  return ComputeDAG(std::move(ops));
}

ComputeDAG build_bias_residual_layernorm(const ParamReader& p) {
  int64_t rows = p.positive_int("rows"), cols = p.positive_int("cols");
  double eps = p.positive_float("eps");
  std::vector<Operation> ops;
  ops.push_back(placeholder("X", {rows, cols}));
  ops.push_back(placeholder("b", {cols}));
  ops.push_back(placeholder("R", {rows, cols}));
  ops.push_back(placeholder("gamma", {cols}));
  ops.push_back(placeholder("beta", {cols}));
  Axis r{"r", rows}, c{"c", cols};
  ops.push_back(compute("h", {r, c}, read("X", {r, c}) + read("b", {c}) + read("R", {r, c})));
  append_layernorm(ops, "h", rows, cols, eps);
  return ComputeDAG(std::move(ops));
}

}  // namespace tessel::ops_detail
