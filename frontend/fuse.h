// Fusion: the model's nodes partitioned into groups that each become one kernel, with TVM FuseOps'
// semantics. Every op has a pattern kind (frontend/op_library.h); a node fuses into its immediate
// post-dominator — the node every path from it to the model's outputs goes through — when the kinds
// along the way allow it:
//
//   phase 1: a contraction or window (OutEwiseFusable) or a reduction takes its elementwise and
//            broadcast epilogue: conv + bias + activation + residual add + more elementwise ops;
//   phase 2: an elementwise or broadcast node joins a reduction or injective post-dominator (the
//            prologue of softmax and layernorm), through injective and elementwise nodes only;
//   phase 3: an injective node (reshape, transpose, slice ...) joins any post-dominator that is not
//            opaque, through injective and elementwise nodes only.
//
// Because every path from a fused node goes through its post-dominator, a group's only value read
// outside it is its post-dominator's. A group holds at most `max_nodes` nodes (TVM's fuse depth).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "frontend/graph.h"
#include "frontend/op_library.h"

namespace tessel {

struct FusedGroup {
  std::vector<size_t> nodes;         // indices into Graph::nodes, in topological order
  std::vector<std::string> outputs;  // values read outside the group or model outputs, in order
};

struct FuseOptions {
  int max_nodes = 256;
  // The pattern kind of a node (default: its op's, from the op table; InputError for an op tessel
  // does not support).
  std::function<OpPattern(const Node&)> pattern_of;
};

// Groups in topological order (a group's inputs come from earlier groups or the model's inputs and
// constants). Constant-producing nodes must have been folded away (frontend/simplify.h).
std::vector<FusedGroup> fuse(const Graph& graph, const FuseOptions& options = {});

}  // namespace tessel
