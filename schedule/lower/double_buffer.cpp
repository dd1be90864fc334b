#include "schedule/lower/double_buffer.h"

#include <map>
#include <set>

#include "schedule/lower/arith.h"
#include "schedule/te/tensor_size.h"

namespace tessel {

namespace {

struct Tile {
  DType dtype;
  int64_t elements;
};

bool writes_any(const Stmt& s, const std::map<std::string, Tile>& tiles) {
  bool found = false;
  visit(s, [&](const Stmt& n) {
    found = found || ((n->op == StmtOp::Store || n->op == StmtOp::Provide) && tiles.count(n->buffer));
  });
  return found;
}

// Every access to a tile (stores, loads, tensor-core operands) moved by its copy's offset.
Stmt offset_tiles(const Stmt& s, const std::map<std::string, Tile>& tiles, const Expr& copy) {
  auto shift = [&](const std::string& buffer, const Expr& index) {
    auto it = tiles.find(buffer);
    if (it == tiles.end()) return index;
    Expr offset = copy * make_int(it->second.elements);
    if (index->type.lanes > 1) offset = make_broadcast(offset, index->type.lanes);
    return index + offset;
  };
  return rewrite(
      s,
      [&](const Expr& e) -> Expr {
        if (e->op != ExprOp::Load || !tiles.count(e->name)) return nullptr;
        return make_load(e->name, shift(e->name, e->args[0]), e->type);
      },
      [&](const Stmt& n) -> Stmt {
        if (n->op == StmtOp::Store && tiles.count(n->buffer)) {
          StmtNode m = *n;
          m.indices = {shift(n->buffer, n->indices[0])};
          return std::make_shared<const StmtNode>(std::move(m));
        }
        if (n->op == StmtOp::Matrix) {
          StmtNode m = *n;
          bool changed = false;
          for (MatrixOperand& o : m.operands)
            if (tiles.count(o.buffer) && !m.operands.empty() && o.indices.size() == 1) {
              o.indices = {shift(o.buffer, o.indices[0])};
              changed = true;
            }
          return changed ? std::make_shared<const StmtNode>(std::move(m)) : nullptr;
        }
        return nullptr;
      });
}

// A copy of an aligned contiguous run of a global buffer into a tile, 4, 8 or 16 bytes: async.
Stmt async_fills(const Stmt& s, const std::map<std::string, DType>& tiles, const std::set<std::string>& global) {
  return rewrite(s, nullptr, [&](const Stmt& n) -> Stmt {
    if (n->op != StmtOp::Store || !tiles.count(n->buffer)) return nullptr;
    const Expr& v = n->value;
    if (v->op != ExprOp::Load || !global.count(v->name) || v->type.dtype != tiles.at(n->buffer)) return nullptr;
    const int lanes = v->type.lanes;
    const int64_t bytes = lanes * dtype_bytes(v->type.dtype);
    if (bytes != 4 && bytes != 8 && bytes != 16) return nullptr;
    auto aligned = [&](const Expr& i) { return lanes == 1 || is_aligned_ramp(i); };
    if (!aligned(n->indices[0]) || !aligned(v->args[0])) return nullptr;
    StmtNode m = *n;
    m.async_copy = true;
    return std::make_shared<const StmtNode>(std::move(m));
  });
}

class DoubleBuffer {
 public:
  Stmt run(const Stmt& s) {
    return rewrite(s, nullptr, [&](const Stmt& n) -> Stmt {
      if (n->op != StmtOp::For || !n->double_buffer) return nullptr;
      return transform(n);
    });
  }

 private:
  Stmt transform(const Stmt& loop) {
    const int64_t* n = as_int(loop->extent);
    if (!n || *n < 2 || !is_int_value(loop->min, 0)) return nullptr;
    // The shared tiles allocated at the top of the body, then [fills..., work...].
    std::map<std::string, Tile> tiles;
    std::vector<const StmtNode*> allocs;
    Stmt body = loop->body[0];
    while (body->op == StmtOp::Allocate && body->scope == MemScope::Shared) {
      tiles[body->buffer] = Tile{body->dtype, body->extents.empty() ? 1 : body->extents[0]};
      allocs.push_back(body.get());
      body = body->body[0];
    }
    if (tiles.empty() || body->op != StmtOp::Seq) return nullptr;
    std::vector<Stmt> fills, work;
    for (const Stmt& item : body->body) {
      if (item->op == StmtOp::Barrier) continue;
      bool fill = writes_any(item, tiles);
      if (fill && !work.empty()) return nullptr;  // a fill after the work: not this pattern
      (fill ? fills : work).push_back(item);
    }
    if (fills.empty() || work.empty()) return nullptr;

    const Expr t = make_var(loop->var);
    auto fill_for = [&](const Expr& iteration) {
      Stmt f = make_seq(fills);
      f = rewrite(f, [&](const Expr& e) -> Expr {
        return e->op == ExprOp::Var && e->name == loop->var ? iteration : nullptr;
      }, nullptr);
      return offset_tiles(f, tiles, iteration % make_int(2));
    };
    Stmt next = make_if(t + make_int(1) < make_int(*n), fill_for(t + make_int(1)));
    Stmt iteration = make_seq({next, make_commit_copies(1), make_barrier(),
                               offset_tiles(make_seq(work), tiles, t % make_int(2)), make_barrier()});
    Stmt new_loop = make_for(loop->var, loop->min, loop->extent, loop->for_kind, iteration, loop->thread_tag,
                             loop->pragma_unroll_max_step);
    Stmt out = make_seq({fill_for(make_int(0)), make_commit_copies(-1), new_loop});
    for (auto it = allocs.rbegin(); it != allocs.rend(); ++it) {
      StmtNode a = *make_allocate((*it)->buffer, (*it)->dtype, {2 * tiles.at((*it)->buffer).elements},
                                  MemScope::Shared, out);
      a.double_buffer = true;  // its fills become asynchronous copies where they can (mark_async_copies)
      out = std::make_shared<const StmtNode>(std::move(a));
    }
    return out;
  }

};

}  // namespace

Stmt double_buffer(const Stmt& body) { return DoubleBuffer().run(body); }

Stmt mark_async_copies(const Stmt& body, const std::vector<BufferParam>& params) {
  std::set<std::string> global;
  for (const BufferParam& p : params) global.insert(p.name);
  visit(body, [&](const Stmt& n) {
    if (n->op == StmtOp::Allocate && n->scope == MemScope::Global) global.insert(n->buffer);
  });
  std::map<std::string, DType> tiles;
  visit(body, [&](const Stmt& n) {
    if (n->op == StmtOp::Allocate && n->double_buffer) tiles[n->buffer] = n->dtype;
  });
  return tiles.empty() ? body : async_fills(body, tiles, global);
}

}  // namespace tessel
