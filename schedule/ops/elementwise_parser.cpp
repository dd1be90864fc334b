// A recursive-descent parser for elementwise expressions. Grammar (lowest precedence first):
//
//   expr    := term (('+' | '-') term)*
//   term    := unary (('*' | '/') unary)*
//   unary   := '-' unary | primary
//   primary := number | input | function '(' expr (',' expr)* ')' | '(' expr ')'
//
// Columns in error messages are 1-based positions in the original text.
//
// Two limits keep every later stage bounded: parentheses, function calls and unary minus may nest
// at most kMaxNesting levels (the parser recurses once per level, and so do the passes over the
// expression), and an expression holds at most kMaxOperations operators and calls. The second is
// about compile time: the loop body grows with the expression, and LLVM's loop vectorizer takes
// time quadratic in the size of a predicated body (about 3 s for 500 sigmoids, 9 s for 1000).
#include "schedule/ops/elementwise_parser.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "schedule/te/error.h"

namespace tessel {

namespace {

constexpr int kMaxNesting = 256;
constexpr int kMaxOperations = 512;

struct Function {
  const char* name;
  int arity;
};

constexpr Function kFunctions[] = {
    {"relu", 1}, {"sigmoid", 1}, {"tanh", 1}, {"exp", 1}, {"log", 1}, {"sqrt", 1}, {"rsqrt", 1},
    {"erf", 1},  {"abs", 1},     {"min", 2},  {"max", 2}, {"pow", 2},
};

Expr make_function(const std::string& name, std::vector<Expr> args) {
  if (name == "relu") return max(args[0], make_float(0));
  if (name == "min") return min(args[0], args[1]);
  if (name == "max") return max(args[0], args[1]);
  MathFn fn = MathFn::Exp;
  if (name == "sigmoid") fn = MathFn::Sigmoid;
  else if (name == "tanh") fn = MathFn::Tanh;
  else if (name == "exp") fn = MathFn::Exp;
  else if (name == "log") fn = MathFn::Log;
  else if (name == "sqrt") fn = MathFn::Sqrt;
  else if (name == "rsqrt") fn = MathFn::Rsqrt;
  else if (name == "erf") fn = MathFn::Erf;
  else if (name == "abs") fn = MathFn::Abs;
  else if (name == "pow") fn = MathFn::Pow;
  else TESSEL_CHECK(false, "no builder for function " + name);
  return make_call(fn, std::move(args));
}

class Parser {
 public:
  Parser(const std::string& text, const std::vector<std::string>& inputs,
         const std::function<Expr(const std::string&)>& input)
      : text_(text), inputs_(inputs), input_(input) {}

  Expr parse() {
    skip_space();
    if (pos_ == text_.size()) fail(pos_, "the expression is empty");
    Expr e = parse_expr();
    skip_space();
    if (pos_ != text_.size()) fail(pos_, "unexpected '" + std::string(1, text_[pos_]) + "' after a complete expression");
    return e;
  }

 private:
  [[noreturn]] void fail(size_t pos, const std::string& message) const {
    throw InputError("error in expr at column " + std::to_string(pos + 1) + ": " + message);
  }

  // One level of nesting, opened at `pos`, for as long as the guard lives.
  struct Level {
    Parser& parser;
    Level(Parser& p, size_t pos) : parser(p) {
      if (++parser.depth_ > kMaxNesting)
        parser.fail(pos, "the expression nests more than " + std::to_string(kMaxNesting) +
                             " levels deep (parentheses, function calls and unary minus each open one)");
    }
    ~Level() { --parser.depth_; }
    Level(const Level&) = delete;
    Level& operator=(const Level&) = delete;
  };

  // Counts one operator or call, found at `pos`.
  void count_operation(size_t pos) {
    if (++operations_ > kMaxOperations)
      fail(pos, "the expression has more than " + std::to_string(kMaxOperations) +
                    " operators and function calls; split it into several elementwise ops");
  }

  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }

