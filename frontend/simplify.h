// Simplifying an imported graph before fusion: constant computations folded into constant values
// (the Shape → Gather → Unsqueeze → Concat → Reshape chains exporters emit, Constant, Identity, and
// small arithmetic on constants; see constant_fold.h), BatchNormalization folded into the Conv
// before it, a Gemm's constant B stored [N, K] transposed once to [K, N], and nodes and values
// nothing reads removed. Graph outputs that become constants stay
// as constant values. The graph stays in topological order, and its outputs keep their names.
#pragma once

#include "frontend/graph.h"

namespace tessel {

// Runs the passes in order (simplify.cpp lists them). InputError naming the node when folding meets
// constant inputs that break an op's rules (an index out of range, a reshape to another size).
void simplify(Graph& graph);

}  // namespace tessel
