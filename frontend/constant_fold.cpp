#include "frontend/constant_fold.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "frontend/constant_fold_internal.h"
#include "schedule/te/error.h"

namespace tessel {

namespace fold {

void fail(const Node& node, const std::string& message) { throw InputError(node.where() + ": " + message); }

const TensorData* constant(const Inputs& in, size_t k) { return k < in.size() ? in[k].data : nullptr; }

Outputs one(TensorData data) { return std::vector<TensorData>{std::move(data)}; }

int64_t small_count(const Shape& shape) {
  int64_t bounded = 1;
  bool empty = false;
  for (int64_t d : shape) {
    if (d < 0) return -1;
    empty = empty || d == 0;
    if (d > 1 && bounded > kMaxFoldElements / d) return -1;
    bounded *= std::max<int64_t>(d, 1);
  }
  return empty ? 0 : bounded;
}

Shape strides_of(const Shape& shape) {
  Shape strides(shape.size());
  int64_t acc = 1;
  for (size_t k = shape.size(); k-- > 0;) {
    strides[k] = acc;
    acc *= shape[k];
  }
  return strides;
}

std::vector<int64_t> strided_index(const Shape& out, int64_t base, const Shape& step) {
  std::vector<int64_t> index(static_cast<size_t>(small_count(out)));
  Shape counter(out.size(), 0);
  int64_t pos = base;
  for (size_t i = 0; i < index.size(); ++i) {
    index[i] = pos;
    for (size_t d = out.size(); d-- > 0;) {
      pos += step[d];
      if (++counter[d] < out[d]) break;
      pos -= step[d] * out[d];
      counter[d] = 0;
    }
  }
  return index;
}

std::vector<int64_t> broadcast_index(const Shape& in, const Shape& out) {
  const Shape strides = strides_of(in);
  Shape step(out.size(), 0);
  const size_t offset = out.size() - in.size();
  for (size_t k = 0; k < in.size(); ++k) step[offset + k] = in[k] == 1 ? 0 : strides[k];
  return strided_index(out, 0, step);
}

Shape broadcast_shapes(const std::vector<const Shape*>& shapes, const Node& node) {
  size_t rank = 0;
  for (const Shape* s : shapes) rank = std::max(rank, s->size());
  Shape out(rank, 1);
  for (const Shape* s : shapes)
    for (size_t k = 0; k < s->size(); ++k) {
      int64_t& o = out[rank - s->size() + k];
      const int64_t d = (*s)[k];
      if (o == 1)
        o = d;
      else if (d != 1 && d != o)
        fail(node, "input shapes " + shape_string(*shapes[0]) + " and " + shape_string(*s) + " do not broadcast");
    }
  return out;
}

TensorData take(const TensorData& src, Shape shape, const std::vector<int64_t>& index) {
  const int64_t e = dtype_bytes(src.dtype());
  std::vector<uint8_t> bytes(index.size() * static_cast<size_t>(e));
  for (size_t i = 0; i < index.size(); ++i) std::memcpy(bytes.data() + i * e, src.bytes() + index[i] * e, e);
  return TensorData(src.dtype(), std::move(shape), std::move(bytes), "a folded constant");
}

TensorData reshaped(const TensorData& src, Shape shape) {
  std::vector<uint8_t> bytes(src.bytes(), src.bytes() + src.byte_size());
  return TensorData(src.dtype(), std::move(shape), std::move(bytes), "a folded constant");
}

int64_t normalized_axis(int64_t axis, int64_t rank, const Node& node) {
  if (axis < -rank || axis >= rank)
    fail(node, "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

}  // namespace fold

namespace {

using namespace fold;

// The axes of Unsqueeze and Squeeze: an attribute up to opset 12, input 1 since. False when the
// input exists but is not constant.
bool read_axes(const Node& node, const Inputs& in, std::optional<Shape>& axes) {
  if (auto attr = node.ints_attr("axes")) axes = *attr;
  if (in.size() > 1 && in[1].info) {
    if (!in[1].data) return false;
    axes = in[1].data->ints();
  }
  return true;
}

// Constant --------------------------------------------------------------------------------------

Outputs fold_constant(const Node& node, const Inputs&, int64_t) {
  if (const TensorData* t = node.tensor_attr("value")) return one(*t);
  if (auto v = node.float_attr("value_float")) return one(TensorData::of_floats({}, {static_cast<float>(*v)}));
  if (auto v = node.int_attr("value_int")) return one(TensorData::of_ints({}, {*v}));
  if (auto v = node.floats_attr("value_floats"))
    return one(TensorData::of_floats({static_cast<int64_t>(v->size())}, std::vector<float>(v->begin(), v->end())));
  if (auto v = node.ints_attr("value_ints")) return one(TensorData::of_ints({static_cast<int64_t>(v->size())}, *v));
  return std::nullopt;
}

Outputs fold_identity(const Node&, const Inputs& in, int64_t) {
  if (const TensorData* x = constant(in, 0)) return one(*x);
  return std::nullopt;
}

// Cast to FLOAT, INT64 or BOOL (ONNX type numbers 1, 7, 9). A float that INT64 cannot hold (NaN,
// infinities, past 2^63) is not folded: C++ leaves that conversion undefined.
Outputs fold_cast(const Node& node, const Inputs& in, int64_t) {
  const TensorData* x = constant(in, 0);
  const std::optional<int64_t> to = node.int_attr("to");
  if (!x || !to) return std::nullopt;
  const int64_t n = x->num_elements();
  if (*to == 1) {
    std::vector<float> out(n);
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(x->as_double(i));
    return one(TensorData::of_floats(x->shape(), out));
  }
  if (*to == 9) {
    std::vector<bool> out(n);
    for (int64_t i = 0; i < n; ++i) out[i] = x->dtype() == DType::Float32 ? x->as_double(i) != 0 : x->as_int(i) != 0;
    return one(TensorData::of_bools(x->shape(), out));
  }
  if (*to != 7) return std::nullopt;
  std::vector<int64_t> out(n);
  for (int64_t i = 0; i < n; ++i) {
    if (x->dtype() != DType::Float32) {
      out[i] = x->as_int(i);
      continue;
    }
    const double v = x->as_double(i);
    if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0)) return std::nullopt;
    out[i] = static_cast<int64_t>(v);
  }
  return one(TensorData::of_ints(x->shape(), out));
}

// Shapes and sizes ------------------------------------------------------------------------------

Outputs fold_shape(const Node& node, const Inputs& in, int64_t) {
  if (in.empty() || !in[0].info) return std::nullopt;
  const Shape& shape = in[0].info->shape;
  const int64_t rank = static_cast<int64_t>(shape.size());
  const auto clamp = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
  const int64_t start = clamp(node.int_attr("start").value_or(0));
  const int64_t end = std::max(start, clamp(node.int_attr("end").value_or(rank)));
  const Shape dims(shape.begin() + start, shape.begin() + end);
  return one(TensorData::of_ints({end - start}, dims));
}

Outputs fold_size(const Node&, const Inputs& in, int64_t) {
  if (in.empty() || !in[0].info) return std::nullopt;
  int64_t n = 1;
  for (int64_t d : in[0].info->shape)
    if (__builtin_mul_overflow(n, d, &n)) return std::nullopt;
  return one(TensorData::of_ints({}, {n}));
}

Outputs fold_unsqueeze(const Node& node, const Inputs& in, int64_t) {
  const TensorData* x = constant(in, 0);
  std::optional<Shape> axes;
  if (!x || !read_axes(node, in, axes)) return std::nullopt;
  if (!axes) fail(node, "has no axes");
  const int64_t rank = static_cast<int64_t>(x->shape().size() + axes->size());
  std::vector<bool> inserted(rank, false);
  for (int64_t a : *axes) {
    const int64_t k = normalized_axis(a, rank, node);
    if (inserted[k]) fail(node, "axis " + std::to_string(a) + " is given twice");
    inserted[k] = true;
  }
  Shape shape;
  size_t next = 0;
  for (int64_t k = 0; k < rank; ++k) shape.push_back(inserted[k] ? 1 : x->shape()[next++]);
  return one(reshaped(*x, shape));
}

Outputs fold_squeeze(const Node& node, const Inputs& in, int64_t) {
  const TensorData* x = constant(in, 0);
  std::optional<Shape> axes;
  if (!x || !read_axes(node, in, axes)) return std::nullopt;
  const Shape& s = x->shape();
  std::vector<bool> dropped(s.size(), false);
  for (size_t k = 0; k < s.size(); ++k) dropped[k] = !axes && s[k] == 1;
  for (int64_t a : axes.value_or(Shape{})) {
    const int64_t k = normalized_axis(a, static_cast<int64_t>(s.size()), node);
    if (s[k] != 1) fail(node, "cannot squeeze axis " + std::to_string(a) + " of extent " + std::to_string(s[k]));
    dropped[k] = true;
  }
  Shape shape;
  for (size_t k = 0; k < s.size(); ++k)
    if (!dropped[k]) shape.push_back(s[k]);
  return one(reshaped(*x, shape));
}

Outputs fold_flatten(const Node& node, const Inputs& in, int64_t) {
  const TensorData* x = constant(in, 0);
  if (!x) return std::nullopt;
  const Shape& s = x->shape();
  const int64_t rank = static_cast<int64_t>(s.size());
  int64_t axis = node.int_attr("axis").value_or(1);
  if (axis < -rank || axis > rank) fail(node, "axis " + std::to_string(axis) + " is out of range");
  if (axis < 0) axis += rank;
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < rank; ++k) (k < axis ? outer : inner) *= s[k];
  return one(reshaped(*x, {outer, inner}));
}

// ONNX's Reshape: 0 copies the input's extent (unless allowzero), one -1 takes what is left.
Shape reshape_target(const Node& node, const Shape& from, const Shape& target, int64_t count) {
  const bool allow_zero = node.int_attr("allowzero").value_or(0) != 0;
  Shape out(target.size());
  int64_t inferred = -1, known = 1;
  for (size_t k = 0; k < target.size(); ++k) {
    out[k] = target[k];
    if (target[k] == 0 && !allow_zero) {
      if (k >= from.size()) fail(node, "shape " + shape_string(target) + " copies a dimension the input lacks");
      out[k] = from[k];
    } else if (target[k] == -1) {
      if (inferred >= 0) fail(node, "shape " + shape_string(target) + " has two -1");
      inferred = static_cast<int64_t>(k);
      continue;
    } else if (target[k] < -1) {
      fail(node, "shape " + shape_string(target) + " has a negative extent");
    }
    if (__builtin_mul_overflow(known, out[k], &known)) fail(node, "shape " + shape_string(target) + " overflows");
  }
  if (inferred >= 0) {
    if (known == 0 || count % known != 0)
      fail(node, "cannot reshape " + shape_string(from) + " to " + shape_string(target));
    out[inferred] = count / known;
  } else if (known != count) {
    fail(node, "cannot reshape " + shape_string(from) + " to " + shape_string(target));
  }
  return out;
}

Outputs fold_reshape(const Node& node, const Inputs& in, int64_t opset) {
  const TensorData* x = constant(in, 0);
  const TensorData* target = constant(in, 1);
  std::optional<Shape> attr = opset < 5 ? node.ints_attr("shape") : std::nullopt;
  if (!x || (!target && !attr)) return std::nullopt;
  return one(reshaped(*x, reshape_target(node, x->shape(), attr ? *attr : target->ints(), x->num_elements())));
}

Outputs fold_expand(const Node& node, const Inputs& in, int64_t) {
  const TensorData* x = constant(in, 0);
  const TensorData* target = constant(in, 1);
  if (!x || !target) return std::nullopt;
  const Shape wanted = target->ints();
  for (int64_t d : wanted)
    if (d < 0) fail(node, "shape " + shape_string(wanted) + " has a negative extent");
  const Shape out = broadcast_shapes({&x->shape(), &wanted}, node);
  if (small_count(out) < 0) return std::nullopt;
  return one(take(*x, out, broadcast_index(x->shape(), out)));
}

Outputs fold_constant_of_shape(const Node& node, const Inputs& in, int64_t) {
  const TensorData* target = constant(in, 0);
  if (!target) return std::nullopt;
  const Shape shape = target->ints();
  for (int64_t d : shape)
    if (d < 0) fail(node, "shape " + shape_string(shape) + " has a negative extent");
  const int64_t n = small_count(shape);
  if (n < 0) return std::nullopt;
  const TensorData* value = node.tensor_attr("value");
  const TensorData fill = value ? *value : TensorData::of_floats({1}, {0.0f});
  if (fill.num_elements() != 1) fail(node, "its value must hold one element");
  return one(take(fill, shape, std::vector<int64_t>(static_cast<size_t>(n), 0)));
}

// The fold of every op type, by name.
using FoldFn = Outputs (*)(const Node&, const Inputs&, int64_t);
const std::map<std::string, FoldFn>& fold_table() {
  static const std::map<std::string, FoldFn> table = {
      {"Constant", fold_constant},
      {"Identity", fold_identity},
      {"Cast", fold_cast},
      {"Shape", fold_shape},
      {"Size", fold_size},
      {"Unsqueeze", fold_unsqueeze},
      {"Squeeze", fold_squeeze},
      {"Flatten", fold_flatten},
      {"Reshape", fold_reshape},
      {"Expand", fold_expand},
      {"ConstantOfShape", fold_constant_of_shape},
      {"Concat", fold_concat},
      {"Gather", fold_gather},
      {"Slice", fold_slice},
      {"Range", fold_range},
      {"Equal", fold_equal},
      {"Where", fold_where},
      {"Add", fold_arithmetic},
      {"Sub", fold_arithmetic},
      {"Mul", fold_arithmetic},
      {"Div", fold_arithmetic},
      {"Mod", fold_arithmetic},
      {"Max", fold_extreme},
      {"Min", fold_extreme},
      {"Neg", fold_neg},
  };
  return table;
}

}  // namespace

bool is_foldable_op(const std::string& op_type) { return fold_table().count(op_type) > 0; }

std::optional<std::vector<TensorData>> fold_node(const Node& node, const std::vector<FoldInput>& inputs,
                                                 int64_t opset) {
  auto it = fold_table().find(node.op_type);
  if (it == fold_table().end()) return std::nullopt;
  Outputs out = it->second(node, inputs, opset);
  // Ops with optional extra outputs fold only when the node asks for exactly what was computed.
  if (!out || out->size() != node.outputs.size()) return std::nullopt;
  for (const TensorData& t : *out)
    if (t.num_elements() > kMaxFoldElements) return std::nullopt;
  return out;
}

}  // namespace tessel
