// The lowering passes, one by one on hand-built statements, and through lower() on scheduled DAGs.
#include <sstream>

#include "measure/cpu_kernel.h"
#include "schedule/lower/arith.h"
#include "schedule/lower/bound_inference.h"
#include "schedule/lower/inject_predicates.h"
#include "schedule/lower/inline_stages.h"
#include "schedule/lower/loop_partition.h"
#include "schedule/lower/schedule_ops.h"
#include "schedule/lower/simplify.h"
#include "schedule/lower/storage_flatten.h"
#include "schedule/lower/unroll.h"
#include "schedule/lower/vectorize.h"
#include "schedule/lower/verify.h"
#include "schedule_test_util.h"

using namespace tessel;
using namespace tessel::schedtest;

namespace {

Expr v(const char* name) { return make_var(name); }
Expr fload(const std::string& buffer, Expr index) {
  return make_load(buffer, index, Type{DType::Float32, index->type.lanes});
}
Stmt loop(const std::string& var, int64_t extent, Stmt body, ForKind kind = ForKind::Serial, int pragma = 0) {
  return make_for(var, make_int(0), make_int(extent), kind, std::move(body), "", pragma);
}
std::vector<Stmt> loops_named(const Stmt& s, const std::string& var) {
  std::vector<Stmt> out;
  visit(s, [&](const Stmt& x) {
    if (x->op == StmtOp::For && x->var == var) out.push_back(x);
  });
  return out;
}
std::vector<Stmt> stores(const Stmt& s) {
  std::vector<Stmt> out;
  visit(s, [&](const Stmt& x) {
    if (x->op == StmtOp::Store) out.push_back(x);
  });
  return out;
}

void require_correct(const ComputeDAG& dag, const Trace& t) {
  HostTensors in = make_random_inputs(dag, 7);
  ReferenceTensors ref = evaluate_reference(dag, in);
  CpuKernel k = build_cpu_kernel(dag, t);
  CheckOutcome o = check_cpu_kernel(k, in, ref, dag);
  INFO("trace: " << trace_to_json(t));
  INFO("lowered:\n" << to_string(k.func));
  INFO(o.message);
  CHECK(o.correct);
}

}  // namespace

// --- arith --------------------------------------------------------------------------------------

TEST_CASE("arith: linearize, bound_of, prove, simplify_expr", "[lower][arith]") {
  Expr i = v("i"), j = v("j");
  LinearForm f = linearize(i * make_int(4) + j - i * make_int(4) + make_int(3));
  REQUIRE(f.terms.size() == 1);
  CHECK(equal(f.terms[0].first, j));
  CHECK(f.terms[0].second == 1);
  CHECK(f.constant == 3);
  CHECK(linearize(make_int(7) * make_int(6)).is_constant());
  CHECK(linearize(make_int(7) * make_int(6)).constant == 42);
  CHECK(to_string(to_expr(linearize(j * make_int(2) + i - j))) == to_string(to_expr(linearize(j + i))));

  // Divisibility, seen through floormod: the start of a vector fetch from a fused index.
  CHECK(is_multiple_of(i * make_int(8) + make_int(4), 4));
  CHECK_FALSE(is_multiple_of(i * make_int(8) + make_int(2), 4));
  CHECK(is_multiple_of((i * make_int(64) + j * make_int(4)) % make_int(8), 4));
  CHECK_FALSE(is_multiple_of((i * make_int(64) + j * make_int(4)) % make_int(6), 4));
  CHECK_FALSE(is_multiple_of((i * make_int(64) + j) % make_int(8), 4));
  CHECK(is_multiple_of((i / make_int(8)) * make_int(4096) + (j * make_int(4)) % make_int(8), 4));
  CHECK(is_multiple_of(((i * make_int(2)) % make_int(8)) * make_int(2), 4));
  CHECK(is_multiple_of(i * (j * make_int(4)), 4));
  CHECK_FALSE(is_multiple_of(i * j, 4));

  VarRanges r{{"i", {0, 3}}, {"j", {0, 3}}};
  Interval b = bound_of(i * make_int(4) + j, r);
  REQUIRE(b.lo);
  REQUIRE(b.hi);
  CHECK(*b.lo == 0);
  CHECK(*b.hi == 15);
  Interval neg = bound_of(make_int(10) - i * make_int(2), r);
  CHECK(*neg.lo == 4);
  CHECK(*neg.hi == 10);
  CHECK_FALSE(bound_of(i + v("unknown"), r).hi.has_value());
  CHECK(bound_of(make_int(5), {}).is_point());

  CHECK(prove(i < make_int(4), r) == std::optional<bool>(true));
  CHECK(prove(i < make_int(3), r) == std::nullopt);
  CHECK(prove(i >= make_int(4), r) == std::optional<bool>(false));
  CHECK(prove(logical_and(i < make_int(4), j >= make_int(0)), r) == std::optional<bool>(true));
  CHECK(prove(logical_or(i < make_int(2), j < make_int(9)), r) == std::optional<bool>(true));
  CHECK(prove(make_not(i < make_int(4)), r) == std::optional<bool>(false));
  CHECK(prove(i * make_int(4) + j < make_int(16), r) == std::optional<bool>(true));
  CHECK(prove(i * make_int(4) + j < make_int(15), r) == std::nullopt);

  CHECK(is_int_value(simplify_expr(make_int(3) + make_int(4) * make_int(2)), 11));
  CHECK(*as_float(simplify_expr(make_float(2.0) * make_float(3.0) + make_float(0.5))) == 6.5);
  CHECK(is_int_value(simplify_expr(i - i), 0));
  VarRanges r8{{"i", {0, 9}}, {"j", {0, 7}}};
  CHECK(equal(simplify_expr((i * make_int(8) + j) / make_int(8), r8), i));
  CHECK(equal(simplify_expr((i * make_int(8) + j) % make_int(8), r8), j));
  CHECK(is_int_value(simplify_expr(make_int(-7) / make_int(2)), -4));  // floor division
  CHECK(is_int_value(simplify_expr(make_int(-7) % make_int(2)), 1));
  CHECK(equal(simplify_expr(min(j, make_int(100)), r8), j));
  CHECK(is_int_value(simplify_expr(max(j, make_int(100)), r8), 100));
  CHECK(*as_int(simplify_expr(make_select(j < make_int(8), make_int(1), make_int(2)), r8)) == 1);
  // Conditions it cannot decide stay.
  CHECK(simplify_expr(j < make_int(5), r8)->op == ExprOp::LT);
}

