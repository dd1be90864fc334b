// The injective ONNX ops in the table, the index helpers they share, and the shape-computing ops
// (Shape, ConstantOfShape, Range) that must have been folded into constants before a build.
#include <algorithm>
#include <sstream>

#include "frontend/ops/tensor_ops.h"
#include "schedule/te/error.h"

namespace tessel::onnx_ops {
namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::ostringstream s;
  s << "[";
  for (size_t d = 0; d < shape.size(); ++d) s << (d ? ", " : "") << shape[d];
  s << "]";
  return s.str();
}

// Shape, ConstantOfShape and Range compute shapes: the simplifier folds them into constants (every
// shape is static), so one that reaches a build had an input the simplifier could not fold.
[[noreturn]] void require_folded(const OpContext& ctx) {
  for (size_t k = 0; k < ctx.node.inputs.size(); ++k)
    if (ctx.has_input(k) && ctx.node.op_type != "Shape" && !ctx.graph.is_constant(ctx.node.inputs[k]))
      ctx.fail("input " + std::to_string(k) + " ('" + ctx.node.inputs[k] +
               "') is not a constant, so the output's shape is not known when compiling (tessel compiles static "
               "shapes; export the model with fixed input sizes)");
  ctx.fail("computes a shape and must be folded into a constant before the build (the graph simplifier does this)");
}

Outputs build_folded_only(const OpContext& ctx, const Inputs&) { require_folded(ctx); }

// The finest partition of the non-unit dimensions of two shapes of one element count into runs of
// equal product, e.g. [6, 5] vs [2, 3, 5] -> {[6] ~ [2, 3]}, {[5] ~ [5]}.
struct DimRun {
  std::vector<size_t> from, to;  // dimensions of the source and of the result
};

std::vector<DimRun> match_dims(const std::vector<int64_t>& from, const std::vector<int64_t>& to) {
  std::vector<size_t> a, b;
  for (size_t d = 0; d < from.size(); ++d)
    if (from[d] != 1) a.push_back(d);
  for (size_t d = 0; d < to.size(); ++d)
    if (to[d] != 1) b.push_back(d);
  // Both products equal the element count, so each run closes before either list runs out.
  std::vector<DimRun> runs;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    DimRun run{{a[i]}, {b[j]}};
    int64_t pa = from[a[i++]], pb = to[b[j++]];
    while (pa != pb) {
      if (pa < pb) {
        pa *= from[a[i]];
        run.from.push_back(a[i++]);
      } else {
        pb *= to[b[j]];
        run.to.push_back(b[j++]);
      }
    }
    runs.push_back(std::move(run));
  }
  return runs;
}

}  // namespace

void check_output(const OpContext& ctx, size_t k, const TensorInfo& info) {
  const TensorInfo& want = ctx.output_info(k);
  if (want.shape != info.shape)
    ctx.fail("computes output " + std::to_string(k) + " of shape " + shape_text(info.shape) +
             ", but shape inference gave " + shape_text(want.shape));
  if (want.dtype != info.dtype)
    ctx.fail("computes output " + std::to_string(k) + " of " + to_string(info.dtype) + ", but shape inference gave " +
             to_string(want.dtype));
}

LazyTensor checked(const OpContext& ctx, size_t k, LazyTensor t) {
  check_output(ctx, k, t.info());
  return t;
}

std::vector<int64_t> constant_ints(const OpContext& ctx, size_t k) {
  const TensorData& data = ctx.constant_input(k);
  if (data.dtype() != DType::Int64)
    ctx.fail("input " + std::to_string(k) + " must hold integers, not " + to_string(data.dtype()));
  return data.ints();
}

Expr plus(const Expr& e, int64_t c) {
  if (c == 0) return e;
  if (const int64_t* v = as_int(e)) return make_int(*v + c);
  return e + c;
}

Expr times(const Expr& e, int64_t c) {
  if (c == 1) return e;
  if (c == 0) return make_int(0);
  if (const int64_t* v = as_int(e)) return make_int(*v * c);
  return e * c;
}

int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t d = begin; d < std::min(end, dims.size()); ++d) p *= dims[d];
  return p;
}

LazyTensor reshaped(const LazyTensor& t, const TensorInfo& info) {
  const std::vector<int64_t>& from = t.shape();
  const std::vector<int64_t>& to = info.shape;
  if (product(from) != product(to))
    throw InputError("a tensor of shape " + shape_text(from) + " read as one of shape " + shape_text(to));
  std::vector<DimRun> runs = match_dims(from, to);
  return LazyTensor(info, [t, runs, from, to](const std::vector<Expr>& out) {
    std::vector<Expr> idx(from.size(), make_int(0));  // unit dimensions read index 0
    for (const DimRun& run : runs) {
      // The offset within the run, row-major over the result's dimensions ...
      Expr flat;
      int64_t stride = 1;
      for (size_t k = run.to.size(); k-- > 0;) {
        Expr term = times(out[run.to[k]], stride);
        flat = flat ? term + flat : term;
        stride *= to[run.to[k]];
      }
      // ... split over the source's: the outermost needs no FloorMod, the innermost no FloorDiv.
      stride = 1;
      for (size_t k = run.from.size(); k-- > 0;) {
        Expr e = stride == 1 ? flat : flat / make_int(stride);
        if (k > 0) e = e % make_int(from[run.from[k]]);
        idx[run.from[k]] = e;
        stride *= from[run.from[k]];
      }
    }
    return t.at(idx);
  });
}

void add_tensor_ops(std::vector<OpSpec>& table) {
  const OpPattern inj = OpPattern::Injective;
  table.push_back({"Flatten", inj, build_flatten});
  table.push_back({"Reshape", inj, build_reshape});
  table.push_back({"Squeeze", inj, build_squeeze});
  table.push_back({"Unsqueeze", inj, build_unsqueeze});
  table.push_back({"Transpose", inj, build_transpose});
  table.push_back({"Expand", inj, build_expand});
  table.push_back({"Tile", inj, build_tile});
  table.push_back({"Slice", inj, build_slice});
  table.push_back({"Split", inj, build_split});
  table.push_back({"Concat", inj, build_concat});
  table.push_back({"Pad", inj, build_pad});
  table.push_back({"Gather", inj, build_gather});
  table.push_back({"Shape", inj, build_folded_only});
  table.push_back({"ConstantOfShape", inj, build_folded_only});
  table.push_back({"Range", inj, build_folded_only});
}

}  // namespace tessel::onnx_ops
