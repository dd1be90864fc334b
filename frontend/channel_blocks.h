// Channels in blocks for the CPU, as TVM's AlterOpLayout to NCHWc and oneDNN's nChw16c do: a
// kernel's innermost axis becomes a vector of output channels, so a convolution loads its weights
// and stores its outputs a vector at a time whatever its stride, and a depthwise one keeps each
// channel in its lane.
//
//   1. Every 2-D Conv with constant weights whose output channels fill whole blocks (16, else 8) —
//      groups 1 or depthwise — becomes ConvNCHWc (frontend/op_library.h) with its weights repacked
//      here, once: X → [ToNCHWc] → ConvNCHWc → FromNCHWc → the Conv's output name. Its input stays
//      NCHW when its channels do not fill whole blocks (an image's three).
//   2. The pools over 2-D (MaxPool, AveragePool and the global ones) reading a FromNCHWc become
//      their blocked forms likewise.
//   3. A FromNCHWc moves past an elementwise op whose other inputs are single constants (Relu, Clip)
//      or FromNCHWc of the same blocks (a residual Add), and ToNCHWc(FromNCHWc(y)) is y: consecutive
//      convolutions hand each other blocked tensors.
//   4. Nodes nothing reads any more go.
//
// The model's inputs and outputs keep their layout; a conversion left over before an op that stays
// NCHW is a kernel of its own (a copy), or joins a following injective op. Shapes, dtypes and values
// are unchanged: only where the numbers live.
#pragma once

#include <cstdint>

#include "frontend/graph.h"

namespace tessel {

// The block a tensor of `channels` channels gets: 16 or 8 when it divides them, else 0 (stays NCHW).
int64_t channel_block(int64_t channels);

// Rewrites `graph` in place (topological order kept).
void block_channels(Graph& graph);

}  // namespace tessel
