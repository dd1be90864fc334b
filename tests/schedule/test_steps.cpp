// Every schedule step: the loop structure it produces, its JSON round trip, and its error cases
// (a ScheduleError naming the step index and a reason, with the State unchanged).
#include "schedule_test_util.h"

using namespace tessel;
using namespace tessel::schedtest;

namespace {

Trace trace_of(std::vector<Step> steps) { return Trace{std::move(steps)}; }

}  // namespace

TEST_CASE("split: one factor, divisible and non-divisible", "[steps][split]") {
  ComputeDAG dag = matmul_dag(61, 7, 13);
  SECTION("non-divisible factor 8 of 61 rounds the outer extent up") {
    Trace t = trace_of({split_step("C", "i", {8})});
    State s = replay(dag, t);
    const Stage& c = s.stage("C");
    CHECK(c.leaf_names() == names({"i.0", "i.1", "j", "k"}));
    CHECK(leaf_extents(c) == std::vector<int64_t>{8, 8, 7, 13});
    CHECK(c.leaf(3).kind == IterKind::Reduce);
    CHECK(c.leaf(0).kind == IterKind::Spatial);
    REQUIRE(c.relations.size() == 1);
    CHECK(c.relations[0].kind == Relation::Kind::Split);
    CHECK(c.relations[0].lengths == std::vector<int64_t>{8});
    require_round_trip(dag, t);
  }
  SECTION("divisible factor and a reduction loop split") {
    Trace t = trace_of({split_step("C", "j", {7}), split_step("C", "k", {13})});
    State s = replay(dag, t);
    CHECK(s.stage("C").leaf_names() == names({"i", "j.0", "j.1", "k.0", "k.1"}));
    CHECK(leaf_extents(s.stage("C")) == std::vector<int64_t>{61, 1, 7, 1, 13});
    CHECK(s.stage("C").leaf(3).kind == IterKind::Reduce);
    CHECK(s.stage("C").leaf(4).kind == IterKind::Reduce);
    require_round_trip(dag, t);
  }
  SECTION("factor larger than the loop") {
    State s = replay(dag, trace_of({split_step("C", "j", {16})}));
    CHECK(leaf_extents(s.stage("C")) == std::vector<int64_t>{61, 1, 16, 13});
  }
}

TEST_CASE("split: multi-factor", "[steps][split]") {
  ComputeDAG dag = matmul_dag(61, 7, 13);
  Trace t = trace_of({split_step("C", "i", {4, 3})});
  State s = replay(dag, t);
  const Stage& c = s.stage("C");
  CHECK(c.leaf_names() == names({"i.0", "i.1", "i.2", "j", "k"}));
  CHECK(leaf_extents(c) == std::vector<int64_t>{6, 4, 3, 7, 13});  // ceil(61 / 12) = 6
  require_round_trip(dag, t);

  // Splitting a child again gets fresh names.
  Trace t2 = trace_of({split_step("C", "i", {4, 3}), split_step("C", "i.1", {2})});
  State s2 = replay(dag, t2);
  CHECK(s2.stage("C").leaf_names() == names({"i.0", "i.1.0", "i.1.1", "i.2", "j", "k"}));
  CHECK(leaf_extents(s2.stage("C")) == std::vector<int64_t>{6, 2, 2, 3, 7, 13});
  require_round_trip(dag, t2);

  // var_values reconstructs the root index from the leaves.
  std::vector<Expr> values = var_values(c, c.leaf_names());
  CHECK(to_string(values[0]) == to_string((make_var("i.0") * make_int(4) + make_var("i.1")) * make_int(3) + make_var("i.2")));
}

TEST_CASE("split: error cases", "[steps][split][errors]") {
  ComputeDAG dag = matmul_dag(61, 7, 13);
  require_rejected(dag, {}, split_step("C", "q", {4}), "has no loop 'q'");
  require_rejected(dag, {}, split_step("C", "i", {0}), "not positive");
  require_rejected(dag, {}, split_step("C", "i", {4, -2}), "not positive");
  require_rejected(dag, {}, split_step("C", "i", {}), "at least one factor");
  require_rejected(dag, {split_step("C", "i", {8})}, split_step("C", "i", {2}), "split or fused away");
  require_rejected(dag, {}, split_step("A", "i", {2}), "is an input");
  require_rejected(dag, {}, split_step("Z", "i", {2}), "no stage named 'Z'");
  require_rejected(dag, {annotate_step("C", "i", Annotation::Parallel)}, split_step("C", "i", {2}),
                   "split it before annotating");
}

