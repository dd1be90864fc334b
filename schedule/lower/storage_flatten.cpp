#include "schedule/lower/storage_flatten.h"

#include <functional>
#include <map>
#include <optional>

#include "schedule/ir/warpgroup.h"
#include "schedule/lower/arith.h"
#include "schedule/te/error.h"
#include "schedule/te/tensor_size.h"

namespace tessel {

namespace {

// Runs `body` with m[key] = value, then restores what m held at key (allocations nest; loop
// partitioning can repeat one).
template <typename Map, typename Value>
Stmt with_entry(Map& m, const std::string& key, Value value, const std::function<Stmt()>& body) {
  auto it = m.find(key);
  std::optional<typename Map::mapped_type> saved = it != m.end() ? std::optional(it->second) : std::nullopt;
  m[key] = std::move(value);
  Stmt out = body();
  if (saved) m[key] = *saved;
  else m.erase(key);
  return out;
}

class Flattener {
 public:
  Flattener(const std::vector<BufferParam>& params, const State& state) : state_(state) {
    for (const BufferParam& p : params) {
      strides_[p.name] = row_major_strides(p.shape, {});
      dtypes_[p.name] = p.dtype;
    }
  }

  Stmt run(const Stmt& s) {
    switch (s->op) {
      case StmtOp::Allocate: {
        dtypes_[s->buffer] = s->dtype;
        if (s->scope == MemScope::WgAccumulator) return flatten_warpgroup_allocation(s);
        if (is_fragment(s->scope)) return flatten_fragment_allocation(s);
        std::vector<StorageAlign> align;
        const bool swizzled = state_.stage_index(s->buffer) >= 0 && state_.stage(s->buffer).swizzle;
        if (state_.stage_index(s->buffer) >= 0) align = state_.stage(s->buffer).storage_align;
        std::vector<int64_t> strides = row_major_strides(s->extents, align);
        int64_t size = s->extents.empty() ? 1 : strides[0] * s->extents[0];
        auto saved = strides_.find(s->buffer) != strides_.end() ? std::optional(strides_[s->buffer]) : std::nullopt;
        strides_[s->buffer] = strides;
        std::pair<int64_t, int64_t> tile{0, 0};
        if (swizzled) {
          tile = swizzle_tile(s);
          swizzled_[s->buffer] = tile;
        }
        Stmt body = run(s->body[0]);
        if (saved) strides_[s->buffer] = *saved;
        else strides_.erase(s->buffer);
        swizzled_.erase(s->buffer);
        StmtNode a = *make_allocate(s->buffer, s->dtype, {size}, s->scope, body);
        a.swizzle_rows = tile.first;
        a.swizzle_cols = tile.second;
        return std::make_shared<const StmtNode>(std::move(a));
      }
      case StmtOp::Provide:
        return make_store(s->buffer, flat_index(s->buffer, s->indices), flatten_expr(s->value));
      case StmtOp::Matrix:
        return flatten_matrix(s);
      case StmtOp::AllReduce:
        return make_allreduce(s->buffer, {flat_index(s->buffer, s->indices)}, s->combiner, s->thread_tag,
                              *as_int(s->extent));
      default: {
        std::vector<Stmt> body;
        for (const Stmt& b : s->body) body.push_back(run(b));
        Stmt rebuilt = s->body.empty() ? s : with_body(s, body);
        return rewrite(rebuilt, [&](const Expr& e) -> Expr { return flatten_read(e); }, nullptr);
      }
    }
  }

 private:
  [[noreturn]] static void fail(const std::string& buffer, const std::string& why) {
    throw ScheduleError(-1, "tensorize (" + buffer + ")", why);
  }

  // A fragment buffer holds whole 16 x 16 tiles of its last two dimensions: it becomes one element
  // per tile (the code generator gives each tile its registers).
  Stmt flatten_fragment_allocation(const Stmt& s) {
    const std::vector<int64_t>& e = s->extents;
    if (e.size() < 2 || e[e.size() - 2] % kMatrixTile || e.back() % kMatrixTile)
      fail(s->buffer, "fragment " + s->buffer + " covers " + shape_text(e) + "; its last two extents must be " +
                          "multiples of " + std::to_string(kMatrixTile));
    std::vector<int64_t> tiles(e.begin(), e.end());
    tiles[tiles.size() - 2] /= kMatrixTile;
    tiles.back() /= kMatrixTile;
    Stmt body = with_entry(fragments_, s->buffer, tiles, [&] { return run(s->body[0]); });
    int64_t count = 1;
    for (int64_t t : tiles) count *= t;
    return make_allocate(s->buffer, s->dtype, {count}, s->scope, body);
  }

