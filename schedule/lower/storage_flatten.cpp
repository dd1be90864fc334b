#include "schedule/lower/storage_flatten.h"

#include <map>
#include <optional>

#include "schedule/lower/arith.h"
#include "schedule/te/error.h"
#include "schedule/te/tensor_size.h"

namespace tessel {

namespace {

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
        if (is_fragment(s->scope)) return flatten_fragment_allocation(s);
        std::vector<StorageAlign> align;
        if (state_.stage_index(s->buffer) >= 0) align = state_.stage(s->buffer).storage_align;
        std::vector<int64_t> strides = row_major_strides(s->extents, align);
        int64_t size = s->extents.empty() ? 1 : strides[0] * s->extents[0];
        auto saved = strides_.find(s->buffer) != strides_.end() ? std::optional(strides_[s->buffer]) : std::nullopt;
        strides_[s->buffer] = strides;
        Stmt body = run(s->body[0]);
        if (saved) strides_[s->buffer] = *saved;
        else strides_.erase(s->buffer);
        return make_allocate(s->buffer, s->dtype, {size}, s->scope, body);
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
    auto saved = fragments_.count(s->buffer) ? std::optional(fragments_[s->buffer]) : std::nullopt;
    fragments_[s->buffer] = tiles;
    Stmt body = run(s->body[0]);
    if (saved) fragments_[s->buffer] = *saved;
    else fragments_.erase(s->buffer);
    int64_t count = 1;
    for (int64_t t : tiles) count *= t;
    return make_allocate(s->buffer, s->dtype, {count}, s->scope, body);
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
    Expr flat = flat_index(o.buffer, o.indices);
    auto at = [&](int64_t r, int64_t c) {
      return simplify_expr(substitute(substitute(flat, row, make_int(r)), col, make_int(c)));
    };
    Expr base = at(0, 0);
    const Expr row_step = simplify_expr(at(1, 0) - base), col_step = simplify_expr(at(0, 1) - base);
    const int64_t *dr = as_int(row_step), *dc = as_int(col_step);
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
    for (MatrixOperand& o : ops) {
      if (fragments_.count(o.buffer)) {
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
    return make_matrix(s->matrix_op, ops);
  }

  Expr flat_index(const std::string& buffer, const std::vector<Expr>& indices) {
    if (fragments_.count(buffer))
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