// --- simplify -----------------------------------------------------------------------------------

TEST_CASE("simplify pass: guards, folding, extent-1 and empty loops", "[lower][simplify]") {
  Stmt guarded_true = loop("i", 8, make_if(v("i") < make_int(8), make_store("B", v("i"), make_float(1.0))));
  Stmt s1 = simplify(guarded_true);
  CHECK(count_op(s1, StmtOp::IfThenElse) == 0);
  CHECK(count_op(s1, StmtOp::Store) == 1);

  Stmt guarded_open = loop("i", 8, make_if(v("i") < make_int(7), make_store("B", v("i"), make_float(1.0))));
  CHECK(count_op(simplify(guarded_open), StmtOp::IfThenElse) == 1);

  // A guard that never holds removes its loop altogether.
  Stmt never = loop("i", 8, make_if(v("i") >= make_int(8), make_store("B", v("i"), make_float(1.0))));
  Stmt s3 = simplify(never);
  CHECK(count_op(s3, StmtOp::Store) == 0);
  CHECK(count_op(s3, StmtOp::For) == 0);

  // Else branch kept when the condition is false.
  Stmt with_else = loop("i", 8, make_if(v("i") > make_int(20), make_store("B", v("i"), make_float(1.0)),
                                        make_store("B", v("i"), make_float(2.0))));
  Stmt s4 = simplify(with_else);
  REQUIRE(stores(s4).size() == 1);
  CHECK(*as_float(stores(s4)[0]->value) == 2.0);

  // Extent-1 loop: replaced by its single iteration, indices folded.
  Stmt one = loop("i", 1, make_store("B", v("i") + make_int(2), make_float(3.0) * make_float(2.0)));
  Stmt s5 = simplify(one);
  CHECK(s5->op == StmtOp::Store);
  CHECK(is_int_value(s5->indices[0], 2));
  CHECK(*as_float(s5->value) == 6.0);

  // Extent-0 loop disappears.
  CHECK(count_op(simplify(loop("i", 0, make_store("B", v("i"), make_float(1.0)))), StmtOp::Store) == 0);

  // Outer ranges given by the caller are used.
  Stmt inner = make_if(v("o") < make_int(4), make_store("B", v("o"), make_float(1.0)));
  CHECK(count_op(simplify(inner, {{"o", {0, 3}}}), StmtOp::IfThenElse) == 0);
  CHECK(count_op(simplify(inner), StmtOp::IfThenElse) == 1);
}

// --- loop_partition -------------------------------------------------------------------------------

TEST_CASE("loop_partition pass on a hand-built tiled loop", "[lower][loop_partition]") {
  // for o in 0..4: for i in 0..16: if (o*16 + i < 61) B[o*16 + i] = A[o*16 + i]
  Expr idx = v("o") * make_int(16) + v("i");
  Stmt body = make_if(idx < make_int(61), make_store("B", idx, fload("A", idx)));
  Stmt nest = loop("o", 4, loop("i", 16, body));
  Stmt parted = simplify(loop_partition(nest));
  INFO(to_string(parted));
  std::vector<Stmt> outer = loops_named(parted, "o");
  REQUIRE(outer.size() == 1);
  CHECK(is_int_value(outer[0]->extent, 3));
  CHECK(count_op(outer[0], StmtOp::IfThenElse) == 0);
  CHECK(count_op(parted, StmtOp::IfThenElse) == 1);  // the peeled last tile keeps its guard
  CHECK(count_op(parted, StmtOp::Store) == 2);

  // A guard that holds everywhere or nowhere-decidable by peeling is left alone.
  Stmt undecidable = loop("o", 4, make_if(v("o") < v("n"), make_store("B", v("o"), make_float(1.0))));
  CHECK(count_op(loop_partition(undecidable), StmtOp::For) == 1);
  // max_partitions = 0 disables it.
  LoopPartitionOptions none;
  none.max_partitions = 0;
  CHECK(count_op(loop_partition(nest, none), StmtOp::For) == 2);
}

