#include "frontend/partition.h"

#include <algorithm>
#include <map>
#include <set>

#include "frontend/op_library.h"
#include "schedule/te/error.h"

namespace tessel {
namespace {

// The nodes of `group` that `output` depends on, in the group's (topological) order.
std::vector<size_t> needed_for(const Graph& graph, const FusedGroup& group, const std::string& output) {
  std::set<std::string> wanted{output};
  std::vector<size_t> keep;
  for (auto it = group.nodes.rbegin(); it != group.nodes.rend(); ++it) {
    const Node& node = graph.nodes[*it];
    const bool needed = std::any_of(node.outputs.begin(), node.outputs.end(),
                                    [&](const std::string& v) { return wanted.count(v) > 0; });
    if (!needed) continue;
    keep.push_back(*it);
    for (const std::string& v : node.inputs)
      if (!v.empty()) wanted.insert(v);
  }
  std::reverse(keep.begin(), keep.end());
  return keep;
}

// The data an op reads for input `name`: a tensor computed earlier in the subgraph, a scalar constant
// inlined as an immediate, or a placeholder (a model input, a weight, another subgraph's output).
LazyTensor input_of(const Graph& graph, const std::string& name, const std::map<std::string, LazyTensor>& computed,
                    SubgraphBuilder& builder) {
  if (name.empty()) return LazyTensor();
  if (auto it = computed.find(name); it != computed.end()) return it->second;
  const Value& v = graph.value(name);
  if (v.constant && v.constant->num_elements() == 1) {
    const TensorData data = *v.constant;
    return LazyTensor(v.info, [data](const std::vector<Expr>&) {
      if (data.dtype() == DType::Float32) return make_float(data.as_double(0));
      if (data.dtype() == DType::Int64) return make_int(data.as_int(0));
      return make_bool(data.as_int(0) != 0);
    });
  }
  // A placeholder is made when an op first reads the tensor: inputs an op takes only as constants
  // (a Reshape's shape, a Slice's starts) never become kernel parameters.
  return LazyTensor(v.info, [&builder, name, info = v.info](const std::vector<Expr>& i) {
    return builder.input(name, info).at(i);
  });
}

// "Conv+Add+Relu": the ops' labels (an internal op's may differ from its type, or be empty); a
// subgraph of layout conversions alone is "Layout".
std::string summary_of(const Graph& graph, const std::vector<size_t>& nodes) {
  std::string s;
  for (size_t i : nodes) {
    const OpSpec* spec = find_op(graph.nodes[i].op_type);
    const std::string label = spec && spec->label ? spec->label : graph.nodes[i].op_type;
    if (!label.empty()) s += (s.empty() ? "" : "+") + label;
  }
  return s.empty() ? "Layout" : s;
}

Subgraph build_subgraph(const Graph& graph, const std::vector<size_t>& nodes, const std::string& output) {
  SubgraphBuilder builder;
  std::map<std::string, LazyTensor> computed;
  for (size_t i : nodes) {
    const Node& node = graph.nodes[i];
    const OpSpec* spec = find_op(node.op_type);
    if (!spec)
      throw InputError(node.where() + ": operator " + node.op_type + " (opset " + std::to_string(graph.opset) +
                       ") is not supported by tessel");
    std::vector<LazyTensor> inputs;
    for (const std::string& name : node.inputs) inputs.push_back(input_of(graph, name, computed, builder));
    OpContext ctx{graph, node, builder};
    std::vector<LazyTensor> outputs = spec->build(ctx, inputs);
    if (outputs.size() > node.outputs.size()) ctx.fail("its definition made more outputs than the node has");
    for (size_t k = 0; k < outputs.size(); ++k) {
      if (node.outputs[k].empty()) continue;  // an optional output the model does not use
      if (outputs[k].info().shape != graph.value(node.outputs[k]).info.shape ||
          outputs[k].dtype() != graph.value(node.outputs[k]).info.dtype)
        ctx.fail("output " + std::to_string(k) + " does not have the type shape inference gave it");
      computed[node.outputs[k]] = outputs[k];
    }
  }
  auto it = computed.find(output);
  if (it == computed.end()) throw InputError("no op of the subgraph computes '" + output + "'");
  Subgraph s;
  try {
    s.dag = builder.finish(it->second);
  } catch (const InputError& e) {
    throw InputError("the subgraph " + summary_of(graph, nodes) + " computing '" + output + "': " + e.what());
  }
  s.inputs = builder.input_values();
  s.output = output;
  s.nodes = nodes;
  s.summary = summary_of(graph, nodes);
  return s;
}

}  // namespace

Partition partition(const Graph& graph, const std::vector<FusedGroup>& groups) {
  Partition p;
  std::set<std::string> available(graph.inputs.begin(), graph.inputs.end());
  for (const auto& [name, value] : graph.values())
    if (value.constant) available.insert(name);
  std::vector<Subgraph> pending;
  for (const FusedGroup& group : groups)
    for (const std::string& output : group.outputs)
      pending.push_back(build_subgraph(graph, needed_for(graph, group, output), output));
  // Groups come in the order of their first node; a group can read a group listed after it (its
  // first node came earlier), so the subgraphs are placed once everything they read is available.
  while (!pending.empty()) {
    auto ready = std::find_if(pending.begin(), pending.end(), [&](const Subgraph& s) {
      return std::all_of(s.inputs.begin(), s.inputs.end(),
                         [&](const std::string& in) { return available.count(in) > 0; });
    });
    if (ready == pending.end())
      throw InputError("the subgraph " + pending.front().summary + " reads a tensor that no subgraph computes");
    available.insert(ready->output);
    p.subgraphs.push_back(std::move(*ready));
    pending.erase(ready);
  }
  for (const std::string& out : graph.outputs)
    if (graph.is_constant(out))
      p.constant_outputs.push_back(out);
    else if (!available.count(out))
      throw InputError("nothing computes the model output '" + out + "'");
  return p;
}

Partition partition(const Graph& graph) { return partition(graph, fuse(graph)); }

}  // namespace tessel
