// The constant folds of indexing (Concat, Gather, Slice, Range) and elementwise arithmetic
// (Equal, Where, Add, Sub, Mul, Div, Mod, Max, Min, Neg), with ONNX's semantics: numpy broadcasting, negative indices
// counting from the end, slice bounds clamped, integer division truncating toward zero.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "frontend/constant_fold_internal.h"

namespace tessel::fold {

namespace {

int64_t product(const Shape& shape, size_t from, size_t to) {
  int64_t n = 1;
  for (size_t k = from; k < to; ++k) n *= shape[k];
  return n;
}

std::string type_pair(const TensorData& a, const TensorData& b) {
  return "inputs of types " + to_string(a.dtype()) + " and " + to_string(b.dtype());
}

}  // namespace

Outputs fold_concat(const Node& node, const Inputs& in, int64_t) {
  std::vector<const TensorData*> parts;
  for (size_t k = 0; k < in.size(); ++k) {
    if (!constant(in, k)) return std::nullopt;
    parts.push_back(in[k].data);
  }
  if (parts.empty()) fail(node, "has no inputs");
  const Shape& first = parts[0]->shape();
  const int64_t rank = static_cast<int64_t>(first.size());
  const int64_t axis = normalized_axis(node.int_attr("axis").value_or(0), rank, node);
  Shape out = first;
  out[axis] = 0;
  for (const TensorData* p : parts) {
    Shape s = p->shape();
    if (p->dtype() != parts[0]->dtype()) fail(node, type_pair(*parts[0], *p));
    if (static_cast<int64_t>(s.size()) != rank)
      fail(node, "inputs of ranks " + std::to_string(rank) + " and " + std::to_string(s.size()));
    out[axis] += s[axis];
    s[axis] = first[axis];
    if (s != first)
      fail(node, "input shapes " + shape_string(first) + " and " + shape_string(p->shape()) + " differ off the axis");
  }
  if (small_count(out) < 0) return std::nullopt;
  const int64_t e = dtype_bytes(parts[0]->dtype());
  const int64_t outer = product(first, 0, axis), inner = product(first, axis + 1, first.size());
  std::vector<uint8_t> bytes;
  bytes.reserve(static_cast<size_t>(small_count(out) * e));
  for (int64_t o = 0; o < outer; ++o)
    for (const TensorData* p : parts) {
      const int64_t block = p->shape()[axis] * inner * e;
      bytes.insert(bytes.end(), p->bytes() + o * block, p->bytes() + (o + 1) * block);
    }
  return one(TensorData(parts[0]->dtype(), out, std::move(bytes), node.where()));
}

Outputs fold_gather(const Node& node, const Inputs& in, int64_t) {
  const TensorData* data = constant(in, 0);
  const TensorData* indices = constant(in, 1);
  if (!data || !indices) return std::nullopt;
  if (indices->dtype() != DType::Int64) fail(node, "indices must be integers");
  const Shape& s = data->shape();
  if (s.empty()) fail(node, "cannot gather from a scalar");
  const int64_t axis = normalized_axis(node.int_attr("axis").value_or(0), static_cast<int64_t>(s.size()), node);
  Shape out(s.begin(), s.begin() + axis);
  out.insert(out.end(), indices->shape().begin(), indices->shape().end());
  out.insert(out.end(), s.begin() + axis + 1, s.end());
  if (small_count(out) < 0) return std::nullopt;
  const int64_t outer = product(s, 0, axis), inner = product(s, axis + 1, s.size()), extent = s[axis];
  std::vector<int64_t> index;
  index.reserve(static_cast<size_t>(small_count(out)));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < indices->num_elements(); ++j) {
      int64_t i = indices->as_int(j);
      if (i < -extent || i >= extent)
        fail(node, "index " + std::to_string(i) + " is out of range for extent " + std::to_string(extent));
      if (i < 0) i += extent;
      for (int64_t r = 0; r < inner; ++r) index.push_back((o * extent + i) * inner + r);
    }
  return one(take(*data, out, index));
}

