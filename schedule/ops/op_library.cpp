// The op template registry, strict parameter parsing and the stage helpers shared by the builders.
#include "schedule/ops/op_library.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "schedule/ops/op_builders.h"
#include "schedule/ops/param_reader.h"
#include "schedule/te/error.h"

namespace tessel {

namespace {

using ops_detail::ParamReader;
using Builder = ComputeDAG (*)(const ParamReader&);

OpParam int_param(const char* name, const char* doc, const char* default_value = "") {
  return OpParam{name, ParamKind::Int, default_value, {}, doc};
}
OpParam eps_param() { return OpParam{"eps", ParamKind::Float, "1e-5", {}, "variance epsilon (> 0)"}; }
OpParam bias_param() { return OpParam{"bias", ParamKind::Choice, "0", {"0", "1"}, "add a bias vector"}; }
OpParam act_param() {
  return OpParam{"act", ParamKind::Choice, "none", {"none", "relu", "gelu", "gelu_tanh", "silu", "sigmoid"},
                 "activation applied last"};
}

struct Entry {
  OpTemplate tmpl;
  Builder build;
};

const std::vector<Entry>& entries() {
  // Built on first use (no static constructors); the order is the public listing order.
  static const std::vector<Entry> all = [] {
    std::vector<Entry> e;
    e.push_back({{"matmul", "C[M,N] = sum_k A[M,K]*B[K,N]",
                  {int_param("M", "rows of A and C"), int_param("N", "columns of B and C"),
                   int_param("K", "reduction length"), ops_detail::dtype_param()}},
                 ops_detail::build_matmul});
    e.push_back({{"dense", "Y[M,N] = act(sum_k X[M,K]*W[K,N] + b[N])",
                  {int_param("M", "rows of X and Y"), int_param("N", "output features"),
                   int_param("K", "input features"), bias_param(), act_param(), ops_detail::dtype_param()}},
                 ops_detail::build_dense});
    e.push_back({{"batch_matmul", "C[B,M,N] = sum_k A[B,M,K]*B[B,K,N]",
                  {int_param("B", "batch size"), int_param("M", "rows of each A and C"),
                   int_param("N", "columns of each B and C"), int_param("K", "reduction length"),
                   ops_detail::dtype_param()}},
                 ops_detail::build_batch_matmul});
    e.push_back({{"conv2d", "Y[N,F,H',W'] = act(conv(X[N,C,H,W], W[F,C/groups,KH,KW]) + b[F]), NCHW",
                  {int_param("N", "batch size"), int_param("C", "input channels"),
                   int_param("H", "input height"), int_param("W", "input width"),
                   int_param("F", "output channels"), int_param("KH", "kernel height"),
                   int_param("KW", "kernel width"), int_param("stride", "stride of both spatial axes", "1"),
                   int_param("pad", "zero padding on each side of both spatial axes", "0"),
                   int_param("dilation", "kernel dilation", "1"),
                   int_param("groups", "channel groups (groups = C = F: depthwise)", "1"), bias_param(),
                   act_param(),
                   OpParam{"layout",
                           ParamKind::Choice,
                           "nchw",
                           {"nchw", "nchw8c", "nchw16c", "nchw-to-nchw8c", "nchw-to-nchw16c", "nchw8c-to-nchw16c",
                            "nchw16c-to-nchw8c"},
                           "nchw, or channels in blocks of 8 / 16: X[N,C/b,H,W,b], W[F/b,C,KH,KW,b], "
                           "Y[N,F/b,H',W',b] (groups=1; depthwise: W[C/b,KH,KW,b]); nchw-to-*: X stays "
                           "X[N,C,H,W]; nchw8c-to-nchw16c / nchw16c-to-nchw8c: X in the other blocks (groups=1)"},
                   ops_detail::dtype_param()}},
                 ops_detail::build_conv2d});
    e.push_back({{"softmax", "Y[r,c] = exp(X[r,c] - max_c X[r,:]) / sum_c exp(...)",
                  {int_param("rows", "independent rows"), int_param("cols", "softmax length")}},
                 ops_detail::build_softmax});
    e.push_back({{"layernorm", "Y[r,c] = (X[r,c] - mean) / sqrt(var + eps) * gamma[c] + beta[c]",
                  {int_param("rows", "independent rows"), int_param("cols", "normalized length"), eps_param()}},
                 ops_detail::build_layernorm});
    e.push_back({{"rmsnorm", "Y[r,c] = X[r,c] * rsqrt(mean_c X[r,c]^2 + eps) * gamma[c]",
                  {int_param("rows", "independent rows"), int_param("cols", "normalized length"), eps_param()}},
                 ops_detail::build_rmsnorm});
    e.push_back({{"reduce_sum", "Y[r] = sum_c X[r,c]",
                  {int_param("rows", "independent rows"), int_param("cols", "reduced length")}},
                 ops_detail::build_reduce_sum});
    e.push_back({{"bias_residual_layernorm", "Y = layernorm(X[r,c] + b[c] + R[r,c]) * gamma[c] + beta[c]",
                  {int_param("rows", "independent rows"), int_param("cols", "normalized length"), eps_param()}},
                 ops_detail::build_bias_residual_layernorm});
    e.push_back({{"elementwise", "Y[shape] = expr(x, y, z), e.g. sigmoid(relu(x)*2+1)",
                  {OpParam{"shape", ParamKind::Shape, "", {}, "extents separated by x, e.g. 4096x4096"},
                   OpParam{"inputs", ParamKind::Choice, "1", {"1", "2", "3"}, "number of inputs x, y, z"},
                   OpParam{"expr", ParamKind::Text, "", {}, "infix expression over the inputs"}}},
                 ops_detail::build_elementwise});
    return e;
  }();
  return all;
}

std::string join_names(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i ? ", " : "") + names[i];
  return s;
}

// Strict integer syntax: an optional '-' and decimal digits, nothing else, no overflow.
bool parse_integer(const std::string& text, int64_t& out) {
  if (text.empty()) return false;
  size_t i = text[0] == '-' ? 1 : 0;
  if (i == text.size()) return false;
  for (size_t j = i; j < text.size(); ++j)
    if (text[j] < '0' || text[j] > '9') return false;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno == ERANGE || end != text.c_str() + text.size()) return false;
  out = v;
  return true;
}

