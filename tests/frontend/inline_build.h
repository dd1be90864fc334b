// Building a hand-made graph's subgraph the way the model's partition does: a one-element constant
// an op reads as data becomes an immediate, every other value not computed in the graph a
// placeholder, and an op may leave unread outputs (Dropout's mask, MaxPool's Indices) unbuilt.
#pragma once

#include <map>
#include <string>

#include "frontend/op_library.h"
#include "schedule/te/error.h"
#include "tests/frontend/op_check.h"

namespace tessel_test {

inline tessel::LazyTensor inlined_input(const tessel::Graph& graph, const std::string& name,
                                        const std::map<std::string, tessel::LazyTensor>& made,
                                        tessel::SubgraphBuilder& builder) {
  using namespace tessel;
  if (name.empty()) return LazyTensor();
  if (auto it = made.find(name); it != made.end()) return it->second;
  const Value& v = graph.value(name);
  if (v.constant && v.constant->num_elements() == 1) {
    const TensorData data = *v.constant;
    return LazyTensor(v.info, [data](const std::vector<Expr>&) {
      if (data.dtype() == DType::Float32) return make_float(data.as_double(0));
      if (data.dtype() == DType::Int64) return make_int(data.as_int(0));
      return make_bool(data.as_int(0) != 0);
    });
  }
  return builder.input(name, v.info);
}

// Every node of `g` in one subgraph whose result is `output`. Throws InputError when an op refuses.
inline Built build_inlined(const OpGraph& g, const std::string& output) {
  using namespace tessel;
  SubgraphBuilder builder;
  std::map<std::string, LazyTensor> made;
  for (const Node& node : g.graph.nodes) {
    const OpSpec* spec = find_op(node.op_type);
    if (!spec) throw InputError(node.where() + ": not in the op table");
    std::vector<LazyTensor> inputs;
    for (const std::string& name : node.inputs) inputs.push_back(inlined_input(g.graph, name, made, builder));
    OpContext ctx{g.graph, node, builder};
    std::vector<LazyTensor> outs = spec->build(ctx, inputs);
    if (outs.size() > node.outputs.size()) throw InputError(node.where() + ": more outputs than the node has");
    for (size_t k = 0; k < outs.size(); ++k) made[node.outputs[k]] = outs[k];
  }
  Built b;
  b.dag = builder.finish(made.at(output));
  b.input_values = builder.input_values();
  return b;
}

// build_inlined, then check_built: the interpreter's and the compiled default schedule's results
// against `want`.
inline void check_inlined(const OpGraph& g, const std::string& output, const Array& want) {
  check_built(g, build_inlined(g, output), want);
}

}  // namespace tessel_test