TEST_CASE("loop_partition through lower(): interior tiles are guard-free, the last tile is guarded", "[lower][loop_partition]") {
  ComputeDAG dag = chain_dag(13, 61);
  Trace t{{compute_inline_step("P"), split_step("C", "y", {16})}};
  LoweredFunc f = lower(replay(dag, t), "f");
  INFO(to_string(f));
  std::vector<Stmt> tiles = loops_named(f.body, "y.0");
  REQUIRE(tiles.size() == 1);
  CHECK(is_int_value(tiles[0]->extent, 3));  // ceil(61 / 16) = 4 tiles, the last one peeled
  CHECK(count_op(tiles[0], StmtOp::IfThenElse) == 0);
  CHECK(count_op(f.body, StmtOp::IfThenElse) == 1);
  std::vector<Stmt> guards;
  visit(f.body, [&](const Stmt& x) {
    if (x->op == StmtOp::IfThenElse) guards.push_back(x);
  });
  REQUIRE(guards.size() == 1);
  CHECK(to_string(guards[0]->cond).find("61") != std::string::npos);
  require_correct(dag, t);
}

TEST_CASE("loop_partition hoists a padding's bounds test out of the window loops", "[lower][loop_partition]") {
  // parallel o in 0..9: for r in 0..3: B[o] = B[o] + select(o + r >= 1 && o + r < 10, A[o + r - 1], 0)
  Expr row = v("o") + v("r");
  Expr cond = logical_and(row >= make_int(1), row < make_int(10));
  Expr read = make_select(cond, fload("A", row - make_int(1)), make_float(0.0));
  Stmt body = make_store("B", v("o"), fload("B", v("o")) + read);
  LoopPartitionOptions with;
  with.selects = true;
  {
    // A short parallel loop is not peeled: inside it, both bounds of the row are decided once per
    // o (o >= 1, o + 2 < 10) before the r loop, which runs guard-free where both hold.
    Stmt nest = loop("o", 9, loop("r", 3, body), ForKind::Parallel);
    Stmt parted = simplify(loop_partition(nest, with));
    INFO(to_string(parted));
    std::vector<Stmt> ifs;
    visit(parted, [&](const Stmt& x) {
      if (x->op == StmtOp::IfThenElse) ifs.push_back(x);
    });
    REQUIRE(ifs.size() >= 2);
    for (const Stmt& i : ifs) {
      CHECK(uses_var(i->cond, "o"));
      CHECK_FALSE(uses_var(i->cond, "r"));
    }
    CHECK(count_selects(ifs[0]->body[0]) > 0);   // the row o = 8, whose last tap is padding
    CHECK(count_selects(ifs[1]->body[0]) == 0);  // 1 <= o <= 7
    CHECK(count_selects(parted) > 0);            // o = 0 and o = 8
  }
  {
    // A serial loop has its first and last iterations peeled off instead; all that is left of
    // the select is the padding's zeros.
    Stmt parted = simplify(loop_partition(loop("o", 9, loop("r", 3, body)), with));
    INFO(to_string(parted));
    CHECK(count_selects(parted) == 0);
    std::vector<Stmt> main = loops_named(parted, "o");
    REQUIRE(main.size() == 1);
    CHECK(is_int_value(main[0]->min, 1));
    CHECK(is_int_value(main[0]->extent, 7));
  }
  // Without `selects` (the GPU's lowering) the select stays where it was.
  Stmt nest = loop("o", 9, loop("r", 3, body));
  CHECK(count_op(loop_partition(nest), StmtOp::For) == 2);
  CHECK(count_selects(loop_partition(nest)) == 1);
}

TEST_CASE("loop_partition peels a window's first column off when only it reads the padding", "[lower][loop_partition]") {
  // for c in 0..4: for rw in 0..3: B[c] += select(c * 2 + rw >= 1, A[c * 2 + rw - 1], 0): only c = 0,
  // rw = 0 reads the padding; hoisting decides c >= 1 before the rw loop, and at c = 0 the rw loop's
  // first iteration comes off.
  Expr col = v("c") * make_int(2) + v("rw");
  Expr read = make_select(col >= make_int(1), fload("A", col - make_int(1)), make_float(0.0));
  Stmt nest = loop("c", 4, loop("rw", 3, make_store("B", v("c"), fload("B", v("c")) + read)));
  LoopPartitionOptions with;
  with.selects = true;
  Stmt parted = simplify(loop_partition(nest, with));
  INFO(to_string(parted));
  CHECK(count_selects(parted) == 0);
  bool peeled = false;  // a loop over rw from 1
  visit(parted, [&](const Stmt& x) {
    if (x->op == StmtOp::For && x->var == "rw" && is_int_value(x->min, 1)) peeled = true;
  });
  CHECK(peeled);
}

TEST_CASE("loop_partition through lower(): a convolution with inlined padding reads its input guard-free inside", "[lower][loop_partition]") {
  // Odd sizes, stride 2: the padding touches the first row and column only.
  for (const char* stride : {"1", "2"}) {
    ComputeDAG dag = build_op("conv2d", {{"N", "1"}, {"C", "5"}, {"H", "13"}, {"W", "11"}, {"F", "3"}, {"KH", "3"},
                                         {"KW", "3"}, {"pad", "1"}, {"stride", stride}});
    Trace t{{compute_inline_step("pad"), split_step("Y", "ow", {4})}};
    LoweredFunc f = lower(replay(dag, t), "conv");
    INFO(to_string(f));
    // The window's column loop runs guard-free in the interior: some copy of it has no select.
    std::vector<Stmt> windows = loops_named(f.body, "rw");
    REQUIRE_FALSE(windows.empty());
    CHECK(std::any_of(windows.begin(), windows.end(), [](const Stmt& w) { return count_selects(w) == 0; }));
    CHECK(count_selects(f.body) < static_cast<int>(windows.size()));
    require_correct(dag, t);
  }
}

// --- inject_predicates / bound inference ------------------------------------------------------------

