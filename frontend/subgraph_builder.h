// Building one fused subgraph's ComputeDAG from ONNX ops, the way TOPI serves Relay: each op is a
// tensor-expression function of its inputs. Elementwise, broadcast and injective ops (add, relu,
// transpose, reshape, slice ...) make no stage of their own: they return a LazyTensor, an expression
// over the output's indices that their readers inline. Reductions, contractions and pooling make a
// stage that reads its inputs through those expressions; the subgraph's output becomes a stage at
// the end. So conv + bias + relu + add is a (padding,) convolution stage and one epilogue stage —
// the shape the schedule sketches know — whatever the model's node count.
//
// Names are given in the order of the builder's calls (placeholders p0, p1, ...; stages by their
// hint and a number), so two identical subgraphs print the same DAG text and share a workload key.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "frontend/graph.h"
#include "schedule/te/dag.h"

namespace tessel {

using IndexFn = std::function<Expr(const std::vector<Expr>& indices)>;

class LazyTensor {
 public:
  LazyTensor() = default;
  LazyTensor(TensorInfo info, IndexFn at, std::string stage = "")
      : info_(std::move(info)), at_(std::move(at)), stage_(std::move(stage)) {}

  const TensorInfo& info() const { return info_; }
  const std::vector<int64_t>& shape() const { return info_.shape; }
  DType dtype() const { return info_.dtype; }
  int64_t rank() const { return static_cast<int64_t>(info_.shape.size()); }
  // The element at `indices` (one Int64 expression per dimension): a read of the stage, or the
  // inlined expression.
  Expr at(const std::vector<Expr>& indices) const;
  // The stage (or placeholder) that holds it; "" for an expression not yet materialized.
  const std::string& stage() const { return stage_; }

 private:
  TensorInfo info_;
  IndexFn at_;
  std::string stage_;
};

class SubgraphBuilder {
 public:
  // A placeholder standing for the graph value `value` (a model input, a weight, another
  // subgraph's output): the first call for a value makes it, later calls return the same tensor.
  LazyTensor input(const std::string& value, const TensorInfo& info);
  // A stage: out[i...] = body(i...).
  LazyTensor compute(const std::string& hint, const TensorInfo& info, const IndexFn& body);
  // A stage: out[i...] = combine over r... of body(i..., r...) (reduce_extents: one per r).
  LazyTensor reduce(const std::string& hint, const TensorInfo& info, const std::vector<int64_t>& reduce_extents,
                    ReduceKind kind,
                    const std::function<Expr(const std::vector<Expr>& i, const std::vector<Expr>& r)>& body);
  // `t` as a stage (t itself when it is one already).
  LazyTensor materialize(const LazyTensor& t, const std::string& hint);

  // The DAG with `output` materialized as its last stage. Throws InputError when the DAG is
  // malformed (a bug in an op's definition, reported with the op's name by the caller).
  ComputeDAG finish(const LazyTensor& output);
  // The graph values the DAG's placeholders stand for, in the DAG's placeholder order.
  const std::vector<std::string>& input_values() const { return input_values_; }

 private:
  std::vector<Operation> ops_;
  std::vector<std::string> input_values_;
  int stages_ = 0;
};

}  // namespace tessel
