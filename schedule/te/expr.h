// Scalar and vector expressions shared by tensor expressions (TE) and the loop-nest IR.
//
// Semantics, written once:
//  - Every Expr is immutable and built by a checking constructor below; a node's hash is structural,
//    so two identical expressions hash and compare equal wherever they were built.
//  - Types are a DType plus a lane count (1 for scalars). Index arithmetic is Int64, data is Float32,
//    comparisons yield Bool. Binary operators require equal types; constructors check it.
//  - Float16 (IEEE binary16) and BFloat16 are storage types: a value of either is read, selected,
//    stored and cast, never computed with. Arithmetic, comparisons and math functions take Float32,
//    so a half-precision kernel casts what it reads to Float32, computes (and accumulates) there, and
//    casts back once to store. A cast to a 16-bit type rounds to nearest, ties to even.
//  - Div is true division for floats; FloorDiv / FloorMod round toward negative infinity for ints.
//  - Min / Max on floats follow IEEE minNum / maxNum (C's fmin / fmax): a NaN operand yields the
//    other operand. Math functions follow their C library definitions (Sigmoid is 1 / (1 + exp(-x)),
//    Rsqrt is 1 / sqrt(x), Pow is C's pow).
//  - Var refers to a loop or axis variable by name; names are unique within one ComputeDAG or one
//    lowered function.
//  - TensorRead(name, indices) reads an N-d tensor (TE level and the loop nest before storage
//    flattening); Load(name, index) reads a flat buffer (after flattening). A Load whose index has
//    L lanes (a Ramp) reads L elements.
//  - Ramp(base, stride, lanes) is the vector base + i*stride for i in [0, lanes); Broadcast repeats a
//    scalar. Both appear only after vectorization.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace tessel {

enum class DType : uint8_t { Float32, Int64, Bool, Float16, BFloat16 };

struct Type {
  DType dtype = DType::Float32;
  int lanes = 1;

  // Any floating-point type; only Float32 takes arithmetic (is_half types are storage).
  bool is_float() const { return dtype == DType::Float32 || is_half(); }
  bool is_half() const { return dtype == DType::Float16 || dtype == DType::BFloat16; }
  bool is_int() const { return dtype == DType::Int64; }
  bool is_bool() const { return dtype == DType::Bool; }
  bool is_vector() const { return lanes > 1; }
  Type with_lanes(int n) const { return Type{dtype, n}; }
  Type element_of() const { return Type{dtype, 1}; }
  bool operator==(const Type& o) const { return dtype == o.dtype && lanes == o.lanes; }
  bool operator!=(const Type& o) const { return !(*this == o); }
};

inline constexpr Type kFloat32{DType::Float32, 1};
inline constexpr Type kInt64{DType::Int64, 1};
inline constexpr Type kBool{DType::Bool, 1};
inline constexpr Type kFloat16{DType::Float16, 1};
inline constexpr Type kBFloat16{DType::BFloat16, 1};

std::string to_string(DType dtype);  // float32, int64, bool, float16, bfloat16
std::string to_string(Type type);

enum class ExprOp : uint8_t {
  IntImm, FloatImm, Var,
  Add, Sub, Mul, Div, FloorDiv, FloorMod, Min, Max,
  EQ, NE, LT, LE, GT, GE, And, Or, Not,
  Select, Cast, Call,
  TensorRead, Load,
  Ramp, Broadcast,
};

// Math functions reachable through ExprOp::Call. All take and return floats; Pow takes two args.
enum class MathFn : uint8_t { Exp, Log, Sqrt, Rsqrt, Tanh, Sigmoid, Erf, Abs, Pow };

const char* to_string(ExprOp op);
const char* to_string(MathFn fn);

struct ExprNode;
using Expr = std::shared_ptr<const ExprNode>;

struct ExprNode {
  ExprOp op;
  Type type;
  int64_t int_value = 0;   // IntImm value; MathFn for Call; lanes for Ramp / Broadcast
  double float_value = 0;  // FloatImm value
  std::string name;        // Var name; tensor or buffer name for TensorRead / Load
  std::vector<Expr> args;  // operands in a fixed order per op
  size_t hash = 0;         // structural hash, computed at construction

