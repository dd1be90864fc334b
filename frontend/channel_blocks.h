// Channels in blocks for the CPU, as TVM's AlterOpLayout to NCHWc and oneDNN's nChw16c do: a
// kernel's innermost axis becomes a vector of output channels, so a convolution loads its weights
// and stores its outputs a vector at a time whatever its stride, and a depthwise one keeps each
// channel in its lane.
//
//   1. Every 2-D Conv with constant weights whose output channels fill whole blocks —
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

// The block a tensor of `channels` channels gets: `widest` (a CPU's float lanes per vector: 16 with
// AVX-512, 8 with AVX2, as oneDNN picks nChw16c or nChw8c) when it divides them, else 8 when that
// does, else 0 (stays NCHW). A block of one vector keeps a kernel's register tile in whole vectors;
// a block of two vectors on AVX2 left the depthwise and wide-window kernels 2-7x slower.
int64_t channel_block(int64_t channels, int64_t widest);

// Rewrites `graph` in place (topological order kept), in blocks of at most `widest` channels.
void block_channels(Graph& graph, int64_t widest);

}  // namespace tessel