TEST_CASE("fuse", "[steps][fuse]") {
  ComputeDAG dag = matmul_dag(61, 7, 13);
  Trace t = trace_of({fuse_step("C", {"i", "j"})});
  State s = replay(dag, t);
  CHECK(s.stage("C").leaf_names() == names({"i@j", "k"}));
  CHECK(leaf_extents(s.stage("C")) == std::vector<int64_t>{427, 13});
  require_round_trip(dag, t);

  // Fuse of split children, three at once.
  Trace t2 = trace_of({split_step("C", "i", {4, 3}), fuse_step("C", {"i.0", "i.1", "i.2"})});
  State s2 = replay(dag, t2);
  CHECK(s2.stage("C").leaf_names() == names({"i.0@i.1@i.2", "j", "k"}));
  CHECK(leaf_extents(s2.stage("C")) == std::vector<int64_t>{72, 7, 13});
  require_round_trip(dag, t2);

  SECTION("errors") {
    require_rejected(dag, {}, fuse_step("C", {"i", "k"}), "adjacent");
    require_rejected(dag, {}, fuse_step("C", {"j", "i"}), "adjacent");
    require_rejected(dag, {}, fuse_step("C", {"j", "k"}), "reduction loop with a spatial loop");
    require_rejected(dag, {}, fuse_step("C", {"i"}), "at least two loops");
    require_rejected(dag, {}, fuse_step("C", {"i", "nope"}), "has no loop 'nope'");
    require_rejected(dag, {annotate_step("C", "j", Annotation::Unroll)}, fuse_step("C", {"i", "j"}),
                     "fuse before annotating");
    ComputeDAG chain = chain_dag();
    require_rejected(chain, {compute_at_step("P", "C", "x")}, fuse_step("C", {"x", "y"}), "which the fuse removes");
  }
  SECTION("a stage attached at the innermost fused loop follows the fused loop") {
    ComputeDAG chain = chain_dag();
    State st = replay(chain, trace_of({compute_at_step("P", "C", "y"), fuse_step("C", {"x", "y"})}));
    CHECK(st.stage("P").attach_loop == "x@y");
  }
}

TEST_CASE("reorder", "[steps][reorder]") {
  ComputeDAG dag = matmul_dag(61, 7, 13);
  Trace t = trace_of({split_step("C", "i", {8}), reorder_step("C", {"k", "i.0", "j", "i.1"})});
  State s = replay(dag, t);
  CHECK(s.stage("C").leaf_names() == names({"k", "i.0", "j", "i.1"}));
  CHECK(leaf_extents(s.stage("C")) == std::vector<int64_t>{13, 8, 7, 8});
  require_round_trip(dag, t);

  require_rejected(dag, {}, reorder_step("C", {"i", "j"}), "must list all 3 loops");
  require_rejected(dag, {}, reorder_step("C", {"i", "i", "k"}), "listed twice");
  require_rejected(dag, {}, reorder_step("C", {"i", "j", "zz"}), "has no loop 'zz'");
  require_rejected(dag, {reorder_step("C", {"i", "k", "j"}), annotate_step("C", "j", Annotation::Vectorize)},
                   reorder_step("C", {"j", "i", "k"}), "must stay innermost");
}

