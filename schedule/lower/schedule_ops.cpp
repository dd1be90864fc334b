#include "schedule/lower/schedule_ops.h"

#include <functional>
#include <optional>

#include "schedule/lower/arith.h"
#include "schedule/lower/inject_predicates.h"
#include "schedule/ir/warpgroup.h"
#include "schedule/lower/prefetch.h"
#include "schedule/te/error.h"

namespace tessel {

namespace {

ForKind for_kind(Annotation a) {
  switch (a) {
    case Annotation::None: return ForKind::Serial;
    case Annotation::Parallel: return ForKind::Parallel;
    case Annotation::Vectorize: return ForKind::Vectorized;
    case Annotation::Unroll: return ForKind::Unrolled;
    default: return ForKind::ThreadBound;
  }
}

// An index with the tile variables at 0: the tile's first element.
std::vector<Expr> at_origin(std::vector<Expr> idx, const std::vector<std::string>& tile_vars) {
  for (Expr& e : idx) {
    for (const std::string& v : tile_vars) e = substitute(e, v, make_int(0));
    e = simplify_expr(e);
  }
  return idx;
}

// How an index moves with tile variable `var` (the others at 0): a constant, else nullopt.
std::optional<int64_t> slope(const Expr& e, const std::string& var, const std::vector<std::string>& tile_vars) {
  Expr at0 = e, at1 = e;
  for (const std::string& v : tile_vars) {
    at0 = substitute(at0, v, make_int(0));
    at1 = substitute(at1, v, make_int(v == var ? 1 : 0));
  }
  Expr d = simplify_expr(at1 - at0);
  const int64_t* c = as_int(d);
  return c ? std::optional<int64_t>(*c) : std::nullopt;
}

// The first unit, among `e`'s reads of a float32 operand (maybe through a cast), of each tensor.
const ExprNode* operand_read(const Expr& e) {
  const Expr& r = e->op == ExprOp::Cast && e->type.dtype == DType::Float32 ? e->args[0] : e;
  return r->op == ExprOp::TensorRead ? r.get() : nullptr;
}

Stmt guard(const std::vector<Expr>& conds, Stmt body) {
  if (conds.empty()) return body;
  Expr c = conds[0];
  for (size_t i = 1; i < conds.size(); ++i) c = logical_and(c, conds[i]);
  return make_if(c, body);
}

class NestBuilder {
 public:
  NestBuilder(const State& state, const StageInfoMap& infos) : state_(state), infos_(infos) {}

  Stmt build() {
    std::vector<Stmt> nests;
    std::vector<const Operation*> scratch;
    for (size_t i = 0; i < state_.ops().size(); ++i) {
      const Operation& op = state_.ops()[i];
      auto it = infos_.find(op.name);
      if (it == infos_.end() || it->second.stage.loc != ComputeLoc::Root) continue;
      nests.push_back(build_stage(op.name));
      if (!state_.is_output(op.name)) scratch.push_back(&op);
    }
    Stmt body = make_seq(nests);
    for (auto it = scratch.rbegin(); it != scratch.rend(); ++it)
      body = make_allocate((*it)->name, (*it)->dtype, (*it)->shape, infos_.at((*it)->name).stage.scope, body);
    return body;
  }

 private:
  // Reads of a computed-at tensor index its region, which starts at the region's base.
  Expr rebase_reads(const Expr& e) const {
    return rewrite(e, [&](const Expr& n) -> Expr {
      if (n->op != ExprOp::TensorRead) return nullptr;
      auto it = infos_.find(n->name);
      if (it == infos_.end() || it->second.stage.loc != ComputeLoc::At) return nullptr;
      std::vector<Expr> idx;
      for (size_t d = 0; d < n->args.size(); ++d)
        idx.push_back(simplify_expr(n->args[d] - it->second.root_base[d]));
      return make_tensor_read(n->name, idx, n->type);
    });
  }

