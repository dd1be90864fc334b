// Hopper's warpgroup tensor-core operations (wgmma, sm_90a): the layouts they fix, written once
// for lowering, the CUDA code generator and the tests.
//
// A warpgroup is four consecutive warps, 128 threads (threadIdx.x = 0..127 of a kernel that uses
// them). One WgmmaMma computes a 64 x N tile of float32 accumulators (N a multiple of 8 up to 256)
// from a 64 x 16 tile of a and a 16 x N tile of b, both read from shared memory by the hardware.
//
// Accumulators (PTX ISA, "wgmma .m64nNk16 register fragment D"): thread t holds N / 2 of the tile's
// values. Its register q holds row 16 * (t / 32) + (t % 32) / 4 + 8 * ((q / 2) % 2) and column
// 8 * (q / 4) + 2 * (t % 4) + q % 2. A buffer of several such tiles (rows in multiples of 64, every
// tile spanning all the buffer's columns) numbers them row-major and gives tile i registers
// i * N / 2 .. (i + 1) * N / 2 - 1.
//
// Shared operands (the "128-byte swizzle" canonical layouts): a tile of R x C 16-bit elements (R a
// multiple of 8, C a multiple of 64) is stored as C / 64 column blocks, each R rows of 128 bytes;
// within a block, the 16-byte chunk c of row r sits at chunk c ^ (r % 8). With each copy of the
// tile 1024-byte aligned, the hardware undoes the permutation itself. A matrix descriptor names a
// tile's first element by its unpermuted address; its leading-dimension offset is the byte
// distance between column blocks (for operands whose contiguous dimension is M or N) and its
// stride-dimension offset the 1024 bytes between groups of 8 rows. A K-major operand (k the
// contiguous dimension) keeps each 16-wide k slice inside one block.
#pragma once

#include <cstdint>
#include <vector>

#include "schedule/lower/arith.h"
#include "schedule/te/expr.h"

namespace tessel {

constexpr int64_t kWarpgroupThreads = 128;
constexpr int64_t kWarpgroupTileRows = 64;  // rows of one WgmmaMma's accumulator tile
constexpr int64_t kWarpgroupTileK = 16;     // its reduction length
constexpr int64_t kWarpgroupMaxCols = 256;
constexpr int64_t kSwizzleRowBytes = 128;   // the swizzled rows, 64 16-bit elements
constexpr int64_t kSwizzleBlockCols = 64;
constexpr int64_t kSwizzleAlignment = 1024;  // bytes: 8 rows of 128

// Row and column, within its 64 x N tile, of accumulator register `q` of thread `t` (0..127).
Expr wg_accumulator_row(const Expr& t, const Expr& q);
Expr wg_accumulator_col(const Expr& t, const Expr& q);
int64_t wg_accumulator_row(int64_t t, int64_t q);
int64_t wg_accumulator_col(int64_t t, int64_t q);

// A warpgroup accumulator buffer's rows are its dimensions but the last, flattened row-major (so
// that rows fused from two axes stay one axis of rows): the row of element `index`, unsimplified.
Expr wg_flat_row(const std::vector<Expr>& index, const std::vector<int64_t>& extents);
// The first register of the 64-row tile at `origin` (its row a multiple of 64, its column 0) of a
// warpgroup accumulator buffer of `extents` (unsimplified).
Expr wg_register_base(const std::vector<Expr>& origin, const std::vector<int64_t>& extents);

// The element offset, within a copy of an R x C swizzled tile, where logical element
// `index` = r * C + c sits before the chunk permutation (the column blocks laid out one after the
// other), and after it (where it is stored). Copies follow each other: index may pass R * C.
int64_t swizzle_block_index(int64_t index, int64_t rows, int64_t cols);
int64_t swizzled_index(int64_t index, int64_t rows, int64_t cols);

// A flat index into copies of a swizzled R x C tile, split so that the permutation is computed on
// as little of it as possible: for every value of the variables within their ranges,
// swizzled_index(index) = outer + swizzled_index(rest), and the same for swizzle_block_index. The
// permutation carries whole copies of the tile and whole groups of 8 rows (its period) rigidly,
// so their terms move to `outer` (row groups scaled from C to 64 columns a row): the part left
// inside is typically a thread's own chunk, computed once, while the copy and the row group
// become constant offsets. When the rest cannot be proven to stay inside one copy, rest = index.
struct SwizzleSplit {
  Expr outer, rest;
};
SwizzleSplit split_swizzled_index(const Expr& index, int64_t rows, int64_t cols, const VarRanges& ranges);

}  // namespace tessel