TEST_CASE("compute_at / compute_inline / compute_root", "[steps][location]") {
  ComputeDAG dag = chain_dag();
  SECTION("compute_at") {
    Trace t = trace_of({split_step("C", "x", {4}), compute_at_step("P", "C", "x.0")});
    State s = replay(dag, t);
    CHECK(s.stage("P").loc == ComputeLoc::At);
    CHECK(s.stage("P").attach_stage == "C");
    CHECK(s.stage("P").attach_loop == "x.0");
    CHECK(s.to_string().find("stage P (at C.x.0)") != std::string::npos);
    require_round_trip(dag, t);
  }
  SECTION("compute_inline") {
    Trace t = trace_of({compute_inline_step("P")});
    State s = replay(dag, t);
    CHECK(s.stage("P").loc == ComputeLoc::Inline);
    CHECK(s.to_string().find("stage P (inlined)") != std::string::npos);
    CHECK(s.effective_consumers("A") == names({"C"}));
    require_round_trip(dag, t);
    require_rejected(dag, {compute_inline_step("P")}, split_step("P", "i", {2}), "inlined");
  }
  SECTION("compute_root undoes compute_at") {
    Trace t = trace_of({compute_at_step("P", "C", "x"), compute_root_step("P")});
    State s = replay(dag, t);
    CHECK(s.stage("P").loc == ComputeLoc::Root);
    CHECK(s.stage("P").attach_stage.empty());
    CHECK(s.to_string() == State(dag).to_string());
    require_round_trip(dag, t);
  }
  SECTION("errors") {
    // Output stages cannot move.
    require_rejected(dag, {}, compute_at_step("C", "P", "i"), "is an output");
    require_rejected(dag, {}, compute_inline_step("C"), "is an output");
    // A target that does not consume the stage.
    ComputeDAG ln = build_op("layernorm", {{"rows", "13"}, {"cols", "127"}});
    require_rejected(ln, {}, compute_at_step("mean_sum", "var_sum", "i2"), "not computed at var_sum.i2");
    require_rejected(dag, {}, compute_at_step("P", "C", "nope"), "has no loop 'nope'");
    require_rejected(dag, {annotate_step("C", "y", Annotation::Vectorize)}, compute_at_step("P", "C", "y"),
                     "vectorized loop");
    // Reductions cannot be inlined.
    require_rejected(ln, {}, compute_inline_step("mean_sum"), "is a reduction");
    ComputeDAG mm = matmul_dag();
    require_rejected(mm, {cache_write_step("C", MemScope::Local)}, compute_inline_step("C.local"), "is a reduction");
    // Nothing may be attached to an inlined stage.
    ComputeDAG three = build_op("layernorm", {{"rows", "13"}, {"cols", "127"}});
    require_rejected(three, {compute_at_step("mean_sum", "mean", "i1")}, compute_inline_step("mean"),
                     "cannot be inlined");
  }
}

TEST_CASE("cache_read", "[steps][cache]") {
  ComputeDAG dag = chain_dag();
  Trace t = trace_of({cache_read_step("A", MemScope::Local, {"P"})});
  State s = replay(dag, t);
  REQUIRE(s.stage_index("A.local") == 1);
  CHECK(cache_stage_name("A", MemScope::Local) == "A.local");
  CHECK(s.stage("A.local").scope == MemScope::Local);
  CHECK(s.stage("A.local").leaf_names() == names({"ax0", "ax1"}));
  CHECK(leaf_extents(s.stage("A.local")) == std::vector<int64_t>{13, 61});
  CHECK(to_string(s.op("A.local").body) == "A[ax0, ax1]");
  CHECK(s.consumers("A") == names({"A.local"}));
  CHECK(s.consumers("A.local") == names({"P"}));
  CHECK(s.to_string().find("stage A.local [local]") != std::string::npos);
  require_round_trip(dag, t);

  require_rejected(dag, {}, cache_read_step("A", MemScope::Local, {"C"}), "does not read A");
  require_rejected(dag, {}, cache_read_step("A", MemScope::Local, {}), "at least one reader");
  require_rejected(dag, {}, cache_read_step("Q", MemScope::Local, {"P"}), "no tensor named 'Q'");
  require_rejected(dag, {cache_read_step("A", MemScope::Local, {"P"})}, cache_read_step("A", MemScope::Local, {"A.local"}),
                   "already exists");
}

