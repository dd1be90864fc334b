// Construction, hashing, printing and rewriting of expressions.
#include "schedule/te/expr.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iomanip>
#include <set>
#include <sstream>
#include <unordered_map>

#include "schedule/te/error.h"

namespace tessel {

void internal_error(const char* file, int line, const std::string& message) {
  throw Error(std::string("internal error at ") + file + ":" + std::to_string(line) + ": " + message);
}

std::string to_string(DType dtype) {
  switch (dtype) {
    case DType::Float32: return "float32";
    case DType::Int64: return "int64";
    case DType::Bool: return "bool";
    case DType::Float16: return "float16";
    case DType::BFloat16: return "bfloat16";
  }
  return "?";
}

std::string to_string(Type type) {
  return type.lanes == 1 ? to_string(type.dtype) : to_string(type.dtype) + "x" + std::to_string(type.lanes);
}

const char* to_string(ExprOp op) {
  switch (op) {
    case ExprOp::IntImm: return "int";
    case ExprOp::FloatImm: return "float";
    case ExprOp::Var: return "var";
    case ExprOp::Add: return "+";
    case ExprOp::Sub: return "-";
    case ExprOp::Mul: return "*";
    case ExprOp::Div: return "/";
    case ExprOp::FloorDiv: return "floordiv";
    case ExprOp::FloorMod: return "floormod";
    case ExprOp::Min: return "min";
    case ExprOp::Max: return "max";
    case ExprOp::EQ: return "==";
    case ExprOp::NE: return "!=";
    case ExprOp::LT: return "<";
    case ExprOp::LE: return "<=";
    case ExprOp::GT: return ">";
    case ExprOp::GE: return ">=";
    case ExprOp::And: return "&&";
    case ExprOp::Or: return "||";
    case ExprOp::Not: return "!";
    case ExprOp::Select: return "select";
    case ExprOp::Cast: return "cast";
    case ExprOp::Call: return "call";
    case ExprOp::TensorRead: return "read";
    case ExprOp::Load: return "load";
    case ExprOp::Ramp: return "ramp";
    case ExprOp::Broadcast: return "broadcast";
  }
  return "?";
}

const char* to_string(MathFn fn) {
  switch (fn) {
    case MathFn::Exp: return "exp";
    case MathFn::Log: return "log";
    case MathFn::Sqrt: return "sqrt";
    case MathFn::Rsqrt: return "rsqrt";
    case MathFn::Tanh: return "tanh";
    case MathFn::Sigmoid: return "sigmoid";
    case MathFn::Erf: return "erf";
    case MathFn::Abs: return "abs";
    case MathFn::Pow: return "pow";
  }
  return "?";
}

namespace {

size_t mix(size_t seed, size_t value) {
  return seed ^ (value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
}

Expr finish(ExprNode node) {
  size_t h = mix(static_cast<size_t>(node.op), static_cast<size_t>(node.type.dtype));
  h = mix(h, static_cast<size_t>(node.type.lanes));
  h = mix(h, std::hash<int64_t>()(node.int_value));
  uint64_t bits;
  std::memcpy(&bits, &node.float_value, sizeof bits);
  h = mix(h, std::hash<uint64_t>()(bits));
  h = mix(h, std::hash<std::string>()(node.name));
  for (const Expr& a : node.args) h = mix(h, a->hash);
  node.hash = h;
  return std::make_shared<const ExprNode>(std::move(node));
}

void check_arg(const Expr& e, const char* what) {
  TESSEL_CHECK(e != nullptr, std::string("null operand to ") + what);
}

bool is_comparison(ExprOp op) {
  return op == ExprOp::EQ || op == ExprOp::NE || op == ExprOp::LT || op == ExprOp::LE ||
         op == ExprOp::GT || op == ExprOp::GE;
}

}  // namespace

Expr make_int(int64_t value, int lanes) {
  ExprNode n{ExprOp::IntImm, Type{DType::Int64, lanes}};
  n.int_value = value;
  return finish(std::move(n));
}

Expr make_float(double value, int lanes) {
  ExprNode n{ExprOp::FloatImm, Type{DType::Float32, lanes}};
  n.float_value = value;
  return finish(std::move(n));
}

Expr make_bool(bool value) {
  ExprNode n{ExprOp::IntImm, kBool};
  n.int_value = value ? 1 : 0;
  return finish(std::move(n));
}

Expr make_var(const std::string& name, Type type) {
  TESSEL_CHECK(!name.empty(), "variable without a name");
  ExprNode n{ExprOp::Var, type};
  n.name = name;
  return finish(std::move(n));
}

Expr make_binary(ExprOp op, Expr a, Expr b) {
  check_arg(a, to_string(op));
  check_arg(b, to_string(op));
  // Scalars meet vectors by broadcasting, so passes can mix them freely.
  if (a->type.lanes != b->type.lanes) {
    if (a->type.lanes == 1) a = make_broadcast(a, b->type.lanes);
    else if (b->type.lanes == 1) b = make_broadcast(b, a->type.lanes);
  }
  TESSEL_CHECK(a->type == b->type, std::string("operand types differ in ") + to_string(op) + ": " +
                                       to_string(a->type) + " vs " + to_string(b->type));
  TESSEL_CHECK(!a->type.is_half(), std::string(to_string(op)) + " on " + to_string(a->type) +
                                       ": 16-bit floats are storage types; cast them to float32 first");
  Type t = a->type;
  if (is_comparison(op)) {
    t = Type{DType::Bool, a->type.lanes};
  } else if (op == ExprOp::And || op == ExprOp::Or) {
    TESSEL_CHECK(a->type.is_bool(), "logical operator on non-bool operands");
  } else if (op == ExprOp::FloorDiv || op == ExprOp::FloorMod) {
    TESSEL_CHECK(a->type.is_int(), "floordiv/floormod on non-integer operands");
  } else {
    TESSEL_CHECK(!a->type.is_bool(), std::string("arithmetic on bool operands: ") + to_string(op));
  }
  ExprNode n{op, t};
  n.args = {std::move(a), std::move(b)};
  return finish(std::move(n));
}

Expr make_not(Expr a) {
  check_arg(a, "!");
  TESSEL_CHECK(a->type.is_bool(), "! on a non-bool operand");
  ExprNode n{ExprOp::Not, a->type};
  n.args = {std::move(a)};
  return finish(std::move(n));
}

Expr make_select(Expr cond, Expr t, Expr f) {
  check_arg(cond, "select");
  check_arg(t, "select");
  check_arg(f, "select");
  int lanes = std::max({cond->type.lanes, t->type.lanes, f->type.lanes});
  if (t->type.lanes != lanes) t = make_broadcast(t, lanes);
  if (f->type.lanes != lanes) f = make_broadcast(f, lanes);
  if (cond->type.lanes != lanes) cond = make_broadcast(cond, lanes);
  TESSEL_CHECK(cond->type.is_bool(), "select condition is not bool");
  TESSEL_CHECK(t->type == f->type, "select branches have different types");
  ExprNode n{ExprOp::Select, t->type};
  n.args = {std::move(cond), std::move(t), std::move(f)};
  return finish(std::move(n));
}

Expr make_cast(Type type, Expr a) {
  check_arg(a, "cast");
  if (a->type == type) return a;
  TESSEL_CHECK(a->type.lanes == type.lanes, "cast cannot change the lane count");
  TESSEL_CHECK(!(a->type.is_half() || type.is_half()) || a->type.is_float() == type.is_float(),
               "cast between " + to_string(a->type) + " and " + to_string(type) +
                   ": a 16-bit float converts to and from float types only");
  ExprNode n{ExprOp::Cast, type};
  n.args = {std::move(a)};
  return finish(std::move(n));
}

Expr make_call(MathFn fn, std::vector<Expr> args) {
  size_t want = fn == MathFn::Pow ? 2 : 1;
  TESSEL_CHECK(args.size() == want, std::string("wrong argument count for ") + to_string(fn));
  for (auto& a : args) {
    check_arg(a, to_string(fn));
    TESSEL_CHECK(a->type.dtype == DType::Float32, std::string(to_string(fn)) + " takes float32, not " +
                                                      to_string(a->type));
  }
  if (args.size() == 2 && args[0]->type.lanes != args[1]->type.lanes) {
    int lanes = std::max(args[0]->type.lanes, args[1]->type.lanes);
    for (auto& a : args)
      if (a->type.lanes == 1) a = make_broadcast(a, lanes);
  }
  ExprNode n{ExprOp::Call, args[0]->type};
  n.int_value = static_cast<int64_t>(fn);
  n.args = std::move(args);
  return finish(std::move(n));
}

Expr make_tensor_read(const std::string& tensor, std::vector<Expr> indices, Type type) {
  TESSEL_CHECK(!tensor.empty(), "read of a tensor without a name");
  for (auto& i : indices) {
    check_arg(i, "tensor read");
    TESSEL_CHECK(i->type == kInt64, "tensor index is not a scalar int64 in read of " + tensor);
  }
  ExprNode n{ExprOp::TensorRead, type};
  n.name = tensor;
  n.args = std::move(indices);
  return finish(std::move(n));
}

Expr make_load(const std::string& buffer, Expr index, Type type) {
  check_arg(index, "load");
  TESSEL_CHECK(index->type.is_int(), "load index is not int64 in " + buffer);
  TESSEL_CHECK(index->type.lanes == type.lanes, "load lanes differ from index lanes in " + buffer);
  ExprNode n{ExprOp::Load, type};
  n.name = buffer;
  n.args = {std::move(index)};
  return finish(std::move(n));
}

Expr make_ramp(Expr base, Expr stride, int lanes) {
  check_arg(base, "ramp");
  check_arg(stride, "ramp");
  TESSEL_CHECK(base->type == kInt64 && stride->type == kInt64, "ramp of non-scalar-int operands");
  TESSEL_CHECK(lanes > 1, "ramp with fewer than 2 lanes");
  ExprNode n{ExprOp::Ramp, Type{DType::Int64, lanes}};
  n.int_value = lanes;
  n.args = {std::move(base), std::move(stride)};
  return finish(std::move(n));
}

Expr make_broadcast(Expr value, int lanes) {
  check_arg(value, "broadcast");
  TESSEL_CHECK(value->type.lanes == 1, "broadcast of a vector");
  if (lanes == 1) return value;
  ExprNode n{ExprOp::Broadcast, value->type.with_lanes(lanes)};
  n.int_value = lanes;
  n.args = {std::move(value)};
  return finish(std::move(n));
}

Expr with_args(const Expr& e, std::vector<Expr> args) {
  switch (e->op) {
    case ExprOp::IntImm:
    case ExprOp::FloatImm:
    case ExprOp::Var:
      return e;
    case ExprOp::Not: return make_not(args[0]);
    case ExprOp::Select: return make_select(args[0], args[1], args[2]);
    case ExprOp::Cast: return make_cast(Type{e->type.dtype, args[0]->type.lanes}, args[0]);
    case ExprOp::Call: return make_call(e->math_fn(), std::move(args));
    case ExprOp::TensorRead: return make_tensor_read(e->name, std::move(args), e->type);
    case ExprOp::Load: return make_load(e->name, args[0], e->type.with_lanes(args[0]->type.lanes));
    case ExprOp::Ramp: return make_ramp(args[0], args[1], static_cast<int>(e->int_value));
    case ExprOp::Broadcast: return make_broadcast(args[0], static_cast<int>(e->int_value));
    default: return make_binary(e->op, args[0], args[1]);
  }
}

// --- operators ----------------------------------------------------------------------------------
Expr operator+(Expr a, Expr b) { return make_binary(ExprOp::Add, a, b); }
Expr operator-(Expr a, Expr b) { return make_binary(ExprOp::Sub, a, b); }
Expr operator*(Expr a, Expr b) { return make_binary(ExprOp::Mul, a, b); }
Expr operator/(Expr a, Expr b) {
  return make_binary(a->type.is_int() ? ExprOp::FloorDiv : ExprOp::Div, a, b);
}
Expr operator%(Expr a, Expr b) { return make_binary(ExprOp::FloorMod, a, b); }
Expr operator-(Expr a) {
  return make_binary(ExprOp::Sub, a->type.is_int() ? make_int(0) : make_float(0), a);
}
Expr operator<(Expr a, Expr b) { return make_binary(ExprOp::LT, a, b); }
Expr operator<=(Expr a, Expr b) { return make_binary(ExprOp::LE, a, b); }
Expr operator>(Expr a, Expr b) { return make_binary(ExprOp::GT, a, b); }
Expr operator>=(Expr a, Expr b) { return make_binary(ExprOp::GE, a, b); }
Expr logical_and(Expr a, Expr b) { return make_binary(ExprOp::And, a, b); }
Expr logical_or(Expr a, Expr b) { return make_binary(ExprOp::Or, a, b); }
Expr min(Expr a, Expr b) { return make_binary(ExprOp::Min, a, b); }
Expr max(Expr a, Expr b) { return make_binary(ExprOp::Max, a, b); }
Expr operator+(Expr a, int64_t b) { return a + make_int(b); }
Expr operator*(Expr a, int64_t b) { return a * make_int(b); }
Expr operator-(Expr a, int64_t b) { return a - make_int(b); }

// --- queries ------------------------------------------------------------------------------------
bool equal(const Expr& a, const Expr& b) {
  if (a == b) return true;
  if (!a || !b) return false;
  if (a->hash != b->hash || a->op != b->op || a->type != b->type || a->int_value != b->int_value ||
      a->name != b->name || a->args.size() != b->args.size())
    return false;
  if (!(a->float_value == b->float_value || (std::isnan(a->float_value) && std::isnan(b->float_value))))
    return false;
  for (size_t i = 0; i < a->args.size(); ++i)
    if (!equal(a->args[i], b->args[i])) return false;
  return true;
}

const int64_t* as_int(const Expr& e) {
  return e && e->op == ExprOp::IntImm && e->type == kInt64 ? &e->int_value : nullptr;
}

const double* as_float(const Expr& e) {
  return e && e->op == ExprOp::FloatImm && e->type.lanes == 1 ? &e->float_value : nullptr;
}

bool is_int_value(const Expr& e, int64_t value) {
  const int64_t* v = as_int(e);
  return v && *v == value;
}

int64_t expr_depth(const Expr& e) {
  if (!e) return 0;
  std::unordered_map<const ExprNode*, int64_t> depth;
  std::vector<std::pair<const ExprNode*, bool>> stack{{e.get(), false}};  // (node, children done)
  while (!stack.empty()) {
    auto [node, expanded] = stack.back();
    stack.pop_back();
    if (depth.count(node)) continue;
    if (!expanded) {
      stack.push_back({node, true});
      for (const Expr& a : node->args)
        if (!depth.count(a.get())) stack.push_back({a.get(), false});
      continue;
    }
    int64_t d = 0;
    for (const Expr& a : node->args) d = std::max(d, depth.at(a.get()));
    depth[node] = d + 1;
  }
  return depth.at(e.get());
}

namespace {
void collect(const Expr& e, const std::function<void(const Expr&)>& f) {
  f(e);
  for (const Expr& a : e->args) collect(a, f);
}
}  // namespace

std::vector<std::string> free_vars(const Expr& e) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  collect(e, [&](const Expr& n) {
    if (n->op == ExprOp::Var && seen.insert(n->name).second) out.push_back(n->name);
  });
  return out;
}

bool uses_var(const Expr& e, const std::string& var) {
  if (e->op == ExprOp::Var) return e->name == var;
  for (const Expr& a : e->args)
    if (uses_var(a, var)) return true;
  return false;
}

std::vector<std::string> tensors_read(const Expr& e) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  collect(e, [&](const Expr& n) {
    if ((n->op == ExprOp::TensorRead || n->op == ExprOp::Load) && seen.insert(n->name).second)
      out.push_back(n->name);
  });
  return out;
}