  // The stages computed at `stage`'s loop `loop`, wrapped around `inner` with their buffers.
  Stmt with_attached(const std::string& stage, const std::string& loop, Stmt inner) {
    std::vector<const Operation*> here;
    for (const Operation& op : state_.ops()) {
      auto it = infos_.find(op.name);
      if (it != infos_.end() && it->second.stage.loc == ComputeLoc::At && it->second.stage.attach_stage == stage &&
          it->second.stage.attach_loop == loop)
        here.push_back(&op);
    }
    if (here.empty()) return inner;
    std::vector<Stmt> seq;
    for (const Operation* op : here) seq.push_back(build_stage(op->name));
    seq.push_back(inner);
    Stmt body = make_seq(seq);
    for (auto it = here.rbegin(); it != here.rend(); ++it) {
      const StageInfo& info = infos_.at((*it)->name);
      std::vector<int64_t> extents(info.root_extent.begin(), info.root_extent.begin() + (*it)->shape.size());
      body = make_allocate((*it)->name, (*it)->dtype, extents, info.stage.scope, body);
    }
    return body;
  }

  // The body of the stage's loop at `position`: the prefetches issued there, the stages computed
  // there, then `inner`. `body` is the stage's computation, whose reads the prefetches follow.
  Stmt loop_body(const StageInfo& info, const Expr& body, int position, Stmt inner) {
    const Stage& s = info.stage;
    std::vector<Stmt> seq;
    for (const PrefetchHint& hint : s.prefetches) {
      if (hint.loop != s.leaf(position).name) continue;
      std::vector<std::pair<std::string, int64_t>> inside;
      for (size_t q = position + 1; q < s.leaves.size(); ++q)
        inside.push_back({info.leaf_names[q], s.leaf(static_cast<int>(q)).extent});
      seq.push_back(prefetch_nest(hint.tensor, state_.op(hint.tensor).shape, body, info.leaf_names[position],
                                  hint.offset, inside));
    }
    seq.push_back(with_attached(s.name, s.leaf(position).name, inner));
    return make_seq(seq);
  }

  Stmt make_loop(const StageInfo& info, int position, Stmt body) {
    const Stage& s = info.stage;
    const IterVar& v = s.leaf(position);
    ForKind kind = for_kind(v.annotation);
    std::string tag = kind == ForKind::ThreadBound ? to_string(v.annotation) : "";
    int pragma = s.pragma_loop == v.name ? s.auto_unroll_max_step : 0;
    Stmt loop = make_for(info.leaf_names[position], make_int(0), make_int(v.extent), kind, body, tag, pragma);
    if (s.double_buffer_loop != v.name) return loop;
    StmtNode marked = *loop;
    marked.double_buffer = true;
    marked.pipeline_stages = s.pipeline_stages;
    return std::make_shared<const StmtNode>(std::move(marked));
  }

  // The stage's body in its loop variables (reads of computed-at tensors rebased to their regions)
  // and the index it writes (relative to its own region).
  void stage_body(const StageInfo& info, const Operation& op, const std::vector<Expr>& values, Expr& body,
                  std::vector<Expr>& index) const {
    const Stage& s = info.stage;
    body = info.body;
    for (int r = 0; r < s.num_roots; ++r) {
      Expr local = simplify_expr(values[r]);
      Expr absolute = simplify_expr(info.root_base[r] + local);
      const std::string& axis = r < s.num_spatial_roots ? op.axes[r].name : op.reduce_axes[r - s.num_spatial_roots].name;
      body = substitute(body, axis, absolute);
      if (r < s.num_spatial_roots) index.push_back(local);
    }
    body = rebase_reads(body);
  }

