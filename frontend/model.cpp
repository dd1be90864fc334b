#include "frontend/model.h"

#include <set>

#include "frontend/channel_blocks.h"
#include "frontend/op_library.h"
#include "frontend/simplify.h"
#include "frontend/storage_dtype.h"
#include "schedule/te/error.h"

namespace tessel {

std::vector<std::string> unsupported_nodes(const Graph& graph) {
  std::vector<std::string> out;
  for (const Node& node : graph.nodes)
    if (!find_model_op(node.op_type)) out.push_back(node.where());
  return out;
}

Model load_model(const std::string& path, const ImportOptions& options, TargetKind target) {
  Model m;
  m.path = path;
  m.graph = import_onnx(path, options);
  simplify(m.graph);
  const std::vector<std::string> unsupported = unsupported_nodes(m.graph);
  if (!unsupported.empty()) {
    std::set<std::string> types;
    for (const Node& node : m.graph.nodes)
      if (!find_model_op(node.op_type)) types.insert(node.op_type);
    std::string list, nodes;
    for (const std::string& t : types) list += (list.empty() ? "" : ", ") + t;
    for (size_t i = 0; i < unsupported.size() && i < 5; ++i) nodes += (nodes.empty() ? "" : "; ") + unsupported[i];
    throw InputError(path + ": " + std::to_string(unsupported.size()) + " node" + (unsupported.size() == 1 ? "" : "s") +
                     " with operators tessel does not support at opset " + std::to_string(m.graph.opset) + " (" + list +
                     "): " + nodes + (unsupported.size() > 5 ? "; ..." : ""));
  }
  if (target == TargetKind::Llvm && options.cpu_channel_block > 0) block_channels(m.graph, options.cpu_channel_block);
  m.partition = partition(m.graph);
  store_in(options.storage, m.graph, m.partition);
  m.tasks = extract_tasks(m.partition, default_roofline(target));
  return m;
}

}  // namespace tessel
