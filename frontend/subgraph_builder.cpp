#include "frontend/subgraph_builder.h"

#include <algorithm>

#include "schedule/te/error.h"

namespace tessel {
namespace {

// A rank-0 tensor is stored as one element: DAG tensors have at least one dimension.
std::vector<int64_t> stored_shape(const std::vector<int64_t>& shape) {
  return shape.empty() ? std::vector<int64_t>{1} : shape;
}

std::vector<Expr> stored_indices(const std::vector<Expr>& indices) {
  return indices.empty() ? std::vector<Expr>{make_int(0)} : indices;
}

Type type_of(DType dtype) { return Type{dtype, 1}; }

std::vector<Axis> make_axes(const std::string& stage, const char* tag, const std::vector<int64_t>& extents) {
  std::vector<Axis> axes;
  for (size_t d = 0; d < extents.size(); ++d) {
    if (extents[d] <= 0)
      throw InputError("stage " + stage + ": dimension " + std::to_string(d) + " has extent " +
                       std::to_string(extents[d]) + " (empty tensors are not supported)");
    axes.push_back(Axis{stage + tag + std::to_string(d), extents[d]});
  }
  return axes;
}

std::vector<Expr> vars_of(const std::vector<Axis>& axes) {
  std::vector<Expr> v;
  for (const Axis& a : axes) v.push_back(make_var(a.name));
  return v;
}

}  // namespace

Expr LazyTensor::at(const std::vector<Expr>& indices) const {
  if (!at_) throw InputError("an optional input that was left out is read");
  if (indices.size() != info_.shape.size())
    throw InputError("a tensor of rank " + std::to_string(info_.shape.size()) + " read with " +
                     std::to_string(indices.size()) + " indices");
  return at_(indices);
}

LazyTensor SubgraphBuilder::input(const std::string& value, const TensorInfo& info) {
  auto it = std::find(input_values_.begin(), input_values_.end(), value);
  const std::string name = "p" + std::to_string(it - input_values_.begin());
  if (it == input_values_.end()) {
    Operation p;
    p.name = name;
    p.is_placeholder = true;
    p.dtype = info.dtype;
    p.shape = stored_shape(info.shape);
    for (int64_t d : p.shape)
      if (d <= 0) throw InputError("tensor '" + value + "' is empty (empty tensors are not supported)");
    ops_.push_back(std::move(p));
    input_values_.push_back(value);
  }
  const Type type = type_of(info.dtype);
  return LazyTensor(
      info, [name, type](const std::vector<Expr>& i) { return make_tensor_read(name, stored_indices(i), type); }, name);
}

LazyTensor SubgraphBuilder::compute(const std::string& hint, const TensorInfo& info, const IndexFn& body) {
  const std::string name = hint + std::to_string(stages_++);
  std::vector<Axis> axes = make_axes(name, "_i", stored_shape(info.shape));
  std::vector<Expr> vars = vars_of(axes);
  if (info.shape.empty()) vars.clear();
  Operation op;
  op.name = name;
  op.dtype = info.dtype;
  op.shape = stored_shape(info.shape);
  op.axes = std::move(axes);
  op.body = body(vars);
  if (op.body->type != type_of(info.dtype))
    throw InputError("stage " + name + " computes " + to_string(op.body->type) + " for a tensor of " +
                     to_string(info.dtype));
  ops_.push_back(std::move(op));
  const Type type = type_of(info.dtype);
  return LazyTensor(
      info, [name, type](const std::vector<Expr>& i) { return make_tensor_read(name, stored_indices(i), type); }, name);
}

LazyTensor SubgraphBuilder::reduce(
    const std::string& hint, const TensorInfo& info, const std::vector<int64_t>& reduce_extents, ReduceKind kind,
    const std::function<Expr(const std::vector<Expr>&, const std::vector<Expr>&)>& body) {
  const std::string name = hint + std::to_string(stages_++);
  std::vector<Axis> axes = make_axes(name, "_i", stored_shape(info.shape));
  std::vector<Axis> raxes = make_axes(name, "_r", reduce_extents);
  std::vector<Expr> vars = vars_of(axes);
  if (info.shape.empty()) vars.clear();
  Operation op;
  op.name = name;
  op.dtype = info.dtype;
  op.shape = stored_shape(info.shape);
  op.axes = std::move(axes);
  op.reduce = kind;
  op.body = body(vars, vars_of(raxes));
  op.reduce_axes = std::move(raxes);
  if (op.body->type != type_of(info.dtype))
    throw InputError("stage " + name + " reduces " + to_string(op.body->type) + " into a tensor of " +
                     to_string(info.dtype));
  ops_.push_back(std::move(op));
  const Type type = type_of(info.dtype);
  return LazyTensor(
      info, [name, type](const std::vector<Expr>& i) { return make_tensor_read(name, stored_indices(i), type); }, name);
}

LazyTensor SubgraphBuilder::materialize(const LazyTensor& t, const std::string& hint) {
  if (!t.stage().empty()) return t;
  return compute(hint, t.info(), [&t](const std::vector<Expr>& i) { return t.at(i); });
}

ComputeDAG SubgraphBuilder::finish(const LazyTensor& output) {
  // A placeholder or an earlier stage as the output still gets a stage of its own: the subgraph's
  // result is always its last operation.
  const bool last = !ops_.empty() && !ops_.back().is_placeholder && output.stage() == ops_.back().name;
  if (!last) compute("out", output.info(), [&output](const std::vector<Expr>& i) { return output.at(i); });
  return ComputeDAG(ops_);
}

}  // namespace tessel