  Stmt build_stage(const std::string& name) {
    const StageInfo& info = infos_.at(name);
    const Operation& op = state_.op(name);
    const Stage& s = info.stage;
    if (!s.tensorize_loop.empty()) return build_matrix_stage(info, op);
    std::vector<Expr> values = var_values(s, info.leaf_names);

    Expr body;
    std::vector<Expr> index;
    stage_body(info, op, values, body, index);

    Stmt update, init;
    int first_reduce = static_cast<int>(s.leaves.size());
    std::vector<Expr> clamps;
    std::vector<Expr> all_preds = stage_predicates(info, op.shape, values, false, info.zero_fill ? &clamps : nullptr);
    if (!clamps.empty()) {
      // An operand staged for tensor-core tiles: zero where a tile leaves the tensor.
      Expr inside = clamps[0];
      for (size_t i = 1; i < clamps.size(); ++i) inside = logical_and(inside, clamps[i]);
      body = make_select(inside, body, make_cast(body->type, make_float(0)));
    }
    // The accumulator starts at -inf / +inf and only ever takes non-NaN values, so fmax(acc, x)
    // is exactly select(x > acc, x, acc): one vector max instead of a NaN-aware sequence.
    auto combine = [&](const Expr& acc) {
      return op.reduce == ReduceKind::Sum   ? acc + body
             : op.reduce == ReduceKind::Max ? make_select(body > acc, body, acc)
                                            : make_select(body < acc, body, acc);
    };
    if (op.reduce != ReduceKind::None) {
      for (size_t i = 0; i < s.leaves.size(); ++i)
        if (s.leaf(static_cast<int>(i)).kind == IterKind::Reduce) {
          first_reduce = static_cast<int>(i);
          break;
        }
      for (size_t i = first_reduce; i < s.leaves.size(); ++i)
        if (s.leaf(static_cast<int>(i)).kind == IterKind::Reduce && s.leaf(static_cast<int>(i)).annotation == Annotation::ThreadX)
          return cross_thread_reduction(info, op, body, index, values, first_reduce, static_cast<int>(i), combine);
      Expr acc = make_tensor_read(name, index, body->type);
      update = guard(all_preds, make_provide(name, index, combine(acc)));
      init = guard(stage_predicates(info, op.shape, values, true),
                   make_provide(name, index, make_float(reduce_init(op.reduce))));
    } else {
      update = guard(all_preds, make_provide(name, index, body));
    }

    Stmt nest = update;
    for (int p = static_cast<int>(s.leaves.size()) - 1; p >= first_reduce; --p)
      nest = make_loop(info, p, loop_body(info, body, p, nest));
    if (init) {
      Stmt init_nest = init;
      for (int p = static_cast<int>(s.leaves.size()) - 1; p >= first_reduce; --p)
        if (s.leaf(p).kind == IterKind::Spatial) init_nest = make_loop(info, p, init_nest);
      nest = make_seq({init_nest, nest});
    }
    for (int p = first_reduce - 1; p >= 0; --p) nest = make_loop(info, p, loop_body(info, body, p, nest));
    return nest;
  }

