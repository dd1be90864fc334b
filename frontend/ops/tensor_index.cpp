// The ONNX ops that select ranges or elements: Slice, Split, Concat, Pad and Gather. Ranges are
// affine index maps; a choice between tensors (Concat) or between a tensor and a value (Pad) is a
// Select, whose untaken side's reads the code generators mask; Gather's index is data: a read of
// the indices tensor.
#include <algorithm>
#include <optional>

#include "frontend/ops/tensor_ops.h"

namespace tessel::onnx_ops {
namespace {

// One dimension of a slice: element i of the result is element start + i * step of the input.
struct Range1 {
  int64_t start = 0, step = 1, length = 0;
};

// Input k as integers: an input from opset 10 on, the attribute `attr` before.
std::optional<std::vector<int64_t>> ints_input_or_attr(const OpContext& ctx, size_t k, const char* attr) {
  if (ctx.has_input(k)) return constant_ints(ctx, k);
  return ctx.node.ints_attr(attr);
}

// ONNX Slice bounds: negative values count from the end, then clamp to the dimension ([0, dim]
// going forward, [-1, dim - 1] going backward, so INT64_MAX / INT64_MIN mean "to the end").
Range1 slice_range(const OpContext& ctx, int64_t dim, int64_t start, int64_t end, int64_t step) {
  if (step == 0) ctx.fail("a step is 0");
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  Range1 r;
  // A step longer than the axis takes one element, as the axis' extent does; clamping it keeps the
  // arithmetic below from overflowing.
  r.step = std::clamp<int64_t>(step, -dim, dim);
  if (step > 0) {
    r.start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    r.length = end > r.start ? (end - r.start - 1) / r.step + 1 : 0;
  } else {
    r.start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
    r.length = r.start > end ? (r.start - end - 1) / -r.step + 1 : 0;
  }
  if (r.length == 0) ctx.fail("selects no elements (empty tensors are not supported)");
  return r;
}

std::vector<Range1> slice_ranges(const OpContext& ctx, const std::vector<int64_t>& shape) {
  std::vector<int64_t> starts = ints_input_or_attr(ctx, 1, "starts").value_or(std::vector<int64_t>{});
  std::vector<int64_t> ends = ints_input_or_attr(ctx, 2, "ends").value_or(std::vector<int64_t>{});
  std::vector<int64_t> axes(starts.size());
  for (size_t k = 0; k < axes.size(); ++k) axes[k] = static_cast<int64_t>(k);
  axes = ints_input_or_attr(ctx, 3, "axes").value_or(axes);
  std::vector<int64_t> steps = ctx.has_input(4) ? constant_ints(ctx, 4) : std::vector<int64_t>(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    ctx.fail("starts, ends, axes and steps differ in length");
  std::vector<Range1> ranges(shape.size());
  std::vector<bool> seen(shape.size(), false);
  for (size_t d = 0; d < shape.size(); ++d) ranges[d].length = shape[d];
  for (size_t k = 0; k < starts.size(); ++k) {
    const int64_t d = normalize_axis(ctx, axes[k], static_cast<int64_t>(shape.size()));
    if (seen[d]) ctx.fail("axis " + std::to_string(axes[k]) + " is sliced twice");
    seen[d] = true;
    ranges[d] = slice_range(ctx, shape[d], starts[k], ends[k], steps[k]);
  }
  return ranges;
}

// The value Pad writes outside the input, in the input's type.
Expr pad_value(const OpContext& ctx, DType dtype) {
  double v = ctx.node.float_attr("value").value_or(0.0);  // before opset 11
  if (ctx.has_input(2)) v = ctx.constant_input(2).as_double(0);
  switch (dtype) {
    case DType::Float32:
      return make_float(v);
    case DType::Float16:
    case DType::BFloat16:  // the value rounded to the input's type, as its buffer holds it
      return make_cast(Type{dtype, 1}, make_float(v));
    case DType::Int64:
      return make_int(static_cast<int64_t>(v));
    case DType::Bool:
      return make_bool(v != 0);
  }
  return make_float(v);
}

// The input index that output index `o` of a padded dimension reads (reflect and edge modes), with
// j = o - begin the position relative to the input. Reflection is numpy's: period 2 (dim - 1).
Expr pad_source(const std::string& mode, const Expr& j, int64_t dim, int64_t begin, int64_t end) {
  if (dim == 1) return make_int(0);
  const Expr last = make_int(dim - 1);
  if (mode == "edge") {
    Expr e = begin > 0 ? max(j, make_int(0)) : j;
    return end > 0 ? min(e, last) : e;
  }
  if (begin <= dim - 1 && end <= dim - 1) {  // one reflection: (dim-1) - |(dim-1) - |j||
    Expr a = max(j, -j);
    Expr b = last - a;
    return last - max(b, -b);
  }
  const Expr period = make_int(2 * (dim - 1));
  Expr m = j % period;
  return min(m, period - m);
}

LazyTensor pad(const OpContext& ctx, const LazyTensor& x, const std::string& mode, const std::vector<int64_t>& begin,
               const std::vector<int64_t>& end) {
  TensorInfo info{x.dtype(), x.shape()};
  for (size_t d = 0; d < info.shape.size(); ++d) {
    info.shape[d] += begin[d] + end[d];
    if (info.shape[d] <= 0) ctx.fail("pads leave dimension " + std::to_string(d) + " empty");
    if (mode != "constant" && (begin[d] < 0 || end[d] < 0)) ctx.fail("negative pads need mode 'constant'");
  }
  const std::vector<int64_t> dims = x.shape();
  const Expr value = pad_value(ctx, x.dtype());
  return LazyTensor(info, [x, mode, begin, end, dims, value](const std::vector<Expr>& out) {
    std::vector<Expr> idx(dims.size());
    Expr inside;  // constant mode: whether the element comes from the input
    for (size_t d = 0; d < dims.size(); ++d) {
      Expr j = plus(out[d], -begin[d]);
      if (mode != "constant") {
        idx[d] = begin[d] == 0 && end[d] == 0 ? j : pad_source(mode, j, dims[d], begin[d], end[d]);
        continue;
      }
      idx[d] = j;
      // Only a side that adds elements can fall outside the input.
      std::vector<Expr> tests;
      if (begin[d] > 0) tests.push_back(j >= make_int(0));
      if (end[d] > 0) tests.push_back(j < make_int(dims[d]));
      for (const Expr& t : tests) inside = inside ? logical_and(inside, t) : t;
    }
    return inside ? make_select(inside, x.at(idx), value) : x.at(idx);
  });
}

// Gather's index when the indices are one constant value: folded, so the read stays affine (x[:, 0]
// in a transformer's classifier head).
std::optional<int64_t> constant_index(const OpContext& ctx, int64_t extent) {
  const std::string& name = ctx.node.inputs[1];
  if (!ctx.graph.is_constant(name) || ctx.graph.value(name).constant->num_elements() != 1) return std::nullopt;
  const int64_t v = ctx.graph.value(name).constant->as_int(0);
  if (v < -extent || v >= extent)
    ctx.fail("index " + std::to_string(v) + " is outside an axis of extent " + std::to_string(extent));
  return v < 0 ? v + extent : v;
}

}  // namespace

Outputs build_slice(const OpContext& ctx, const Inputs& in) {
  const LazyTensor& x = in[0];
  std::vector<Range1> ranges = slice_ranges(ctx, x.shape());
  TensorInfo info{x.dtype(), {}};
  for (const Range1& r : ranges) info.shape.push_back(r.length);
  return {checked(ctx, 0, LazyTensor(info, [x, ranges](const std::vector<Expr>& out) {
                    std::vector<Expr> idx;
                    for (size_t d = 0; d < ranges.size(); ++d)
                      idx.push_back(plus(times(out[d], ranges[d].step), ranges[d].start));
                    return x.at(idx);
                  }))};
}

Outputs build_split(const OpContext& ctx, const Inputs& in) {
  const LazyTensor& x = in[0];
  const size_t axis = static_cast<size_t>(normalize_axis(ctx, ctx.node.int_attr("axis").value_or(0), x.rank()));
  const int64_t dim = x.shape()[axis];
  const int64_t parts = static_cast<int64_t>(ctx.node.outputs.size());
  std::vector<int64_t> sizes = ints_input_or_attr(ctx, 1, "split").value_or(std::vector<int64_t>{});
  if (sizes.empty()) {  // equal parts
    if (dim % parts != 0)
      ctx.fail("an axis of extent " + std::to_string(dim) + " does not split into " + std::to_string(parts) +
               " equal parts");
    sizes.assign(static_cast<size_t>(parts), dim / parts);
  }
  if (static_cast<int64_t>(sizes.size()) != parts)
    ctx.fail("split has " + std::to_string(sizes.size()) + " sizes for " + std::to_string(parts) + " outputs");
  Outputs outs;
  int64_t offset = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    if (sizes[k] <= 0) ctx.fail("split size " + std::to_string(sizes[k]) + " (empty tensors are not supported)");
    TensorInfo info{x.dtype(), x.shape()};
    info.shape[axis] = sizes[k];
    outs.push_back(checked(ctx, k, LazyTensor(info, [x, axis, offset](const std::vector<Expr>& out) {
                             std::vector<Expr> idx = out;
                             idx[axis] = plus(out[axis], offset);
                             return x.at(idx);
                           })));
    offset += sizes[k];
  }
  if (offset != dim)
    ctx.fail("split sizes add up to " + std::to_string(offset) + ", the axis has " + std::to_string(dim));
  return outs;
}

Outputs build_concat(const OpContext& ctx, const Inputs& in) {
  std::optional<int64_t> axis_attr = ctx.node.int_attr("axis");
  if (!axis_attr) ctx.fail("needs the attribute axis");
  if (in.empty()) ctx.fail("has no inputs");
  const size_t axis = static_cast<size_t>(normalize_axis(ctx, *axis_attr, in[0].rank()));
  TensorInfo info = in[0].info();
  std::vector<int64_t> ends;  // where each input ends along the axis
  info.shape[axis] = 0;
  for (const LazyTensor& t : in) {
    std::vector<int64_t> a = t.shape(), b = in[0].shape();
    a[axis] = b[axis] = 0;
    if (a != b || t.dtype() != info.dtype) ctx.fail("inputs differ in type, rank or a dimension other than the axis");
    info.shape[axis] += t.shape()[axis];
    ends.push_back(info.shape[axis]);
  }
  const Inputs inputs = in;
  return {checked(ctx, 0, LazyTensor(info, [inputs, ends, axis](const std::vector<Expr>& out) {
                    // Innermost the last input; each earlier one takes the indices before its end.
                    Expr e;
                    for (size_t k = inputs.size(); k-- > 0;) {
                      std::vector<Expr> idx = out;
                      idx[axis] = plus(out[axis], k == 0 ? 0 : -ends[k - 1]);
                      Expr read = inputs[k].at(idx);
                      e = e ? make_select(out[axis] < make_int(ends[k]), read, e) : read;
                    }
                    return e;
                  }))};
}

Outputs build_pad(const OpContext& ctx, const Inputs& in) {
  const LazyTensor& x = in[0];
  const std::string mode = ctx.node.string_attr("mode").value_or("constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    ctx.fail("mode '" + mode + "' is not supported (constant, reflect and edge are)");
  std::vector<int64_t> pads = ints_input_or_attr(ctx, 1, "pads").value_or(std::vector<int64_t>{});
  const int64_t rank = x.rank();
  std::vector<int64_t> axes(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d) axes[d] = d;
  if (ctx.has_input(3)) axes = constant_ints(ctx, 3);  // opset 18
  if (pads.size() != 2 * axes.size())
    ctx.fail("pads has " + std::to_string(pads.size()) + " values for " + std::to_string(axes.size()) + " axes");
  std::vector<int64_t> begin(static_cast<size_t>(rank), 0), end(static_cast<size_t>(rank), 0);
  for (size_t k = 0; k < axes.size(); ++k) {
    const int64_t d = normalize_axis(ctx, axes[k], rank);
    begin[d] = pads[k];
    end[d] = pads[k + axes.size()];
  }
  return {checked(ctx, 0, pad(ctx, x, mode, begin, end))};
}

Outputs build_gather(const OpContext& ctx, const Inputs& in) {
  const LazyTensor& data = in[0];
  const LazyTensor& indices = in[1];
  // The graph's view of the indices: `indices` is empty when the caller passes a constant as a
  // parameter.
  const TensorInfo& index_info = ctx.graph.value(ctx.node.inputs[1]).info;
  if (index_info.dtype != DType::Int64) ctx.fail("indices must be integers, not " + to_string(index_info.dtype));
  const size_t axis = static_cast<size_t>(normalize_axis(ctx, ctx.node.int_attr("axis").value_or(0), data.rank()));
  const int64_t extent = data.shape()[axis];
  const size_t q = index_info.shape.size();
  // out = data[:axis] + indices + data[axis+1:]
  TensorInfo info{data.dtype(), {data.shape().begin(), data.shape().begin() + axis}};
  info.shape.insert(info.shape.end(), index_info.shape.begin(), index_info.shape.end());
  info.shape.insert(info.shape.end(), data.shape().begin() + axis + 1, data.shape().end());
  check_output(ctx, 0, info);
  const std::optional<int64_t> fixed = constant_index(ctx, extent);
  return {LazyTensor(info, [data, indices, axis, q, extent, fixed](const std::vector<Expr>& out) {
    std::vector<Expr> idx(out.begin(), out.begin() + axis);
    if (fixed) {
      idx.push_back(make_int(*fixed));
    } else {
      // A negative index counts from the end: FloorMod by the extent does that, and also keeps an
      // out-of-range index (an error in ONNX) inside the tensor, so a kernel never reads outside
      // its buffer.
      std::vector<Expr> at(out.begin() + axis, out.begin() + axis + q);
      idx.push_back(indices.at(at) % make_int(extent));
    }
    idx.insert(idx.end(), out.begin() + axis + q, out.end());
    return data.at(idx);
  })};
}

}  // namespace tessel::onnx_ops