  // A warpgroup accumulator: whole 64-row tiles spanning its columns, cols / 2 registers each per
  // thread of the warpgroup; it becomes its registers.
  Stmt flatten_warpgroup_allocation(const Stmt& s) {
    const std::vector<int64_t>& e = s->extents;
    int64_t rows = 1;
    for (size_t d = 0; d + 1 < e.size(); ++d) rows *= e[d];
    if (e.size() < 2 || rows % kWarpgroupTileRows || e.back() % 8 || e.back() > kWarpgroupMaxCols)
      fail(s->buffer, "warpgroup accumulator " + s->buffer + " covers " + shape_text(e) + "; its rows must be a " +
                          "multiple of 64 and its columns a multiple of 8 up to 256");
    Stmt body = with_entry(wg_fragments_, s->buffer, e, [&] { return run(s->body[0]); });
    int64_t count = 1;
    for (int64_t x : e) count *= x;
    return make_allocate(s->buffer, s->dtype, {count / kWarpgroupThreads}, s->scope, body);
  }

  // The tile a swizzled shared buffer holds: its rows (every dimension but the last) by its columns.
  std::pair<int64_t, int64_t> swizzle_tile(const Stmt& s) const {
    const std::vector<int64_t>& e = s->extents;
    int64_t rows = 1;
    for (size_t d = 0; d + 1 < e.size(); ++d) rows *= e[d];
    const int64_t cols = e.empty() ? 1 : e.back();
    if (!Type{s->dtype, 1}.is_half() || e.size() < 2 || cols % kSwizzleBlockCols || rows % 8)
      throw ScheduleError(-1, "storage_swizzle(" + s->buffer + ")",
                          "a swizzled tile holds 16-bit elements in rows of a multiple of 64 and a multiple of 8 " +
                              std::string("rows; ") + s->buffer + " covers " + shape_text(e) + " of " +
                              to_string(s->dtype));
    return {rows, cols};
  }

  // A memory operand's flat index, that of its tile's element (0, 0), and how it moves with the
  // tile's row and column (constants, else null; they point into `row_step` and `col_step`).
  struct TileSteps {
    Expr flat, base, row_step, col_step;
    const int64_t *row = nullptr, *col = nullptr;
  };
  TileSteps tile_steps(const MatrixOperand& o, const std::string& row, const std::string& col) {
    TileSteps t;
    t.flat = flat_index(o.buffer, o.indices);
    auto at = [&](int64_t r, int64_t c) {
      return simplify_expr(substitute(substitute(t.flat, row, make_int(r)), col, make_int(c)));
    };
    t.base = at(0, 0);
    t.row_step = simplify_expr(at(1, 0) - t.base);
    t.col_step = simplify_expr(at(0, 1) - t.base);
    t.row = as_int(t.row_step);
    t.col = as_int(t.col_step);
    return t;
  }

  // A warpgroup product's shared operand: the flat index of its tile's first element, whether the
  // tile's second dimension is the contiguous one (`row_major`), and the buffer's row length. One
  // dimension of the tile must run along the buffer's rows and the other along its columns; the
  // hardware needs the tile to start at a row that is a multiple of 8 and, along the contiguous
  // dimension, at a multiple of 16 (the reduction) or 64 (rows or columns of the product).
  MatrixOperand warpgroup_memory_operand(const MatrixOperand& o, const std::string& row, const std::string& col,
                                         bool is_a, int64_t n) {
    auto sw = swizzled_.find(o.buffer);
    if (sw == swizzled_.end())
      fail(o.buffer, "a warpgroup product reads swizzled shared tiles; " + o.buffer + " is not one (storage_swizzle)");
    const int64_t cols = sw->second.second;
    const TileSteps t = tile_steps(o, row, col);
    const int64_t *dr = t.row, *dc = t.col;
    MatrixOperand out{o.buffer, {t.base}};
    out.stride = cols;
    if (dr && dc && *dc == 1 && *dr == cols) out.row_major = true;
    else if (dr && dc && *dr == 1 && *dc == cols) out.row_major = false;
    else
      fail(o.buffer, "a warpgroup tile of " + o.buffer + " must run along the buffer's rows one way and its columns " +
                         "the other (index " + to_string(t.flat) + ")");
    // a is (m, k), b is (k, n): K-major when k is the contiguous dimension.
    const bool k_major = is_a ? out.row_major : !out.row_major;
    if (!k_major && n % kSwizzleBlockCols)
      fail(o.buffer, "a warpgroup product whose " + std::string(is_a ? "a" : "b") + " tile runs along its " +
                         (is_a ? "rows" : "columns") + " needs a multiple of 64 of them, not " + std::to_string(n));
    const std::vector<int64_t>& strides = strides_.at(o.buffer);
    std::vector<Expr> origin;
    for (const Expr& i : o.indices)
      origin.push_back(simplify_expr(substitute(substitute(i, row, make_int(0)), col, make_int(0))));
    Expr row0 = make_int(0);
    for (size_t d = 0; d + 1 < origin.size(); ++d) row0 = row0 + origin[d] * make_int(strides[d] / cols);
    const int64_t contiguous = k_major ? kWarpgroupTileK : kSwizzleBlockCols;
    if (!is_multiple_of(simplify_expr(row0), 8) || !is_multiple_of(origin.back(), contiguous))
      fail(o.buffer, "a warpgroup tile of " + o.buffer + " starts at row " + to_string(simplify_expr(row0)) +
                         " and column " + to_string(origin.back()) + "; it needs a row that is a multiple of 8 and " +
                         "a column that is a multiple of " + std::to_string(contiguous));
    return out;
  }