  bool is_const() const { return op == ExprOp::IntImm || op == ExprOp::FloatImm; }
  MathFn math_fn() const { return static_cast<MathFn>(int_value); }
};

// --- checking constructors -------------------------------------------------------------------
Expr make_int(int64_t value, int lanes = 1);
Expr make_float(double value, int lanes = 1);
Expr make_bool(bool value);
Expr make_var(const std::string& name, Type type = kInt64);
Expr make_binary(ExprOp op, Expr a, Expr b);  // arithmetic, comparison, And / Or
Expr make_not(Expr a);
Expr make_select(Expr cond, Expr t, Expr f);
Expr make_cast(Type type, Expr a);
Expr make_call(MathFn fn, std::vector<Expr> args);
Expr make_tensor_read(const std::string& tensor, std::vector<Expr> indices, Type type = kFloat32);
Expr make_load(const std::string& buffer, Expr index, Type type);
Expr make_ramp(Expr base, Expr stride, int lanes);
Expr make_broadcast(Expr value, int lanes);

// Readable shorthands for building expressions in op templates, passes and tests.
Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator*(Expr a, Expr b);
Expr operator/(Expr a, Expr b);  // Div for floats, FloorDiv for ints
Expr operator%(Expr a, Expr b);  // FloorMod, ints only
Expr operator-(Expr a);
Expr operator<(Expr a, Expr b);
Expr operator<=(Expr a, Expr b);
Expr operator>(Expr a, Expr b);
Expr operator>=(Expr a, Expr b);
// Logical and / or of bool expressions (named functions: overloading && on shared pointers would
// hijack ordinary null checks).
Expr logical_and(Expr a, Expr b);
Expr logical_or(Expr a, Expr b);
Expr min(Expr a, Expr b);
Expr max(Expr a, Expr b);
Expr operator+(Expr a, int64_t b);
Expr operator*(Expr a, int64_t b);
Expr operator-(Expr a, int64_t b);

// --- structural queries ----------------------------------------------------------------------
bool equal(const Expr& a, const Expr& b);  // structural equality
const int64_t* as_int(const Expr& e);      // the value when e is a scalar IntImm, else nullptr
const double* as_float(const Expr& e);     // the value when e is a scalar FloatImm, else nullptr
bool is_int_value(const Expr& e, int64_t value);

// The passes over expressions recurse once per level of the tree, so an expression deeper than this
// is refused where it enters tessel (the DAG text parser, the elementwise parser, ComputeDAG). The
// op templates nest a few dozen levels; a thousand levels of recursion take well under a megabyte of
// stack, also in the sanitizer build.
constexpr int kMaxExprDepth = 1000;

// The number of levels of e's tree (1 for a leaf). Iterative and visiting each shared node once, so
// it is safe on any expression, however deep.
int64_t expr_depth(const Expr& e);

// Every Var name that occurs in e.
std::vector<std::string> free_vars(const Expr& e);
bool uses_var(const Expr& e, const std::string& var);
// Names of tensors (TensorRead) or buffers (Load) read by e.
std::vector<std::string> tensors_read(const Expr& e);

// Rebuilds e with f applied to each child first, then to the node (post-order). f returns nullptr
// to keep the (rebuilt) node. Unchanged subtrees are shared, not copied.
using ExprRewriter = std::function<Expr(const Expr&)>;
Expr rewrite(const Expr& e, const ExprRewriter& f);
// Replaces variables by expressions.
Expr substitute(const Expr& e, const std::string& var, const Expr& value);

// Canonical text form, e.g. `max((A[i, k] * 2f), 0f)`; used for hashing DAGs and printing IR.
std::string to_string(const Expr& e);

}  // namespace tessel

namespace tessel {
// The same node with new operands (re-checked and re-hashed).
Expr with_args(const Expr& e, std::vector<Expr> args);
}  // namespace tessel
