// What the schedule generators share: a trace under construction whose steps are kept only when
// they apply, and the structural questions they ask of a DAG (is there a contraction, which axes
// carry its reuse).
#pragma once

#include <string>
#include <vector>

#include "schedule/state/trace.h"

namespace tessel {

// A State with the trace that built it. apply() keeps a step only when it applies: generators try
// steps that may not fit every shape (a split of a loop shorter than its factor, say) and go on.
class TraceBuilder {
 public:
  explicit TraceBuilder(const ComputeDAG& dag) : state_(dag) {}
  bool apply(const Step& step);
  const State& state() const { return state_; }
  const Trace& trace() const { return trace_; }

 private:
  State state_;
  Trace trace_;
};

// Whether a tensor read indexes with `axis`.
bool read_uses_axis(const Expr& read, const std::string& axis);
// Every TensorRead in `e`, in order.
std::vector<Expr> tensor_reads(const Expr& e);

// Whether `op` pads the input of a reduction of `dag`: a Select stage a reduction reads (a
// convolution's or a pool's zeros around the image). A Select elsewhere (LeakyRelu's, in an
// epilogue) is not one.
bool pads_reduction_input(const ComputeDAG& dag, const Operation& op);

// A sum of products of two tensor reads, each missing an output axis the other has (A[i,k] *
// B[k,j]): the reuse register tiling exploits. X[i,k] * X[i,k] is a row reduction, not one.
const Operation* find_contraction(const ComputeDAG& dag);

// A sum of products of two tensor reads where only one read misses output axes and the output's
// last axis indexes some read's innermost dimension: a depthwise (or any per-channel) convolution,
// out[n,c,y,x] = sum over the window of in[n,c,y*s+ky,x*s+kx] * w[c,ky,kx]. Its reuse is along
// the output row (the window's reads overlap and the weight is broadcast), so it tiles as a
// contraction does, vectorized along the row. A row reduction (sum over k of x[i,k] * v[k]) is not
// one: its output axis does not index the innermost dimension.
const Operation* find_window_product(const ComputeDAG& dag);

// Tiling axes of a contraction: `v` is the last spatial axis (unit stride in the output); `u` is an
// axis that only the read not indexed by v uses (A's row in matmul, the filter in conv), -1 if none.
// Row reductions (the default schedule and the CPU sketch share these steps).
//
// reduce over k -> rfactor into chains x lanes partial results, independent vector accumulators so
// the adds (or maxes) do not wait on each other's latency, computed at the row; chains 1: one vector.
void rfactor_into_vectors(TraceBuilder& b, const std::string& name, int64_t chains, int64_t lanes);

// A row's first pass over a large input waits on DRAM, and its later passes (computing in cache)
// leave DRAM idle. The last stage before `out`'s pass that reads the input fetches it `ahead_bytes`
// ahead (at least a row), so the next rows arrive while this one computes. The prefetch goes in the
// stage's innermost loop that is neither vectorized nor unrolled (one iteration covers a few cache
// lines of the row). Inputs smaller than `min_bytes` are left alone.
void prefetch_rows_ahead(TraceBuilder& b, const Operation& input, const std::string& out, int64_t ahead_bytes,
                         int64_t min_bytes);

// The axes of a contraction's register tile: `v` the innermost output axis (the vector), `u` an
// axis only the other operand reads (the rows of the tile: each row reuses the v-operand's vector),
// and `w` an axis only the v-operand reads besides v (a convolution's blocks of output channels in
// the weights: more of them in the tile reuse each broadcast input value); -1 where there is none.
struct ContractionAxes {
  int u = -1;
  int v = 0;
  int w = -1;
};
ContractionAxes contraction_axes(const Operation& c);

}  // namespace tessel
