// Expressions in CUDA C, one vector lane at a time: exact literals, integer arithmetic (in the
// loop variables' type, int or long long) with floor division and modulo as the IR defines them,
// casts, math calls, and loads (a hoisted wide load read by its field).
#include <stdexcept>
#include <string>

#include "codegen/cuda/cuda_printer.h"
#include "schedule/te/error.h"

namespace tessel::cuda_detail {

std::string CudaPrinter::strip_parens(const std::string& s) {
  if (s.size() < 2 || s.front() != '(' || s.back() != ')') return s;
  int depth = 0;
  for (size_t i = 0; i + 1 < s.size(); ++i) {
    depth += s[i] == '(' ? 1 : s[i] == ')' ? -1 : 0;
    if (depth == 0) return s;  // the first '(' closes before the end: "(a) + (b)"
  }
  return s.substr(1, s.size() - 2);
}

std::string CudaPrinter::expr(const Expr& e, int lane) {
  switch (e->op) {
    case ExprOp::IntImm:
      if (e->type.is_bool()) return e->int_value ? "true" : "false";
      return int_literal(e->int_value);
    case ExprOp::FloatImm:
      return float_literal(e->float_value);
    case ExprOp::Var:
      if (!vars_.count(e->name)) throw CompileError("cuda codegen: unknown variable '" + e->name + "'");
      return names_.id(e->name);
    case ExprOp::Add:
    case ExprOp::Sub:
    case ExprOp::Mul:
    case ExprOp::Div:
    case ExprOp::FloorDiv:
    case ExprOp::FloorMod:
    case ExprOp::Min:
    case ExprOp::Max:
    case ExprOp::EQ:
    case ExprOp::NE:
    case ExprOp::LT:
    case ExprOp::LE:
    case ExprOp::GT:
    case ExprOp::GE:
    case ExprOp::And:
    case ExprOp::Or:
      return binary(e, lane);
    case ExprOp::Not:
      return "(!" + expr(e->args[0], lane) + ")";
    case ExprOp::Select:
      return "(" + expr(e->args[0], lane) + " ? " + expr(e->args[1], lane) + " : " + expr(e->args[2], lane) + ")";
    case ExprOp::Cast:
      return cast(e, lane);
    case ExprOp::Call:
      return call(e, lane);
    case ExprOp::TensorRead:
      throw CompileError("cuda codegen: tensor read of '" + e->name + "' reached codegen (storage not flattened)");
    case ExprOp::Load: {
      if (buffer_dtype(e->name) != e->type.dtype)
        throw CompileError("cuda codegen: load of " + to_string(e->type) + " from buffer '" + e->name + "' of " +
                           to_string(buffer_dtype(e->name)));
      auto it = hoisted_.find(e.get());
      if (it != hoisted_.end()) return it->second + "." + "xyzw"[lane];
      return element(e->name, e->args[0], lane);
    }
    case ExprOp::Ramp: {
      const int64_t* stride = as_int(e->args[1]);
      const int64_t* start = as_int(e->args[0]);
      if (start && stride) return int_literal(*start + *stride * lane);
      std::string base = expr(e->args[0], 0);
      if (lane == 0) return base;
      if (stride) return "(" + base + " + " + int_literal(*stride * lane) + ")";
      return "(" + base + " + " + std::to_string(lane) + " * " + expr(e->args[1], 0) + ")";
    }
    case ExprOp::Broadcast:
      return expr(e->args[0], 0);
  }
  throw CompileError(std::string("cuda codegen: unsupported expression ") + to_string(e->op));
}

std::string CudaPrinter::binary(const Expr& e, int lane) {
  const Type t = e->args[0]->type;
  std::string a = expr(e->args[0], lane), b = expr(e->args[1], lane);
  auto infix = [&](const char* op) { return "(" + a + " " + op + " " + b + ")"; };
  switch (e->op) {
    case ExprOp::EQ:
      return infix("==");
    case ExprOp::NE:
      return infix("!=");  // unordered for floats, like LLVM's une
    case ExprOp::LT:
      return infix("<");
    case ExprOp::LE:
      return infix("<=");
    case ExprOp::GT:
      return infix(">");
    case ExprOp::GE:
      return infix(">=");
    default:
      break;
  }
  if (t.is_float()) {
    switch (e->op) {
      case ExprOp::Add:
        return infix("+");
      case ExprOp::Sub:
        return infix("-");
      case ExprOp::Mul:
        return infix("*");
      case ExprOp::Div:
        return infix("/");
      case ExprOp::Min:
        return "fminf(" + a + ", " + b + ")";
      case ExprOp::Max:
        return "fmaxf(" + a + ", " + b + ")";
      default:
        break;
    }
  } else if (t.is_int()) {
    // Two literals would multiply as 32-bit ints in C; the IR computes in 64 bits.
    if (e->args[0]->op == ExprOp::IntImm && e->args[1]->op == ExprOp::IntImm) a = "(long long)" + a;
    const int64_t* d = as_int(e->args[1]->op == ExprOp::Broadcast ? e->args[1]->args[0] : e->args[1]);
    bool pow2 = d && *d > 0 && (*d & (*d - 1)) == 0;
    int shift = 0;
    while (pow2 && (int64_t(1) << shift) != *d) ++shift;
    switch (e->op) {
      case ExprOp::Add:
        return infix("+");
      case ExprOp::Sub:
        return infix("-");
      case ExprOp::Mul:
        return infix("*");
      case ExprOp::Div:  // integer Div is floor division, as `operator/` builds it
      case ExprOp::FloorDiv:
        // Arithmetic shift floors for negative operands too.
        if (pow2) return shift == 0 ? a : "(" + a + " >> " + std::to_string(shift) + ")";
        return "tessel_floordiv(" + a + ", " + b + ")";
      case ExprOp::FloorMod:
        if (pow2) return "(" + a + " & " + int_literal(*d - 1) + ")";
        return "tessel_floormod(" + a + ", " + b + ")";
      case ExprOp::Min:
        return "tessel_imin(" + a + ", " + b + ")";
      case ExprOp::Max:
        return "tessel_imax(" + a + ", " + b + ")";
      default:
        break;
    }
  } else {
    switch (e->op) {
      case ExprOp::And:
      case ExprOp::Min:
        return infix("&&");
      case ExprOp::Or:
      case ExprOp::Max:
        return infix("||");
      default:
        break;
    }
  }
  throw CompileError(std::string("cuda codegen: ") + to_string(e->op) + " on " + to_string(t));
}

std::string CudaPrinter::cast(const Expr& e, int lane) {
  const Type from = e->args[0]->type;
  const Type to = e->type;
  std::string v = expr(e->args[0], lane);
  if (from.dtype == to.dtype) return v;
  if (from.is_half() || to.is_half()) {  // between float types only (expr.h)
    std::string f = from.dtype == DType::Float16    ? "tessel_half_to_float(" + strip_parens(v) + ")"
                    : from.dtype == DType::BFloat16 ? "tessel_bfloat16_to_float(" + strip_parens(v) + ")"
                                                    : strip_parens(v);
    if (to.dtype == DType::Float16) return "tessel_float_to_half(" + f + ")";
    if (to.dtype == DType::BFloat16) return "tessel_float_to_bfloat16(" + f + ")";
    return f;
  }
  if (to.is_bool()) return "(" + v + (from.is_float() ? " != 0.0f)" : " != 0)");
  if (to.is_float()) {
    // A constant lane (of a cast Ramp, typically) reads better as a float literal.
    std::string digits = strip_parens(v);
    size_t used = 0;
    if (e->args[0]->op == ExprOp::IntImm || e->args[0]->op == ExprOp::Ramp) {
      try {
        long long k = std::stoll(digits, &used);
        if (used == digits.size()) return float_literal(static_cast<double>(k));
      } catch (const std::exception&) {
      }
    }
    return "((float)" + v + ")";
  }
  return "((long long)" + v + ")";  // float -> int truncates; out of range is unspecified, as on the CPU
}

std::string CudaPrinter::call(const Expr& e, int lane) {
  std::string x = strip_parens(expr(e->args.at(0), lane));
  switch (e->math_fn()) {
    case MathFn::Exp:
      return "expf(" + x + ")";
    case MathFn::Log:
      return "logf(" + x + ")";
    case MathFn::Sqrt:
      return "sqrtf(" + x + ")";
    case MathFn::Rsqrt:
      return "rsqrtf(" + x + ")";
    case MathFn::Tanh:
      return "tanhf(" + x + ")";
    case MathFn::Sigmoid:
      return "tessel_sigmoid(" + x + ")";
    case MathFn::Erf:
      return "erff(" + x + ")";
    case MathFn::Abs:
      return "fabsf(" + x + ")";
    case MathFn::Pow:
      return "powf(" + x + ", " + strip_parens(expr(e->args.at(1), lane)) + ")";
  }
  throw CompileError("cuda codegen: unknown math function");
}

}  // namespace tessel::cuda_detail