TEST_CASE("cache_write", "[steps][cache]") {
  ComputeDAG dag = matmul_dag(61, 7, 13);
  Trace t = trace_of({cache_write_step("C", MemScope::Local)});
  State s = replay(dag, t);
  REQUIRE(s.stage_index("C.local") >= 0);
  CHECK(s.stage_index("C.local") < s.stage_index("C"));
  CHECK(s.op("C.local").reduce == ReduceKind::Sum);
  CHECK(s.stage("C.local").leaf_names() == names({"i", "j", "k"}));
  CHECK(s.stage("C.local").scope == MemScope::Local);
  CHECK(s.op("C").reduce == ReduceKind::None);
  CHECK(s.stage("C").leaf_names() == names({"i", "j"}));
  CHECK(to_string(s.op("C").body) == "C.local[i, j]");
  CHECK(s.outputs() == names({"C"}));
  require_round_trip(dag, t);

  require_rejected(dag, {split_step("C", "i", {8})}, cache_write_step("C", MemScope::Local), "before the loops");
  require_rejected(dag, {cache_write_step("C", MemScope::Local)}, cache_write_step("C", MemScope::Local),
                   "already exists");
  ComputeDAG chain = chain_dag();
  require_rejected(chain, {compute_at_step("P", "C", "x")}, cache_write_step("C", MemScope::Local), "computed at");
}

TEST_CASE("rfactor", "[steps][rfactor]") {
  ComputeDAG dag = matmul_dag(61, 7, 13);
  SECTION("on the inner part, factor axis at the end") {
    Trace t = trace_of({split_step("C", "k", {4}), rfactor_step("C", "k.1", 2)});
    State s = replay(dag, t);
    REQUIRE(s.stage_index("C.rf") >= 0);
    CHECK(rfactor_stage_name("C") == "C.rf");
    CHECK(s.stage_index("C.rf") < s.stage_index("C"));
    CHECK(s.op("C.rf").shape == std::vector<int64_t>{61, 7, 4});
    CHECK(s.stage("C.rf").leaf_names() == names({"i", "j", "k.1", "k.0"}));
    CHECK(leaf_extents(s.stage("C.rf")) == std::vector<int64_t>{61, 7, 4, 4});
    CHECK(s.stage("C.rf").leaf(3).kind == IterKind::Reduce);
    CHECK(s.stage("C").leaf_names() == names({"i", "j", "k.1"}));
    CHECK(s.stage("C").leaf(2).kind == IterKind::Reduce);
    CHECK(to_string(s.op("C").body) == "C.rf[i, j, k.1]");
    // 13 is not a multiple of 4: the rfactor body guards k < 13.
    CHECK(to_string(s.op("C.rf").body).find("select") != std::string::npos);
    require_round_trip(dag, t);
  }
  SECTION("on the outer part, factor axis first") {
    Trace t = trace_of({split_step("C", "k", {4}), rfactor_step("C", "k.0", 0)});
    State s = replay(dag, t);
    CHECK(s.op("C.rf").shape == std::vector<int64_t>{4, 61, 7});
    CHECK(s.stage("C.rf").leaf_names() == names({"k.0", "i", "j", "k.1"}));
    require_round_trip(dag, t);
  }
  SECTION("errors") {
    require_rejected(dag, {}, rfactor_step("C", "k", 0), "one two-way split");
    require_rejected(dag, {split_step("C", "k", {4})}, rfactor_step("C", "i", 0), "not a reduction loop");
    require_rejected(dag, {split_step("C", "k", {4})}, rfactor_step("C", "k.1", 3), "outside [0, 2]");
    require_rejected(dag, {split_step("C", "k", {4}), split_step("C", "i", {2})}, rfactor_step("C", "k.1", 0),
                     "one two-way split");
    require_rejected(dag, {split_step("C", "k", {4, 2})}, rfactor_step("C", "k.1", 0), "one two-way split");
    ComputeDAG chain = chain_dag();
    require_rejected(chain, {split_step("C", "y", {4})}, rfactor_step("C", "y.1", 0), "is not a reduction");
  }
}