namespace {

// One axis of a slice after ONNX's clamping: the first index, the step and the element count.
struct SliceAxis {
  int64_t start = 0, step = 1, count = 0;
};

SliceAxis clamp_slice(int64_t start, int64_t end, int64_t step, int64_t extent, const Node& node) {
  if (step == 0) fail(node, "a slice step is 0");
  if (extent == 0) return {0, step, 0};
  if (start < 0) start += extent;
  if (end < 0) end += extent;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, extent);
    end = std::clamp<int64_t>(end, 0, extent);
  } else {
    start = std::clamp<int64_t>(start, 0, extent - 1);
    end = std::clamp<int64_t>(end, -1, extent - 1);
  }
  // Both ends lie in [-1, extent], so the distance fits; written to not overflow for any step.
  const int64_t distance = end - start;
  if (step > 0) return {start, step, distance <= 0 ? 0 : 1 + (distance - 1) / step};
  return {start, step, distance >= 0 ? 0 : 1 + (distance + 1) / step};
}

// Starts, ends, axes and steps: attributes up to opset 9, inputs since.
bool slice_params(const Node& node, const Inputs& in, int64_t opset, std::vector<Shape>& params) {
  if (opset < 10) {
    params = {node.ints_attr("starts").value_or(Shape{}), node.ints_attr("ends").value_or(Shape{}),
              node.ints_attr("axes").value_or(Shape{}), Shape{}};
    return true;
  }
  params.assign(4, Shape{});
  for (size_t k = 1; k <= 4; ++k) {
    if (k >= in.size() || !in[k].info) continue;  // left out
    if (!in[k].data) return false;
    params[k - 1] = in[k].data->ints();
  }
  return true;
}

}  // namespace

Outputs fold_slice(const Node& node, const Inputs& in, int64_t opset) {
  const TensorData* data = constant(in, 0);
  std::vector<Shape> p;
  if (!data || !slice_params(node, in, opset, p)) return std::nullopt;
  const Shape& s = data->shape();
  const int64_t rank = static_cast<int64_t>(s.size());
  Shape &starts = p[0], &ends = p[1], &axes = p[2], &steps = p[3];
  if (axes.empty())
    for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    fail(node, "starts, ends, axes and steps differ in length");
  std::vector<SliceAxis> slices(s.size());
  std::vector<bool> seen(s.size(), false);
  for (size_t k = 0; k < s.size(); ++k) slices[k] = {0, 1, s[k]};
  for (size_t k = 0; k < starts.size(); ++k) {
    const int64_t a = normalized_axis(axes[k], rank, node);
    if (seen[a]) fail(node, "axis " + std::to_string(axes[k]) + " is sliced twice");
    seen[a] = true;
    slices[a] = clamp_slice(starts[k], ends[k], steps[k], s[a], node);
  }
  const Shape strides = strides_of(s);
  Shape out(s.size()), step(s.size());
  int64_t base = 0;
  for (size_t k = 0; k < s.size(); ++k) {
    out[k] = slices[k].count;
    // A step matters only between two elements; then it is at most the extent and cannot overflow.
    step[k] = slices[k].count > 1 ? slices[k].step * strides[k] : 0;
    base += slices[k].start * strides[k];
  }
  if (small_count(out) < 0) return std::nullopt;
  return one(take(*data, out, strided_index(out, base, step)));
}

Outputs fold_range(const Node& node, const Inputs& in, int64_t) {
  const TensorData *start = constant(in, 0), *limit = constant(in, 1), *delta = constant(in, 2);
  if (!start || !limit || !delta) return std::nullopt;
  if (start->num_elements() != 1 || limit->num_elements() != 1 || delta->num_elements() != 1)
    fail(node, "start, limit and delta must be scalars");
  if (start->dtype() == DType::Float32) {
    const float a = static_cast<float>(start->as_double(0)), d = static_cast<float>(delta->as_double(0));
    const double n = std::ceil((limit->as_double(0) - a) / d);
    if (d == 0 || !std::isfinite(n)) fail(node, "its start, limit and delta give no finite range");
    if (n > static_cast<double>(kMaxFoldElements)) return std::nullopt;
    std::vector<float> values(static_cast<size_t>(std::max(n, 0.0)));
    for (size_t i = 0; i < values.size(); ++i) values[i] = a + static_cast<float>(i) * d;
    return one(TensorData::of_floats({static_cast<int64_t>(values.size())}, values));
  }
  const __int128 a = start->as_int(0), l = limit->as_int(0), d = delta->as_int(0);
  if (d == 0) fail(node, "delta is 0");
  const __int128 n = d > 0 ? (l - a + d - 1) / d : (l - a + d + 1) / d;
  if (n > kMaxFoldElements) return std::nullopt;
  std::vector<int64_t> values(static_cast<size_t>(n > 0 ? n : 0));
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<int64_t>(a + static_cast<__int128>(i) * d);
  return one(TensorData::of_ints({static_cast<int64_t>(values.size())}, values));
}

