#include "schedule/lower/prefetch.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>

#include "schedule/lower/arith.h"
#include "schedule/lower/storage_flatten.h"

namespace tessel {

namespace {

// Gaps between the bytes an iteration reads narrower than a cache line cost no extra line, so the
// region is treated as contiguous across them (64-byte lines, as on every CPU tessel targets).
constexpr int64_t kCacheLineBytes = 64;
constexpr int64_t kElementBytes = 4;  // inputs are float32
constexpr int64_t kMaxStraightLines = 8;

struct InnerTerm {
  std::string var;
  int64_t extent;
  int64_t coeff;
};

// The prefetch of one read at flat index `flat` (loop variable already shifted by the offset), or
// null when the index is not affine in the inner loops.
Stmt region_of(const std::string& tensor, const Expr& flat, const std::map<std::string, int64_t>& inner) {
  LinearForm f = linearize(flat);
  LinearForm base;
  base.constant = f.constant;
  std::vector<InnerTerm> terms;
  for (const auto& [atom, coeff] : f.terms) {
    if (atom->op == ExprOp::Var && inner.count(atom->name)) {
      terms.push_back(InnerTerm{atom->name, inner.at(atom->name), coeff});
      continue;
    }
    for (const auto& [var, extent] : inner)
      if (uses_var(atom, var)) return nullptr;
    base.add(atom, coeff);
  }
  std::sort(terms.begin(), terms.end(),
            [](const InnerTerm& a, const InnerTerm& b) { return std::llabs(a.coeff) < std::llabs(b.coeff); });
  // Grow a contiguous span from the smallest strides up: a loop whose step stays within the span (plus
  // less than a line of gap) only widens it; the first that jumps further, and all larger, are looped.
  const int64_t line = kCacheLineBytes / kElementBytes;
  int64_t span = 1;
  size_t k = 0;
  for (; k < terms.size(); ++k) {
    int64_t step = std::llabs(terms[k].coeff);
    if (step > span + line) break;
    span += step * (terms[k].extent - 1);
    if (terms[k].coeff < 0) base.constant += terms[k].coeff * (terms[k].extent - 1);
  }
  std::vector<std::pair<std::string, int64_t>> loops;  // outer to inner
  for (size_t j = terms.size(); j-- > k;) {
    std::string var = terms[j].var + ".prefetch";
    base.add(make_var(var), terms[j].coeff);
    loops.push_back({var, terms[j].extent});
  }
  // A long span is fetched by a loop of one line per iteration rather than a long straight run.
  if (span > kMaxStraightLines * line) {
    std::string var = tensor + ".line";
    base.add(make_var(var), line);
    loops.push_back({var, (span + line - 1) / line});
    span = line;
  }
  Stmt s = make_prefetch(tensor, simplify_expr(to_expr(base)), span);
  for (auto it = loops.rbegin(); it != loops.rend(); ++it)
    s = make_for(it->first, make_int(0), make_int(it->second), ForKind::Serial, s);
  return s;
}

}  // namespace

Stmt prefetch_nest(const std::string& tensor, const std::vector<int64_t>& shape, const Expr& body,
                   const std::string& loop, int64_t offset, const std::vector<std::pair<std::string, int64_t>>& inner) {
  const std::vector<int64_t> strides = row_major_strides(shape, {});
  const std::map<std::string, int64_t> inner_extents(inner.begin(), inner.end());
  const Expr ahead = make_var(loop) + make_int(offset);
  std::vector<Stmt> out;
  std::set<std::string> seen;  // two reads of the same region prefetch it once
  rewrite(body, [&](const Expr& e) -> Expr {
    if (e->op != ExprOp::TensorRead || e->name != tensor) return nullptr;
    Expr flat = make_int(0);
    for (size_t d = 0; d < e->args.size(); ++d) flat = flat + e->args[d] * make_int(strides[d]);
    Stmt s = region_of(tensor, substitute(flat, loop, ahead), inner_extents);
    if (s && seen.insert(to_string(s)).second) out.push_back(s);
    return nullptr;
  });
  return make_seq(out);
}

}  // namespace tessel