  // A tensorized stage: its loops outside `tensorize_loop`, then one Matrix statement for the tile
  // (for a product: the fill of the accumulator where its initialization goes, the product where the
  // update goes). A tile is computed whole: its operands are zero past their tensors' ends.
  Stmt build_matrix_stage(const StageInfo& info, const Operation& op) {
    const Stage& s = info.stage;
    if (s.scope == MemScope::WgAccumulator) return build_warpgroup_product(info, op);
    if (op.reduce == ReduceKind::None && reads_wg_accumulator(info.body)) return build_warpgroup_epilogue(info, op);
    const std::string step = "tensorize(" + s.name + ", " + s.tensorize_loop + ")";
    auto fail = [&](const std::string& why) -> Stmt { throw ScheduleError(-1, step, why); };
    const int tpos = s.leaf_position(s.tensorize_loop);
    const bool product = op.reduce != ReduceKind::None;
    const size_t tile_loops = product ? 3 : 2;
    if (tpos < 0 || s.leaves.size() - tpos != tile_loops)
      fail("the tile must be the innermost " + std::to_string(tile_loops) + " loops of " + s.name);
    std::vector<std::string> tile_vars;
    for (size_t i = tpos; i < s.leaves.size(); ++i) {
      const IterVar& v = s.leaf(static_cast<int>(i));
      if (v.extent != kMatrixTile)
        fail("loop '" + v.name + "' of " + s.name + " has extent " + std::to_string(v.extent) +
             " once its region is known; a tensor-core tile needs " + std::to_string(kMatrixTile));
      tile_vars.push_back(info.leaf_names[i]);
    }
    std::vector<Expr> values = var_values(s, info.leaf_names);
    Expr body;
    std::vector<Expr> index;
    stage_body(info, op, values, body, index);

    auto at_origin = [&](std::vector<Expr> idx) { return tessel::at_origin(std::move(idx), tile_vars); };
    auto slope = [&](const Expr& e, const std::string& var) { return tessel::slope(e, var, tile_vars); };
    auto check_fragment = [&](const std::string& buffer, const std::vector<Expr>& idx, const std::string& rows,
                              const std::string& cols) { check_tile_access(step, buffer, idx, rows, cols, tile_vars); };

    if (!product) {
      if (body->op != ExprOp::TensorRead) fail(s.name + " is not a copy");
      const std::string& rows = tile_vars[0];
      const std::string& cols = tile_vars[1];
      if (s.scope == MemScope::MatrixA || s.scope == MemScope::MatrixB) {
        check_fragment(s.name, index, rows, cols);
        // Which of the fragment's two tile dimensions is the reduction (k) one: the reader says.
        const bool is_a = s.scope == MemScope::MatrixA;
        std::optional<bool> k_last = reduction_dim_is_last(s.name);
        if (!k_last) fail("fragment " + s.name + " must be read by exactly one tensorized product");
        // LoadA's tile is (m, k), LoadB's (k, n): the row variable first.
        std::string k_var = *k_last ? cols : rows, other = *k_last ? rows : cols;
        std::string row_var = is_a ? other : k_var, col_var = is_a ? k_var : other;
        MemScope src = scope_of(body->name);
        if (src != MemScope::Shared && src != MemScope::Global)
          fail("a fragment is loaded from shared or global memory, not from " + std::string(to_string(src)));
        const StageInfo* src_info = infos_.count(body->name) ? &infos_.at(body->name) : nullptr;
        if (!(src_info && src_info->zero_fill) && !stage_predicates(info, op.shape, values, false).empty())
          fail("the tiles of " + s.name + " reach past the end of " + body->name +
               "; stage it in shared memory (cache_read), which pads the tiles with zeros");
        MatrixOperand frag{s.name, at_origin(index)}, mem{body->name, body->args};
        return wrap_outer(info, body, tpos,
                          make_matrix(is_a ? MatrixOpKind::LoadA : MatrixOpKind::LoadB, {frag, mem}, row_var, col_var));
      }
      if (scope_of(body->name) != MemScope::Accumulator) fail(s.name + " does not copy an accumulator");
      if (s.scope != MemScope::Shared && s.scope != MemScope::Global)
        fail("an accumulator is stored to shared or global memory");
      check_fragment(body->name, body->args, rows, cols);
      if (!stage_predicates(info, op.shape, values, false).empty() && !info.padded)
        fail("the tiles of " + s.name + " reach past the end of the tensor; store them to shared memory first");
      MatrixOperand mem{s.name, index}, frag{body->name, at_origin(body->args)};
      return wrap_outer(info, body, tpos, make_matrix(MatrixOpKind::Store, {mem, frag}, rows, cols));
    }

    // acc[.., i, j] += float(a[.., i, k]) * float(b[.., k, j]) (either operand order, casts optional).
    if (s.scope != MemScope::Accumulator) fail(s.name + " must be in the accumulator scope");
    const std::string &rows = tile_vars[0], &cols = tile_vars[1], &red = tile_vars[2];
    const ExprNode *x = body->op == ExprOp::Mul ? operand_read(body->args[0]) : nullptr;
    const ExprNode *y = body->op == ExprOp::Mul ? operand_read(body->args[1]) : nullptr;
    if (!x || !y) fail(s.name + " is not a sum of products of two tensors");
    if (scope_of(x->name) == MemScope::MatrixB) std::swap(x, y);
    if (scope_of(x->name) != MemScope::MatrixA || scope_of(y->name) != MemScope::MatrixB)
      fail("the product of " + s.name + " must read one matrix_a and one matrix_b fragment");
    if (state_.op(x->name).dtype != state_.op(y->name).dtype || !Type{state_.op(x->name).dtype, 1}.is_half())
      fail("tensor-core operands are float16 or bfloat16, both of one type");
    check_fragment(s.name, index, rows, cols);
    std::vector<Expr> a_idx = x->args, b_idx = y->args;
    // a is (m, k) or (k, m) in its last two dimensions, b (k, n) or (n, k).
    bool a_k_last = slope(a_idx.back(), red) == 1, b_k_last = slope(b_idx.back(), red) == 1;
    check_fragment(x->name, a_idx, a_k_last ? rows : red, a_k_last ? red : rows);
    check_fragment(y->name, b_idx, b_k_last ? cols : red, b_k_last ? red : cols);
    MatrixOperand acc{s.name, at_origin(index)}, a{x->name, at_origin(a_idx)}, b{y->name, at_origin(b_idx)};
    Stmt mma = make_matrix(MatrixOpKind::MmaSync, {acc, a, b});
    Stmt fill = make_matrix(MatrixOpKind::FillZero, {acc});
    int first_reduce = tpos + 2;
    for (int p = 0; p < tpos; ++p)
      if (s.leaf(p).kind == IterKind::Reduce) {
        first_reduce = p;
        break;
      }
    if (first_reduce > tpos) return wrap_outer(info, body, tpos, make_seq({fill, mma}));
    Stmt nest = mma;
    for (int p = tpos - 1; p >= first_reduce; --p) nest = make_loop(info, p, loop_body(info, body, p, nest));
    return init_then_reduce(info, body, first_reduce, tpos, fill, nest);
  }

