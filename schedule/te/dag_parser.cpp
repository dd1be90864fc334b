// A recursive-descent parser for the canonical DAG text. One operation per line:
//
//   NAME = placeholder(DTYPE[e0, e1, ...])
//   NAME[a0:e0, a1:e1, ...] = EXPR  : DTYPE
//   NAME[a0:e0, ...] = KIND(r0:e0, r1:e1, ...; EXPR)  : DTYPE        KIND: sum | max | min
//
// Expressions as to_string(Expr) prints them:
//
//   EXPR := '(' EXPR BINOP EXPR ')'                 BINOP: + - * / == != < <= > >= && ||
//         | '!' EXPR
//         | INT | FLOAT | true | false | inf | -inf | nan     FLOAT: 1.0f, -2.5e-07f
//         | NAME '[' [EXPR (',' EXPR)*] ']'          read of tensor NAME
//         | FUNCTION '(' EXPR (',' EXPR)* ')'        floordiv floormod min max select, the math
//                                                     functions, casts (int64(..), float32x4(..)),
//                                                     broadcasts (x4(..)), ramp(base, stride, lanes)
//         | NAME                                     axis variable of the current operation
//
// `max(` opens a reduction when an axis declaration `name:` follows, a binary max otherwise.
// Operand types are checked here, before the constructors of expr.h see them, so that a type error in
// the text is an InputError at its place and not an internal error.
#include "schedule/te/dag_parser.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "schedule/te/error.h"

namespace tessel {

namespace {

// Nesting deeper than this is refused rather than risking the stack (each level is a few frames of
// recursion): the limit every expression of a ComputeDAG meets (expr.h).
constexpr int kMaxDepth = kMaxExprDepth;

bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; }
bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)); }

std::optional<DType> dtype_named(const std::string& name) {
  for (DType d : {DType::Float32, DType::Int64, DType::Bool, DType::Float16, DType::BFloat16})
    if (to_string(d) == name) return d;
  return std::nullopt;
}

// The lane count of a vector suffix "x4" (at least 2), as in "float32x4" or the broadcast "x4(...)".
std::optional<int> lanes_suffix(const std::string& text) {
  if (text.size() < 2 || text[0] != 'x') return std::nullopt;
  int lanes = 0;
  auto [end, ec] = std::from_chars(text.data() + 1, text.data() + text.size(), lanes);
  if (ec != std::errc() || end != text.data() + text.size() || lanes < 2) return std::nullopt;
  return lanes;
}

// "float32", "int64x4": the spelling to_string(Type) prints.
std::optional<Type> type_named(const std::string& name) {
  if (auto d = dtype_named(name)) return Type{*d, 1};
  size_t x = name.rfind('x');
  if (x == std::string::npos) return std::nullopt;
  auto d = dtype_named(name.substr(0, x));
  auto lanes = lanes_suffix(name.substr(x));
  if (!d || !lanes) return std::nullopt;
  return Type{*d, *lanes};
}

std::optional<MathFn> math_fn_named(const std::string& name) {
  for (MathFn f : {MathFn::Exp, MathFn::Log, MathFn::Sqrt, MathFn::Rsqrt, MathFn::Tanh, MathFn::Sigmoid, MathFn::Erf,
                   MathFn::Abs, MathFn::Pow})
    if (name == to_string(f)) return f;
  return std::nullopt;
}

// The infix operators, longest spelling first so that `<=` is not read as `<`.
constexpr ExprOp kInfixOps[] = {ExprOp::EQ,  ExprOp::NE,  ExprOp::LE,  ExprOp::GE,  ExprOp::And, ExprOp::Or,
                                ExprOp::Add, ExprOp::Sub, ExprOp::Mul, ExprOp::Div, ExprOp::LT,  ExprOp::GT};

bool is_comparison(ExprOp op) {
  return op == ExprOp::EQ || op == ExprOp::NE || op == ExprOp::LT || op == ExprOp::LE || op == ExprOp::GT ||
         op == ExprOp::GE;
}