TEST_CASE("inject_predicates: guards only for non-divisible splits", "[lower][predicates]") {
  auto preds_of = [](const ComputeDAG& dag, std::vector<Step> steps, const std::string& stage) {
    State s = replay(dag, Trace{std::move(steps)});
    StageInfoMap infos = infer_bounds(s, inline_stages(s));
    const StageInfo& info = infos.at(stage);
    std::vector<Expr> values = var_values(info.stage, info.leaf_names);
    return stage_predicates(info, s.op(stage).shape, values, false);
  };
  ComputeDAG dag = chain_dag(13, 61);
  std::vector<Expr> p = preds_of(dag, {split_step("C", "y", {16})}, "C");
  REQUIRE(p.size() == 1);
  CHECK(to_string(p[0]).find("< 61") != std::string::npos);
  CHECK(preds_of(chain_dag(13, 64), {split_step("C", "y", {16})}, "C").empty());
  CHECK(preds_of(dag, {split_step("C", "y", {61})}, "C").empty());
  CHECK(preds_of(dag, {split_step("C", "y", {4}), split_step("C", "x", {5})}, "C").size() == 2);

  // Reduction init only needs the spatial conditions.
  ComputeDAG mm = matmul_dag(61, 7, 13);
  State s = replay(mm, Trace{{split_step("C", "k", {4}), split_step("C", "i", {8})}});
  StageInfoMap infos = infer_bounds(s, inline_stages(s));
  const StageInfo& info = infos.at("C");
  std::vector<Expr> values = var_values(info.stage, info.leaf_names);
  CHECK(stage_predicates(info, s.op("C").shape, values, false).size() == 2);
  CHECK(stage_predicates(info, s.op("C").shape, values, true).size() == 1);

  // And the lowered code of a non-divisible split holds a guard that names the extent.
  LoweredFunc f = lower(s, "f");
  CHECK(count_op(f.body, StmtOp::IfThenElse) >= 1);
  CHECK(to_string(f).find("< 13)") != std::string::npos);
}

TEST_CASE("bound inference: elementwise producer at a consumer's outer split loop", "[lower][bounds]") {
  ComputeDAG dag = chain_dag(13, 61);
  Trace t{{split_step("C", "x", {8}), compute_at_step("P", "C", "x.0")}};
  State s = replay(dag, t);
  StageInfoMap infos = infer_bounds(s, inline_stages(s));
  const StageInfo& p = infos.at("P");
  CHECK(p.root_extent == std::vector<int64_t>{8, 61});
  CHECK(to_string(p.root_base[0]) == to_string(make_var("x.0") * make_int(8)));
  CHECK(is_int_value(p.root_base[1], 0));
  CHECK(leaf_extents(p.stage) == std::vector<int64_t>{8, 61});
  // The last tile (rows 8..15 of 13) is clamped by a predicate on P.
  std::vector<Expr> values = var_values(p.stage, p.leaf_names);
  CHECK_FALSE(stage_predicates(p, s.op("P").shape, values, false).empty());

  LoweredFunc f = lower(s, "f");
  INFO(to_string(f));
  bool found = false;
  visit(f.body, [&](const Stmt& x) {
    if (x->op == StmtOp::Allocate && x->buffer == "P") {
      found = true;
      CHECK(x->extents == std::vector<int64_t>{8 * 61});
    }
  });
  CHECK(found);
  require_correct(dag, t);

  // At the inner loop: one row.
  State inner = replay(dag, Trace{{split_step("C", "x", {8}), compute_at_step("P", "C", "x.1")}});
  CHECK(infer_bounds(inner, inline_stages(inner)).at("P").root_extent == std::vector<int64_t>{1, 61});
  // At the innermost loop: one element.
  State point = replay(dag, Trace{{compute_at_step("P", "C", "y")}});
  CHECK(infer_bounds(point, inline_stages(point)).at("P").root_extent == std::vector<int64_t>{1, 1});
}

TEST_CASE("bound inference: a producer at a split of fused loops covers the rows the split's range spans",
          "[lower][bounds]") {
  // C's loops x (13 rows) and y (8) fused into 104 values: a block of 16 of them starts at a
  // multiple of 8 and spans two whole rows, so P computes 2 x 8 there (not the whole 13 x 8); the
  // last block runs past row 12 (guarded). A block of 4 lies within one row: P computes 1 x 4.
  // A block of 12 does not line up with the rows: P in full.
  ComputeDAG dag = chain_dag(13, 8);
  for (int64_t block : {16, 4, 12}) {
    Trace t{{fuse_step("C", {"x", "y"}), split_step("C", "x@y", {block}), compute_at_step("P", "C", "x@y.0")}};
    State s = replay(dag, t);
    const StageInfo p = infer_bounds(s, inline_stages(s)).at("P");
    INFO("block " << block);
    if (block == 16) {
      CHECK(p.root_extent == std::vector<int64_t>{2, 8});
      CHECK(to_string(simplify_expr(p.root_base[0])) == to_string(make_var("x@y.0") * make_int(2)));
    } else if (block == 4) {
      CHECK(p.root_extent == std::vector<int64_t>{1, 4});
    } else {
      CHECK(p.root_extent == std::vector<int64_t>{13, 8});
    }
    require_correct(dag, t);
  }
}

