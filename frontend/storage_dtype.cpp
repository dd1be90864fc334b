#include "frontend/storage_dtype.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "schedule/te/error.h"
#include "schedule/te/half_float.h"

namespace tessel {
namespace {

// Whether every value of a float32 constant is finite in `dtype` (float16 ends at 65504: an
// attention mask of float32's lowest would become -inf, and 0 times it NaN).
bool fits(const TensorData& data, DType dtype) {
  if (dtype != DType::Float16) return true;
  for (float v : data.floats())
    if (std::isfinite(v) && std::abs(v) > 65504.0f) return false;
  return true;
}

// The float32 values to store in 16 bits: every one but the model's inputs and outputs, and
// constants the type cannot hold.
std::set<std::string> stored_values(const Graph& graph, DType dtype) {
  std::set<std::string> out;
  const std::set<std::string> kept(graph.outputs.begin(), graph.outputs.end());
  const std::set<std::string> inputs(graph.inputs.begin(), graph.inputs.end());
  for (const Node& node : graph.nodes)
    for (const std::string& name : node.inputs)
      if (!name.empty() && graph.has_value(name) && graph.value(name).info.dtype == DType::Float32 &&
          !inputs.count(name) && !kept.count(name) &&
          (!graph.value(name).constant || fits(*graph.value(name).constant, dtype)))
        out.insert(name);
  for (const Node& node : graph.nodes)
    for (const std::string& name : node.outputs)
      if (!name.empty() && graph.has_value(name) && graph.value(name).info.dtype == DType::Float32 && !kept.count(name))
        out.insert(name);
  return out;
}

TensorData narrowed(const TensorData& data, DType dtype, const std::string& name) {
  const std::vector<float> values = data.floats();
  std::vector<uint16_t> bits(values.size());
  narrow_to_half_bits(dtype, values.data(), static_cast<int64_t>(values.size()), bits.data());
  std::vector<uint8_t> bytes(bits.size() * sizeof(uint16_t));
  std::memcpy(bytes.data(), bits.data(), bytes.size());
  return TensorData(dtype, data.shape(), std::move(bytes), "the weight '" + name + "'");
}

// The subgraph's DAG with its stored placeholders in `dtype` (each read cast to float32) and, when
// its output is stored, its last stage's result cast to `dtype`: in the stage itself when it is
// elementwise, else in a stage after it.
ComputeDAG stored_dag(const Subgraph& sub, const std::set<std::string>& stored, DType dtype) {
  std::vector<Operation> ops = sub.dag.ops();
  std::set<std::string> narrow;  // placeholders now 16-bit
  for (size_t i = 0, p = 0; i < ops.size(); ++i) {
    if (!ops[i].is_placeholder) continue;
    const std::string& value = sub.inputs.at(p++);
    if (ops[i].dtype == DType::Float32 && stored.count(value)) {
      ops[i].dtype = dtype;
      narrow.insert(ops[i].name);
    }
  }
  const Type wide = kFloat32, half{dtype, 1};
  for (Operation& op : ops) {
    if (op.is_placeholder || narrow.empty()) continue;
    op.body = rewrite(op.body, [&](const Expr& e) -> Expr {
      if (e->op != ExprOp::TensorRead || !narrow.count(e->name)) return nullptr;
      return make_cast(wide, make_tensor_read(e->name, e->args, half));
    });
  }
  if (stored.count(sub.output)) {
    Operation& last = ops.back();
    TESSEL_CHECK(last.dtype == DType::Float32, sub.summary + ": a stored output computed as " + to_string(last.dtype));
    if (last.reduce == ReduceKind::None) {
      last.body = make_cast(half, last.body);
      last.dtype = dtype;
    } else {
      const std::string name = last.name;
      std::string acc = name + "_acc";
      while (std::any_of(ops.begin(), ops.end(), [&](const Operation& o) { return o.name == acc; })) acc += "_";
      last.name = acc;
      Operation store;
      store.name = name;
      store.dtype = dtype;
      store.shape = last.shape;
      std::vector<Expr> index;
      for (size_t d = 0; d < last.shape.size(); ++d) {
        store.axes.push_back(Axis{name + "_" + std::to_string(d), last.shape[d]});
        index.push_back(make_var(store.axes.back().name));
      }
      store.body = make_cast(half, make_tensor_read(acc, index, wide));
      ops.push_back(std::move(store));
    }
  }
  return ComputeDAG(std::move(ops));
}

}  // namespace

void store_in(DType dtype, Graph& graph, Partition& partition) {
  if (dtype == DType::Float32) return;
  TESSEL_CHECK(dtype == DType::Float16 || dtype == DType::BFloat16, "a model is stored in float16 or bfloat16");
  const std::set<std::string> stored = stored_values(graph, dtype);
  for (Subgraph& sub : partition.subgraphs) sub.dag = stored_dag(sub, stored, dtype);
  for (const std::string& name : stored) {
    Value v = graph.value(name);
    v.info.dtype = dtype;
    if (v.constant) v.constant = narrowed(*v.constant, dtype, name);
    graph.set_value(std::move(v));
  }
}

}  // namespace tessel
