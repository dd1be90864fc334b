// Private to frontend/ops: the injective ONNX ops (Reshape, Transpose, Slice, Concat, Gather ...),
// registered by tensor.cpp, and the helpers they and the reductions share. Every one of these ops
// returns a LazyTensor: an index map its readers inline, never a stage.
#pragma once

#include <cstdint>
#include <vector>

#include "frontend/ops/op_families.h"

namespace tessel::onnx_ops {

using Inputs = std::vector<LazyTensor>;
using Outputs = std::vector<LazyTensor>;

// tensor_reshape.cpp: ops that move elements without choosing among them.
Outputs build_flatten(const OpContext& ctx, const Inputs& in);
Outputs build_reshape(const OpContext& ctx, const Inputs& in);
Outputs build_squeeze(const OpContext& ctx, const Inputs& in);
Outputs build_unsqueeze(const OpContext& ctx, const Inputs& in);
Outputs build_transpose(const OpContext& ctx, const Inputs& in);
Outputs build_expand(const OpContext& ctx, const Inputs& in);
Outputs build_tile(const OpContext& ctx, const Inputs& in);

// tensor_index.cpp: ops that select ranges or elements.
Outputs build_slice(const OpContext& ctx, const Inputs& in);
Outputs build_split(const OpContext& ctx, const Inputs& in);
Outputs build_concat(const OpContext& ctx, const Inputs& in);
Outputs build_pad(const OpContext& ctx, const Inputs& in);
Outputs build_gather(const OpContext& ctx, const Inputs& in);

// --- shared helpers (tensor.cpp) ----------------------------------------------------------------

// InputError naming the node unless `info` is what shape inference gave output k: an op whose
// result disagrees with ONNX's inferred shape is a bug or a model tessel misreads, never silently
// accepted.
void check_output(const OpContext& ctx, size_t k, const TensorInfo& info);
// `t` after check_output(ctx, k, t.info()).
LazyTensor checked(const OpContext& ctx, size_t k, LazyTensor t);
// Input k's constant values as integers (InputError naming the node when it is not a constant).
std::vector<int64_t> constant_ints(const OpContext& ctx, size_t k);
// Integer index arithmetic without the trivial terms (e + 0, e * 1), so that index maps print
// short and stay recognisably affine.
Expr plus(const Expr& e, int64_t c);
Expr times(const Expr& e, int64_t c);
int64_t product(const std::vector<int64_t>& dims, size_t begin = 0, size_t end = SIZE_MAX);

// `t` read as a tensor of `info.shape` (same element count, row-major order kept). Dimensions are
// grouped into the finest runs whose products match on both sides, so a run that is one dimension
// on each side maps index to index, a merge is affine, and only a split needs FloorDiv / FloorMod.
LazyTensor reshaped(const LazyTensor& t, const TensorInfo& info);

}  // namespace tessel::onnx_ops