  // `fill` in the spatial loops of [first_reduce, tpos) (a tile's initialization), then
  // `reduction` (the loops from first_reduce inward), inside the loops outside first_reduce.
  Stmt init_then_reduce(const StageInfo& info, const Expr& body, int first_reduce, int tpos, Stmt fill,
                        Stmt reduction) {
    Stmt init_nest = std::move(fill);
    for (int p = tpos - 1; p >= first_reduce; --p)
      if (info.stage.leaf(p).kind == IterKind::Spatial) init_nest = make_loop(info, p, init_nest);
    Stmt nest = make_seq({init_nest, std::move(reduction)});
    for (int p = first_reduce - 1; p >= 0; --p) nest = make_loop(info, p, loop_body(info, body, p, nest));
    return nest;
  }

  MemScope scope_of(const std::string& tensor) const {
    int i = state_.stage_index(tensor);
    return i < 0 ? MemScope::Global : state_.stages()[i].scope;
  }

  bool reads_wg_accumulator(const Expr& e) const {
    for (const std::string& t : tensors_read(e))
      if (scope_of(t) == MemScope::WgAccumulator) return true;
    return false;
  }

  // A tile is indexed along its last two dimensions, `rows` then `cols` (tile variables) with unit
  // steps, every other dimension fixed within the tile.
  static void check_tile_access(const std::string& step, const std::string& buffer, const std::vector<Expr>& idx,
                                const std::string& rows, const std::string& cols,
                                const std::vector<std::string>& tile_vars) {
    const size_t rank = idx.size();
    if (rank < 2) throw ScheduleError(-1, step, "fragment " + buffer + " needs two dimensions");
    for (size_t d = 0; d < rank; ++d)
      for (const std::string& v : tile_vars) {
        int64_t want = d == rank - 2 && v == rows ? 1 : d == rank - 1 && v == cols ? 1 : 0;
        if (slope(idx[d], v, tile_vars) != want)
          throw ScheduleError(-1, step,
                              "fragment " + buffer + " must be read and written along its last two dimensions, one " +
                                  "tile loop each (rows, then columns); dimension " + std::to_string(d) +
                                  " is indexed by " + to_string(idx[d]));
      }
  }

  // `e` with the variables of the stage's loops of extent 1 at 0 (the loops that bound inference
  // left with one iteration): a warpgroup tile's origin must be seen to be a multiple of its size.
  static Expr without_unit_loops(Expr e, const StageInfo& info) {
    for (size_t i = 0; i < info.stage.leaves.size(); ++i)
      if (info.stage.leaf(static_cast<int>(i)).extent == 1) e = substitute(e, info.leaf_names[i], make_int(0));
    return simplify_expr(e);
  }

  // A warpgroup accumulator (of region `extents`) is indexed along its flattened rows by `rows` and
  // its last dimension by `cols`, one unit each.
  static void check_warpgroup_access(const std::string& step, const std::string& buffer, const std::vector<Expr>& idx,
                                     const std::vector<int64_t>& extents, const std::string& rows,
                                     const std::string& cols, const std::vector<std::string>& tile_vars) {
    const Expr row = simplify_expr(wg_flat_row(idx, extents));
    for (const std::string& v : tile_vars)
      if (slope(row, v, tile_vars) != (v == rows ? 1 : 0) || slope(idx.back(), v, tile_vars) != (v == cols ? 1 : 0))
        throw ScheduleError(-1, step, "warpgroup accumulator " + buffer + " must be read and written along its rows " +
                                          "and its last dimension, one tile loop each; it is read at row " +
                                          to_string(row) + ", column " + to_string(idx.back()));
  }

