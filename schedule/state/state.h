// A schedule State: the DAG's operations (plus the cache / rfactor stages steps added) and, per
// stage, its loops and where it is computed. Steps (steps.h) transform a State; a State is a value,
// so a failed step leaves the caller's State untouched.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schedule/ir/stmt.h"
#include "schedule/te/dag.h"

namespace tessel {

enum class IterKind : uint8_t { Spatial, Reduce };

enum class Annotation : uint8_t {
  None, Parallel, Vectorize, Unroll,
  BlockX, BlockY, BlockZ, VThread, ThreadX, ThreadY, ThreadZ,
};
const char* to_string(Annotation a);
bool is_gpu_binding(Annotation a);

// A loop variable of a stage: a root axis or the product of a split / fuse. `extent` is derived from
// the root extents through the relations (see derive_extents).
struct IterVar {
  std::string name;
  IterKind kind = IterKind::Spatial;
  int64_t extent = 1;
  Annotation annotation = Annotation::None;
};

// How loop variables derive from each other, in the order they were created.
//   Split: parent = ((c0 * l1 + c1) * l2 + c2) ...; children c0..cn, inner lengths l1..ln;
//          c0's extent is ceil(parent / (l1 * ... * ln)).
//   Fuse:  fused = ((p0 * e1 + p1) * e2 + p2) ...; parents p0..pn with extents e0..en.
struct Relation {
  enum class Kind : uint8_t { Split, Fuse } kind = Kind::Split;
  std::vector<int> parents;   // Split: one; Fuse: the fused loops, outer to inner
  std::vector<int> children;  // Split: outer to inner; Fuse: one
  std::vector<int64_t> lengths;  // Split: inner lengths l1..ln
};

enum class ComputeLoc : uint8_t { Root, Inline, At };

struct StorageAlign {
  int axis = 0;
  int64_t factor = 0;
  int64_t offset = 0;
};

// prefetch: at the top of each iteration of `loop`, fetch into the cache what the stage's reads of
// input `tensor` touch `offset` iterations later (flat row-major addresses, so an offset past the
// loop's end reaches the data that follows, e.g. the next row).
struct PrefetchHint {
  std::string loop;
  std::string tensor;
  int64_t offset = 1;
};

struct Stage {
  std::string name;              // the tensor it computes (== its Operation's name)
  std::vector<IterVar> vars;     // every loop variable ever created; root axes first
  int num_spatial_roots = 0;     // vars[0, num_spatial_roots) are the op's axes,
  int num_roots = 0;             // then its reduce axes up to num_roots
  std::vector<int> leaves;       // the loop nest, outer to inner (indices into vars)
  std::vector<Relation> relations;
  ComputeLoc loc = ComputeLoc::Root;
  std::string attach_stage;      // ComputeLoc::At: the consumer stage
  std::string attach_loop;       //                 and its loop (by name)
  MemScope scope = MemScope::Global;
  int auto_unroll_max_step = 0;  // pragma on the loop `pragma_loop`
  std::string pragma_loop;
  std::vector<StorageAlign> storage_align;
  std::vector<PrefetchHint> prefetches;
  std::string tensorize_loop;     // tensorize: this loop and those inside are one tensor-core operation
  std::string double_buffer_loop; // pragma double_buffer: the shared tiles fetched in this loop get copies
  int pipeline_stages = 2;        // how many (pragma pipeline_stages)
  bool swizzle = false;           // storage_swizzle: the shared buffer in 128-byte swizzled rows

  int find_var(const std::string& name) const;   // -1 if none
  int leaf_position(const std::string& name) const;  // position in leaves, -1 if not a leaf
  const IterVar& leaf(int position) const { return vars[leaves[position]]; }
  std::vector<std::string> leaf_names() const;
};

class State {
 public:
  State() = default;
  explicit State(const ComputeDAG& dag);

  const std::vector<Operation>& ops() const { return ops_; }
  const std::vector<Stage>& stages() const { return stages_; }  // one per op, same order
  const Operation& op(const std::string& name) const;
  const Stage& stage(const std::string& name) const;
  int stage_index(const std::string& name) const;  // -1 if none
  // Compute ops (not placeholders) that read `name`.
  std::vector<std::string> consumers(const std::string& name) const;
  // Consumers seen through inlined stages: the stages whose code will actually read `name`.
  std::vector<std::string> effective_consumers(const std::string& name) const;
  std::vector<std::string> outputs() const;
  bool is_output(const std::string& name) const;

  // Mutators used by steps (steps check validity first).
  Operation& mutable_op(const std::string& name);
  Stage& mutable_stage(const std::string& name);
  void insert_stage(int position, Operation op, Stage stage);

  // A readable summary: each stage, its location and its loops with extents and annotations.
  std::string to_string() const;

 private:
  std::vector<Operation> ops_;
  std::vector<Stage> stages_;
};

// A fresh Stage for `op`: one loop per axis, then one per reduce axis.
Stage make_stage(const Operation& op);

// Recomputes every var's extent from `root_extents` (one per root axis) through the relations.
void derive_extents(Stage& stage, const std::vector<int64_t>& root_extents);

// The value of every var of `stage` as an expression of the leaf loop variables, given the names the
// leaves have in the generated code (`leaf_names[i]` for leaves[i]).
std::vector<Expr> var_values(const Stage& stage, const std::vector<std::string>& leaf_names);

}  // namespace tessel