Expr rewrite(const Expr& e, const ExprRewriter& f) {
  Expr node = e;
  if (!e->args.empty()) {
    std::vector<Expr> args;
    args.reserve(e->args.size());
    bool changed = false;
    for (const Expr& a : e->args) {
      args.push_back(rewrite(a, f));
      changed |= args.back() != a;
    }
    if (changed) node = with_args(e, std::move(args));
  }
  Expr replaced = f(node);
  return replaced ? replaced : node;
}

Expr substitute(const Expr& e, const std::string& var, const Expr& value) {
  return rewrite(e, [&](const Expr& n) -> Expr {
    return n->op == ExprOp::Var && n->name == var ? value : nullptr;
  });
}

// --- printing -----------------------------------------------------------------------------------
namespace {

// The shortest %g form that reads back as the same double, so that the canonical text parses back to
// the identical constant (schedule/te/dag_parser.h). It starts from the 9 significant digits this
// printer always used: a value they already gave back exactly (integers, 0.5, 1e-05, literals of up
// to 9 digits) prints as before; others (gelu's sqrt(2/pi), longer literals, doubles rounded to
// float32 such as 0.10000000149011612) get the up to 17 digits a double needs.
std::string format_float(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (std::isnan(v)) return "nan";
  std::string t;
  for (int digits = 9; digits <= 17; ++digits) {
    std::ostringstream s;
    s << std::setprecision(digits) << v;
    t = s.str();
    if (std::strtod(t.c_str(), nullptr) == v) break;
  }
  if (t.find_first_of(".e") == std::string::npos) t += ".0";
  return t + "f";
}

void print(std::ostringstream& out, const Expr& e) {
  switch (e->op) {
    case ExprOp::IntImm:
      if (e->type.is_bool()) out << (e->int_value ? "true" : "false");
      else out << e->int_value;
      return;
    case ExprOp::FloatImm: out << format_float(e->float_value); return;
    case ExprOp::Var: out << e->name; return;
    case ExprOp::Add: case ExprOp::Sub: case ExprOp::Mul: case ExprOp::Div:
    case ExprOp::EQ: case ExprOp::NE: case ExprOp::LT: case ExprOp::LE: case ExprOp::GT:
    case ExprOp::GE: case ExprOp::And: case ExprOp::Or:
      out << "(";
      print(out, e->args[0]);
      out << " " << to_string(e->op) << " ";
      print(out, e->args[1]);
      out << ")";
      return;
    case ExprOp::FloorDiv: case ExprOp::FloorMod: case ExprOp::Min: case ExprOp::Max:
      out << to_string(e->op) << "(";
      print(out, e->args[0]);
      out << ", ";
      print(out, e->args[1]);
      out << ")";
      return;
    case ExprOp::Not: out << "!"; print(out, e->args[0]); return;
    case ExprOp::Select:
      out << "select(";
      print(out, e->args[0]); out << ", ";
      print(out, e->args[1]); out << ", ";
      print(out, e->args[2]); out << ")";
      return;
    case ExprOp::Cast: out << to_string(e->type) << "("; print(out, e->args[0]); out << ")"; return;
    case ExprOp::Call:
      out << to_string(e->math_fn()) << "(";
      for (size_t i = 0; i < e->args.size(); ++i) {
        if (i) out << ", ";
        print(out, e->args[i]);
      }
      out << ")";
      return;
    case ExprOp::TensorRead: case ExprOp::Load:
      out << e->name << "[";
      for (size_t i = 0; i < e->args.size(); ++i) {
        if (i) out << ", ";
        print(out, e->args[i]);
      }
      out << "]";
      return;
    case ExprOp::Ramp:
      out << "ramp(";
      print(out, e->args[0]); out << ", ";
      print(out, e->args[1]); out << ", " << e->int_value << ")";
      return;
    case ExprOp::Broadcast: out << "x" << e->int_value << "("; print(out, e->args[0]); out << ")"; return;
  }
}

}  // namespace

std::string to_string(const Expr& e) {
  if (!e) return "<null>";
  std::ostringstream out;
  print(out, e);
  return out.str();
}

}  // namespace tessel
