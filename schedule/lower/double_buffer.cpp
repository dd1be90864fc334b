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
    const int stages = loop->pipeline_stages;
    // Warpgroup products end each iteration's work waiting for their group; pipelined, one group
    // may run on into the next iteration, so a tile's copy is refilled two iterations later.
    const Stmt& last = work.back();
    const bool async_work = stages > 2 && last->op == StmtOp::Matrix && last->matrix_op == MatrixOpKind::WgmmaWait;
    if (stages > 2 || async_work) return pipeline(loop, *n, tiles, allocs, fills, work, stages, async_work);

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
    return with_copies(out, allocs, tiles, 2);
  }

  // `stages` copies of each tile, fetched `ahead` iterations before their work:
  //
  //     for p < ahead: fill for iteration p into copy p (if p < n); commit
  //     for t < n - ahead: wait until iteration t's copies have landed; barrier
  //                        fill for t + ahead into copy (t + ahead) % stages; commit
  //                        work on copy t % stages
  //     for the last `ahead` t: the same without the fill (an empty group keeps the count)
  //
  // The copy refilled at iteration t was last read by iteration t + ahead - stages, which every
  // thread has finished by the barrier: with synchronous work ahead = stages - 1; with warpgroup
  // products, whose last group may still run, ahead = stages - 2 and each iteration waits for all
  // but its own group (all of them after the loop). The steady loop's fills are unconditional, so
  // the guards of its tiles' edges fold away where the tiles divide the reduction.
  Stmt pipeline(const Stmt& loop, int64_t n, const std::map<std::string, Tile>& tiles,
                const std::vector<const StmtNode*>& allocs, const std::vector<Stmt>& fills, std::vector<Stmt> work,
                int stages, bool async_work) {
    const int64_t ahead = async_work ? stages - 2 : stages - 1;
    const Expr t = make_var(loop->var);
    auto fill_for = [&](const Expr& iteration) {
      Stmt f = rewrite(make_seq(fills), [&](const Expr& e) -> Expr {
        return e->op == ExprOp::Var && e->name == loop->var ? iteration : nullptr;
      }, nullptr);
      return offset_tiles(f, tiles, simplify_expr(iteration % make_int(stages)));
    };
    std::vector<Stmt> out;
    for (int64_t p = 0; p < ahead; ++p) {
      if (p < n) out.push_back(fill_for(make_int(p)));
      out.push_back(make_commit_copies(-1));
    }
    if (async_work) work.back() = make_warpgroup_sync(MatrixOpKind::WgmmaWait, 1);
    auto iteration = [&](const Expr& at, bool fill) {
      std::vector<Stmt> body{make_wait_copies(ahead - 1), make_barrier()};
      if (fill) body.push_back(fill_for(at + make_int(ahead)));
      body.push_back(make_commit_copies(-1));
      Stmt w = rewrite(make_seq(work), [&](const Expr& e) -> Expr {  // the tail counts from n - ahead
        return e->op == ExprOp::Var && e->name == loop->var ? at : nullptr;
      }, nullptr);
      body.push_back(offset_tiles(w, tiles, simplify_expr(at % make_int(stages))));
      return make_seq(body);
    };
    auto loop_over = [&](const std::string& var, int64_t extent, Stmt body) {
      StmtNode l = *make_for(var, make_int(0), make_int(extent), loop->for_kind, std::move(body), loop->thread_tag,
                             loop->pragma_unroll_max_step);
      return std::make_shared<const StmtNode>(std::move(l));
    };
    const int64_t steady = std::max<int64_t>(n - ahead, 0);
    if (steady > 0) out.push_back(loop_over(loop->var, steady, iteration(t, true)));
    const std::string tail_var = loop->var + ".tail";
    out.push_back(loop_over(tail_var, n - steady, iteration(make_var(tail_var) + make_int(steady), false)));
    if (async_work) out.push_back(make_warpgroup_sync(MatrixOpKind::WgmmaWait, 0));
    return with_copies(make_seq(out), allocs, tiles, stages);
  }

  // The tiles' allocations around `body`, each with `copies` copies.
  static Stmt with_copies(Stmt body, const std::vector<const StmtNode*>& allocs,
                          const std::map<std::string, Tile>& tiles, int copies) {
    for (auto it = allocs.rbegin(); it != allocs.rend(); ++it) {
      StmtNode a = **it;
      a.extents = {copies * tiles.at((*it)->buffer).elements};
      a.body = {body};
      a.double_buffer = true;  // its fills become asynchronous copies where they can (mark_async_copies)
      body = std::make_shared<const StmtNode>(std::move(a));
    }
    return body;
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