Outputs fold_equal(const Node& node, const Inputs& in, int64_t) {
  const TensorData *a = constant(in, 0), *b = constant(in, 1);
  if (!a || !b) return std::nullopt;
  if (a->dtype() != b->dtype()) fail(node, type_pair(*a, *b));
  const Shape out = broadcast_shapes({&a->shape(), &b->shape()}, node);
  if (small_count(out) < 0) return std::nullopt;
  const std::vector<int64_t> ia = broadcast_index(a->shape(), out), ib = broadcast_index(b->shape(), out);
  std::vector<bool> values(ia.size());
  for (size_t i = 0; i < ia.size(); ++i)
    values[i] = a->dtype() == DType::Float32 ? a->as_double(ia[i]) == b->as_double(ib[i])
                                             : a->as_int(ia[i]) == b->as_int(ib[i]);
  return one(TensorData::of_bools(out, values));
}

Outputs fold_where(const Node& node, const Inputs& in, int64_t) {
  const TensorData *c = constant(in, 0), *x = constant(in, 1), *y = constant(in, 2);
  if (!c || !x || !y) return std::nullopt;
  if (c->dtype() != DType::Bool) fail(node, "its condition must be boolean");
  if (x->dtype() != y->dtype()) fail(node, type_pair(*x, *y));
  const Shape out = broadcast_shapes({&c->shape(), &x->shape(), &y->shape()}, node);
  if (small_count(out) < 0) return std::nullopt;
  const std::vector<int64_t> ic = broadcast_index(c->shape(), out), ix = broadcast_index(x->shape(), out),
                             iy = broadcast_index(y->shape(), out);
  const int64_t e = dtype_bytes(x->dtype());
  std::vector<uint8_t> bytes(ic.size() * static_cast<size_t>(e));
  for (size_t i = 0; i < ic.size(); ++i) {
    const bool pick_x = c->as_int(ic[i]) != 0;
    std::memcpy(bytes.data() + i * e, pick_x ? x->bytes() + ix[i] * e : y->bytes() + iy[i] * e, e);
  }
  return one(TensorData(x->dtype(), out, std::move(bytes), node.where()));
}

namespace {

// Integer arithmetic wraps (as two's complement) instead of overflowing, which C++ leaves undefined.
int64_t integer_op(const Node& node, int64_t x, int64_t y) {
  const uint64_t ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
  if (node.op_type == "Add") return static_cast<int64_t>(ux + uy);
  if (node.op_type == "Sub") return static_cast<int64_t>(ux - uy);
  if (node.op_type == "Mul") return static_cast<int64_t>(ux * uy);
  if (y == 0) fail(node, "integer division by zero");
  if (node.op_type == "Mod") {
    // fmod=0 (the default for integers): the remainder takes the divisor's sign, as Python's %.
    const int64_t r = y == -1 ? 0 : x % y;
    const bool c_fmod = node.int_attr("fmod").value_or(0) != 0;
    return !c_fmod && r != 0 && ((r < 0) != (y < 0)) ? r + y : r;
  }
  if (x == INT64_MIN && y == -1) return INT64_MIN;
  return x / y;
}

float float_op(const std::string& op, float x, float y) {
  if (op == "Mod") return std::fmod(x, y);  // ONNX requires fmod=1 for floats: the dividend's sign
  return op == "Add" ? x + y : op == "Sub" ? x - y : op == "Mul" ? x * y : x / y;
}

}  // namespace