  // The tile loops of a warpgroup stage (64 rows, then N columns, then for a product 16 of the
  // reduction), checked once bound inference has fixed their extents.
  std::vector<std::string> warpgroup_tile(const StageInfo& info, size_t loops, const std::string& step) const {
    const Stage& s = info.stage;
    const int tpos = s.leaf_position(s.tensorize_loop);
    if (tpos < 0 || s.leaves.size() - tpos != loops)
      throw ScheduleError(-1, step, "the tile must be the innermost " + std::to_string(loops) + " loops of " + s.name);
    std::vector<std::string> vars;
    for (size_t i = tpos; i < s.leaves.size(); ++i) {
      const IterVar& v = s.leaf(static_cast<int>(i));
      const size_t k = i - tpos;
      const bool ok = k == 0   ? v.extent == kWarpgroupTileRows
                      : k == 1 ? v.extent >= 8 && v.extent <= kWarpgroupMaxCols && v.extent % 8 == 0
                               : v.extent == kWarpgroupTileK;
      if (!ok)
        throw ScheduleError(-1, step, "loop '" + v.name + "' of " + s.name + " has extent " + std::to_string(v.extent) +
                                          " once its region is known; a warpgroup tile is 64 rows, 8 to 256 columns " +
                                          "(a multiple of 8) and 16 of the reduction");
      vars.push_back(info.leaf_names[i]);
    }
    return vars;
  }

  // acc[.., i, j] += float(a[.., i, k]) * float(b[.., k, j]) over one warpgroup's 64 x N tile: the
  // operands are swizzled shared tiles; the accumulator is zeroed where its initialization goes and
  // the products of each iteration of the outermost reduction loop are one group of asynchronous
  // operations, waited for at its end (the pipelining pass lets one group run on).
  Stmt build_warpgroup_product(const StageInfo& info, const Operation& op) {
    const Stage& s = info.stage;
    const std::string step = "tensorize(" + s.name + ", " + s.tensorize_loop + ")";
    auto fail = [&](const std::string& why) -> Stmt { throw ScheduleError(-1, step, why); };
    if (op.reduce != ReduceKind::Sum) fail(s.name + " is not a sum of products");
    const std::vector<std::string> tile = warpgroup_tile(info, 3, step);
    const std::string &rows = tile[0], &cols = tile[1], &red = tile[2];
    const int tpos = s.leaf_position(s.tensorize_loop);
    std::vector<Expr> values = var_values(s, info.leaf_names);
    Expr body;
    std::vector<Expr> index;
    stage_body(info, op, values, body, index);
    const ExprNode* x = body->op == ExprOp::Mul ? operand_read(body->args[0]) : nullptr;
    const ExprNode* y = body->op == ExprOp::Mul ? operand_read(body->args[1]) : nullptr;
    if (!x || !y) fail(s.name + " is not a sum of products of two tensors");
    auto moves_with = [&](const ExprNode* r, const std::string& v) {
      for (const Expr& i : r->args)
        if (slope(i, v, tile) != 0) return true;
      return false;
    };
    if (moves_with(x, cols)) std::swap(x, y);  // x: a (rows by k), y: b (k by columns)
    if (moves_with(x, cols) || moves_with(y, rows))
      fail("the product of " + s.name + " must read one operand along its rows and one along its columns");
    for (const ExprNode* r : {x, y}) {
      if (scope_of(r->name) != MemScope::Shared || !state_.stage(r->name).swizzle)
        fail("a warpgroup product reads its operands from swizzled shared tiles; stage " + r->name +
             " in shared memory with cache_read and storage_swizzle");
    }
    if (state_.op(x->name).dtype != state_.op(y->name).dtype || !Type{state_.op(x->name).dtype, 1}.is_half())
      fail("tensor-core operands are float16 or bfloat16, both of one type");
    {
      const std::vector<int64_t>& region = info.root_extent;
      check_warpgroup_access(step, s.name, index, std::vector<int64_t>(region.begin(), region.begin() + index.size()),
                             rows, cols, tile);
    }
    // Both memory operands in the statement's tile variables: a as (rows, red), b as (red, cols)
    // renamed to (rows, red), so that flattening reads each as (its first, its second) dimension.
    std::vector<Expr> b_idx;
    for (const Expr& e : y->args) {
      Expr t = substitute(e, rows, make_var(rows + ".tmp"));
      t = substitute(substitute(t, red, make_var(rows)), cols, make_var(red));
      b_idx.push_back(simplify_expr(substitute(t, rows + ".tmp", make_int(0))));
    }
    std::vector<Expr> acc_origin = at_origin(index, tile);
    for (Expr& e : acc_origin) e = without_unit_loops(e, info);
    MatrixOperand acc{s.name, acc_origin}, a{x->name, x->args}, b{y->name, b_idx};
    Stmt mma = make_matrix(MatrixOpKind::WgmmaMma, {acc, a, b}, rows, red);
    Stmt fill = make_matrix(MatrixOpKind::FillZero, {acc});
    auto group = [](Stmt products) {
      return make_seq({make_warpgroup_sync(MatrixOpKind::WgmmaFence), std::move(products),
                       make_warpgroup_sync(MatrixOpKind::WgmmaCommit), make_warpgroup_sync(MatrixOpKind::WgmmaWait, 0)});
    };
    int first_reduce = tpos;
    for (int p = 0; p < tpos; ++p)
      if (s.leaf(p).kind == IterKind::Reduce) {
        first_reduce = p;
        break;
      }
    if (first_reduce == tpos) return wrap_outer(info, body, tpos, make_seq({fill, group(mma)}));
    Stmt nest = mma;
    for (int p = tpos - 1; p > first_reduce; --p) nest = make_loop(info, p, loop_body(info, body, p, nest));
    nest = make_loop(info, first_reduce, loop_body(info, body, first_reduce, group(nest)));
    return init_then_reduce(info, body, first_reduce, tpos, fill, nest);
  }

