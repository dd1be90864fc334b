#include "schedule/ir/warpgroup.h"

namespace tessel {

Expr wg_accumulator_row(const Expr& t, const Expr& q) {
  return t / make_int(32) * make_int(16) + t % make_int(32) / make_int(4) + q / make_int(2) % make_int(2) * make_int(8);
}

Expr wg_accumulator_col(const Expr& t, const Expr& q) {
  return q / make_int(4) * make_int(8) + t % make_int(4) * make_int(2) + q % make_int(2);
}

int64_t wg_accumulator_row(int64_t t, int64_t q) { return 16 * (t / 32) + (t % 32) / 4 + 8 * ((q / 2) % 2); }
int64_t wg_accumulator_col(int64_t t, int64_t q) { return 8 * (q / 4) + 2 * (t % 4) + q % 2; }

Expr wg_flat_row(const std::vector<Expr>& index, const std::vector<int64_t>& extents) {
  Expr row = make_int(0);
  int64_t stride = 1;
  for (size_t d = extents.size() - 1; d-- > 0;) {
    row = row + index[d] * make_int(stride);
    stride *= extents[d];
  }
  return row;
}

Expr wg_register_base(const std::vector<Expr>& origin, const std::vector<int64_t>& extents) {
  // Tiles of 64 flattened rows, each cols / 2 registers.
  return wg_flat_row(origin, extents) / make_int(kWarpgroupTileRows) * make_int(extents.back() / 2);
}

int64_t swizzle_block_index(int64_t index, int64_t rows, int64_t cols) {
  const int64_t tile = rows * cols, copy = index / tile, l = index % tile;
  const int64_t r = l / cols, c = l % cols;
  return copy * tile + (c / kSwizzleBlockCols) * rows * kSwizzleBlockCols + r * kSwizzleBlockCols + c % kSwizzleBlockCols;
}

int64_t swizzled_index(int64_t index, int64_t rows, int64_t cols) {
  const int64_t a = swizzle_block_index(index, rows, cols);
  // 8 elements to a 16-byte chunk, 8 chunks to a row: chunk bits 3-5 take the row's bits 6-8.
  return a ^ (((a >> 6) & 7) << 3);
}

SwizzleSplit split_swizzled_index(const Expr& index, int64_t rows, int64_t cols, const VarRanges& ranges) {
  const LinearForm f = linearize(index);
  // The permutation's period: 8 rows of 64 elements within a column block, 8 rows of C elements
  // of the logical tile.
  constexpr int64_t kPeriod = 8 * kSwizzleBlockCols;
  auto floor_multiple = [](int64_t v, int64_t m) { return floor_div(v, m) * m; };
  if (cols == kSwizzleBlockCols) {
    // One column block: copies follow each other row after row, and the permutation of i is
    // i ^ (((i / 64) % 8) * 8) for every i.
    LinearForm outer, rest;
    for (const auto& [atom, c] : f.terms) (c % kPeriod == 0 ? outer : rest).add(atom, c);
    outer.constant = floor_multiple(f.constant, kPeriod);
    rest.constant = f.constant - outer.constant;
    return {to_expr(outer), to_expr(rest)};
  }
  const int64_t tile = rows * cols, group = 8 * cols;
  LinearForm copies, groups, rest;
  for (const auto& [atom, c] : f.terms) (c % tile == 0 ? copies : c % group == 0 ? groups : rest).add(atom, c);
  copies.constant = floor_multiple(f.constant, tile);
  groups.constant = floor_multiple(f.constant - copies.constant, group);
  rest.constant = f.constant - copies.constant - groups.constant;
  auto inside_one_copy = [&](const LinearForm& part) {
    Interval b = bound_of(to_expr(part), ranges);
    return b.lo && b.hi && *b.lo >= 0 && *b.hi < tile;
  };
  if (!inside_one_copy(rest)) return {make_int(0), index};
  if (!inside_one_copy(rest.plus(groups))) {
    rest = rest.plus(groups);
    groups = LinearForm{};
    if (!inside_one_copy(rest)) return {make_int(0), index};
  }
  // A group of 8 logical rows (8 * C elements) is 8 rows of every column block: 512 elements of
  // the block the element is in.
  LinearForm outer = copies;
  for (const auto& [atom, c] : groups.terms) outer.add(atom, c / cols * kSwizzleBlockCols);
  outer.constant += groups.constant / cols * kSwizzleBlockCols;
  return {to_expr(outer), to_expr(rest)};
}

}  // namespace tessel
