// Private to schedule/ops: the builder of each op template family, plus small helpers for writing
// stages as readable tensor expressions.
#pragma once

#include <string>
#include <vector>

#include "schedule/ops/param_reader.h"
#include "schedule/te/dag.h"

namespace tessel::ops_detail {

// --- builders, one per template (matmul_ops.cpp, conv_ops.cpp, norm_ops.cpp, elementwise_op.cpp) ---
ComputeDAG build_matmul(const ParamReader& p);
ComputeDAG build_dense(const ParamReader& p);
ComputeDAG build_batch_matmul(const ParamReader& p);
ComputeDAG build_conv2d(const ParamReader& p);
ComputeDAG build_softmax(const ParamReader& p);
ComputeDAG build_layernorm(const ParamReader& p);
ComputeDAG build_rmsnorm(const ParamReader& p);
ComputeDAG build_reduce_sum(const ParamReader& p);
ComputeDAG build_bias_residual_layernorm(const ParamReader& p);
ComputeDAG build_elementwise(const ParamReader& p);

// --- stage helpers ---------------------------------------------------------------------------
Operation placeholder(const std::string& name, std::vector<int64_t> shape, DType dtype = DType::Float32);
// out[axes] = body (the operation's dtype is the body's)
Operation compute(const std::string& name, std::vector<Axis> axes, Expr body);
// out[axes] = kind over reduce_axes of body
Operation reduce(const std::string& name, std::vector<Axis> axes, ReduceKind kind,
                 std::vector<Axis> reduce_axes, Expr body);

inline Expr var(const Axis& a) { return make_var(a.name); }
inline Expr f32(double v) { return make_float(v); }
Expr read(const std::string& tensor, const std::vector<Axis>& axes);  // tensor[a0, a1, ...]
// float32(tensor[...]) of a tensor of `dtype` (no cast for float32).
Expr read_float(const std::string& tensor, std::vector<Expr> indices, DType dtype);
Expr read_float(const std::string& tensor, const std::vector<Axis>& axes, DType dtype);
// Appends `to`[...] = dtype(`from`[...]), the store of a float32 result as a 16-bit float; `from`
// must be the last operation of `ops`.
void append_store_cast(std::vector<Operation>& ops, const std::string& from, const std::string& to, DType dtype);

// The "dtype" parameter of the contraction templates and its value.
OpParam dtype_param();
DType param_dtype(const ParamReader& p);

// The activations shared by dense and conv2d ("none" returns x unchanged).
// The choices are listed once, in op_library.cpp's template table.
Expr apply_activation(const Expr& x, const std::string& act);

}  // namespace tessel::ops_detail
