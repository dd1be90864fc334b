// The elementwise and broadcast ONNX ops: arithmetic, math functions, comparisons and logic, Where,
// Cast, Clip, Min / Max / Sum / Mean, and Identity and inference-time Dropout. None makes a stage:
// each returns an expression over its output's indices that its readers inline, so any chain of
// them after a convolution or a matmul costs one epilogue stage. Activations and inference-time
// BatchNormalization too.
#include <functional>
#include <initializer_list>
#include <iterator>
#include <optional>

#include "frontend/ops/op_families.h"

namespace tessel::onnx_ops {
namespace {

using Inputs = std::vector<LazyTensor>;
using Outputs = std::vector<LazyTensor>;
using UnaryFn = std::function<Expr(const Expr&)>;
using BinaryFn = std::function<Expr(const Expr&, const Expr&)>;
using NaryFn = std::function<Expr(const std::vector<Expr>&)>;

constexpr std::initializer_list<DType> kNumeric = {DType::Float32, DType::Int64};

// --- what the definitions share ------------------------------------------------------------------

const LazyTensor& required(const OpContext& ctx, const Inputs& in, size_t k) {
  if (!ctx.has_input(k) || k >= in.size()) ctx.fail("input " + std::to_string(k) + " is required");
  return in[k];
}

// The inputs of a variadic op (Min, Max, Sum, Mean): at least one, none left out.
std::vector<LazyTensor> present_inputs(const OpContext& ctx, const Inputs& in) {
  if (in.empty()) ctx.fail("needs at least one input");
  for (size_t k = 0; k < in.size(); ++k) required(ctx, in, k);
  return in;
}

// The one dtype every operand has, which must be among `allowed` (ONNX ties them to one type T).
DType common_dtype(const OpContext& ctx, const std::vector<LazyTensor>& operands,
                   std::initializer_list<DType> allowed) {
  const DType t = operands.at(0).dtype();
  for (const LazyTensor& x : operands)
    if (x.dtype() != t) ctx.fail("its inputs mix " + to_string(t) + " and " + to_string(x.dtype()));
  for (DType a : allowed)
    if (a == t) return t;
  ctx.fail("does not take " + to_string(t) + " inputs");
}

// out[i] = f(operands at i) with numpy broadcasting, out of type `dtype`.
Outputs broadcast_map(const OpContext& ctx, const std::vector<LazyTensor>& operands, DType dtype, const NaryFn& f) {
  std::vector<std::vector<int64_t>> shapes;
  for (const LazyTensor& x : operands) shapes.push_back(x.shape());
  const TensorInfo& info = checked_output(ctx, dtype, broadcast_shape(ctx, shapes));
  return {LazyTensor(info, [operands, f](const std::vector<Expr>& i) {
    std::vector<Expr> v;
    for (const LazyTensor& x : operands) v.push_back(read_broadcast(x, i));
    return f(v);
  })};
}

// out[i] = f(x[i]) for x of a type among `allowed`; f keeps the type.
Outputs unary(const OpContext& ctx, const Inputs& in, std::initializer_list<DType> allowed, const UnaryFn& f) {
  const LazyTensor& x = required(ctx, in, 0);
  common_dtype(ctx, {x}, allowed);
  const TensorInfo& info = checked_output(ctx, x.dtype(), x.shape());
  return {LazyTensor(info, [x, f](const std::vector<Expr>& i) { return f(x.at(i)); })};
}

// --- arithmetic ----------------------------------------------------------------------------------

// ONNX integer division truncates toward zero (C's `/`); the IR's integer division floors, so the
// quotient of an inexact division with operands of different signs is one too small.
Expr divide(const Expr& a, const Expr& b) {
  if (a->type.is_float()) return a / b;
  Expr q = make_binary(ExprOp::FloorDiv, a, b);
  Expr inexact = make_binary(ExprOp::NE, make_binary(ExprOp::FloorMod, a, b), make_int(0));
  Expr signs_differ = make_binary(ExprOp::NE, a < make_int(0), b < make_int(0));
  return make_select(logical_and(inexact, signs_differ), q + make_int(1), q);
}

// x ** y for a float x. Exponents 1, 2 and 3 given as constants become multiplications: LayerNorm
// decomposed by the exporter squares, tanh-GELU cubes, and pow costs a log and an exp per element.
Expr power(const Expr& x, Expr y) {
  if (const int64_t* i = as_int(y)) y = make_float(static_cast<double>(*i));
  if (y->type.is_int()) y = make_cast(kFloat32, y);
  if (const double* e = as_float(y)) {
    if (*e == 1) return x;
    if (*e == 2) return x * x;
    if (*e == 3) return x * x * x;
  }
  return make_call(MathFn::Pow, {x, y});
}

Outputs pow_op(const OpContext& ctx, const Inputs& in) {
  const LazyTensor& x = input_of_type(ctx, in, 0, DType::Float32);
  const LazyTensor& y = required(ctx, in, 1);
  if (y.dtype() == DType::Bool) ctx.fail("the exponent (input 1) is bool");
  std::vector<int64_t> shape = broadcast_shape(ctx, {x.shape(), y.shape()});
  const TensorInfo& info = checked_output(ctx, DType::Float32, shape);
  return {LazyTensor(info,
                     [x, y](const std::vector<Expr>& i) { return power(read_broadcast(x, i), read_broadcast(y, i)); })};
}

// Sum or Mean of any number of inputs, broadcast.
Outputs sum_op(const OpContext& ctx, const Inputs& in, bool mean) {
  std::vector<LazyTensor> operands = present_inputs(ctx, in);
  DType t = common_dtype(ctx, operands, mean ? std::initializer_list<DType>{DType::Float32} : kNumeric);
  const double count = static_cast<double>(operands.size());
  return broadcast_map(ctx, operands, t, [mean, count](const std::vector<Expr>& v) {
    Expr s = v[0];
    for (size_t k = 1; k < v.size(); ++k) s = s + v[k];
    return mean ? s / make_float(count) : s;
  });
}

// Min or Max of any number of inputs, broadcast. Floats follow the IR's min / max (a NaN operand
// yields the other one).
Outputs min_max_op(const OpContext& ctx, const Inputs& in, bool is_max) {
  std::vector<LazyTensor> operands = present_inputs(ctx, in);
  DType t = common_dtype(ctx, operands, kNumeric);
  return broadcast_map(ctx, operands, t, [is_max](const std::vector<Expr>& v) {
    Expr m = v[0];
    for (size_t k = 1; k < v.size(); ++k) m = is_max ? max(m, v[k]) : min(m, v[k]);
    return m;
  });
}

// a op b with numpy broadcasting, both of one type among `allowed`; the result has the inputs' type
// or, for comparisons, bool.
Outputs binary(const OpContext& ctx, const Inputs& in, std::initializer_list<DType> allowed, bool to_bool,
               const BinaryFn& f) {
  std::vector<LazyTensor> operands = {required(ctx, in, 0), required(ctx, in, 1)};
  DType t = common_dtype(ctx, operands, allowed);
  return broadcast_map(ctx, operands, to_bool ? DType::Bool : t,
                       [f](const std::vector<Expr>& v) { return f(v[0], v[1]); });
}

Outputs arithmetic(const OpContext& ctx, const Inputs& in, const BinaryFn& f) {
  return binary(ctx, in, kNumeric, false, f);
}

Outputs comparison(const OpContext& ctx, const Inputs& in, ExprOp op, std::initializer_list<DType> allowed) {
  return binary(ctx, in, allowed, true, [op](const Expr& a, const Expr& b) { return make_binary(op, a, b); });
}

Outputs where_op(const OpContext& ctx, const Inputs& in) {
  const LazyTensor& cond = input_of_type(ctx, in, 0, DType::Bool);
  std::vector<LazyTensor> branches = {required(ctx, in, 1), required(ctx, in, 2)};
  DType t = common_dtype(ctx, branches, {DType::Float32, DType::Int64, DType::Bool});
  return broadcast_map(ctx, {cond, branches[0], branches[1]}, t,
                       [](const std::vector<Expr>& v) { return make_select(v[0], v[1], v[2]); });
}

// --- Cast, Clip, Identity, Dropout ---------------------------------------------------------------

// ONNX TensorProto.DataType codes, for Cast's `to`.
std::optional<DType> dtype_of_onnx_code(int64_t code) {
  switch (code) {
    case 1:
      return DType::Float32;
    case 7:
      return DType::Int64;
    case 9:
      return DType::Bool;
    default:
      return std::nullopt;
  }
}

std::string onnx_type_name(int64_t code) {
  static const char* const names[] = {"UNDEFINED", "FLOAT",  "UINT8",     "INT8",       "UINT16",  "INT16",
                                      "INT32",     "INT64",  "STRING",    "BOOL",       "FLOAT16", "DOUBLE",
                                      "UINT32",    "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16"};
  if (code >= 0 && code < static_cast<int64_t>(std::size(names))) return names[code];
  return "type code " + std::to_string(code);
}

// Cast's conversions: to bool, anything nonzero (NaN included) is true; float to int64 truncates
// toward zero; bool to a number is 0 or 1.
Expr convert(const Expr& x, DType to) {
  if (x->type.dtype == to) return x;
  if (to == DType::Bool) return make_binary(ExprOp::NE, x, x->type.is_float() ? make_float(0) : make_int(0));
  return make_cast(Type{to, 1}, x);
}

Outputs cast_op(const OpContext& ctx, const Inputs& in) {
  const LazyTensor& x = required(ctx, in, 0);
  std::optional<int64_t> to = ctx.node.int_attr("to");
  if (!to) ctx.fail("attribute 'to' is required");
  std::optional<DType> target = dtype_of_onnx_code(*to);
  if (!target) ctx.fail("Cast to " + onnx_type_name(*to) + " is not supported (tessel computes FLOAT, INT64 and BOOL)");
  const DType t = *target;
  const TensorInfo& info = checked_output(ctx, t, x.shape());
  return {LazyTensor(info, [x, t](const std::vector<Expr>& i) { return convert(x.at(i), t); })};
}

// A bound of Clip from input k: its one value as an immediate when it is a constant (the usual
// case), else a read of the one-element tensor; nothing when the input is left out.
std::optional<Expr> clip_bound(const OpContext& ctx, const Inputs& in, size_t k, DType dtype) {
  if (!ctx.has_input(k)) return std::nullopt;
  const Value& v = ctx.graph.value(ctx.node.inputs[k]);
  if (v.info.dtype != dtype) ctx.fail("input " + std::to_string(k) + " is not of the input's type");
  if (v.constant) {
    if (v.constant->num_elements() != 1) ctx.fail("input " + std::to_string(k) + " must hold one value");
    return dtype == DType::Float32 ? make_float(v.constant->as_double(0)) : make_int(v.constant->as_int(0));
  }
  const LazyTensor& b = required(ctx, in, k);
  int64_t elements = 1;
  for (int64_t d : b.shape()) elements *= d;
  if (elements != 1) ctx.fail("input " + std::to_string(k) + " must hold one value");
  return b.at(std::vector<Expr>(b.shape().size(), make_int(0)));
}

// Clip: min / max from inputs 1 and 2 since opset 11, from attributes before.
Outputs clip_op(const OpContext& ctx, const Inputs& in) {
  const LazyTensor& x = required(ctx, in, 0);
  if (x.dtype() == DType::Bool) ctx.fail("input 0 is bool");
  std::optional<Expr> lo, hi;
  if (ctx.graph.opset >= 11) {
    lo = clip_bound(ctx, in, 1, x.dtype());
    hi = clip_bound(ctx, in, 2, x.dtype());
  } else {
    if (std::optional<double> v = ctx.node.float_attr("min")) lo = make_float(*v);
    if (std::optional<double> v = ctx.node.float_attr("max")) hi = make_float(*v);
  }
  return unary(ctx, in, {x.dtype()}, [lo, hi](const Expr& v) {
    Expr r = v;
    if (lo) r = max(r, *lo);
    if (hi) r = min(r, *hi);
    return r;
  });
}

Outputs identity_op(const OpContext& ctx, const Inputs& in) {
  const LazyTensor& x = required(ctx, in, 0);
  checked_output(ctx, x.dtype(), x.shape());
  return {x};
}

// Dropout at inference is the identity. Training mode (input 2 true) and a mask someone reads are
// refused: tessel compiles inference, and the mask of an identity would be all true.
Outputs dropout_op(const OpContext& ctx, const Inputs& in) {
  if (ctx.has_input(2)) {
    const Value& mode = ctx.graph.value(ctx.node.inputs[2]);
    if (!mode.constant) ctx.fail("training_mode (input 2) must be a constant");
    if (mode.constant->num_elements() != 1 || mode.constant->as_int(0) != 0)
      ctx.fail("training mode is not supported (tessel compiles inference)");
  }
  if (output_used(ctx, 1)) ctx.fail("its mask output is read; tessel compiles inference, where there is no mask");
  return identity_op(ctx, in);
}

// --- unary math ----------------------------------------------------------------------------------

Outputs math(const OpContext& ctx, const Inputs& in, MathFn fn) {
  return unary(ctx, in, {DType::Float32}, [fn](const Expr& x) { return make_call(fn, {x}); });
}

Expr absolute(const Expr& x) {
  return x->type.is_float() ? make_call(MathFn::Abs, {x}) : make_select(x < make_int(0), -x, x);
}

Expr sign(const Expr& x) {
  Expr zero = x->type.is_float() ? make_float(0) : make_int(0);
  Expr one = x->type.is_float() ? make_float(1) : make_int(1);
  return make_select(x > zero, one, make_select(x < zero, -one, zero));
}

// --- activations and BatchNormalization ----------------------------------------------------------

double float_attr(const OpContext& ctx, const char* name, double fallback) {
  return ctx.node.float_attr(name).value_or(fallback);
}

Outputs float_unary(const OpContext& ctx, const Inputs& in, const UnaryFn& f) {
  return unary(ctx, in, {DType::Float32}, f);
}

// HardSigmoid's clamp: max(0, min(1, alpha x + beta)); HardSwish is x times it with alpha 1/6.
Expr hard_sigmoid(const Expr& x, double alpha, double beta) {
  return max(make_float(0), min(make_float(1), make_float(alpha) * x + make_float(beta)));
}

// BatchNormalization in inference form, over the channel axis 1:
//   y = (x - mean[c]) / sqrt(var[c] + epsilon) * scale[c] + B[c].
// The model simplification folds it into a preceding convolution; this is the form for the rest
// (after an Add, in a 1-D model). Training mode and its running statistics are refused.
Outputs batch_norm_op(const OpContext& ctx, const Inputs& in) {
  const LazyTensor& x = input_of_type(ctx, in, 0, DType::Float32);
  if (x.rank() < 2) ctx.fail("input 0 needs a channel axis (rank >= 2)");
  if (ctx.node.int_attr("training_mode").value_or(0) != 0)
    ctx.fail("training mode is not supported (tessel compiles inference)");
  if (ctx.node.int_attr("spatial").value_or(1) != 1) ctx.fail("spatial = 0 (per-element statistics) is not supported");
  for (size_t k = 1; k < ctx.node.outputs.size(); ++k)
    if (output_used(ctx, k)) ctx.fail("output " + std::to_string(k) + " (a training statistic) is read");
  const int64_t channels = x.shape()[1];
  std::vector<LazyTensor> params;
  for (size_t k = 1; k <= 4; ++k) {
    const LazyTensor& p = input_of_type(ctx, in, k, DType::Float32);
    if (p.shape() != std::vector<int64_t>{channels})
      ctx.fail("input " + std::to_string(k) + " must hold one value per channel (" + std::to_string(channels) + ")");
    params.push_back(p);
  }
  const double eps = float_attr(ctx, "epsilon", 1e-5);
  const TensorInfo& info = checked_output(ctx, DType::Float32, x.shape());
  return {LazyTensor(info, [x, params, eps](const std::vector<Expr>& i) {
    auto at_channel = [&](size_t k) { return params[k].at({i[1]}); };
    Expr std_dev = make_call(MathFn::Sqrt, {at_channel(3) + make_float(eps)});
    return (x.at(i) - at_channel(2)) / std_dev * at_channel(0) + at_channel(1);
  })};
}

// PRelu: x for x >= 0, slope * x below, the slope broadcast to x's shape.
Outputs prelu_op(const OpContext& ctx, const Inputs& in) {
  const LazyTensor& x = input_of_type(ctx, in, 0, DType::Float32);
  const LazyTensor& slope = input_of_type(ctx, in, 1, DType::Float32);
  if (broadcast_shape(ctx, {x.shape(), slope.shape()}) != x.shape())
    ctx.fail("the slope (input 1) does not broadcast to the input's shape");
  return broadcast_map(ctx, {x, slope}, DType::Float32,
                       [](const std::vector<Expr>& v) { return make_select(v[0] < make_float(0), v[1] * v[0], v[0]); });
}

void add_activations(std::vector<OpSpec>& t) {
  using P = OpPattern;
  // Relu as max(x, 0), like the op templates' activation (the IR's max takes 0 for a NaN).
  t.push_back({"Relu", P::Elementwise, [](const OpContext& c, const Inputs& in) {
                 return unary(c, in, kNumeric,
                              [](const Expr& x) { return max(x, x->type.is_float() ? make_float(0) : make_int(0)); });
               }});
  t.push_back({"LeakyRelu", P::Elementwise, [](const OpContext& c, const Inputs& in) {
                 const double alpha = float_attr(c, "alpha", 0.01);
                 return float_unary(c, in, [alpha](const Expr& x) {
                   return make_select(x < make_float(0), make_float(alpha) * x, x);
                 });
               }});
  t.push_back({"Elu", P::Elementwise, [](const OpContext& c, const Inputs& in) {
                 const double alpha = float_attr(c, "alpha", 1.0);
                 return float_unary(c, in, [alpha](const Expr& x) {
                   Expr below = make_float(alpha) * (make_call(MathFn::Exp, {x}) - make_float(1));
                   return make_select(x < make_float(0), below, x);
                 });
               }});
  t.push_back({"Selu", P::Elementwise, [](const OpContext& c, const Inputs& in) {
                 const double alpha = float_attr(c, "alpha", 1.67326319217681884765625);
                 const double gamma = float_attr(c, "gamma", 1.05070102214813232421875);
                 return float_unary(c, in, [alpha, gamma](const Expr& x) {
                   Expr below = make_float(alpha) * (make_call(MathFn::Exp, {x}) - make_float(1));
                   return make_float(gamma) * make_select(x > make_float(0), x, below);
                 });
               }});
  t.push_back({"PRelu", P::Broadcast, prelu_op});
  t.push_back({"HardSigmoid", P::Elementwise, [](const OpContext& c, const Inputs& in) {
                 const double alpha = float_attr(c, "alpha", 0.2), beta = float_attr(c, "beta", 0.5);
                 return float_unary(c, in, [alpha, beta](const Expr& x) { return hard_sigmoid(x, alpha, beta); });
               }});
  t.push_back({"HardSwish", P::Elementwise, [](const OpContext& c, const Inputs& in) {
                 return float_unary(c, in, [](const Expr& x) { return x * hard_sigmoid(x, 1.0 / 6.0, 0.5); });
               }});
  // Softplus log(1 + exp(x)) as max(x, 0) + log(1 + exp(-|x|)): the same function, without the
  // overflow of exp(x) to inf for x > 88.
  t.push_back({"Softplus", P::Elementwise, [](const OpContext& c, const Inputs& in) {
                 return float_unary(c, in, [](const Expr& x) {
                   Expr tail = make_call(MathFn::Exp, {-make_call(MathFn::Abs, {x})});
                   return max(x, make_float(0)) + make_call(MathFn::Log, {make_float(1) + tail});
                 });
               }});
  t.push_back({"Softsign", P::Elementwise, [](const OpContext& c, const Inputs& in) {
                 return float_unary(c, in,
                                    [](const Expr& x) { return x / (make_float(1) + make_call(MathFn::Abs, {x})); });
               }});
  t.push_back({"BatchNormalization", P::Broadcast, batch_norm_op});
}

}  // namespace

void add_elementwise_ops(std::vector<OpSpec>& t) {
  using P = OpPattern;
  // Binary ops broadcast; a same-shape use is still Broadcast, the kind being a property of the op.
  t.push_back({"Add", P::Broadcast, [](const OpContext& c, const Inputs& in) {
                 return arithmetic(c, in, [](const Expr& a, const Expr& b) { return a + b; });
               }});
  t.push_back({"Sub", P::Broadcast, [](const OpContext& c, const Inputs& in) {
                 return arithmetic(c, in, [](const Expr& a, const Expr& b) { return a - b; });
               }});
  t.push_back({"Mul", P::Broadcast, [](const OpContext& c, const Inputs& in) {
                 return arithmetic(c, in, [](const Expr& a, const Expr& b) { return a * b; });
               }});
  t.push_back({"Div", P::Broadcast, [](const OpContext& c, const Inputs& in) { return arithmetic(c, in, divide); }});
  t.push_back({"Pow", P::Broadcast, pow_op});
  t.push_back({"Min", P::Broadcast, [](const OpContext& c, const Inputs& in) { return min_max_op(c, in, false); }});
  t.push_back({"Max", P::Broadcast, [](const OpContext& c, const Inputs& in) { return min_max_op(c, in, true); }});
  t.push_back({"Sum", P::Broadcast, [](const OpContext& c, const Inputs& in) { return sum_op(c, in, false); }});
  t.push_back({"Mean", P::Broadcast, [](const OpContext& c, const Inputs& in) { return sum_op(c, in, true); }});
  t.push_back({"Where", P::Broadcast, where_op});

  t.push_back({"Equal", P::Broadcast, [](const OpContext& c, const Inputs& in) {
                 return comparison(c, in, ExprOp::EQ, {DType::Float32, DType::Int64, DType::Bool});
               }});
  t.push_back({"Less", P::Broadcast,
               [](const OpContext& c, const Inputs& in) { return comparison(c, in, ExprOp::LT, kNumeric); }});
  t.push_back({"LessOrEqual", P::Broadcast,
               [](const OpContext& c, const Inputs& in) { return comparison(c, in, ExprOp::LE, kNumeric); }});
  t.push_back({"Greater", P::Broadcast,
               [](const OpContext& c, const Inputs& in) { return comparison(c, in, ExprOp::GT, kNumeric); }});
  t.push_back({"GreaterOrEqual", P::Broadcast,
               [](const OpContext& c, const Inputs& in) { return comparison(c, in, ExprOp::GE, kNumeric); }});
  t.push_back({"And", P::Broadcast, [](const OpContext& c, const Inputs& in) {
                 return binary(c, in, {DType::Bool}, true,
                               [](const Expr& a, const Expr& b) { return logical_and(a, b); });
               }});
  t.push_back({"Or", P::Broadcast, [](const OpContext& c, const Inputs& in) {
                 return binary(c, in, {DType::Bool}, true,
                               [](const Expr& a, const Expr& b) { return logical_or(a, b); });
               }});
  t.push_back({"Xor", P::Broadcast,
               [](const OpContext& c, const Inputs& in) { return comparison(c, in, ExprOp::NE, {DType::Bool}); }});
  t.push_back({"Not", P::Elementwise,
               [](const OpContext& c, const Inputs& in) { return unary(c, in, {DType::Bool}, make_not); }});

  t.push_back({"Neg", P::Elementwise, [](const OpContext& c, const Inputs& in) {
                 return unary(c, in, kNumeric, [](const Expr& x) { return -x; });
               }});
  t.push_back(
      {"Abs", P::Elementwise, [](const OpContext& c, const Inputs& in) { return unary(c, in, kNumeric, absolute); }});
  t.push_back(
      {"Sign", P::Elementwise, [](const OpContext& c, const Inputs& in) { return unary(c, in, kNumeric, sign); }});
  t.push_back({"Reciprocal", P::Elementwise, [](const OpContext& c, const Inputs& in) {
                 return unary(c, in, {DType::Float32}, [](const Expr& x) { return make_float(1) / x; });
               }});
  t.push_back({"Sqrt", P::Elementwise, [](const OpContext& c, const Inputs& in) { return math(c, in, MathFn::Sqrt); }});
  t.push_back({"Exp", P::Elementwise, [](const OpContext& c, const Inputs& in) { return math(c, in, MathFn::Exp); }});
  t.push_back({"Log", P::Elementwise, [](const OpContext& c, const Inputs& in) { return math(c, in, MathFn::Log); }});
  t.push_back({"Erf", P::Elementwise, [](const OpContext& c, const Inputs& in) { return math(c, in, MathFn::Erf); }});
  t.push_back({"Tanh", P::Elementwise, [](const OpContext& c, const Inputs& in) { return math(c, in, MathFn::Tanh); }});
  t.push_back(
      {"Sigmoid", P::Elementwise, [](const OpContext& c, const Inputs& in) { return math(c, in, MathFn::Sigmoid); }});

  t.push_back({"Cast", P::Elementwise, cast_op});
  t.push_back({"Clip", P::Elementwise, clip_op});
  t.push_back({"Identity", P::Elementwise, identity_op});
  t.push_back({"Dropout", P::Elementwise, dropout_op});
  add_activations(t);
}

}  // namespace tessel::onnx_ops