// Strict float syntax: what strtod accepts, consuming the whole text, finite, no leading blanks.
bool parse_real(const std::string& text, double& out) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) return false;
  for (char c : text)  // no hex floats, inf or nan spellings
    if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'))
      return false;
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (errno == ERANGE || end != text.c_str() + text.size() || !std::isfinite(v)) return false;
  out = v;
  return true;
}

}  // namespace

const std::vector<OpTemplate>& op_templates() {
  static const std::vector<OpTemplate> all = [] {
    std::vector<OpTemplate> t;
    for (const auto& e : entries()) t.push_back(e.tmpl);
    return t;
  }();
  return all;
}

const OpTemplate* find_op_template(const std::string& name) {
  for (const OpTemplate& t : op_templates())
    if (t.name == name) return &t;
  return nullptr;
}

ComputeDAG build_op(const std::string& op, const OpParams& params) {
  for (const auto& e : entries()) {
    if (e.tmpl.name != op) continue;
    ParamReader reader(e.tmpl, params);
    return e.build(reader);
  }
  std::vector<std::string> known;
  for (const OpTemplate& t : op_templates()) known.push_back(t.name);
  throw InputError("unknown op '" + op + "'; known ops: " + join_names(known));
}

namespace ops_detail {

// --- ParamReader --------------------------------------------------------------------------------

ParamReader::ParamReader(const OpTemplate& tmpl, const OpParams& params) : op_(tmpl.name) {
  std::vector<std::string> names;
  for (const OpParam& p : tmpl.params) names.push_back(p.name);
  for (const auto& [name, text] : params) {
    bool known = false;
    for (const OpParam& p : tmpl.params) known = known || p.name == name;
    if (!known)
      throw InputError("op " + op_ + ": unknown param '" + name + "'; its params are " + join_names(names));
  }
  for (const OpParam& p : tmpl.params) {
    auto it = params.find(p.name);
    if (it == params.end()) {
      if (p.default_value.empty())
        throw InputError("op " + op_ + ": missing required param '" + p.name + "' (" + p.doc + ")");
      values_[p.name] = p.default_value;
      continue;
    }
    const std::string& text = it->second;
    switch (p.kind) {
      case ParamKind::Int: {
        int64_t v;
        if (!parse_integer(text, v)) fail(p.name, "expected an integer, got '" + text + "'");
        break;
      }
      case ParamKind::Float: {
        double v;
        if (!parse_real(text, v)) fail(p.name, "expected a number, got '" + text + "'");
        break;
      }
      case ParamKind::Choice: {
        bool ok = false;
        for (const std::string& c : p.choices) ok = ok || c == text;
        if (!ok) fail(p.name, "'" + text + "' is not one of " + join_names(p.choices));
        break;
      }
      case ParamKind::Shape: {
        std::string error;
        parse_shape(text, error);
        if (!error.empty()) fail(p.name, error);
        break;
      }
      case ParamKind::Text:
        if (text.empty()) fail(p.name, "must not be empty");
        break;
    }
    values_[p.name] = text;
  }
}

const std::string& ParamReader::value(const std::string& name) const {
  auto it = values_.find(name);
  TESSEL_CHECK(it != values_.end(), "op " + op_ + " has no param " + name);
  return it->second;
}

void ParamReader::fail(const std::string& name, const std::string& message) const {
  throw InputError("op " + op_ + ": param " + name + ": " + message);
}

int64_t ParamReader::positive_int(const std::string& name) const {
  int64_t v = 0;
  if (!parse_integer(value(name), v)) fail(name, "expected an integer, got '" + value(name) + "'");
  if (v <= 0) fail(name, "must be positive, got " + std::to_string(v));
  return v;
}

int64_t ParamReader::non_negative_int(const std::string& name) const {
  int64_t v = 0;
  if (!parse_integer(value(name), v)) fail(name, "expected an integer, got '" + value(name) + "'");
  if (v < 0) fail(name, "must not be negative, got " + std::to_string(v));
  return v;
}

double ParamReader::positive_float(const std::string& name) const {
  double v = 0;
  if (!parse_real(value(name), v)) fail(name, "expected a number, got '" + value(name) + "'");
  if (!(v > 0)) fail(name, "must be positive, got " + value(name));
  return v;
}

const std::string& ParamReader::choice(const std::string& name) const { return value(name); }

bool ParamReader::flag(const std::string& name) const { return value(name) == "1"; }

std::vector<int64_t> ParamReader::shape(const std::string& name) const {
  std::string error;
  std::vector<int64_t> dims = parse_shape(value(name), error);
  if (!error.empty()) fail(name, error);
  return dims;
}

const std::string& ParamReader::text(const std::string& name) const { return value(name); }

std::vector<int64_t> parse_shape(const std::string& text, std::string& error) {
  std::vector<int64_t> dims;
  error.clear();
  if (text.empty()) {
    error = "empty shape; expected extents separated by x, e.g. 64x128";
    return {};
  }
  size_t start = 0;
  while (true) {
    size_t end = text.find('x', start);
    std::string part = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    int64_t v = 0;
    std::string where = "dimension " + std::to_string(dims.size()) + " of '" + text + "'";
    if (part.empty() || !parse_integer(part, v)) {
      error = "malformed shape: " + where + " is '" + part + "', not an integer (expected e.g. 64x128)";
      return {};
    }
    if (v <= 0) {
      error = "malformed shape: " + where + " is " + std::to_string(v) + "; extents must be positive";
      return {};
    }
    dims.push_back(v);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return dims;
}

// --- stage helpers ------------------------------------------------------------------------------

Operation placeholder(const std::string& name, std::vector<int64_t> shape, DType dtype) {
  Operation op;
  op.name = name;
  op.is_placeholder = true;
  op.dtype = dtype;
  op.shape = std::move(shape);
  return op;
}

Operation compute(const std::string& name, std::vector<Axis> axes, Expr body) {
  Operation op;
  op.name = name;
  op.dtype = body->type.dtype;
  for (const Axis& a : axes) op.shape.push_back(a.extent);
  op.axes = std::move(axes);
  op.body = std::move(body);
  return op;
}

Operation reduce(const std::string& name, std::vector<Axis> axes, ReduceKind kind,
                 std::vector<Axis> reduce_axes, Expr body) {
  Operation op = compute(name, std::move(axes), std::move(body));
  op.reduce = kind;
  op.reduce_axes = std::move(reduce_axes);
  return op;
}

Expr read(const std::string& tensor, const std::vector<Axis>& axes) {
  std::vector<Expr> idx;
  for (const Axis& a : axes) idx.push_back(var(a));
  return make_tensor_read(tensor, std::move(idx));
}

Expr read_float(const std::string& tensor, std::vector<Expr> indices, DType dtype) {
  return make_cast(kFloat32, make_tensor_read(tensor, std::move(indices), Type{dtype, 1}));
}

Expr read_float(const std::string& tensor, const std::vector<Axis>& axes, DType dtype) {
  std::vector<Expr> idx;
  for (const Axis& a : axes) idx.push_back(var(a));
  return read_float(tensor, std::move(idx), dtype);
}

void append_store_cast(std::vector<Operation>& ops, const std::string& from, const std::string& to, DType dtype) {
  const Operation& source = ops.back();
  TESSEL_CHECK(source.name == from, "store cast of " + from + " must follow it");
  std::vector<Axis> axes;
  for (size_t d = 0; d < source.shape.size(); ++d) axes.push_back({to + "_" + std::to_string(d), source.shape[d]});
  ops.push_back(compute(to, axes, make_cast(Type{dtype, 1}, read(from, axes))));
}

OpParam dtype_param() {
  return OpParam{"dtype", ParamKind::Choice, "float32", {"float32", "float16", "bfloat16"},
                 "element type of inputs and outputs; float16 / bfloat16 compute and accumulate in float32"};
}

DType param_dtype(const ParamReader& p) {
  const std::string& d = p.choice("dtype");
  return d == "float16" ? DType::Float16 : d == "bfloat16" ? DType::BFloat16 : DType::Float32;
}

Expr apply_activation(const Expr& x, const std::string& act) {
  if (act == "none") return x;
  if (act == "relu") return max(x, f32(0));
  if (act == "sigmoid") return make_call(MathFn::Sigmoid, {x});
  if (act == "silu") return x * make_call(MathFn::Sigmoid, {x});
  if (act == "gelu")  // exact: 0.5 x (1 + erf(x / sqrt 2))
    return f32(0.5) * x * (f32(1) + make_call(MathFn::Erf, {x * f32(0.70710678118654752440)}));
  if (act == "gelu_tanh") {  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    Expr inner = f32(0.79788456080286535588) * (x + f32(0.044715) * x * x * x);
    return f32(0.5) * x * (f32(1) + make_call(MathFn::Tanh, {inner}));
  }
  TESSEL_CHECK(false, "unknown activation " + act);
  return x;
}

}  // namespace ops_detail
}  // namespace tessel