TEST_CASE("bound inference: conv pad region is tile * stride + kernel - stride", "[lower][bounds]") {
  auto region = [](const std::string& stride, int64_t tile) {
    ComputeDAG dag = build_op("conv2d", {{"N", "1"}, {"C", "2"}, {"H", "13"}, {"W", "13"}, {"F", "2"}, {"KH", "3"},
                                         {"KW", "3"}, {"pad", "1"}, {"stride", stride}});
    Trace t{{split_step("Y", "oh", {tile}), compute_at_step("pad", "Y", "oh.0")}};
    State s = replay(dag, t);
    StageInfoMap infos = infer_bounds(s, inline_stages(s));
    require_correct(dag, t);
    return infos.at("pad").root_extent;
  };
  // stride 1: 4 output rows need 4 + 3 - 1 = 6 padded rows; the width is whole (15).
  CHECK(region("1", 4) == std::vector<int64_t>{1, 2, 6, 15});
  // stride 2: (4 - 1) * 2 + 3 = 9 rows.
  CHECK(region("2", 4) == std::vector<int64_t>{1, 2, 9, 15});
}

TEST_CASE("bound inference: a computed-at stage read by another stage is rejected at lowering", "[lower][bounds]") {
  ComputeDAG dag = build_op("softmax", {{"rows", "7"}, {"cols", "61"}});
  // exps is read by row_sum and Y; computing it at Y only leaves row_sum without it.
  State s(dag);
  CHECK_THROWS_AS(apply_step(s, compute_at_step("exps", "Y", "i3"), 0), ScheduleError);
}

// --- vectorize ------------------------------------------------------------------------------------

TEST_CASE("vectorize pass: straight-line bodies become ramps, guarded bodies stay scalar", "[lower][vectorize]") {
  Stmt vec = loop("i", 8, make_store("B", v("o") * make_int(8) + v("i"), fload("A", v("i")) * make_float(2.0)),
                  ForKind::Vectorized);
  Stmt out = vectorize_loops(loop("o", 4, vec));
  INFO(to_string(out));
  CHECK(loops_named(out, "i").empty());
  std::vector<Stmt> st = stores(out);
  REQUIRE(st.size() == 1);
  CHECK(st[0]->indices[0]->op == ExprOp::Ramp);
  CHECK(st[0]->indices[0]->type.lanes == 8);
  CHECK(st[0]->value->type.lanes == 8);
  CHECK(is_int_value(st[0]->indices[0]->args[1], 1));

  Stmt guarded = loop("i", 8, make_if(v("i") < v("n"), make_store("B", v("i"), make_float(1.0))), ForKind::Vectorized);
  Stmt fallback = vectorize_loops(guarded);
  std::vector<Stmt> l = loops_named(fallback, "i");
  REQUIRE(l.size() == 1);
  CHECK(l[0]->for_kind == ForKind::Serial);
  CHECK(stores(fallback)[0]->value->type.lanes == 1);
}

TEST_CASE("vectorize pass: a guard true for all lanes or none moves outside the vector", "[lower][vectorize]") {
  // A cooperative fetch of a 24-element tile by threads of 4 lanes each: the guard o*4 + i < 24
  // holds for all four lanes or for none, since both o*4 and 24 are multiples of 4.
  auto fetch = [](int64_t bound) {
    Expr idx = v("o") * make_int(4) + v("i");
    return loop("o", 8, loop("i", 4, make_if(idx < make_int(bound), make_store("B", idx, fload("A", idx))),
                             ForKind::Vectorized));
  };
  Stmt out = vectorize_loops(fetch(24));
  INFO(to_string(out));
  CHECK(loops_named(out, "i").empty());
  std::vector<Stmt> st = stores(out);
  REQUIRE(st.size() == 1);
  CHECK(st[0]->indices[0]->op == ExprOp::Ramp);
  CHECK(st[0]->value->type.lanes == 4);
  CHECK(to_string(out).find("((o * 4) < 24)") != std::string::npos);
  // With 22 the last thread's lanes straddle the bound: the loop stays scalar.
  Stmt straddle = vectorize_loops(fetch(22));
  INFO(to_string(straddle));
  REQUIRE(loops_named(straddle, "i").size() == 1);
  CHECK(loops_named(straddle, "i")[0]->for_kind == ForKind::Serial);
  CHECK(stores(straddle)[0]->value->type.lanes == 1);
}

TEST_CASE("vectorize through lower(): lanes == factor, last tile scalar", "[lower][vectorize]") {
  ComputeDAG dag = chain_dag(13, 61);
  Trace t{{compute_inline_step("P"), split_step("C", "y", {8}), annotate_step("C", "y.1", Annotation::Vectorize)}};
  LoweredFunc f = lower(replay(dag, t), "f");
  INFO(to_string(f));
  int vector_stores = 0, scalar_stores = 0;
  for (const Stmt& s : stores(f.body)) {
    if (s->value->type.lanes == 1) {
      ++scalar_stores;
      continue;
    }
    ++vector_stores;
    CHECK(s->value->type.lanes == 8);
    CHECK(s->indices[0]->op == ExprOp::Ramp);
  }
  CHECK(vector_stores >= 1);
  CHECK(scalar_stores >= 1);  // 61 = 7 * 8 + 5: the last, guarded tile cannot be a vector
  visit(f.body, [&](const Stmt& s) {
    if (s->op == StmtOp::For) CHECK(s->for_kind != ForKind::Vectorized);
  });
  require_correct(dag, t);

  ComputeDAG even = chain_dag(13, 64);
  LoweredFunc g = lower(replay(even, t), "g");
  for (const Stmt& s : stores(g.body)) CHECK(s->value->type.lanes == 8);
  CHECK(count_op(g.body, StmtOp::IfThenElse) == 0);
  require_correct(even, t);
}