  static std::string shape_text(const std::vector<int64_t>& e) {
    std::string out = "[";
    for (size_t i = 0; i < e.size(); ++i) out += (i ? ", " : "") + std::to_string(e[i]);
    return out + "]";
  }

  // The tile number of a fragment operand whose indices name a tile's first element.
  Expr tile_number(const MatrixOperand& o) {
    const std::vector<int64_t>& tiles = fragments_.at(o.buffer);
    TESSEL_CHECK(tiles.size() == o.indices.size(), "rank mismatch in access to fragment " + o.buffer);
    Expr flat;
    int64_t stride = 1;
    for (size_t d = tiles.size(); d-- > 0;) {
      Expr i = o.indices[d];
      if (d + 2 >= tiles.size()) {
        LinearForm f = linearize(i), q;
        if (f.constant % kMatrixTile) fail(o.buffer, "a tile of " + o.buffer + " starts at " + to_string(i));
        q.constant = f.constant / kMatrixTile;
        for (const auto& [atom, c] : f.terms) {
          if (c % kMatrixTile) fail(o.buffer, "a tile of " + o.buffer + " starts at " + to_string(i));
          q.add(atom, c / kMatrixTile);
        }
        i = to_expr(q);
      }
      Expr term = stride == 1 ? i : i * make_int(stride);
      flat = flat ? term + flat : term;
      stride *= tiles[d];
    }
    return simplify_expr(flat);
  }

  // A memory operand as the flat index of the tile's element (0, 0) and its layout. The wmma
  // loads and stores need a 32-byte aligned start and a stride of a multiple of 16 bytes.
  MatrixOperand memory_operand(const MatrixOperand& o, const std::string& row, const std::string& col) {
    const TileSteps t = tile_steps(o, row, col);
    const Expr &flat = t.flat, &base = t.base;
    const int64_t *dr = t.row, *dc = t.col;
    MatrixOperand out{o.buffer, {base}};
    if (dr && dc && *dc == 1) {
      out.row_major = true;
      out.stride = *dr;
    } else if (dr && dc && *dr == 1) {
      out.row_major = false;
      out.stride = *dc;
    } else {
      fail(o.buffer, "a tile of " + o.buffer + " is neither row- nor column-major in memory (index " +
                         to_string(flat) + ")");
    }
    const int64_t bytes = dtype_bytes(dtypes_.at(o.buffer));
    if (out.stride <= 0 || (out.stride * bytes) % 16)
      fail(o.buffer, "a tile of " + o.buffer + " has a stride of " + std::to_string(out.stride) +
                         " elements; tensor-core loads and stores need a positive multiple of 16 bytes (pad the rows "
                         "with storage_align)");
    if (!is_multiple_of(base, 32 / bytes))
      fail(o.buffer, "a tile of " + o.buffer + " starts at element " + to_string(base) +
                         ", not provably 32-byte aligned");
    return out;
  }

