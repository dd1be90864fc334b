// One feature row (private to costmodel/): the columns of one group of store copies, computed from
// its enclosing loops, its kernel and the affine form of every access it makes. The scalar columns
// and the intensity curve are in feature_row.cpp, the per-buffer blocks in buffer_features.cpp.
#pragma once

#include <string>
#include <vector>

#include "costmodel/feature_layout.h"
#include "costmodel/features.h"
#include "costmodel/store_collector.h"

namespace tessel::feature {

// log2(1 + x) for x >= 0 (negative x reads as 0): how most count columns are scaled.
double log1p2(double x);

// An access's index as constant + sum of coefficient x loop variable; the last coefficient belongs
// to the vector lane (a Ramp's stride). Floor division scales coefficients, other non-affine parts
// keep the coefficients of their first operand: good enough to tell strides and footprints apart.
struct AffineIndex {
  double constant = 0;
  std::vector<double> coef;  // loops outer to inner, then the lane
};

struct Access {
  const std::string* buffer;
  AffineIndex index;
  int lanes;
  int elem_bytes;
  bool write;
  int copy;  // which of the group's stores it belongs to
};

// Fills `row` (feature_width() values, zeroed by the caller) for `group`, and `counts` with the raw
// arithmetic counts (kFloatAddSub .. kCast) and the raw outer_prod, which the caller turns into
// counts per float operation of the whole program once every row is known.
class RowBuilder {
 public:
  RowBuilder(const StoreGroup& group, const KernelFacts& kernel, const LoweredFunc& func, const FeatureTarget& target,
             float* row, double* counts);
  void build();

 private:
  const StoreGroup& g_;
  const KernelFacts& kernel_;
  const LoweredFunc& func_;
  const FeatureTarget& target_;
  float* row_;
  double* counts_;  // raw arithmetic counts (kFloatAddSub .. kCast), then the raw outer_prod
  int nloops_ = 0;
  double prod_ = 1;
  double ops_[kVecLen] = {};  // per execution of the group's stores (lanes counted)
  int vec_len_ = 1;
  int load_lanes_ = 1;
  bool contiguous_ = false;
  int copy_ = -1;  // the store being read, 0 for the first
  std::vector<Access> accesses_;

  void set(int col, double v) { row_[col] = static_cast<float>(v); }

  // --- the accesses (feature_row.cpp) ---
  void count_ops(const Expr& e);
  void collect_loads(const Expr& e);
  int loop_of(const std::string& var) const;
  void affine(const Expr& e, double scale, AffineIndex& out) const;
  void add_access(const std::string& buffer, const Expr& index, int lanes, DType dtype, bool write);
  double extent_at(int i, int lanes) const;
  double footprint(const Access& a, int from) const;
  const StmtNode* allocation_of(const std::string& buffer, double* outer_prod) const;

  // --- the scalar columns and the curve (feature_row.cpp) ---
  void arithmetic();
  void loops_and_bindings();
  void allocation();
  void gpu_kernel();
  void curve();

  // --- the per-buffer blocks (buffer_features.cpp) ---
  struct WarpAccess {
    double sectors = 0, efficiency = 0, bank_ways = 0;
  };
  WarpAccess warp_access(const Access& a) const;
  double lines_of(const Access& a, double line_elems) const;
  void buffers();
};

}  // namespace tessel::feature
