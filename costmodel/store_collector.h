// The walk over a lowered program that feature extraction starts from (private to costmodel/): its
// stores grouped with their copies (the copies unrolling made of one store share a row), each with
// its enclosing loops, allocations and guards, and what each GPU kernel asks of a multiprocessor.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "schedule/ir/stmt.h"

namespace tessel::feature {

struct Loop {
  const StmtNode* node;
  int64_t extent;
  bool prefetch = false;  // a Prefetch statement opens this loop's body
};

struct Allocation {
  const StmtNode* node;
  double outer_prod;  // iterations of the loops around the Allocate
};

// Stores that are copies of one another (same buffer, same loops, same expression skeleton).
struct StoreGroup {
  std::vector<const StmtNode*> stores;
  std::vector<Loop> loops;
  std::vector<Allocation> allocs;
  int guards = 0;
  int kernel = 0;  // the top-level statement holding it (one GPU kernel each)
};

// What one GPU kernel asks of a multiprocessor. Extents are the printer's launch shape: each tag's
// largest extent in the kernel (a loop bound to fewer threads runs under a guard).
struct KernelFacts {
  double block_shape[3] = {0, 0, 0};  // threadIdx.x/y/z extents, 0 when unbound
  double threads = 0, blocks = 0;     // products of the threadIdx.* / blockIdx.* extents; 0 when unbound
  double shared_bytes = 0;            // its shared allocations and warp-combine arrays, as the printer lays them out
  double local_bytes = 0;             // its local (per-thread) allocations
};

// A loop's constant extent (clamped at 0); the bound c of min(c, expr); else 1.
int64_t constant_extent(const Expr& e);
int bytes_of(DType t);
bool starts_with(const std::string& s, const char* prefix);
// The axis a binding tag names ("threadIdx.y": 1), -1 for none of x, y, z.
int tag_axis(const std::string& tag);

// Groups the stores of the statements walked, in order of first appearance.
class StoreCollector {
 public:
  std::vector<StoreGroup> groups;

  // Walks `part` as kernel number `kernel`, inside the allocations `outer`.
  void walk_kernel(const Stmt& part, int kernel, const std::vector<Allocation>& outer);
  void walk(const Stmt& s);

 private:
  std::vector<Loop> loops_;
  std::vector<size_t> signature_;
  std::vector<Allocation> allocs_;
  int guards_ = 0;
  int kernel_ = 0;
  std::unordered_map<size_t, int> index_;

  std::vector<Stmt> synthesized_;  // stand-ins for tensor-core operations (matrix_as_store)

  double outer_prod() const;
  void add_store(const StmtNode* s);
  const StmtNode* matrix_as_store(const StmtNode& m);
};

KernelFacts kernel_facts(const Stmt& kernel);

}  // namespace tessel::feature