  Stmt flatten_matrix(const Stmt& s) {
    std::vector<MatrixOperand> ops = s->operands;
    if (s->matrix_op == MatrixOpKind::WgmmaMma) {
      const int64_t n = wg_fragments_.count(ops[0].buffer) ? wg_fragments_.at(ops[0].buffer).back() : 0;
      for (int k : {1, 2}) ops[k] = warpgroup_memory_operand(ops[k], s->var, s->col_var, k == 1, n);
    }
    for (MatrixOperand& o : ops) {
      if (auto wg = wg_fragments_.find(o.buffer); wg != wg_fragments_.end()) {
        if (!is_int_value(o.indices.back(), 0) ||
            !is_multiple_of(simplify_expr(wg_flat_row(o.indices, wg->second)), kWarpgroupTileRows))
          fail(o.buffer, "a warpgroup tile of " + o.buffer + " starts at a row that is a multiple of 64 and column 0");
        o.indices = {simplify_expr(wg_register_base(o.indices, wg->second))};
        o.stride = wg->second.back() / 2;
      } else if (s->matrix_op == MatrixOpKind::WgmmaMma) {
        continue;
      } else if (fragments_.count(o.buffer)) {
        o.indices = {tile_number(o)};
      } else {
        if (s->var.empty()) fail(o.buffer, "a product reads fragments only, not " + o.buffer);
        o = memory_operand(o, s->var, s->col_var);
      }
    }
    switch (s->matrix_op) {
      case MatrixOpKind::LoadA:
      case MatrixOpKind::LoadB:
        loaded_layout_[ops[0].buffer] = ops[1].row_major;
        break;
      case MatrixOpKind::MmaSync:
        for (int k : {1, 2}) {
          auto it = loaded_layout_.find(ops[k].buffer);
          if (it == loaded_layout_.end())
            fail(ops[k].buffer, "fragment " + ops[k].buffer + " is read before it is loaded");
          ops[k].row_major = it->second;
        }
        break;
      default:
        break;
    }
    StmtNode m = *s;  // a warpgroup wait keeps its count
    m.operands = ops;
    m.var.clear();
    m.col_var.clear();
    return std::make_shared<const StmtNode>(std::move(m));
  }

  Expr flat_index(const std::string& buffer, const std::vector<Expr>& indices) {
    if (fragments_.count(buffer) || wg_fragments_.count(buffer))
      fail(buffer, "fragment " + buffer + " is read or written element by element; only tensorized stages (loads, " +
                       "products, stores of tiles) can touch it");
    auto it = strides_.find(buffer);
    TESSEL_CHECK(it != strides_.end(), "access to unknown buffer " + buffer);
    TESSEL_CHECK(it->second.size() == indices.size(), "rank mismatch in access to " + buffer);
    Expr flat;
    for (size_t d = 0; d < indices.size(); ++d) {
      Expr term = it->second[d] == 1 ? indices[d] : indices[d] * make_int(it->second[d]);
      flat = flat ? flat + term : term;
    }
    return flat ? simplify_expr(flat) : make_int(0);
  }

  Expr flatten_read(const Expr& e) {
    if (e->op != ExprOp::TensorRead) return nullptr;
    return make_load(e->name, flat_index(e->name, e->args), e->type);
  }

  Expr flatten_expr(const Expr& e) {
    return rewrite(e, [&](const Expr& n) { return flatten_read(n); });
  }

  const State& state_;
  std::map<std::string, std::vector<int64_t>> strides_;
  std::map<std::string, DType> dtypes_;
  std::map<std::string, std::vector<int64_t>> fragments_;  // fragment buffer -> its tile grid
  std::map<std::string, bool> loaded_layout_;              // fragment -> loaded row-major (else column)
  std::map<std::string, std::vector<int64_t>> wg_fragments_;       // warpgroup accumulator -> its extents
  std::map<std::string, std::pair<int64_t, int64_t>> swizzled_;  // swizzled shared tile -> rows, columns
};

}  // namespace

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& extents, const std::vector<StorageAlign>& align) {
  std::vector<int64_t> strides(extents.size(), 1);
  int64_t stride = 1;
  for (size_t d = extents.size(); d-- > 0;) {
    for (const StorageAlign& a : align)
      if (a.axis == static_cast<int>(d) && d + 1 < extents.size() + 1) {
        // Pad so that stride % factor == offset (applied to the dimension's own stride): the
        // smallest padding, computed (a loop of increments would take `factor` steps).
        stride += ((a.offset - stride % a.factor) % a.factor + a.factor) % a.factor;
      }
    strides[d] = stride;
    stride *= extents[d];
  }
  return strides;
}

Stmt storage_flatten(const Stmt& s, const std::vector<BufferParam>& params, const State& state) {
  return Flattener(params, state).run(s);
}

}  // namespace tessel