Outputs fold_arithmetic(const Node& node, const Inputs& in, int64_t) {
  const TensorData *a = constant(in, 0), *b = constant(in, 1);
  if (!a || !b || a->dtype() == DType::Bool || b->dtype() == DType::Bool) return std::nullopt;
  if (a->dtype() != b->dtype()) fail(node, type_pair(*a, *b));
  const Shape out = broadcast_shapes({&a->shape(), &b->shape()}, node);
  if (small_count(out) < 0) return std::nullopt;
  const std::vector<int64_t> ia = broadcast_index(a->shape(), out), ib = broadcast_index(b->shape(), out);
  if (a->dtype() == DType::Float32) {
    std::vector<float> values(ia.size());
    for (size_t i = 0; i < ia.size(); ++i)
      values[i] =
          float_op(node.op_type, static_cast<float>(a->as_double(ia[i])), static_cast<float>(b->as_double(ib[i])));
    return one(TensorData::of_floats(out, values));
  }
  std::vector<int64_t> values(ia.size());
  for (size_t i = 0; i < ia.size(); ++i) values[i] = integer_op(node, a->as_int(ia[i]), b->as_int(ib[i]));
  return one(TensorData::of_ints(out, values));
}

Outputs fold_extreme(const Node& node, const Inputs& in, int64_t) {
  // Max and Min: any number of inputs of one dtype, broadcast together; NaN wins for floats.
  std::vector<const TensorData*> xs;
  std::vector<const Shape*> shapes;
  for (size_t k = 0; k < in.size(); ++k) {
    const TensorData* x = constant(in, k);
    if (!x || x->dtype() == DType::Bool) return std::nullopt;
    if (!xs.empty() && x->dtype() != xs[0]->dtype()) fail(node, type_pair(*xs[0], *x));
    xs.push_back(x);
    shapes.push_back(&x->shape());
  }
  if (xs.empty()) return std::nullopt;
  const Shape out = broadcast_shapes(shapes, node);
  const int64_t n = small_count(out);
  if (n < 0) return std::nullopt;
  std::vector<std::vector<int64_t>> index;
  for (const TensorData* x : xs) index.push_back(broadcast_index(x->shape(), out));
  const bool max = node.op_type == "Max";
  if (xs[0]->dtype() == DType::Float32) {
    std::vector<float> values(static_cast<size_t>(n));
    for (size_t i = 0; i < values.size(); ++i) {
      float v = static_cast<float>(xs[0]->as_double(index[0][i]));
      for (size_t k = 1; k < xs.size(); ++k) {
        const float w = static_cast<float>(xs[k]->as_double(index[k][i]));
        v = std::isnan(v) || std::isnan(w) ? NAN : max ? std::max(v, w) : std::min(v, w);
      }
      values[i] = v;
    }
    return one(TensorData::of_floats(out, values));
  }
  std::vector<int64_t> values(static_cast<size_t>(n));
  for (size_t i = 0; i < values.size(); ++i) {
    int64_t v = xs[0]->as_int(index[0][i]);
    for (size_t k = 1; k < xs.size(); ++k) {
      const int64_t w = xs[k]->as_int(index[k][i]);
      v = max ? std::max(v, w) : std::min(v, w);
    }
    values[i] = v;
  }
  return one(TensorData::of_ints(out, values));
}

Outputs fold_neg(const Node&, const Inputs& in, int64_t) {
  const TensorData* x = constant(in, 0);
  if (!x || x->dtype() == DType::Bool) return std::nullopt;
  const int64_t n = x->num_elements();
  if (x->dtype() == DType::Float32) {
    std::vector<float> values(n);
    for (int64_t i = 0; i < n; ++i) values[i] = -static_cast<float>(x->as_double(i));
    return one(TensorData::of_floats(x->shape(), values));
  }
  std::vector<int64_t> values(n);
  for (int64_t i = 0; i < n; ++i) values[i] = static_cast<int64_t>(0 - static_cast<uint64_t>(x->as_int(i)));
  return one(TensorData::of_ints(x->shape(), values));
}

}  // namespace tessel::fold