  // A stage reading warpgroup accumulators over a 64 x N tile of them: each of the warpgroup's 128
  // threads (a loop bound to threadIdx.x) computes the elements it holds, register by register
  // (an unrolled loop over pairs of registers, each pair two adjacent columns: a vector of two),
  // each read of an accumulator a read of that register.
  Stmt build_warpgroup_epilogue(const StageInfo& info, const Operation& op) {
    const Stage& s = info.stage;
    const std::string step = "tensorize(" + s.name + ", " + s.tensorize_loop + ")";
    const std::vector<std::string> tile = warpgroup_tile(info, 2, step);
    const std::string &rows = tile[0], &cols = tile[1];
    const int tpos = s.leaf_position(s.tensorize_loop);
    const int64_t n = s.leaf(tpos + 1).extent;
    std::vector<Expr> values = var_values(s, info.leaf_names);
    Expr body;
    std::vector<Expr> index;
    stage_body(info, op, values, body, index);
    const std::string t_var = rows + ".thread", pair_var = rows + ".pair", lane_var = rows + ".lane";
    const Expr t = make_var(t_var), q = make_var(pair_var) * make_int(2) + make_var(lane_var);
    body = rewrite(body, [&](const Expr& e) -> Expr {
      if (e->op != ExprOp::TensorRead || scope_of(e->name) != MemScope::WgAccumulator) return nullptr;
      const std::vector<int64_t>& region = infos_.at(e->name).root_extent;
      std::vector<int64_t> extents(region.begin(), region.begin() + static_cast<long>(e->args.size()));
      check_warpgroup_access(step, e->name, e->args, extents, rows, cols, tile);
      std::vector<Expr> origin = at_origin(e->args, tile);
      for (Expr& o : origin) o = without_unit_loops(o, info);
      if (extents.back() != n || !is_int_value(origin.back(), 0))
        throw ScheduleError(-1, step, "each 64-row tile of " + e->name + " spans its " +
                                          std::to_string(extents.back()) + " columns; " + s.name + " reads " +
                                          std::to_string(n) + " of them at a time");
      const Expr row = simplify_expr(wg_flat_row(origin, extents));
      if (!is_multiple_of(row, kWarpgroupTileRows))
        throw ScheduleError(-1, step, s.name + " reads " + e->name + " from row " + to_string(row) +
                                          ", not the start of a 64-row tile");
      return make_load(e->name, simplify_expr(wg_register_base(origin, extents) + q), e->type);
    });
    auto place = [&](const Expr& e) {
      return simplify_expr(substitute(substitute(e, rows, wg_accumulator_row(t, q)), cols, wg_accumulator_col(t, q)));
    };
    body = place(body);
    for (Expr& i : index) i = place(i);
    for (Expr& v : values) v = place(v);
    Stmt store = guard(stage_predicates(info, op.shape, values, false), make_provide(s.name, index, body));
    Stmt walk = make_for(lane_var, make_int(0), make_int(2), ForKind::Vectorized, store);
    walk = make_for(pair_var, make_int(0), make_int(n / 4), ForKind::Unrolled, walk);
    walk = make_for(t_var, make_int(0), make_int(kWarpgroupThreads), ForKind::ThreadBound, walk, "threadIdx.x");
    return wrap_outer(info, body, tpos, walk);
  }

