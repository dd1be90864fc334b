#include "schedule/lower/inject_predicates.h"

#include "schedule/lower/arith.h"

namespace tessel {

std::vector<Expr> stage_predicates(const StageInfo& info, const std::vector<int64_t>& shape,
                                   const std::vector<Expr>& values, bool spatial_only, std::vector<Expr>* clamps) {
  const Stage& s = info.stage;
  std::vector<Expr> conds;
  std::vector<Expr>* out = &conds;
  auto add = [&](int var, Expr cond) {
    if (spatial_only && s.vars[var].kind == IterKind::Reduce) return;
    cond = simplify_expr(cond);
    if (auto p = prove(cond, {}); p && *p) return;
    out->push_back(cond);
  };
  for (const Relation& r : s.relations) {
    if (r.kind != Relation::Kind::Split) continue;
    int64_t inner = 1;
    for (int64_t l : r.lengths) inner *= l;
    int64_t extent = s.vars[r.parents[0]].extent;
    int64_t covered = s.vars[r.children[0]].extent * inner;
    if (covered != extent) add(r.parents[0], values[r.parents[0]] < make_int(extent));
  }
  // A region clamped at the tensor's end (or a padded one): keep the absolute index inside the tensor.
  if (clamps) out = clamps;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (is_int_value(info.root_base[d], 0) && !info.padded) continue;
    Expr index = info.root_base[d] + values[d];
    add(static_cast<int>(d), index < make_int(shape[d]));
    add(static_cast<int>(d), index >= make_int(0));
  }
  return conds;
}

}  // namespace tessel