// --- unroll ---------------------------------------------------------------------------------------

TEST_CASE("unroll pass: explicit unroll and auto_unroll_max_step", "[lower][unroll]") {
  Stmt un = loop("i", 4, make_store("B", v("i"), make_float(1.0)), ForKind::Unrolled);
  Stmt out = unroll_loops(un);
  CHECK(count_op(out, StmtOp::For) == 0);
  std::vector<Stmt> st = stores(out);
  REQUIRE(st.size() == 4);
  for (int k = 0; k < 4; ++k) CHECK(is_int_value(st[k]->indices[0], k));

  // Too long for explicit unrolling: stays a loop.
  Stmt longer = loop("i", kMaxExplicitUnroll + 1, make_store("B", v("i"), make_float(1.0)), ForKind::Unrolled);
  CHECK(count_op(unroll_loops(longer), StmtOp::For) == 1);

  // auto_unroll_max_step: inner loops whose unrolled size fits the budget are unrolled.
  Stmt inner = loop("i", 4, make_store("B", v("o") * make_int(4) + v("i"), make_float(1.0)));
  Stmt fits = unroll_loops(loop("o", 3, inner, ForKind::Serial, 16));
  INFO(to_string(fits));
  CHECK(loops_named(fits, "i").empty());
  REQUIRE(loops_named(fits, "o").size() == 1);
  CHECK(loops_named(fits, "o")[0]->pragma_unroll_max_step == 0);
  CHECK(count_op(fits, StmtOp::Store) == 4);
  Stmt too_small = unroll_loops(loop("o", 3, inner, ForKind::Serial, 2));
  CHECK(loops_named(too_small, "i").size() == 1);

  // Through lower(): unroll of extent 4 becomes 4 stores.
  ComputeDAG dag = chain_dag(13, 64);
  Trace t{{compute_inline_step("P"), split_step("C", "y", {4}), annotate_step("C", "y.1", Annotation::Unroll)}};
  LoweredFunc f = lower(replay(dag, t), "f");
  CHECK(loops_named(f.body, "y.1").empty());
  CHECK(count_op(f.body, StmtOp::Store) == 4);
  require_correct(dag, t);

  Trace pt{{compute_inline_step("P"), split_step("C", "y", {4}), pragma_step("C", "x", "auto_unroll_max_step", 8)}};
  LoweredFunc g = lower(replay(dag, pt), "g");
  INFO(to_string(g));
  CHECK(loops_named(g.body, "y.1").empty());
  CHECK(count_op(g.body, StmtOp::Store) == 4);
  require_correct(dag, pt);
}

// --- storage_flatten ------------------------------------------------------------------------------

TEST_CASE("storage_flatten: row-major flat indices and storage_align padding", "[lower][flatten]") {
  ComputeDAG dag = chain_dag(13, 61);
  State s(dag);
  std::vector<BufferParam> params{{"A", DType::Float32, {13, 61}, false}, {"C", DType::Float32, {13, 61}, true}};
  Stmt provide = loop("x", 13, loop("y", 61, make_provide("C", {v("x"), v("y")}, make_tensor_read("A", {v("x"), v("y")}))));
  Stmt flat = storage_flatten(provide, params, s);
  std::vector<Stmt> st = stores(flat);
  REQUIRE(st.size() == 1);
  CHECK(to_string(st[0]->indices[0]) == to_string(v("x") * make_int(61) + v("y")));
  CHECK(st[0]->value->op == ExprOp::Load);
  CHECK(to_string(st[0]->value->args[0]) == to_string(v("x") * make_int(61) + v("y")));
  CHECK(count_op(flat, StmtOp::Provide) == 0);

  // 3-d strides.
  std::vector<BufferParam> p3{{"T", DType::Float32, {3, 5, 7}, true}};
  Stmt s3 = storage_flatten(make_provide("T", {v("a"), v("b"), v("c")}, make_float(0.0)), p3, s);
  CHECK(to_string(s3->indices[0]) == to_string(v("a") * make_int(35) + v("b") * make_int(7) + v("c")));

  // storage_align(P, 0, 8, 1): the row stride 61 pads to 65 (65 % 8 == 1).
  Trace t{{storage_align_step("P", 0, 8, 1)}};
  LoweredFunc f = lower(replay(dag, t), "f");
  INFO(to_string(f));
  bool found = false;
  visit(f.body, [&](const Stmt& x) {
    if (x->op == StmtOp::Allocate && x->buffer == "P") {
      found = true;
      CHECK(x->extents == std::vector<int64_t>{13 * 65});
    }
  });
  CHECK(found);
  bool strided = false;
  for (const Stmt& x : stores(f.body))
    if (x->buffer == "P") strided = to_string(x->indices[0]).find("* 65") != std::string::npos;
  CHECK(strided);
  require_correct(dag, t);
  // Without it the buffer is dense.
  LoweredFunc dense = lower(State(dag), "d");
  CHECK(to_string(dense).find("allocate P[float32 * 793]") != std::string::npos);
}

// --- verify ---------------------------------------------------------------------------------------