TEST_CASE("annotate", "[steps][annotate]") {
  ComputeDAG dag = matmul_dag(61, 7, 13);
  Trace t = trace_of({reorder_step("C", {"i", "k", "j"}), annotate_step("C", "i", Annotation::Parallel),
                      annotate_step("C", "j", Annotation::Vectorize), annotate_step("C", "k", Annotation::Unroll)});
  State s = replay(dag, t);
  CHECK(leaf_annotations(s.stage("C")) ==
        std::vector<Annotation>{Annotation::Parallel, Annotation::Unroll, Annotation::Vectorize});
  CHECK(s.to_string().find("i:61@parallel k(r):13@unroll j:7@vectorize") != std::string::npos);
  require_round_trip(dag, t);

  // Annotating again with the same annotation is allowed.
  State again = replay(dag, t);
  apply_step(again, annotate_step("C", "i", Annotation::Parallel));
  CHECK(again.to_string() == s.to_string());

  SECTION("errors") {
    require_rejected(dag, {}, annotate_step("C", "k", Annotation::Vectorize), "cannot be vectorized");
    require_rejected(dag, {}, annotate_step("C", "i", Annotation::Vectorize), "only the innermost loop");
    require_rejected(dag, {}, annotate_step("C", "k", Annotation::Parallel), "cannot run in parallel");
    require_rejected(dag, {}, annotate_step("C", "i", Annotation::None), "annotation 'none'");
    require_rejected(dag, {annotate_step("C", "i", Annotation::Parallel)}, annotate_step("C", "i", Annotation::Unroll),
                     "already annotated parallel");
    ComputeDAG wide = chain_dag(13, 127);
    require_rejected(wide, {}, annotate_step("C", "y", Annotation::Vectorize), "at most 64");
    ComputeDAG chain = chain_dag();
    require_rejected(chain, {compute_at_step("P", "C", "y")}, annotate_step("C", "y", Annotation::Vectorize),
                     "computed inside loop 'y'");
  }
}

TEST_CASE("pragma auto_unroll_max_step", "[steps][pragma]") {
  ComputeDAG dag = matmul_dag(61, 7, 13);
  Trace t = trace_of({split_step("C", "i", {8}), pragma_step("C", "i.0", "auto_unroll_max_step", 16)});
  State s = replay(dag, t);
  CHECK(s.stage("C").auto_unroll_max_step == 16);
  CHECK(s.stage("C").pragma_loop == "i.0");
  require_round_trip(dag, t);

  require_rejected(dag, {}, pragma_step("C", "i", "unroll_everything", 16), "unknown pragma");
  require_rejected(dag, {}, pragma_step("C", "i", "auto_unroll_max_step", -1), "must not be negative");
  require_rejected(dag, {}, pragma_step("C", "w", "auto_unroll_max_step", 4), "has no loop 'w'");
}

TEST_CASE("storage_align", "[steps][storage_align]") {
  ComputeDAG dag = chain_dag();
  Trace t = trace_of({storage_align_step("P", 0, 8, 1)});
  State s = replay(dag, t);
  REQUIRE(s.stage("P").storage_align.size() == 1);
  CHECK(s.stage("P").storage_align[0].axis == 0);
  CHECK(s.stage("P").storage_align[0].factor == 8);
  CHECK(s.stage("P").storage_align[0].offset == 1);
  require_round_trip(dag, t);

  require_rejected(dag, {}, storage_align_step("C", 0, 8, 0), "output C");
  require_rejected(dag, {}, storage_align_step("P", 2, 8, 0), "outside the rank 2");
  require_rejected(dag, {}, storage_align_step("P", -1, 8, 0), "outside the rank");
  require_rejected(dag, {}, storage_align_step("P", 0, 0, 0), "factor must be positive");
  require_rejected(dag, {}, storage_align_step("P", 0, 8, 8), "offset must be in [0, factor)");
  require_rejected(dag, {}, storage_align_step("A", 0, 8, 0), "is an input");
}

