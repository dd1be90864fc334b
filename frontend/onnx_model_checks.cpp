// Checks of a parsed ONNX model that run before ONNX's own checker and shape inference: those trust
// sizes and structure more than an untrusted file deserves, and say less about where a problem is.
#include <algorithm>
#include <map>
#include <set>

#include "frontend/onnx_import_steps.h"
#include "frontend/onnx_tensor.h"
#include "onnx/onnx_pb.h"
#include "schedule/te/error.h"

namespace tessel {

using onnx::AttributeProto;
using onnx::GraphProto;
using onnx::NodeProto;

std::string node_label(const NodeProto& node) { return "node '" + node.name() + "' (" + node.op_type() + ")"; }

void name_unnamed_nodes(GraphProto* graph) {
  for (int i = 0; i < graph->node_size(); ++i) {
    NodeProto* node = graph->mutable_node(i);
    if (node->name().empty()) node->set_name(node->op_type() + "_" + std::to_string(i));
  }
}

namespace {

bool is_default_domain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

const char* unsupported_attribute_kind(const AttributeProto& attr) {
  if (attr.has_g() || attr.graphs_size() > 0 || attr.type() == AttributeProto::GRAPH ||
      attr.type() == AttributeProto::GRAPHS)
    return "a graph (control flow such as If, Loop and Scan is not supported)";
  if (attr.has_sparse_tensor() || attr.sparse_tensors_size() > 0) return "a sparse tensor, which is not supported";
  return nullptr;
}

}  // namespace

void check_supported_features(const GraphProto& graph) {
  if (graph.sparse_initializer_size() > 0)
    throw InputError("sparse initializer '" + graph.sparse_initializer(0).values().name() + "' is not supported");
  for (const NodeProto& node : graph.node()) {
    if (!is_default_domain(node.domain()))
      throw InputError(node_label(node) + ": domain '" + node.domain() +
                       "' is not supported (only the default ONNX domain is)");
    for (const AttributeProto& attr : node.attribute())
      if (const char* kind = unsupported_attribute_kind(attr))
        throw InputError(node_label(node) + ": attribute '" + attr.name() + "' is " + kind);
  }
}

namespace {

void check_value_info_dims(const onnx::ValueInfoProto& info) {
  if (!info.type().has_tensor_type() || !info.type().tensor_type().has_shape()) return;
  std::vector<int64_t> known;
  for (const auto& dim : info.type().tensor_type().shape().dim())
    known.push_back(dim.has_dim_value() ? dim.dim_value() : 1);
  checked_element_count(known, "tensor '" + info.name() + "'");
}

}  // namespace

void check_declared_sizes(const GraphProto& graph) {
  for (const auto& init : graph.initializer()) check_tensor_sizes(init, "initializer '" + init.name() + "'");
  for (const NodeProto& node : graph.node())
    for (const AttributeProto& attr : node.attribute()) {
      const std::string what = "attribute '" + attr.name() + "' of " + node_label(node);
      if (attr.has_t()) check_tensor_sizes(attr.t(), what);
      for (const auto& t : attr.tensors()) check_tensor_sizes(t, what);
    }
  for (const auto& info : graph.input()) check_value_info_dims(info);
  for (const auto& info : graph.output()) check_value_info_dims(info);
  for (const auto& info : graph.value_info()) check_value_info_dims(info);
}

namespace {

// Where each tensor name is defined: -1 for a graph input or initializer, else the node's index.
// InputError for a name defined twice.
std::map<std::string, int> definitions(const GraphProto& graph) {
  std::map<std::string, int> defined;
  std::set<std::string> initializers;
  for (const auto& init : graph.initializer())
    if (!initializers.insert(init.name()).second) throw InputError("initializer '" + init.name() + "' is given twice");
  std::set<std::string> inputs;
  for (const auto& input : graph.input())
    if (!inputs.insert(input.name()).second) throw InputError("input '" + input.name() + "' is listed twice");
  // An initializer may share its input's name: it is then the input's default value.
  for (const std::string& name : initializers) defined[name] = -1;
  for (const std::string& name : inputs) defined[name] = -1;
  for (int i = 0; i < graph.node_size(); ++i)
    for (const std::string& out : graph.node(i).output()) {
      if (out.empty()) continue;
      auto [it, fresh] = defined.emplace(out, i);
      if (!fresh)
        throw InputError(
            "tensor '" + out + "' is defined twice: by " + node_label(graph.node(i)) + " and by " +
            (it->second < 0 ? std::string("an input or initializer") : node_label(graph.node(it->second))));
    }
  return defined;
}

// The nodes on a cycle among `left` (nodes not yet ordered, each with an unordered producer),
// walking back through producers from the first until one repeats.
std::string describe_cycle(const GraphProto& graph, const std::map<std::string, int>& defined,
                           const std::vector<bool>& left) {
  int node = static_cast<int>(std::find(left.begin(), left.end(), true) - left.begin());
  std::vector<int> path;
  std::vector<int> seen_at(graph.node_size(), -1);
  while (seen_at[node] < 0) {
    seen_at[node] = static_cast<int>(path.size());
    path.push_back(node);
    for (const std::string& in : graph.node(node).input()) {
      auto it = in.empty() ? defined.end() : defined.find(in);
      if (it != defined.end() && it->second >= 0 && left[it->second]) {
        node = it->second;
        break;
      }
    }
  }
  std::string text;
  for (size_t k = seen_at[node]; k < path.size(); ++k) text += node_label(graph.node(path[k])) + " reads from ";
  return text + node_label(graph.node(node));
}

}  // namespace

void sort_nodes(GraphProto* graph) {
  const std::map<std::string, int> defined = definitions(*graph);
  const int n = graph->node_size();
  std::vector<int> pending(n, 0);            // producers not yet ordered, per node
  std::vector<std::vector<int>> readers(n);  // nodes reading each node's outputs
  for (int i = 0; i < n; ++i)
    for (const std::string& in : graph->node(i).input()) {
      if (in.empty()) continue;
      auto it = defined.find(in);
      if (it == defined.end())
        throw InputError(node_label(graph->node(i)) + " reads tensor '" + in +
                         "', which no input, initializer or node defines");
      if (it->second >= 0) {
        ++pending[i];
        readers[it->second].push_back(i);
      }
    }
  for (const auto& out : graph->output())
    if (!defined.count(out.name()))
      throw InputError("graph output '" + out.name() + "' is defined by no input, initializer or node");
  // Kahn's algorithm, taking ready nodes in file order so a sorted file keeps its order.
  std::set<int> ready;
  for (int i = 0; i < n; ++i)
    if (pending[i] == 0) ready.insert(i);
  std::vector<int> order;
  while (!ready.empty()) {
    const int i = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(i);
    for (int r : readers[i])
      if (--pending[r] == 0) ready.insert(r);
  }
  if (static_cast<int>(order.size()) < n) {
    std::vector<bool> left(n, true);
    for (int i : order) left[i] = false;
    throw InputError("the graph has a cycle: " + describe_cycle(*graph, defined, left));
  }
  google::protobuf::RepeatedPtrField<NodeProto> sorted;
  for (int i : order) sorted.Add()->Swap(graph->mutable_node(i));
  graph->mutable_node()->Swap(&sorted);
}

}  // namespace tessel