  // Skips blanks, then consumes `c` if it comes next.
  bool accept(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  std::string describe_next() const {
    if (pos_ >= text_.size()) return "the end of the expression";
    return "'" + std::string(1, text_[pos_]) + "'";
  }

  // Consumes the binary operator `c` if it comes next, counting it.
  bool accept_operator(char c) {
    if (!accept(c)) return false;
    count_operation(pos_ - 1);
    return true;
  }

  Expr parse_expr() {
    Expr e = parse_term();
    while (true) {
      if (accept_operator('+')) e = e + parse_term();
      else if (accept_operator('-')) e = e - parse_term();
      else return e;
    }
  }

  Expr parse_term() {
    Expr e = parse_unary();
    while (true) {
      if (accept_operator('*')) e = e * parse_unary();
      else if (accept_operator('/')) e = e / parse_unary();
      else return e;
    }
  }

  Expr parse_unary() {
    if (accept('-')) {
      const size_t minus = pos_ - 1;
      Level level(*this, minus);
      Expr operand = parse_unary();
      if (const double* v = as_float(operand)) return make_float(-*v);  // -2 is a literal
      count_operation(minus);
      return -operand;
    }
    return parse_primary();
  }

  Expr parse_primary() {
    skip_space();
    if (pos_ >= text_.size()) fail(pos_, "expected an operand, found the end of the expression");
    char c = text_[pos_];
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') return parse_number();
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') return parse_name();
    if (c == '(') {
      size_t open = pos_++;
      Level level(*this, open);
      Expr e = parse_expr();
      if (!accept(')')) {
        skip_space();
        fail(pos_, "expected ')' to close the '(' at column " + std::to_string(open + 1) + ", found " + describe_next());
      }
      return e;
    }
    fail(pos_, "expected an operand, found '" + std::string(1, c) + "'");
  }

  // digits [. digits] [e [+-] digits], or . digits [exponent]
  Expr parse_number() {
    size_t start = pos_;
    auto digits = [&] {
      size_t n = 0;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_, ++n;
      return n;
    };
    size_t mantissa = digits();
    if (pos_ < text_.size() && text_[pos_] == '.') {
      ++pos_;
      mantissa += digits();
    }
    if (mantissa == 0) fail(start, "malformed number '.'");
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      size_t e = pos_++;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      if (digits() == 0) fail(e, "malformed exponent in number '" + text_.substr(start, pos_ - start) + "'");
    }
    if (pos_ < text_.size() && (std::isalpha(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_' || text_[pos_] == '.'))
      fail(pos_, "unexpected '" + std::string(1, text_[pos_]) + "' after the number '" +
                     text_.substr(start, pos_ - start) + "'");
    std::string literal = text_.substr(start, pos_ - start);
    errno = 0;
    double v = std::strtod(literal.c_str(), nullptr);
    if (errno == ERANGE || !std::isfinite(v)) fail(start, "number '" + literal + "' is out of range");
    return make_float(v);
  }

  Expr parse_name() {
    size_t start = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) ++pos_;
    std::string name = text_.substr(start, pos_ - start);
    const Function* fn = nullptr;
    for (const Function& f : kFunctions)
      if (name == f.name) fn = &f;
    skip_space();
    bool call = pos_ < text_.size() && text_[pos_] == '(';
    if (!call) {
      for (const std::string& in : inputs_)
        if (in == name) return input_(name);
      if (fn) fail(start, "function '" + name + "' needs arguments in parentheses");
      if (name == "x" || name == "y" || name == "z")
        fail(start, "input '" + name + "' is not available: only " + list_inputs() + " (raise the inputs param)");
      fail(start, "unknown name '" + name + "'; inputs are " + list_inputs());
    }
    if (!fn) fail(start, "unknown function '" + name + "'; functions are " + list_functions());
    Level level(*this, start);
    count_operation(start);
    ++pos_;  // '('
    std::vector<Expr> args;
    if (!accept(')')) {
      do {
        args.push_back(parse_expr());
      } while (accept(','));
      if (!accept(')')) {
        skip_space();
        fail(pos_, "expected ',' or ')' in the arguments of " + name + ", found " + describe_next());
      }
    }
    if (static_cast<int>(args.size()) != fn->arity)
      fail(start, "function '" + name + "' takes " + std::to_string(fn->arity) + " argument" +
                      (fn->arity == 1 ? "" : "s") + ", got " + std::to_string(args.size()));
    return make_function(name, std::move(args));
  }

  std::string list_inputs() const {
    std::string s;
    for (size_t i = 0; i < inputs_.size(); ++i) s += (i ? ", " : "") + inputs_[i];
    return s.empty() ? "none" : s;
  }

  static std::string list_functions() {
    std::string s;
    for (const Function& f : kFunctions) s += (s.empty() ? "" : ", ") + std::string(f.name);
    return s;
  }

  const std::string& text_;
  const std::vector<std::string>& inputs_;
  const std::function<Expr(const std::string&)>& input_;
  size_t pos_ = 0;
  int depth_ = 0;        // levels open now
  int operations_ = 0;  // operators and calls so far
};

}  // namespace

Expr parse_elementwise_expr(const std::string& text, const std::vector<std::string>& inputs,
                            const std::function<Expr(const std::string&)>& input) {
  return Parser(text, inputs, input).parse();
}

}  // namespace tessel
