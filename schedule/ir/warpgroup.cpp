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

}  // namespace tessel
