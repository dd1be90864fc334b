// A model in, ready to tune or build: import (frontend/onnx_import.h) → simplify → fuse → partition
// into subgraphs → tasks by workload key. Every step's errors are InputErrors naming the node or
// tensor, so a user learns at once which part of a model tessel cannot take.
#pragma once

#include <string>
#include <vector>

#include "frontend/graph.h"
#include "frontend/onnx_import.h"
#include "frontend/partition.h"
#include "frontend/tasks.h"
#include "schedule/target_kind.h"

namespace tessel {

struct Model {
  std::string path;
  Graph graph;          // simplified
  Partition partition;  // the subgraphs, in an order that runs
  std::vector<ModelTask> tasks;
};

// Loads and prepares the model at `path`. Unsupported ops are all reported at once (each node with
// its op_type, and the model's opset), not one per run.
Model load_model(const std::string& path, const ImportOptions& options, TargetKind target);

// The nodes whose op tessel does not support: "node 'N' (OP_TYPE)" each, in order.
std::vector<std::string> unsupported_nodes(const Graph& graph);

}  // namespace tessel