// Why make_binary would refuse these operands, or "" when it accepts them.
std::string binary_type_problem(ExprOp op, const Type& a, const Type& b) {
  std::string what = std::string("'") + to_string(op) + "'";
  if (a.dtype != b.dtype || (a.lanes != b.lanes && a.lanes != 1 && b.lanes != 1))
    return "the operands of " + what + " differ in type: " + to_string(a) + " and " + to_string(b);
  if (op == ExprOp::And || op == ExprOp::Or)
    return a.is_bool() ? "" : what + " takes bool operands, not " + to_string(a);
  if (op == ExprOp::FloorDiv || op == ExprOp::FloorMod)
    return a.is_int() ? "" : what + " takes int64 operands, not " + to_string(a);
  if (!is_comparison(op) && a.is_bool()) return what + " takes numbers, not bool";
  if (a.is_half()) return what + " takes float32, not " + to_string(a) + " (a storage type: cast it to float32 first)";
  return "";
}

class DagParser {
 public:
  DagParser(const std::string& text, const std::string& source) : text_(text), source_(source) {}

  ComputeDAG parse() {
    while (true) {
      skip_blanks();
      if (at_end()) break;
      if (peek() == '\n') {
        ++pos_;
        continue;
      }
      parse_operation();
    }
    if (ops_.empty()) fail(pos_, "expected an operation, found " + describe_next());
    try {
      return ComputeDAG(std::move(ops_));
    } catch (const InputError& e) {  // what only the whole DAG shows, e.g. that it computes nothing
      throw InputError(source_ + ": " + e.what());
    }
  }

