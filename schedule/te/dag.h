// ComputeDAG: a fused subgraph as tensor expressions. Placeholders are inputs; each compute
// operation defines one tensor over data-parallel axes, optionally reducing over reduction axes.
//
//   out[a0, ..., an] = body                              (reduce == None)
//   out[a0, ..., an] = combine_{r0..rm} body             (reduce == Sum / Max / Min, init 0 / -inf / +inf)
//
// `body` refers to axes by Var name and to other tensors through TensorRead. Operations are kept in
// topological order; the DAG prints to one canonical text and its workload key hashes that text.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "schedule/te/expr.h"

namespace tessel {

struct Axis {
  std::string name;
  int64_t extent = 1;
};

enum class ReduceKind : uint8_t { None, Sum, Max, Min };
const char* to_string(ReduceKind kind);
double reduce_init(ReduceKind kind);  // 0, -inf, +inf

struct Operation {
  std::string name;
  bool is_placeholder = false;
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;        // one extent per output dimension
  std::vector<Axis> axes;            // compute only: one per output dimension, same extents as shape
  std::vector<Axis> reduce_axes;     // compute only: empty unless reduce != None
  ReduceKind reduce = ReduceKind::None;
  Expr body;                         // compute only

  int64_t num_elements() const;
};

class ComputeDAG {
 public:
  ComputeDAG() = default;
  // Checks the DAG: unique names, topological order, axis names used consistently, reads of known
  // tensors with the right rank. Throws InputError naming the offending operation.
  explicit ComputeDAG(std::vector<Operation> ops);

  const std::vector<Operation>& ops() const { return ops_; }
  const Operation& op(const std::string& name) const;  // throws InputError if unknown
  int index_of(const std::string& name) const;         // -1 if unknown

  std::vector<std::string> inputs() const;   // placeholders, in order
  std::vector<std::string> outputs() const;  // compute ops no other op reads, in order
  // Compute ops that read `name` directly.
  std::vector<std::string> consumers(const std::string& name) const;

  // Multiply-adds count as two; math functions as one each. Used for GFLOP/s reports.
  double flops() const;

  // One canonical text form: same DAG => same text, byte for byte.
  std::string to_text() const;
  // 16 hex digits: a hash of to_text() plus the dtype signature.
  std::string workload_key() const;

 private:
  std::vector<Operation> ops_;
};

}  // namespace tessel
