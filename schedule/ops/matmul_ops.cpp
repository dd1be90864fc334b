// matmul, dense and batch_matmul: one Sum reduction stage, plus an elementwise epilogue stage for
// dense when it has a bias or an activation. With dtype float16 / bfloat16 the inputs are read as
// float32, the reduction accumulates in float32, and one elementwise stage stores the result in the
// 16-bit type (dense's epilogue, when it has one, is that stage).
#include "schedule/ops/op_builders.h"

namespace tessel::ops_detail {

namespace {

// The reduction `name`, or when the result is a 16-bit float the float32 reduction "<name>_acc"
// followed by its store as `name`.
void add_contraction(std::vector<Operation>& ops, const std::string& name, std::vector<Axis> axes,
                     std::vector<Axis> reduce_axes, Expr term, DType dtype) {
  if (dtype == DType::Float32) {
    ops.push_back(reduce(name, std::move(axes), ReduceKind::Sum, std::move(reduce_axes), std::move(term)));
    return;
  }
  ops.push_back(reduce(name + "_acc", std::move(axes), ReduceKind::Sum, std::move(reduce_axes), std::move(term)));
  append_store_cast(ops, name + "_acc", name, dtype);
}

}  // namespace

ComputeDAG build_matmul(const ParamReader& p) {
  int64_t m = p.positive_int("M"), n = p.positive_int("N"), k = p.positive_int("K");
  const DType dt = param_dtype(p);
  Axis i{"i", m}, j{"j", n}, r{"k", k};
  std::vector<Operation> ops;
  ops.push_back(placeholder("A", {m, k}, dt));
  ops.push_back(placeholder("B", {k, n}, dt));
  add_contraction(ops, "C", {i, j}, {r}, read_float("A", {i, r}, dt) * read_float("B", {r, j}, dt), dt);
  return ComputeDAG(std::move(ops));
}

ComputeDAG build_dense(const ParamReader& p) {
  int64_t m = p.positive_int("M"), n = p.positive_int("N"), k = p.positive_int("K");
  bool bias = p.flag("bias");
  const std::string& act = p.choice("act");
  const DType dt = param_dtype(p);
  bool epilogue = bias || act != "none";

  std::vector<Operation> ops;
  ops.push_back(placeholder("X", {m, k}, dt));
  ops.push_back(placeholder("W", {k, n}, dt));
  if (bias) ops.push_back(placeholder("b", {n}, dt));

  // Without an epilogue the reduction is the output itself, named Y like every dense output.
  Axis i{"i", m}, j{"j", n}, r{"k", k};
  Expr term = read_float("X", {i, r}, dt) * read_float("W", {r, j}, dt);
  if (!epilogue) {
    add_contraction(ops, "Y", {i, j}, {r}, term, dt);
    return ComputeDAG(std::move(ops));
  }
  ops.push_back(reduce("matmul", {i, j}, ReduceKind::Sum, {r}, term));
  Axis i1{"i1", m}, j1{"j1", n};
  Expr v = read("matmul", {i1, j1});
  if (bias) v = v + read_float("b", {j1}, dt);
  ops.push_back(compute("Y", {i1, j1}, make_cast(Type{dt, 1}, apply_activation(v, act))));
  return ComputeDAG(std::move(ops));
}

ComputeDAG build_batch_matmul(const ParamReader& p) {
  int64_t batch = p.positive_int("B"), m = p.positive_int("M"), n = p.positive_int("N"),
          k = p.positive_int("K");
  const DType dt = param_dtype(p);
  Axis b{"b", batch}, i{"i", m}, j{"j", n}, r{"k", k};
  std::vector<Operation> ops;
  ops.push_back(placeholder("A", {batch, m, k}, dt));
  ops.push_back(placeholder("B", {batch, k, n}, dt));
  add_contraction(ops, "C", {b, i, j}, {r}, read_float("A", {b, i, r}, dt) * read_float("B", {b, r, j}, dt), dt);
  return ComputeDAG(std::move(ops));
}

}  // namespace tessel::ops_detail