 private:
  // --- the cursor --------------------------------------------------------------------------------
  [[noreturn]] void fail(size_t at, const std::string& message) const {
    size_t line = 1, line_start = 0;
    for (size_t i = 0; i < at && i < text_.size(); ++i)
      if (text_[i] == '\n') ++line, line_start = i + 1;
    throw InputError(source_ + ": line " + std::to_string(line) + ", column " + std::to_string(at - line_start + 1) +
                     ": " + message);
  }

  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }

  void skip_blanks() {
    while (!at_end() && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
  }

  // Skips blanks, then consumes `token` if it comes next.
  bool accept(const std::string& token) {
    skip_blanks();
    if (text_.compare(pos_, token.size(), token) != 0) return false;
    pos_ += token.size();
    return true;
  }

  void expect(const std::string& token, const std::string& context) {
    if (!accept(token)) fail(pos_, "expected '" + token + "' " + context + ", found " + describe_next());
  }

  std::string describe_next() const {
    if (at_end()) return "the end of the text";
    if (peek() == '\n') return "the end of the line";
    size_t end = pos_ + 1;
    if (is_name_char(peek()))
      while (end < text_.size() && is_name_char(text_[end]) && end - pos_ < 40) ++end;
    return "'" + text_.substr(pos_, end - pos_) + "'";
  }

  std::string name(const std::string& what) {
    skip_blanks();
    if (!is_name_start(peek())) fail(pos_, "expected " + what + ", found " + describe_next());
    size_t start = pos_;
    while (!at_end() && is_name_char(text_[pos_])) ++pos_;
    return text_.substr(start, pos_ - start);
  }

  int64_t positive_extent(const std::string& what) {
    skip_blanks();
    size_t start = pos_;
    if (peek() == '-') ++pos_;
    while (!at_end() && is_digit(peek())) ++pos_;
    int64_t value = 0;
    auto [end, ec] = std::from_chars(text_.data() + start, text_.data() + pos_, value);
    if (ec == std::errc::result_out_of_range) fail(start, what + " is out of the int64 range");
    if (ec != std::errc() || end != text_.data() + pos_) {
      pos_ = start;
      fail(start, "expected " + what + " (a positive integer), found " + describe_next());
    }
    if (value <= 0) fail(start, what + " must be positive, got " + std::to_string(value));
    return value;
  }

  DType dtype() {
    skip_blanks();
    size_t start = pos_;
    std::string spelled = name("a dtype (float32, int64, bool, float16 or bfloat16)");
    auto d = dtype_named(spelled);
    if (!d) fail(start, "unknown dtype '" + spelled + "'; dtypes are float32, int64, bool, float16 and bfloat16");
    return *d;
  }

  void end_of_line() {
    skip_blanks();
    if (at_end()) return;
    if (peek() != '\n') fail(pos_, "expected the end of the line, found " + describe_next());
    ++pos_;
  }

  // --- operations --------------------------------------------------------------------------------
  void parse_operation() {
    size_t start = pos_;
    Operation op;
    op.name = name("an operation name");
    if (tensors_.count(op.name)) fail(start, "a second operation is named '" + op.name + "'");
    if (accept("=")) {
      op.is_placeholder = true;
      expect("placeholder", "after '" + op.name + " ='");
      expect("(", "after 'placeholder'");
      op.dtype = dtype();
      expect("[", "before the shape of " + op.name);
      if (!accept("]")) {
        do {
          op.shape.push_back(positive_extent("an extent of " + op.name));
        } while (accept(","));
        expect("]", "after the shape of " + op.name);
      }
      expect(")", "to close 'placeholder('");
    } else if (accept("[")) {
      parse_compute(op);
    } else {
      fail(pos_,
           "expected '= placeholder(...)' or '[' after the operation name '" + op.name + "', found " + describe_next());
    }
    end_of_line();
    tensors_[op.name] = ops_.size();
    ops_.push_back(std::move(op));
  }

  void parse_compute(Operation& op) {
    op.axes = axis_list("]", "the axes of " + op.name);
    for (const Axis& a : op.axes) op.shape.push_back(a.extent);
    expect("=", "after the axes of " + op.name);
    skip_blanks();
    for (ReduceKind kind : {ReduceKind::Sum, ReduceKind::Max, ReduceKind::Min})
      if (reduction_follows(to_string(kind))) op.reduce = kind;
    if (op.reduce != ReduceKind::None) {
      expect(std::string(to_string(op.reduce)) + "(", "");
      op.reduce_axes = axis_list(";", "the reduction axes of " + op.name);
    }
    scope_ = &op;
    op.body = parse_expr();
    scope_ = nullptr;
    if (op.reduce != ReduceKind::None)
      expect(")", "to close the reduction '" + std::string(to_string(op.reduce)) + "('");
    expect(":", "before the dtype of " + op.name);
    op.dtype = dtype();
  }

  // `word(` followed by a declaration `name:` opens a reduction; `max(a, b)` is an expression.
  bool reduction_follows(const std::string& word) const {
    if (text_.compare(pos_, word.size() + 1, word + "(") != 0) return false;
    size_t p = pos_ + word.size() + 1;
    while (p < text_.size() && (text_[p] == ' ' || text_[p] == '\t')) ++p;
    if (p >= text_.size() || !is_name_start(text_[p])) return false;
    while (p < text_.size() && is_name_char(text_[p])) ++p;
    while (p < text_.size() && (text_[p] == ' ' || text_[p] == '\t')) ++p;
    return p < text_.size() && text_[p] == ':';
  }

  // `a:4, b:5` up to `close`; axis names are unique in the whole DAG.
  std::vector<Axis> axis_list(const std::string& close, const std::string& what) {
    std::vector<Axis> axes;
    if (accept(close)) return axes;
    do {
      skip_blanks();
      size_t at = pos_;
      Axis axis;
      axis.name = name("an axis name");
      if (!axis_names_.insert(axis.name).second) fail(at, "axis name '" + axis.name + "' is used twice");
      expect(":", "after the axis name '" + axis.name + "'");
      axis.extent = positive_extent("the extent of axis " + axis.name);
      axes.push_back(axis);
    } while (accept(","));
    expect(close, "after " + what);
    return axes;
  }

  // --- expressions -------------------------------------------------------------------------------
  struct DepthGuard {
    int& depth;
    ~DepthGuard() { --depth; }
  };

  Expr parse_expr() {
    skip_blanks();
    size_t start = pos_;
    if (++depth_ > kMaxDepth) fail(start, "expression nested deeper than " + std::to_string(kMaxDepth) + " levels");
    DepthGuard guard{depth_};
    char c = peek();
    if (c == '(') return parse_infix();
    if (c == '!') {
      ++pos_;
      skip_blanks();
      size_t at = pos_;
      Expr a = parse_expr();
      if (!a->type.is_bool()) fail(at, "'!' takes a bool operand, not " + to_string(a->type));
      return make_not(a);
    }
    if (c == '-' && text_.compare(pos_, 4, "-inf") == 0 &&
        !(pos_ + 4 < text_.size() && is_name_char(text_[pos_ + 4]))) {
      pos_ += 4;
      return make_float(-std::numeric_limits<double>::infinity());
    }
    if (is_digit(c) || (c == '-' && pos_ + 1 < text_.size() && is_digit(text_[pos_ + 1]))) return parse_number();
    if (is_name_start(c)) return parse_named();
    fail(start, "expected an expression, found " + describe_next());
  }

  Expr parse_infix() {
    size_t open = pos_++;
    Expr a = parse_expr();
    skip_blanks();
    size_t op_at = pos_;
    std::optional<ExprOp> op;
    for (ExprOp candidate : kInfixOps) {
      std::string spelled = to_string(candidate);
      if (text_.compare(pos_, spelled.size(), spelled) != 0) continue;
      op = candidate;
      pos_ += spelled.size();
      break;
    }
    if (!op) fail(pos_, "expected an operator (+ - * / == != < <= > >= && ||), found " + describe_next());
    Expr b = parse_expr();
    expect(")", "to close the '(' at column " + std::to_string(column_of(open)));
    std::string problem = binary_type_problem(*op, a->type, b->type);
    if (!problem.empty()) fail(op_at, problem);
    return make_binary(*op, a, b);
  }

  size_t column_of(size_t at) const {
    size_t newline = at == 0 ? std::string::npos : text_.rfind('\n', at - 1);
    return newline == std::string::npos ? at + 1 : at - newline;
  }

  // -?digits[.digits][e[+-]digits] then `f` for a float; an int has neither `.`, exponent nor `f`.
  Expr parse_number() {
    size_t start = pos_;
    if (peek() == '-') ++pos_;
    auto digits = [&] {
      size_t from = pos_;
      while (!at_end() && is_digit(peek())) ++pos_;
      return pos_ - from;
    };
    digits();
    bool is_float = false;
    if (peek() == '.') {
      ++pos_;
      is_float = true;
      if (digits() == 0) fail(pos_, "expected digits after the '.' of a number, found " + describe_next());
    }
    if (peek() == 'e' || peek() == 'E') {
      ++pos_;
      is_float = true;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (digits() == 0) fail(pos_, "expected the digits of an exponent, found " + describe_next());
    }
    std::string literal = text_.substr(start, pos_ - start);
    if (peek() == 'f') {
      ++pos_;
      is_float = true;
    } else if (is_float) {
      fail(pos_, "expected 'f' after the float literal '" + literal + "', found " + describe_next());
    }
    if (!at_end() && (is_name_char(peek())))
      fail(pos_, "unexpected " + describe_next() + " after the number '" + literal + "'");
    if (is_float) {
      double value = std::strtod(literal.c_str(), nullptr);
      if (!std::isfinite(value)) fail(start, "the float literal '" + literal + "' is out of range");
      return make_float(value);
    }
    int64_t value = 0;
    auto [end, ec] = std::from_chars(literal.data(), literal.data() + literal.size(), value);
    if (ec != std::errc() || end != literal.data() + literal.size())
      fail(start, "the integer literal '" + literal + "' is out of the int64 range");
    return make_int(value);
  }

  Expr parse_named() {
    size_t start = pos_;
    std::string word = name("a name");
    skip_blanks();
    if (peek() == '[') return parse_read(word, start);
    if (peek() == '(') return parse_call(word, start);
    for (const std::vector<Axis>* axes : {&scope_->axes, &scope_->reduce_axes})
      for (const Axis& a : *axes)
        if (a.name == word) return make_var(word);
    if (word == "true" || word == "false") return make_bool(word == "true");
    if (word == "inf") return make_float(std::numeric_limits<double>::infinity());
    if (word == "nan") return make_float(std::numeric_limits<double>::quiet_NaN());
    fail(start, "unknown axis '" + word + "'; the axes of " + scope_->name + " are " + axis_names_of(*scope_));
  }

  static std::string axis_names_of(const Operation& op) {
    std::string s;
    for (const std::vector<Axis>* axes : {&op.axes, &op.reduce_axes})
      for (const Axis& a : *axes) s += (s.empty() ? "" : ", ") + a.name;
    return s.empty() ? "none" : s;
  }

  // Arguments up to `close`, each with the position it starts at (for type errors).
  std::vector<Expr> argument_list(const std::string& close, const std::string& what, std::vector<size_t>& starts) {
    std::vector<Expr> args;
    ++pos_;  // the opening bracket
    if (accept(close)) return args;
    do {
      skip_blanks();
      starts.push_back(pos_);
      args.push_back(parse_expr());
    } while (accept(","));
    expect(close, "after " + what);
    return args;
  }

  Expr parse_read(const std::string& tensor, size_t start) {
    auto it = tensors_.find(tensor);
    if (it == tensors_.end()) fail(start, "unknown tensor '" + tensor + "': no operation before this line is named so");
    const Operation& source = ops_[it->second];
    std::vector<size_t> starts;
    std::vector<Expr> indices = argument_list("]", "the indices of " + tensor, starts);
    if (indices.size() != source.shape.size())
      fail(start, tensor + " has rank " + std::to_string(source.shape.size()) + " but is read with " +
                      std::to_string(indices.size()) + " indices");
    for (size_t i = 0; i < indices.size(); ++i)
      if (indices[i]->type != kInt64)
        fail(starts[i], "an index of " + tensor + " must be int64, not " + to_string(indices[i]->type));
    return make_tensor_read(tensor, std::move(indices), Type{source.dtype, 1});
  }

  Expr parse_call(const std::string& fn, size_t start) {
    std::vector<size_t> at;
    std::vector<Expr> args = argument_list(")", "the arguments of " + fn, at);
    auto want_args = [&](size_t n) {
      if (args.size() != n)
        fail(start, fn + " takes " + std::to_string(n) + " argument" + (n == 1 ? "" : "s") + ", got " +
                        std::to_string(args.size()));
    };
    auto want_type = [&](size_t i, bool ok, const std::string& what) {
      if (!ok)
        fail(at[i], "argument " + std::to_string(i + 1) + " of " + fn + " must be " + what + ", not " +
                        to_string(args[i]->type));
    };
    // Scalars broadcast to the widest operand; vectors must all be that wide.
    auto want_lanes_agree = [&] {
      int widest = 1;
      for (const Expr& a : args) widest = std::max(widest, a->type.lanes);
      for (size_t i = 0; i < args.size(); ++i)
        want_type(i, args[i]->type.lanes == 1 || args[i]->type.lanes == widest,
                  "a scalar or " + std::to_string(widest) + " lanes wide");
    };
    for (ExprOp op : {ExprOp::FloorDiv, ExprOp::FloorMod, ExprOp::Min, ExprOp::Max}) {
      if (fn != to_string(op)) continue;
      want_args(2);
      std::string problem = binary_type_problem(op, args[0]->type, args[1]->type);
      if (!problem.empty()) fail(start, problem);
      return make_binary(op, args[0], args[1]);
    }
    if (fn == "select") {
      want_args(3);
      want_lanes_agree();
      want_type(0, args[0]->type.is_bool(), "bool");
      want_type(2, args[2]->type.dtype == args[1]->type.dtype, "of the type of argument 2");
      return make_select(args[0], args[1], args[2]);
    }
    if (auto math = math_fn_named(fn)) {
      want_args(*math == MathFn::Pow ? 2 : 1);
      want_lanes_agree();
      for (size_t i = 0; i < args.size(); ++i) want_type(i, args[i]->type.dtype == DType::Float32, "float32");
      return make_call(*math, std::move(args));
    }
    if (fn == "ramp") {
      want_args(3);
      want_type(0, args[0]->type == kInt64, "int64");
      want_type(1, args[1]->type == kInt64, "int64");
      const int64_t* lanes = as_int(args[2]);
      if (!lanes || *lanes < 2 || *lanes > std::numeric_limits<int>::max())
        fail(at[2], "the lanes of a ramp must be an integer of at least 2");
      return make_ramp(args[0], args[1], static_cast<int>(*lanes));
    }
    if (auto type = type_named(fn)) {  // a cast
      want_args(1);
      want_type(0, args[0]->type.lanes == type->lanes, std::to_string(type->lanes) + " lane(s) wide");
      if (args[0]->type.is_half() || type->is_half())
        want_type(0, args[0]->type.is_float() && type->is_float(), "a float (16-bit floats convert to floats only)");
      return make_cast(*type, args[0]);
    }
    if (auto lanes = lanes_suffix(fn)) {  // a broadcast: x4(...)
      want_args(1);
      want_type(0, !args[0]->type.is_vector(), "a scalar");
      return make_broadcast(args[0], *lanes);
    }
    fail(start, "unknown function '" + fn + "'");
  }

  const std::string& text_;
  const std::string& source_;
  size_t pos_ = 0;
  int depth_ = 0;
  std::vector<Operation> ops_;             // the operations parsed so far
  std::map<std::string, size_t> tensors_;  // their names, to their index in ops_
  std::set<std::string> axis_names_;       // every axis declared so far
  const Operation* scope_ = nullptr;       // the operation whose body is being read
};

}  // namespace

ComputeDAG parse_dag_text(const std::string& text, const std::string& source) {
  return DagParser(text, source).parse();
}

}  // namespace tessel
