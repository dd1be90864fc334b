// Integer arithmetic analysis shared by the lowering passes: linear forms (sum of c_i * atom_i +
// constant) for cancelling symbolic terms, and interval bounds of index expressions given the
// ranges of the loop variables in scope.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "schedule/te/expr.h"

namespace tessel {

// sum_i coeff_i * atom_i + constant, with atoms in order of first appearance. Atoms are maximal
// integer subexpressions that are not Add / Sub / Mul-by-constant / IntImm.
struct LinearForm {
  std::vector<std::pair<Expr, int64_t>> terms;
  int64_t constant = 0;

  bool is_constant() const { return terms.empty(); }
  void add(const Expr& atom, int64_t coeff);
  LinearForm scaled(int64_t k) const;
  LinearForm plus(const LinearForm& other, int64_t sign = 1) const;
};

LinearForm linearize(const Expr& e);
Expr to_expr(const LinearForm& f);

// Whether the integer expression is a multiple of n for every value of its variables: each term of
// its linear form has a coefficient that is one, or an atom that provably is (floormod(x, c) is a
// multiple of g when both x and c are; a product when either factor is). Conservative: false means
// "not proven".
bool is_multiple_of(const Expr& e, int64_t n);

// Whether a vector index is a unit-stride Ramp whose start is provably a multiple of its lane
// count: the lanes fill one aligned run of memory (a float4, a 16-byte copy).
bool is_aligned_ramp(const Expr& index);

// Every TensorRead of `tensor` in `e`, in order.
std::vector<Expr> reads_of(const Expr& e, const std::string& tensor);

// Inclusive integer bounds; nullopt = unbounded on that side.
struct Interval {
  std::optional<int64_t> lo, hi;
  bool is_point() const { return lo && hi && *lo == *hi; }
};

// Ranges of the variables in scope: var name -> [lo, hi].
using VarRanges = std::map<std::string, Interval>;

// Bounds of an integer expression given variable ranges (unknown variables are unbounded).
Interval bound_of(const Expr& e, const VarRanges& ranges);

// The range of a loop's variable, [min, min + extent - 1], from the bounds of both.
Interval loop_range(const Expr& min, const Expr& extent, const VarRanges& ranges);

// Division rounding toward negative infinity and its remainder (the sign of b), as the IR's
// FloorDiv and FloorMod compute them.
int64_t floor_div(int64_t a, int64_t b);
int64_t floor_mod(int64_t a, int64_t b);

// Proves a boolean condition true or false under the ranges; nullopt when it cannot.
std::optional<bool> prove(const Expr& cond, const VarRanges& ranges);

// Constant folding and algebraic cleanup of one expression (integer parts canonicalized as linear
// forms, conditions decided where the ranges allow).
Expr simplify_expr(const Expr& e, const VarRanges& ranges = {});

}  // namespace tessel
