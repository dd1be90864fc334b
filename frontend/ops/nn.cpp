// The contractions: Conv (N-d, grouped and depthwise, strided, dilated, padded), Gemm and MatMul
// (numpy semantics, batch axes broadcast). Each is one Sum reduction stage whose body is the
// product of two tensor reads, like the conv2d / dense / batch_matmul templates, so the default
// schedule and the sketches tile it as a contraction; padding is a stage of its own before it, and
// bias, alpha / beta and whatever elementwise ops follow stay an expression over the output that
// the subgraph's output stage computes. The pools are in pool.cpp.
#include "frontend/ops/window.h"

namespace tessel::onnx_ops {
namespace {

using Inputs = std::vector<LazyTensor>;
using Outputs = std::vector<LazyTensor>;

// --- Conv ----------------------------------------------------------------------------------------

struct ConvShape {
  int64_t groups = 1;
  int64_t in_per_group = 1;   // input channels one output channel reads (the weights' axis 1)
  int64_t out_per_group = 1;  // output channels of one group
};

ConvShape read_conv_shape(const OpContext& ctx, const LazyTensor& x, const LazyTensor& w) {
  if (x.rank() < 3) ctx.fail("input 0 must be [N, C, spatial...] (rank >= 3), not rank " + std::to_string(x.rank()));
  if (w.rank() != x.rank()) ctx.fail("the weights (input 1) must have the input's rank " + std::to_string(x.rank()));
  ConvShape s;
  s.groups = ctx.node.int_attr("group").value_or(1);
  s.in_per_group = w.shape()[1];
  const int64_t channels = x.shape()[1], filters = w.shape()[0];
  if (s.groups < 1) ctx.fail("attribute 'group' is " + std::to_string(s.groups));
  if (channels != s.in_per_group * s.groups)
    ctx.fail("input channels (" + std::to_string(channels) + ") are not group (" + std::to_string(s.groups) +
             ") times the weights' channels (" + std::to_string(s.in_per_group) + ")");
  if (filters % s.groups != 0)
    ctx.fail("output channels (" + std::to_string(filters) + ") are not divisible by group (" +
             std::to_string(s.groups) + ")");
  s.out_per_group = filters / s.groups;
  return s;
}

// The product a convolution sums over (c, r...) for output (n, f, o...) of group `group` (null
// when there is one): X[n, group * C/g + c, o * stride + r * dilation] * W[f, c, r...].
Expr conv_term(const LazyTensor& src, const LazyTensor& weights, const ConvShape& cs, const Window& win, const Expr& n,
               const Expr& group, const Expr& filter, const std::vector<Expr>& o, const std::vector<Expr>& r) {
  std::vector<Expr> at = {n, group ? scaled(group, cs.in_per_group) + r[0] : r[0]};
  std::vector<Expr> w_at = {filter, r[0]};
  for (size_t d = 0; d < win.dims(); ++d) {
    at.push_back(window_index(win, d, o[d], r[1 + d]));
    w_at.push_back(r[1 + d]);
  }
  return src.at(at) * weights.at(w_at);
}

// conv[n, f, o...] = sum over (c, r...) of conv_term, X padded first when the window reads outside
// it. Depthwise (C/g = 1) keeps its reduction axis of extent 1, as the conv2d template does.
Outputs conv_op(const OpContext& ctx, const Inputs& in) {
  const LazyTensor& x = input_of_type(ctx, in, 0, DType::Float32);
  const LazyTensor& w = input_of_type(ctx, in, 1, DType::Float32);
  const ConvShape cs = read_conv_shape(ctx, x, w);
  const std::vector<int64_t> spatial(x.shape().begin() + 2, x.shape().end());
  const Window win =
      read_window(ctx, spatial, {std::vector<int64_t>(w.shape().begin() + 2, w.shape().end()), true, false});

  std::vector<int64_t> shape = {x.shape()[0], w.shape()[0]};
  shape.insert(shape.end(), win.output.begin(), win.output.end());
  const TensorInfo& info = checked_output(ctx, DType::Float32, shape);
  const LazyTensor src = as_read(ctx, pad_for_window(ctx, x, win, 0.0), "conv_input");
  const LazyTensor weights = as_read(ctx, w, "conv_weights");
  std::vector<int64_t> extents = {cs.in_per_group};
  extents.insert(extents.end(), win.kernel.begin(), win.kernel.end());

  // A grouped convolution whose groups read several channels (ResNeXt's) is no contraction to the
  // schedules: the input's channel depends on f. As a stage over [N, groups, filters per group,
  // o...] it would be one, but the default CPU schedule requires a contraction's epilogue to have
  // its axes, and the read back as [N, F, o...] does not.
  LazyTensor conv = ctx.builder.reduce(
      "conv", info, extents, ReduceKind::Sum, [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
        Expr group;
        if (cs.groups > 1) group = cs.out_per_group == 1 ? i[1] : i[1] / make_int(cs.out_per_group);
        return conv_term(src, weights, cs, win, i[0], group, i[1], {i.begin() + 2, i.end()}, r);
      });
  if (!ctx.has_input(2)) return {conv};
  const LazyTensor& bias = input_of_type(ctx, in, 2, DType::Float32);
  if (bias.shape() != std::vector<int64_t>{w.shape()[0]}) ctx.fail("the bias (input 2) must hold one value per filter");
  return {LazyTensor(info, [conv, bias](const std::vector<Expr>& i) { return conv.at(i) + bias.at({i[1]}); })};
}

// --- Gemm ----------------------------------------------------------------------------------------

// A one-row Gemm with B stored [N, K] (transB, how exporters write nn.Linear) is a matrix-vector
// product: N dot products over rows of B, each read contiguously, as one [N] stage that the
// epilogue reads as [1, N]. Kept a contraction over a unit row axis, the schedules would vectorize
// across B's rows at stride K: the default CPU schedule ran a 512 x 1000 classifier 20x slower so.
LazyTensor matrix_vector(const OpContext& ctx, const LazyTensor& a, const LazyTensor& b, bool ta,
                         const TensorInfo& info) {
  const int64_t n = info.shape[1], k = b.shape()[1];
  LazyTensor dots = ctx.builder.reduce("gemv", TensorInfo{DType::Float32, {n}}, {k}, ReduceKind::Sum,
                                       [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
                                         Expr x = ta ? a.at({r[0], make_int(0)}) : a.at({make_int(0), r[0]});
                                         return x * b.at({i[0], r[0]});
                                       });
  return LazyTensor(info, [dots](const std::vector<Expr>& i) { return dots.at({i[1]}); });
}

// Y = alpha * A' B' + beta * C, A' = A or its transpose (transA), B' likewise; C broadcasts to Y.
// The reduction holds only the product; alpha and C join the epilogue.
Outputs gemm_op(const OpContext& ctx, const Inputs& in) {
  const LazyTensor& a = input_of_type(ctx, in, 0, DType::Float32);
  const LazyTensor& b = input_of_type(ctx, in, 1, DType::Float32);
  if (a.rank() != 2 || b.rank() != 2) ctx.fail("inputs A and B must be matrices");
  const bool ta = ctx.node.int_attr("transA").value_or(0) != 0, tb = ctx.node.int_attr("transB").value_or(0) != 0;
  const double alpha = ctx.node.float_attr("alpha").value_or(1.0), beta = ctx.node.float_attr("beta").value_or(1.0);
  const int64_t m = a.shape()[ta ? 1 : 0], k = a.shape()[ta ? 0 : 1];
  const int64_t kb = b.shape()[tb ? 1 : 0], n = b.shape()[tb ? 0 : 1];
  if (k != kb)
    ctx.fail("A' is " + std::to_string(m) + " x " + std::to_string(k) + " and B' is " + std::to_string(kb) + " x " +
             std::to_string(n) + ": the inner extents differ");
  const TensorInfo& info = checked_output(ctx, DType::Float32, {m, n});
  const LazyTensor lhs = as_read(ctx, a, "gemm_a"), rhs = as_read(ctx, b, "gemm_b");
  auto term = [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
    Expr x = ta ? lhs.at({r[0], i[0]}) : lhs.at({i[0], r[0]});
    Expr y = tb ? rhs.at({i[1], r[0]}) : rhs.at({r[0], i[1]});
    return x * y;
  };
  const LazyTensor product = m == 1 && tb ? matrix_vector(ctx, lhs, rhs, ta, info)
                                          : ctx.builder.reduce("gemm", info, {k}, ReduceKind::Sum, term);
  const bool has_c = ctx.has_input(2);
  if (!has_c && alpha == 1.0) return {product};
  LazyTensor c;
  if (has_c) {
    c = input_of_type(ctx, in, 2, DType::Float32);
    if (broadcast_shape(ctx, {{m, n}, c.shape()}) != std::vector<int64_t>{m, n})
      ctx.fail("C (input 2) does not broadcast to " + std::to_string(m) + " x " + std::to_string(n));
  }
  return {LazyTensor(info, [product, c, has_c, alpha, beta](const std::vector<Expr>& i) {
    Expr y = alpha == 1.0 ? product.at(i) : make_float(alpha) * product.at(i);
    if (!has_c) return y;
    Expr bias = read_broadcast(c, i);
    return y + (beta == 1.0 ? bias : make_float(beta) * bias);
  })};
}

// --- MatMul --------------------------------------------------------------------------------------

// An operand's batch axes indexed by the output's (right-aligned; an axis of extent 1 broadcasts).
std::vector<Expr> batch_indices(const std::vector<int64_t>& batch, const std::vector<Expr>& out_batch) {
  std::vector<Expr> at;
  const size_t offset = out_batch.size() - batch.size();
  for (size_t d = 0; d < batch.size(); ++d) at.push_back(batch[d] == 1 ? make_int(0) : out_batch[offset + d]);
  return at;
}

// numpy matmul: a 1-D operand is a row (A) or a column (B) whose axis the output drops; the batch
// axes of both broadcast. One Sum stage over the output's own shape, so a 1-D operand adds no
// unit axis for the schedules to tile.
Outputs matmul_op(const OpContext& ctx, const Inputs& in) {
  const LazyTensor& a = input_of_type(ctx, in, 0, DType::Float32);
  const LazyTensor& b = input_of_type(ctx, in, 1, DType::Float32);
  if (a.rank() < 1 || b.rank() < 1) ctx.fail("MatMul of a scalar");
  const bool a_row = a.rank() == 1, b_col = b.rank() == 1;
  const std::vector<int64_t>& as = a.shape();
  const std::vector<int64_t>& bs = b.shape();
  const int64_t k = as.back(), kb = b_col ? bs[0] : bs[bs.size() - 2];
  if (k != kb) ctx.fail("the inner extents differ (" + std::to_string(k) + " in A, " + std::to_string(kb) + " in B)");
  const std::vector<int64_t> a_batch(as.begin(), as.end() - (a_row ? 1 : 2));
  const std::vector<int64_t> b_batch(bs.begin(), bs.end() - (b_col ? 1 : 2));
  std::vector<int64_t> shape = broadcast_shape(ctx, {a_batch, b_batch});
  const size_t batch_rank = shape.size();
  if (!a_row) shape.push_back(as[as.size() - 2]);
  if (!b_col) shape.push_back(bs.back());
  const TensorInfo& info = checked_output(ctx, DType::Float32, shape);
  const LazyTensor lhs = as_read(ctx, a, "matmul_a"), rhs = as_read(ctx, b, "matmul_b");
  LazyTensor product = ctx.builder.reduce(
      "matmul", info, {k}, ReduceKind::Sum, [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
        const std::vector<Expr> out_batch(i.begin(), i.begin() + batch_rank);
        std::vector<Expr> x = batch_indices(a_batch, out_batch), y = batch_indices(b_batch, out_batch);
        if (!a_row) x.push_back(i[batch_rank]);
        x.push_back(r[0]);
        y.push_back(r[0]);
        if (!b_col) y.push_back(i.back());
        return lhs.at(x) * rhs.at(y);
      });
  return {product};
}

}  // namespace

void add_nn_ops(std::vector<OpSpec>& table) {
  // A contraction takes its elementwise epilogue (bias, activation, residual add) into its kernel.
  table.push_back({"Conv", OpPattern::OutEwiseFusable, conv_op});
  table.push_back({"Gemm", OpPattern::OutEwiseFusable, gemm_op});
  table.push_back({"MatMul", OpPattern::OutEwiseFusable, matmul_op});
  add_pool_ops(table);
}

}  // namespace tessel::onnx_ops