TEST_CASE("prefetch", "[steps][prefetch]") {
  ComputeDAG dag = chain_dag(13, 61);
  SECTION("records the hint and leaves the loops alone") {
    Trace t = trace_of({split_step("P", "j", {16}), prefetch_step("P", "j.0", "A", 4)});
    State s = replay(dag, t);
    const Stage& p = s.stage("P");
    CHECK(p.leaf_names() == names({"i", "j.0", "j.1"}));
    CHECK(leaf_extents(p) == std::vector<int64_t>{13, 4, 16});
    REQUIRE(p.prefetches.size() == 1);
    CHECK(p.prefetches[0].loop == "j.0");
    CHECK(p.prefetches[0].tensor == "A");
    CHECK(p.prefetches[0].offset == 4);
    CHECK(s.to_string().find("prefetch A in j.0 +4") != std::string::npos);
    require_round_trip(dag, t);
  }
  SECTION("a stage reading the input through an inlined stage may prefetch it") {
    Trace t = trace_of({compute_inline_step("P"), prefetch_step("C", "x", "A", 1),
                        prefetch_step("C", "y", "A", 2)});
    CHECK(replay(dag, t).stage("C").prefetches.size() == 2);
    require_round_trip(dag, t);
  }
  SECTION("error cases") {
    require_rejected(dag, {}, prefetch_step("P", "q", "A", 1), "has no loop 'q'");
    require_rejected(dag, {}, prefetch_step("P", "i", "Z", 1), "no tensor named 'Z'");
    require_rejected(dag, {}, prefetch_step("C", "x", "P", 1), "only inputs are prefetched");
    require_rejected(dag, {}, prefetch_step("C", "x", "A", 1), "does not read A");
    require_rejected(dag, {}, prefetch_step("P", "i", "A", 0), "at least one iteration ahead");
    require_rejected(dag, {}, prefetch_step("P", "i", "A", -3), "at least one iteration ahead");
    require_rejected(dag, {}, prefetch_step("A", "i", "A", 1), "is an input");
    require_rejected(dag, {prefetch_step("P", "i", "A", 1)}, prefetch_step("P", "i", "A", 2), "already prefetched");
    require_rejected(dag, {split_step("P", "j", {16}), annotate_step("P", "j.1", Annotation::Vectorize)},
                     prefetch_step("P", "j.1", "A", 1), "is vectorized");
    // Later steps may not take away the loop whose iterations the offset counts.
    require_rejected(dag, {prefetch_step("P", "j", "A", 1)}, split_step("P", "j", {16}), "issues a prefetch of A");
    require_rejected(dag, {prefetch_step("P", "i", "A", 1)}, fuse_step("P", {"i", "j"}), "issues a prefetch of A");
    require_rejected(dag, {split_step("P", "j", {16}), prefetch_step("P", "j.1", "A", 1)},
                     annotate_step("P", "j.1", Annotation::Vectorize), "issues a prefetch of A");
  }
}

TEST_CASE("a long mixed trace round-trips and keeps every step kind", "[steps][json]") {
  ComputeDAG dag = build_op("dense", {{"M", "13"}, {"N", "61"}, {"K", "7"}, {"bias", "1"}, {"act", "relu"}});
  Trace t = trace_of({
      cache_read_step("X", MemScope::Local, {"matmul"}),
      split_step("Y", "i1", {4}),
      split_step("Y", "j1", {2, 8}),
      reorder_step("Y", {"i1.0", "j1.0", "i1.1", "j1.1", "j1.2"}),
      fuse_step("Y", {"i1.0", "j1.0"}),
      annotate_step("Y", "i1.0@j1.0", Annotation::Parallel),
      annotate_step("Y", "j1.2", Annotation::Vectorize),
      annotate_step("Y", "j1.1", Annotation::Unroll),
      pragma_step("Y", "i1.0@j1.0", "auto_unroll_max_step", 64),
      compute_at_step("matmul", "Y", "i1.0@j1.0"),
      storage_align_step("X.local", 1, 8, 3),
  });
  State s = replay(dag, t);
  CHECK(s.stage("matmul").attach_loop == "i1.0@j1.0");
  require_round_trip(dag, t);
  const std::string json = trace_to_json(t);
  for (const char* kind : {"cache_read", "split", "reorder", "fuse", "annotate", "pragma", "compute_at", "storage_align"})
    CHECK(json.find(std::string("\"kind\":\"") + kind + "\"") != std::string::npos);
  CHECK(json.find("\"version\":1") != std::string::npos);
}

// A stage computed at a loop that is then split stays computed once per value of that loop: at the
// innermost of the new loops.
TEST_CASE("split of a loop another stage is computed at re-attaches it to the innermost part", "[steps][split]") {
  ComputeDAG dag = chain_dag();
  State s(dag);
  apply_step(s, compute_at_step("P", "C", "x"), 0);
  apply_step(s, split_step("C", "x", {4}), 1);
  INFO(s.to_string());
  CHECK(s.stage("P").attach_loop == "x.1");
  CHECK_NOTHROW(lower(s, "k"));
}
