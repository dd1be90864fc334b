// matmul, dense and batch_matmul: one Sum reduction stage, plus an elementwise epilogue stage for
// dense when it has a bias or an activation.
#include "schedule/ops/op_builders.h"

namespace tessel::ops_detail {

ComputeDAG build_matmul(const ParamReader& p) {
  int64_t m = p.positive_int("M"), n = p.positive_int("N"), k = p.positive_int("K");
  Axis i{"i", m}, j{"j", n}, r{"k", k};
  std::vector<Operation> ops;
  ops.push_back(placeholder("A", {m, k}));
  ops.push_back(placeholder("B", {k, n}));
  ops.push_back(reduce("C", {i, j}, ReduceKind::Sum, {r}, read("A", {i, r}) * read("B", {r, j})));
  return ComputeDAG(std::move(ops));
}

ComputeDAG build_dense(const ParamReader& p) {
  int64_t m = p.positive_int("M"), n = p.positive_int("N"), k = p.positive_int("K");
  bool bias = p.flag("bias");
  const std::string& act = p.choice("act");
  bool epilogue = bias || act != "none";

  std::vector<Operation> ops;
  ops.push_back(placeholder("X", {m, k}));
  ops.push_back(placeholder("W", {k, n}));
  if (bias) ops.push_back(placeholder("b", {n}));

  // Without an epilogue the reduction is the output itself, named Y like every dense output.
  Axis i{"i", m}, j{"j", n}, r{"k", k};
  const char* product = epilogue ? "matmul" : "Y";
  ops.push_back(reduce(product, {i, j}, ReduceKind::Sum, {r}, read("X", {i, r}) * read("W", {r, j})));
  if (epilogue) {
    Axis i1{"i1", m}, j1{"j1", n};
    Expr v = read("matmul", {i1, j1});
    if (bias) v = v + read("b", {j1});
    ops.push_back(compute("Y", {i1, j1}, apply_activation(v, act)));
  }
  return ComputeDAG(std::move(ops));
}

ComputeDAG build_batch_matmul(const ParamReader& p) {
  int64_t batch = p.positive_int("B"), m = p.positive_int("M"), n = p.positive_int("N"),
          k = p.positive_int("K");
  Axis b{"b", batch}, i{"i", m}, j{"j", n}, r{"k", k};
  std::vector<Operation> ops;
  ops.push_back(placeholder("A", {batch, m, k}));
  ops.push_back(placeholder("B", {batch, k, n}));
  ops.push_back(reduce("C", {b, i, j}, ReduceKind::Sum, {r}, read("A", {b, i, r}) * read("B", {b, r, j})));
  return ComputeDAG(std::move(ops));
}

}  // namespace tessel::ops_detail
