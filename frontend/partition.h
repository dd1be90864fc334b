// A model as kernels: each fused group's output value becomes one subgraph — a ComputeDAG built from
// the group's ops (frontend/subgraph_builder.h) with its placeholders bound to graph values (model
// inputs, weights, earlier subgraphs' outputs). A group with several outputs (a Split read by three
// groups) gives one subgraph per output, each computing only what that output needs. The partition
// keeps the model's order, so a build can run the subgraphs one after another.
#pragma once

#include <string>
#include <vector>

#include "frontend/fuse.h"
#include "frontend/graph.h"
#include "schedule/te/dag.h"

namespace tessel {

struct Subgraph {
  ComputeDAG dag;
  std::vector<std::string> inputs;  // the graph value of each DAG placeholder, in placeholder order
  std::string output;               // the graph value the DAG's last stage computes
  std::vector<size_t> nodes;        // the graph nodes it computes, in order
  std::string summary;              // the ops it fuses, e.g. "Conv+Add+Relu"
};

struct Partition {
  std::vector<Subgraph> subgraphs;            // in an order that runs (inputs before their readers)
  std::vector<std::string> constant_outputs;  // model outputs that are constants (copied, not computed)
};

// Builds every subgraph. Throws InputError naming the node when an op cannot be built (an
// unsupported op, an attribute out of range, a shape the op's definition disagrees with).
Partition partition(const Graph& graph, const std::vector<FusedGroup>& groups);

// fuse() and partition() in one step, with the default fusion options.
Partition partition(const Graph& graph);

}  // namespace tessel
