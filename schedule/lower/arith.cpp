// Linear forms, interval bounds and expression simplification.
#include "schedule/lower/arith.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>

#include "schedule/te/error.h"

namespace tessel {

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t floor_mod(int64_t a, int64_t b) { return a - floor_div(a, b) * b; }

namespace {

bool is_scalar_int(const Expr& e) { return e->type == kInt64; }

// Saturating helpers so bound arithmetic never overflows silently.
std::optional<int64_t> checked_mul(std::optional<int64_t> a, int64_t k) {
  if (!a) return std::nullopt;
  __int128 r = static_cast<__int128>(*a) * k;
  if (r > std::numeric_limits<int64_t>::max() / 4 || r < std::numeric_limits<int64_t>::min() / 4) return std::nullopt;
  return static_cast<int64_t>(r);
}
std::optional<int64_t> checked_add(std::optional<int64_t> a, std::optional<int64_t> b) {
  if (!a || !b) return std::nullopt;
  return *a + *b;
}

}  // namespace

void LinearForm::add(const Expr& atom, int64_t coeff) {
  if (coeff == 0) return;
  for (auto it = terms.begin(); it != terms.end(); ++it)
    if (equal(it->first, atom)) {
      it->second += coeff;
      if (it->second == 0) terms.erase(it);
      return;
    }
  terms.emplace_back(atom, coeff);
}

LinearForm LinearForm::scaled(int64_t k) const {
  LinearForm out;
  if (k == 0) return out;
  for (const auto& [a, c] : terms) out.terms.emplace_back(a, c * k);
  out.constant = constant * k;
  return out;
}

LinearForm LinearForm::plus(const LinearForm& other, int64_t sign) const {
  LinearForm out = *this;
  for (const auto& [a, c] : other.terms) out.add(a, c * sign);
  out.constant += other.constant * sign;
  return out;
}

namespace {

// floordiv(x, c) * c * k + floormod(x, c) * k == x * k: fused loops split back into their parts
// recombine into the original index.
LinearForm merge_div_mod(LinearForm f) {
  for (size_t m = 0; m < f.terms.size(); ++m) {
    const Expr& mod = f.terms[m].first;
    if (mod->op != ExprOp::FloorMod) continue;
    const int64_t* c = as_int(mod->args[1]);
    if (!c) continue;
    int64_t k = f.terms[m].second;
    for (size_t d = 0; d < f.terms.size(); ++d) {
      const Expr& div = f.terms[d].first;
      if (div->op != ExprOp::FloorDiv || !equal(div->args[0], mod->args[0]) || !equal(div->args[1], mod->args[1]) ||
          f.terms[d].second != k * *c)
        continue;
      Expr x = mod->args[0];
      LinearForm rest;
      rest.constant = f.constant;
      for (size_t t = 0; t < f.terms.size(); ++t)
        if (t != m && t != d) rest.add(f.terms[t].first, f.terms[t].second);
      return merge_div_mod(rest.plus(linearize(x).scaled(k)));
    }
  }
  return f;
}

}  // namespace

LinearForm linearize(const Expr& e) {
  LinearForm f;
  if (const int64_t* v = as_int(e)) {
    f.constant = *v;
    return f;
  }
  if (is_scalar_int(e)) {
    switch (e->op) {
      case ExprOp::Add: return merge_div_mod(linearize(e->args[0]).plus(linearize(e->args[1])));
      case ExprOp::Sub: return merge_div_mod(linearize(e->args[0]).plus(linearize(e->args[1]), -1));
      case ExprOp::Mul:
        if (const int64_t* k = as_int(e->args[1])) return linearize(e->args[0]).scaled(*k);
        if (const int64_t* k = as_int(e->args[0])) return linearize(e->args[1]).scaled(*k);
        break;
      default: break;
    }
  }
  f.add(e, 1);
  return f;
}

std::vector<Expr> reads_of(const Expr& e, const std::string& tensor) {
  std::vector<Expr> out;
  std::function<void(const Expr&)> walk = [&](const Expr& n) {
    if (n->op == ExprOp::TensorRead && n->name == tensor) out.push_back(n);
    for (const Expr& a : n->args) walk(a);
  };
  walk(e);
  return out;
}

bool is_aligned_ramp(const Expr& index) {
  return index->op == ExprOp::Ramp && is_int_value(index->args[1], 1) &&
         is_multiple_of(index->args[0], index->type.lanes);
}

bool is_multiple_of(const Expr& e, int64_t n) {
  if (n == 1) return true;
  if (n <= 0) return false;
  LinearForm f = linearize(e);
  if (f.constant % n != 0) return false;
  for (const auto& [atom, coeff] : f.terms) {
    int64_t rest = n / std::gcd(coeff < 0 ? -coeff : coeff, n);  // what the atom itself must supply
    if (rest == 1) continue;
    bool ok = false;
    if (atom->op == ExprOp::FloorMod) {
      const int64_t* c = as_int(atom->args[1]);
      ok = c && *c % rest == 0 && is_multiple_of(atom->args[0], rest);
    } else if (atom->op == ExprOp::Mul) {
      ok = is_multiple_of(atom->args[0], rest) || is_multiple_of(atom->args[1], rest);
    }
    if (!ok) return false;
  }
  return true;
}

Expr to_expr(const LinearForm& f) {
  Expr out;
  for (const auto& [atom, c] : f.terms) {
    if (!out) {
      out = c == 1 ? atom : (c == -1 ? make_int(0) - atom : atom * make_int(c));
      continue;
    }
    if (c == 1) out = out + atom;
    else if (c == -1) out = out - atom;
    else if (c > 0) out = out + atom * make_int(c);
    else out = out - atom * make_int(-c);
  }
  if (!out) return make_int(f.constant);
  if (f.constant > 0) out = out + make_int(f.constant);
  if (f.constant < 0) out = out - make_int(-f.constant);
  return out;
}

// --- bounds -------------------------------------------------------------------------------------

namespace {

Interval bound_atom(const Expr& e, const VarRanges& ranges);

Interval bound_linear(const LinearForm& f, const VarRanges& ranges) {
  Interval r{f.constant, f.constant};
  for (const auto& [atom, c] : f.terms) {
    Interval b = bound_atom(atom, ranges);
    std::optional<int64_t> lo = c > 0 ? checked_mul(b.lo, c) : checked_mul(b.hi, c);
    std::optional<int64_t> hi = c > 0 ? checked_mul(b.hi, c) : checked_mul(b.lo, c);
    r.lo = checked_add(r.lo, lo);
    r.hi = checked_add(r.hi, hi);
  }
  return r;
}

Interval bound_atom(const Expr& e, const VarRanges& ranges) {
  switch (e->op) {
    case ExprOp::IntImm: return {e->int_value, e->int_value};
    case ExprOp::Var: {
      auto it = ranges.find(e->name);
      return it == ranges.end() ? Interval{} : it->second;
    }
    case ExprOp::Add: case ExprOp::Sub: case ExprOp::Mul: {
      LinearForm f = linearize(e);
      if (!(f.terms.size() == 1 && equal(f.terms[0].first, e) && f.terms[0].second == 1))
        return bound_linear(f, ranges);
      // A product of two non-constant terms: bound by the corner products.
      Interval a = bound_of(e->args[0], ranges), b = bound_of(e->args[1], ranges);
      if (!a.lo || !a.hi || !b.lo || !b.hi) return {};
      std::optional<int64_t> c[4] = {checked_mul(*a.lo, *b.lo), checked_mul(*a.lo, *b.hi), checked_mul(*a.hi, *b.lo),
                                     checked_mul(*a.hi, *b.hi)};
      for (const auto& corner : c)
        if (!corner) return {};
      return {std::min({*c[0], *c[1], *c[2], *c[3]}), std::max({*c[0], *c[1], *c[2], *c[3]})};
    }
    case ExprOp::FloorDiv: {
      const int64_t* k = as_int(e->args[1]);
      if (!k || *k == 0) return {};
      Interval a = bound_of(e->args[0], ranges);
      Interval r;
      if (*k < 0) {  // decreasing in the dividend
        if (a.hi && *a.hi != INT64_MIN) r.lo = floor_div(*a.hi, *k);
        if (a.lo && *a.lo != INT64_MIN) r.hi = floor_div(*a.lo, *k);
        return r;
      }
      if (a.lo) r.lo = floor_div(*a.lo, *k);
      if (a.hi) r.hi = floor_div(*a.hi, *k);
      return r;
    }
    case ExprOp::FloorMod: {
      const int64_t* k = as_int(e->args[1]);
      if (k && *k < 0 && *k != INT64_MIN) return {*k + 1, 0};  // the divisor's sign
      if (!k || *k <= 0) return {};
      Interval a = bound_of(e->args[0], ranges);
      if (a.lo && a.hi && floor_div(*a.lo, *k) == floor_div(*a.hi, *k))
        return {floor_mod(*a.lo, *k), floor_mod(*a.hi, *k)};
      return {0, *k - 1};
    }
    case ExprOp::Min: case ExprOp::Max: {
      Interval a = bound_of(e->args[0], ranges), b = bound_of(e->args[1], ranges);
      Interval r;
      if (e->op == ExprOp::Min) {
        r.hi = a.hi && b.hi ? std::min(*a.hi, *b.hi) : (a.hi ? a.hi : b.hi);
        if (a.lo && b.lo) r.lo = std::min(*a.lo, *b.lo);
      } else {
        r.lo = a.lo && b.lo ? std::max(*a.lo, *b.lo) : (a.lo ? a.lo : b.lo);
        if (a.hi && b.hi) r.hi = std::max(*a.hi, *b.hi);
      }
      return r;
    }
    case ExprOp::Select: {
      Interval a = bound_of(e->args[1], ranges), b = bound_of(e->args[2], ranges);
      Interval r;
      if (a.lo && b.lo) r.lo = std::min(*a.lo, *b.lo);
      if (a.hi && b.hi) r.hi = std::max(*a.hi, *b.hi);
      return r;
    }
    default: return {};
  }
}

}  // namespace

Interval bound_of(const Expr& e, const VarRanges& ranges) {
  if (!is_scalar_int(e)) return {};
  return bound_linear(linearize(e), ranges);
}

Interval loop_range(const Expr& min, const Expr& extent, const VarRanges& ranges) {
  const Interval lo = bound_of(min, ranges), n = bound_of(extent, ranges);
  Interval r{lo.lo, std::nullopt};
  if (lo.hi && n.hi) r.hi = checked_add(checked_add(lo.hi, n.hi), std::optional<int64_t>(-1));
  return r;
}

std::optional<bool> prove(const Expr& cond, const VarRanges& ranges) {
  if (cond->op == ExprOp::IntImm && cond->type == kBool) return cond->int_value != 0;
  switch (cond->op) {
    case ExprOp::And: {
      auto a = prove(cond->args[0], ranges), b = prove(cond->args[1], ranges);
      if ((a && !*a) || (b && !*b)) return false;
      if (a && b) return true;
      return std::nullopt;
    }
    case ExprOp::Or: {
      auto a = prove(cond->args[0], ranges), b = prove(cond->args[1], ranges);
      if ((a && *a) || (b && *b)) return true;
      if (a && b) return false;
      return std::nullopt;
    }
    case ExprOp::Not: {
      auto a = prove(cond->args[0], ranges);
      if (a) return !*a;
      return std::nullopt;
    }
    case ExprOp::LT: case ExprOp::LE: case ExprOp::GT: case ExprOp::GE: case ExprOp::EQ: case ExprOp::NE: {
      if (!is_scalar_int(cond->args[0])) return std::nullopt;
      // Decide the sign of d = a - b.
      Interval d = bound_linear(linearize(cond->args[0]).plus(linearize(cond->args[1]), -1), ranges);
      switch (cond->op) {
        case ExprOp::LT:
          if (d.hi && *d.hi < 0) return true;
          if (d.lo && *d.lo >= 0) return false;
          break;
        case ExprOp::LE:
          if (d.hi && *d.hi <= 0) return true;
          if (d.lo && *d.lo > 0) return false;
          break;
        case ExprOp::GT:
          if (d.lo && *d.lo > 0) return true;
          if (d.hi && *d.hi <= 0) return false;
          break;
        case ExprOp::GE:
          if (d.lo && *d.lo >= 0) return true;
          if (d.hi && *d.hi < 0) return false;
          break;
        case ExprOp::EQ:
          if (d.is_point()) return *d.lo == 0;
          if ((d.lo && *d.lo > 0) || (d.hi && *d.hi < 0)) return false;
          break;
        default:
          if (d.is_point()) return *d.lo != 0;
          if ((d.lo && *d.lo > 0) || (d.hi && *d.hi < 0)) return true;
          break;
      }
      return std::nullopt;
    }
    default: return std::nullopt;
  }
}

// --- simplification -----------------------------------------------------------------------------

namespace {

Expr fold(const Expr& e, const VarRanges& ranges) {
  const auto& a = e->args;
  switch (e->op) {
    case ExprOp::Add: case ExprOp::Sub: case ExprOp::Mul:
      if (is_scalar_int(e)) return to_expr(linearize(e));
      if (e->type.is_float() && e->type.lanes == 1) {
        const double *x = as_float(a[0]), *y = as_float(a[1]);
        if (x && y) {
          double v = e->op == ExprOp::Add ? *x + *y : e->op == ExprOp::Sub ? *x - *y : *x * *y;
          return make_float(static_cast<float>(v));
        }
        if (e->op == ExprOp::Mul && ((x && *x == 1.0) || (y && *y == 1.0))) return x ? a[1] : a[0];
        if (e->op == ExprOp::Add && y && *y == 0.0 && !std::signbit(*y)) return nullptr;  // x + 0 may be -0
      }
      return nullptr;
    case ExprOp::FloorDiv: case ExprOp::FloorMod: {
      const int64_t* k = as_int(a[1]);
      if (!k || *k <= 0 || !is_scalar_int(e)) return nullptr;
      if (const int64_t* x = as_int(a[0]))
        return make_int(e->op == ExprOp::FloorDiv ? floor_div(*x, *k) : floor_mod(*x, *k));
      if (*k == 1) return e->op == ExprOp::FloorDiv ? a[0] : make_int(0);
      Interval b = bound_of(a[0], ranges);
      if (b.lo && b.hi && floor_div(*b.lo, *k) == floor_div(*b.hi, *k)) {
        int64_t q = floor_div(*b.lo, *k);
        if (e->op == ExprOp::FloorDiv) return make_int(q);
        return q == 0 ? a[0] : to_expr(linearize(a[0]).plus(LinearForm{{}, q * *k}, -1));
      }
      // (x * k + y) / k == x + y / k and (x * k + y) % k == y % k, for any y (floor division): the
      // multiples of k come out, and the rest's quotient is zero where its bounds say so.
      LinearForm f = linearize(a[0]);
      LinearForm whole, rest;
      for (const auto& [atom, c] : f.terms) {
        if (c % *k == 0) whole.add(atom, c / *k);
        else rest.add(atom, c);
      }
      whole.constant = floor_div(f.constant, *k);
      rest.constant = floor_mod(f.constant, *k);
      if (whole.is_constant() && whole.constant == 0) return nullptr;
      Interval rb = bound_linear(rest, ranges);
      if (rb.lo && rb.hi && *rb.lo >= 0 && *rb.hi < *k) return e->op == ExprOp::FloorDiv ? to_expr(whole) : to_expr(rest);
      const Expr left = make_binary(e->op, to_expr(rest), a[1]);
      return e->op == ExprOp::FloorDiv ? to_expr(whole.plus(linearize(left))) : left;
    }
    case ExprOp::Min: case ExprOp::Max: {
      if (is_scalar_int(e)) {
        Interval d = bound_linear(linearize(a[0]).plus(linearize(a[1]), -1), ranges);
        bool a_le_b = d.hi && *d.hi <= 0, a_ge_b = d.lo && *d.lo >= 0;
        if (e->op == ExprOp::Min) {
          if (a_le_b) return a[0];
          if (a_ge_b) return a[1];
        } else {
          if (a_ge_b) return a[0];
          if (a_le_b) return a[1];
        }
      } else if (e->type.is_float() && e->type.lanes == 1) {
        const double *x = as_float(a[0]), *y = as_float(a[1]);
        if (x && y) return make_float(e->op == ExprOp::Min ? std::fmin(*x, *y) : std::fmax(*x, *y));
      }
      return nullptr;
    }
    case ExprOp::EQ: case ExprOp::NE: case ExprOp::LT: case ExprOp::LE: case ExprOp::GT: case ExprOp::GE:
    case ExprOp::And: case ExprOp::Or: case ExprOp::Not:
      if (e->type == kBool) {
        if (auto p = prove(e, ranges)) return make_bool(*p);
        if (e->op == ExprOp::And) {
          if (auto p = prove(a[0], ranges); p && *p) return a[1];
          if (auto p = prove(a[1], ranges); p && *p) return a[0];
        }
      }
      return nullptr;
    case ExprOp::Select:
      if (a[0]->type == kBool)
        if (auto p = prove(a[0], ranges)) return *p ? a[1] : a[2];
      return nullptr;
    case ExprOp::Broadcast:
      return nullptr;
    case ExprOp::Ramp:
      return nullptr;
    default:
      return nullptr;
  }
}

}  // namespace

Expr simplify_expr(const Expr& e, const VarRanges& ranges) {
  return rewrite(e, [&](const Expr& n) { return fold(n, ranges); });
}

}  // namespace tessel