TEST_CASE("verify: invalid lowered functions raise CompileError", "[lower][verify]") {
  std::vector<BufferParam> params{{"A", DType::Float32, {8}, false}, {"B", DType::Float32, {8}, true}};
  auto func = [&](Stmt body) { return LoweredFunc{"f", params, std::move(body)}; };
  Stmt ok = loop("i", 8, make_store("B", v("i"), fload("A", v("i"))));
  CHECK_NOTHROW(verify_lowered(func(ok), LowerTarget::Cpu));

  auto require_compile_error = [&](Stmt body, const std::string& part) {
    INFO(to_string(body));
    try {
      verify_lowered(func(body), LowerTarget::Cpu);
      FAIL("no CompileError");
    } catch (const CompileError& e) {
      CHECK(std::string(e.what()).find(part) != std::string::npos);
    }
  };
  require_compile_error(loop("i", 8, make_store("B", v("i"), fload("A", v("i"))), ForKind::Vectorized), "vectorized loop");
  require_compile_error(loop("i", 8, make_store("Q", v("i"), make_float(0.0))), "unknown buffer Q");
  require_compile_error(loop("i", 8, make_store("B", v("i"), fload("Z", v("i")))), "unknown buffer Z");
  require_compile_error(make_store("B", v("i"), make_float(0.0)), "outside its loop");
  require_compile_error(loop("i", 8, make_provide("B", {v("i")}, make_float(0.0))), "storage flattening");
  require_compile_error(loop("i", 8, loop("i", 2, make_store("B", v("i"), make_float(0.0)))), "bound twice");
  // A GPU binding on the CPU is a schedule that does not fit the target: ScheduleError (verify.h).
  CHECK_THROWS_AS(verify_lowered(func(make_for("i", make_int(0), make_int(8), ForKind::ThreadBound,
                                               make_store("B", v("i"), make_float(0.0)), "threadIdx.x")),
                                 LowerTarget::Cpu),
                  ScheduleError);
  require_compile_error(make_seq({make_barrier()}), "barrier");
  // A buffer allocated inside its own scope twice.
  Stmt twice = make_allocate("T", DType::Float32, {8}, MemScope::Local,
                             make_allocate("T", DType::Float32, {8}, MemScope::Local, make_store("T", make_int(0), make_float(0.0))));
  require_compile_error(twice, "allocated twice");
  // The GPU target accepts thread-bound loops.
  CHECK_NOTHROW(verify_lowered(func(make_for("i", make_int(0), make_int(8), ForKind::ThreadBound,
                                             make_store("B", v("i"), make_float(0.0)), "threadIdx.x")),
                               LowerTarget::Gpu));
}

// --- lower() ----------------------------------------------------------------------------------------

TEST_CASE("lower: dump prints one section per pass and params are inputs then outputs", "[lower]") {
  ComputeDAG dag = matmul_dag(61, 7, 13);
  std::ostringstream dump;
  LowerOptions opts;
  opts.dump = &dump;
  LoweredFunc f = lower(replay(dag, Trace{{split_step("C", "i", {8})}}), "mm", opts);
  const std::string text = dump.str();
  CHECK(count_occurrences(text, "// ---- after ") == 6);
  for (const char* pass : {"schedule_ops", "storage_flatten", "simplify", "loop_partition", "vectorize", "unroll"})
    CHECK(text.find(std::string("// ---- after ") + pass) != std::string::npos);
  // The last section is the final function.
  CHECK(text.substr(text.rfind("// ---- after unroll")).find(to_string(f)) != std::string::npos);
  REQUIRE(f.params.size() == 3);
  CHECK(f.params[0].name == "A");
  CHECK(f.params[1].name == "B");
  CHECK(f.params[2].name == "C");
  CHECK(f.params[2].is_output);
  CHECK_FALSE(f.params[0].is_output);
  CHECK(f.name == "mm");
  // Without dump nothing is printed and the function is the same.
  CHECK(to_string(lower(replay(dag, Trace{{split_step("C", "i", {8})}}), "mm")) == to_string(f));
}

TEST_CASE("lower: schedule_ops nests a computed-at stage inside its consumer loop", "[lower][schedule_ops]") {
  ComputeDAG dag = chain_dag(13, 61);
  State s = replay(dag, Trace{{split_step("C", "x", {4}), compute_at_step("P", "C", "x.0")}});
  StageInfoMap infos = infer_bounds(s, inline_stages(s));
  Stmt nest = schedule_ops(s, infos);
  INFO(to_string(nest));
  std::vector<Stmt> outer = loops_named(nest, "x.0");
  REQUIRE(outer.size() == 1);
  // Inside x.0: P's allocation and its Provide, then C's loop.
  bool p_inside = false;
  visit(outer[0], [&](const Stmt& x) { p_inside = p_inside || (x->op == StmtOp::Provide && x->buffer == "P"); });
  CHECK(p_inside);
  CHECK(count_op(nest, StmtOp::Provide) == 2);
  CHECK(count_op(nest, StmtOp::Store) == 0);

  // inline_stages substitutes P into C.
  State inl = replay(dag, Trace{{compute_inline_step("P")}});
  std::map<std::string, Expr> bodies = inline_stages(inl);
  CHECK(to_string(bodies.at("C")).find("A[") != std::string::npos);
  CHECK(to_string(bodies.at("C")).find("P[") == std::string::npos);
}

// --- prefetch -----------------------------------------------------------------------------------

namespace {

std::vector<Stmt> prefetches(const Stmt& s) {
  std::vector<Stmt> out;
  visit(s, [&](const Stmt& x) {
    if (x->op == StmtOp::Prefetch) out.push_back(x);
  });
  return out;
}

// A[i, j] -> C[x, y] = A[x, y] * 2 + 1 (P inlined), rows of `cols`.
Trace inlined_chain(std::vector<Step> more) {
  std::vector<Step> steps{compute_inline_step("P")};
  steps.insert(steps.end(), more.begin(), more.end());
  return Trace{steps};
}

}  // namespace

