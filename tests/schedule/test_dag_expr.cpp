// ComputeDAG basics (canonical text, workload key, validation) and Expr structural equality / hash.
#include <unordered_set>

#include "schedule_test_util.h"

using namespace tessel;
using namespace tessel::schedtest;

TEST_CASE("DAG: identical op params give the same text and workload key", "[dag]") {
  OpParams p{{"M", "61"}, {"N", "7"}, {"K", "13"}};
  ComputeDAG a = build_op("matmul", p), b = build_op("matmul", p);
  CHECK(a.to_text() == b.to_text());
  CHECK(a.workload_key() == b.workload_key());
  CHECK(a.workload_key().size() == 16);
  CHECK(a.workload_key().find_first_not_of("0123456789abcdef") == std::string::npos);
  // Defaults are the same as spelling them out.
  ComputeDAG d1 = build_op("dense", {{"M", "13"}, {"N", "61"}, {"K", "7"}});
  ComputeDAG d2 = build_op("dense", {{"M", "13"}, {"N", "61"}, {"K", "7"}, {"bias", "0"}, {"act", "none"}});
  CHECK(d1.to_text() == d2.to_text());
  CHECK(d1.workload_key() == d2.workload_key());

  // Different params: different text and key.
  ComputeDAG c = build_op("matmul", {{"M", "61"}, {"N", "7"}, {"K", "11"}});
  CHECK(c.to_text() != a.to_text());
  CHECK(c.workload_key() != a.workload_key());
  ComputeDAG g = build_op("dense", {{"M", "13"}, {"N", "61"}, {"K", "7"}, {"act", "gelu"}});
  CHECK(g.workload_key() != d1.workload_key());

  // A matmul built by hand is the template's: same text, same key.
  Operation ha, hb, hc;
  ha.name = "A";
  ha.is_placeholder = true;
  ha.shape = {61, 13};
  hb.name = "B";
  hb.is_placeholder = true;
  hb.shape = {13, 7};
  hc.name = "C";
  hc.shape = {61, 7};
  hc.axes = {{"i", 61}, {"j", 7}};
  hc.reduce_axes = {{"k", 13}};
  hc.reduce = ReduceKind::Sum;
  hc.body = make_tensor_read("A", {make_var("i"), make_var("k")}) * make_tensor_read("B", {make_var("k"), make_var("j")});
  ComputeDAG hand({ha, hb, hc});
  CHECK(hand.to_text() == a.to_text());
  CHECK(hand.workload_key() == a.workload_key());
  // One extent more or less is another workload.
  CHECK(chain_dag().workload_key() != chain_dag(13, 60).workload_key());
}

TEST_CASE("DAG: structure queries", "[dag]") {
  ComputeDAG dag = build_op("layernorm", {{"rows", "13"}, {"cols", "127"}});
  CHECK(dag.inputs() == names({"X", "gamma", "beta"}));
  CHECK(dag.outputs() == names({"Y"}));
  CHECK(dag.consumers("mean") == names({"var_sum", "Y"}));
  CHECK(dag.index_of("nope") == -1);
  CHECK_THROWS_AS(dag.op("nope"), InputError);
  CHECK(dag.op("mean_sum").reduce == ReduceKind::Sum);
  CHECK(dag.op("Y").num_elements() == 13 * 127);
  ComputeDAG mm = matmul_dag(61, 7, 13);
  CHECK(mm.flops() == 2.0 * 61 * 7 * 13);

  // Validation: an unknown tensor and a rank mismatch name the op.
  Operation a;
  a.name = "A";
  a.is_placeholder = true;
  a.shape = {4};
  Operation bad;
  bad.name = "B";
  bad.shape = {4};
  bad.axes = {{"i", 4}};
  bad.body = make_tensor_read("Q", {make_var("i")});
  try {
    ComputeDAG({a, bad});
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("B") != std::string::npos);
  }
  bad.body = make_tensor_read("A", {make_var("i"), make_var("i")});
  CHECK_THROWS_AS(ComputeDAG({a, bad}), InputError);
  Operation dup = a;
  CHECK_THROWS_AS(ComputeDAG({a, dup}), InputError);
}

TEST_CASE("Expr: structural equality and hashing", "[expr]") {
  Expr i = make_var("i"), j = make_var("j");
  Expr e1 = make_tensor_read("A", {i * make_int(4) + j}) * make_float(2.0);
  Expr e2 = make_tensor_read("A", {i * make_int(4) + j}) * make_float(2.0);
  CHECK(equal(e1, e2));
  CHECK(e1->hash == e2->hash);
  CHECK(to_string(e1) == to_string(e2));

  Expr e3 = make_tensor_read("A", {i * make_int(4) + make_var("k")}) * make_float(2.0);
  Expr e4 = make_tensor_read("B", {i * make_int(4) + j}) * make_float(2.0);
  Expr e5 = make_tensor_read("A", {j + i * make_int(4)}) * make_float(2.0);  // operands swapped
  CHECK_FALSE(equal(e1, e3));
  CHECK_FALSE(equal(e1, e4));
  CHECK_FALSE(equal(e1, e5));
  CHECK_FALSE(equal(make_int(1), make_float(1.0)));
  CHECK_FALSE(equal(make_int(2), make_int(3)));
  CHECK_FALSE(equal(make_var("i", kInt64), make_var("i", kFloat32)));
  CHECK(equal(make_int(3, 4), make_int(3, 4)));
  CHECK_FALSE(equal(make_int(3, 4), make_int(3, 8)));
  CHECK(make_call(MathFn::Exp, {make_float(1.0)})->hash == make_call(MathFn::Exp, {make_float(1.0)})->hash);
  CHECK_FALSE(equal(make_call(MathFn::Exp, {make_float(1.0)}), make_call(MathFn::Log, {make_float(1.0)})));

  // Hashes spread over a family of distinct expressions.
  std::unordered_set<size_t> hashes;
  for (int k = 0; k < 200; ++k) hashes.insert((i * make_int(k) + j)->hash);
  CHECK(hashes.size() >= 190);

  // Types and checks.
  CHECK((i + j)->type == kInt64);
  CHECK((i < j)->type == kBool);
  CHECK(make_ramp(i, make_int(1), 8)->type == Type{DType::Int64, 8});
  CHECK(make_broadcast(make_float(1.0), 4)->type == Type{DType::Float32, 4});
  CHECK_THROWS(make_binary(ExprOp::Add, i, make_float(1.0)));

  // Queries and rewriting.
  CHECK(uses_var(e1, "j"));
  CHECK_FALSE(uses_var(e1, "k"));
  CHECK(tensors_read(e1) == names({"A"}));
  Expr sub = substitute(e1, "j", make_int(3));
  CHECK(equal(sub, make_tensor_read("A", {i * make_int(4) + make_int(3)}) * make_float(2.0)));
  CHECK(equal(e1, e2));  // substitute did not change the original
  CHECK(is_int_value(make_int(5), 5));
  CHECK(as_int(make_float(5.0)) == nullptr);
}