  // `inner` inside the stage's loops [0, position).
  Stmt wrap_outer(const StageInfo& info, const Expr& body, int position, Stmt inner) {
    for (int p = position - 1; p >= 0; --p) inner = make_loop(info, p, loop_body(info, body, p, inner));
    return inner;
  }

  // Whether the reduction dimension of fragment `tensor` is its last (true) or second to last
  // (false), as the one stage that reads it indexes it; nullopt when that is not one product.
  std::optional<bool> reduction_dim_is_last(const std::string& tensor) const {
    std::optional<bool> found;
    int readers = 0;
    for (const auto& [name, info] : infos_) {
      std::vector<Expr> reads = reads_of(info.body, tensor);
      if (reads.empty()) continue;
      ++readers;
      const Operation& op = state_.op(name);
      if (op.reduce_axes.size() != 1 || reads.size() != 1 || reads[0]->args.size() < 2) return std::nullopt;
      const std::string& k = op.reduce_axes[0].name;
      const std::vector<Expr>& args = reads[0]->args;
      bool last = uses_var(args.back(), k), second = uses_var(args[args.size() - 2], k);
      if (last == second) return std::nullopt;
      found = last;
    }
    return readers == 1 ? found : std::nullopt;
  }

  // A reduction with a loop bound to threadIdx.x: each thread folds its share (the other reduction
  // loops) into a register, the threads combine their registers (AllReduce: warp shuffles), and
  // the result is stored once per output element. The combine is a collective every thread of the
  // block reaches, so only the stores sit under the stage's predicates.
  Stmt cross_thread_reduction(const StageInfo& info, const Operation& op, const Expr& body,
                              const std::vector<Expr>& index, const std::vector<Expr>& values, int first_reduce,
                              int thread_leaf, const std::function<Expr(const Expr&)>& combine) {
    const Stage& s = info.stage;
    for (int p = first_reduce; p < static_cast<int>(s.leaves.size()); ++p)
      if (s.leaf(p).kind == IterKind::Spatial)
        throw ScheduleError(-1, "annotate(" + s.name + ", " + s.leaf(thread_leaf).name + ", threadIdx.x)",
                            "a reduction across threads needs every spatial loop of " + s.name +
                                " outside its reduction loops; loop '" + s.leaf(p).name + "' is inside");
    const std::string partial = s.name + ".partial";
    const std::vector<Expr> cell{make_int(0)};
    Expr acc = make_tensor_read(partial, cell, body->type);
    Stmt nest = guard(stage_predicates(info, op.shape, values, false), make_provide(partial, cell, combine(acc)));
    for (int p = static_cast<int>(s.leaves.size()) - 1; p >= first_reduce; --p)
      nest = make_loop(info, p, loop_body(info, body, p, nest));
    ExprOp combiner = op.reduce == ReduceKind::Sum ? ExprOp::Add : op.reduce == ReduceKind::Max ? ExprOp::Max : ExprOp::Min;
    nest = make_seq({make_provide(partial, cell, make_float(reduce_init(op.reduce))), nest,
                     make_allreduce(partial, cell, combiner, "threadIdx.x", s.leaf(thread_leaf).extent),
                     guard(stage_predicates(info, op.shape, values, true), make_provide(s.name, index, acc))});
    nest = make_allocate(partial, op.dtype, {1}, MemScope::Local, nest);
    for (int p = first_reduce - 1; p >= 0; --p) nest = make_loop(info, p, loop_body(info, body, p, nest));
    return nest;
  }

  const State& state_;
  const StageInfoMap& infos_;
};

}  // namespace

Stmt schedule_ops(const State& state, const StageInfoMap& infos) { return NestBuilder(state, infos).build(); }

}  // namespace tessel