TEST_CASE("prefetch: one iteration's line, `offset` iterations ahead, first in the loop body", "[lower][prefetch]") {
  ComputeDAG dag = chain_dag(13, 64);
  Trace t = inlined_chain({split_step("C", "y", {16}), annotate_step("C", "y.1", Annotation::Vectorize),
                           prefetch_step("C", "y.0", "A", 4)});
  LoweredFunc f = lower(replay(dag, t), "k");
  INFO(to_string(f));
  std::vector<Stmt> y0 = loops_named(f.body, "y.0");
  REQUIRE(y0.size() == 1);
  // The body: the prefetch first, then the vector store.
  REQUIRE(y0[0]->body[0]->op == StmtOp::Seq);
  const Stmt& first = y0[0]->body[0]->body[0];
  REQUIRE(first->op == StmtOp::Prefetch);
  CHECK(first->buffer == "A");
  CHECK(is_int_value(first->extent, 16));
  // Four iterations of 16 elements ahead: the next row of 64.
  Expr expected = v("x") * make_int(64) + v("y.0") * make_int(16) + make_int(64);
  CHECK(to_string(simplify_expr(first->indices[0] - expected)) == "0");
  CHECK(to_string(f).find("prefetch A[") != std::string::npos);
  require_correct(dag, t);
}

TEST_CASE("prefetch: regions of the inner loops, contiguous or looped", "[lower][prefetch]") {
  SECTION("a whole short row is one prefetch") {
    ComputeDAG dag = chain_dag(13, 61);
    Trace t = inlined_chain({prefetch_step("C", "x", "A", 2)});
    LoweredFunc f = lower(replay(dag, t), "k");
    INFO(to_string(f));
    std::vector<Stmt> p = prefetches(f.body);
    REQUIRE(p.size() == 1);
    CHECK(is_int_value(p[0]->extent, 61));
    CHECK(to_string(simplify_expr(p[0]->indices[0] - (v("x") * make_int(61) + make_int(122)))) == "0");
    require_correct(dag, t);
  }
  SECTION("a long row is fetched by a loop of one line per iteration") {
    ComputeDAG dag = chain_dag(7, 1000);
    Trace t = inlined_chain({prefetch_step("C", "x", "A", 1)});
    LoweredFunc f = lower(replay(dag, t), "k");
    INFO(to_string(f));
    std::vector<Stmt> lines = loops_named(f.body, "A.line");
    REQUIRE(lines.size() == 1);
    CHECK(is_int_value(lines[0]->extent, 63));  // ceil(1000 / 16)
    std::vector<Stmt> p = prefetches(f.body);
    REQUIRE(p.size() == 1);
    CHECK(is_int_value(p[0]->extent, 16));
    require_correct(dag, t);
  }
  SECTION("an inner loop striding across rows becomes a loop of prefetches") {
    ComputeDAG dag = chain_dag(13, 61);
    // y outside x: one iteration of y reads a column, 13 elements 61 apart.
    Trace t = inlined_chain({reorder_step("C", {"y", "x"}), prefetch_step("C", "y", "A", 1)});
    LoweredFunc f = lower(replay(dag, t), "k");
    INFO(to_string(f));
    std::vector<Stmt> rows = loops_named(f.body, "x.prefetch");
    REQUIRE(rows.size() == 1);
    CHECK(is_int_value(rows[0]->extent, 13));
    std::vector<Stmt> p = prefetches(f.body);
    REQUIRE(p.size() == 1);
    CHECK(is_int_value(p[0]->extent, 1));
    CHECK(to_string(simplify_expr(p[0]->indices[0] - (v("x.prefetch") * make_int(61) + v("y") + make_int(1)))) == "0");
    require_correct(dag, t);
  }
  SECTION("a read not affine in the inner loops is not prefetched") {
    Operation a;
    a.name = "A";
    a.is_placeholder = true;
    a.shape = {13, 61};
    Operation c;
    c.name = "C";
    c.shape = {13, 61};
    c.axes = {{"x", 13}, {"y", 61}};
    c.body = make_tensor_read("A", {v("x"), v("y") / make_int(2)}) + make_float(1.0);
    ComputeDAG dag({a, c});
    Trace t{{prefetch_step("C", "x", "A", 1)}};
    CHECK(prefetches(lower(replay(dag, t), "k").body).empty());
    require_correct(dag, t);
  }
}

TEST_CASE("prefetch: the unroll budget counts prefetches, and the GPU target rejects them", "[lower][prefetch]") {
  ComputeDAG dag = chain_dag(13, 61);
  // A prefetch loop of 13 inside a pragma budget of 8 statements stays a loop.
  Trace t = inlined_chain({reorder_step("C", {"y", "x"}), prefetch_step("C", "y", "A", 1),
                           pragma_step("C", "y", "auto_unroll_max_step", 8)});
  LoweredFunc f = lower(replay(dag, t), "k");
  INFO(to_string(f));
  CHECK(loops_named(f.body, "x.prefetch").size() == 1);
  require_correct(dag, t);

  LowerOptions gpu;
  gpu.target = LowerTarget::Gpu;
  try {
    lower(replay(dag, inlined_chain({prefetch_step("C", "x", "A", 1)})), "k", gpu);
    FAIL("no ScheduleError");
  } catch (const ScheduleError& e) {
    CHECK(std::string(e.what()).find("CPU cache hint") != std::string::npos);
  }
}
