// Helpers shared by the schedule tests: small DAGs, a full fingerprint of a State, and checks for
// rejected steps and JSON round trips.
#pragma once

#include <catch2/catch.hpp>

#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "schedule/ir/stmt.h"
#include "schedule/lower/lower.h"
#include "schedule/ops/op_library.h"
#include "schedule/state/step.h"
#include "schedule/state/trace.h"
#include "schedule/te/dag.h"
#include "schedule/te/error.h"

namespace tessel::schedtest {

inline ComputeDAG matmul_dag(int64_t m = 61, int64_t n = 7, int64_t k = 13) {
  return build_op("matmul", {{"M", std::to_string(m)}, {"N", std::to_string(n)}, {"K", std::to_string(k)}});
}

// A -> P (elementwise, P[i, j] = A[i, j] * 2) -> C (C[i, j] = P[i, j] + 1): a two-stage chain whose
// intermediate can be inlined, computed at or aligned.
inline ComputeDAG chain_dag(int64_t m = 13, int64_t n = 61) {
  Operation a;
  a.name = "A";
  a.is_placeholder = true;
  a.shape = {m, n};
  Operation p;
  p.name = "P";
  p.shape = {m, n};
  p.axes = {{"i", m}, {"j", n}};
  p.body = make_tensor_read("A", {make_var("i"), make_var("j")}) * make_float(2.0);
  Operation c;
  c.name = "C";
  c.shape = {m, n};
  c.axes = {{"x", m}, {"y", n}};
  c.body = make_tensor_read("P", {make_var("x"), make_var("y")}) + make_float(1.0);
  return ComputeDAG({a, p, c});
}

// Everything a step can change in a State, not only what to_string() prints.
inline std::string fingerprint(const State& s) {
  std::ostringstream out;
  out << s.to_string();
  for (size_t i = 0; i < s.ops().size(); ++i) {
    const Operation& op = s.ops()[i];
    const Stage& st = s.stages()[i];
    out << "op " << op.name << " ph=" << op.is_placeholder << " reduce=" << to_string(op.reduce);
    if (op.body) out << " body=" << to_string(op.body);
    out << " shape=";
    for (int64_t e : op.shape) out << e << ",";
    out << " raxes=";
    for (const Axis& a : op.reduce_axes) out << a.name << ":" << a.extent << ",";
    out << " vars=";
    for (const IterVar& v : st.vars) out << v.name << ":" << v.extent << ":" << to_string(v.annotation) << ",";
    out << " rel=" << st.relations.size() << " loc=" << static_cast<int>(st.loc) << " at=" << st.attach_stage << "."
        << st.attach_loop << " unroll=" << st.auto_unroll_max_step << "@" << st.pragma_loop << " align=";
    for (const StorageAlign& a : st.storage_align) out << a.axis << "/" << a.factor << "/" << a.offset << ",";
    out << " prefetch=";
    for (const PrefetchHint& p : st.prefetches) out << p.tensor << "@" << p.loop << "+" << p.offset << ",";
    out << "\n";
  }
  return out.str();
}

inline State apply_all(const ComputeDAG& dag, const std::vector<Step>& steps) {
  State s(dag);
  for (size_t i = 0; i < steps.size(); ++i) apply_step(s, steps[i], static_cast<int>(i));
  return s;
}

// Applies `prefix`, then `bad` as step number prefix.size(); requires a ScheduleError naming that
// step and containing `reason`, with the State left exactly as it was. Also checks replay() of the
// whole trace reports the same step index.
inline void require_rejected(const ComputeDAG& dag, const std::vector<Step>& prefix, const Step& bad,
                             const std::string& reason) {
  State s = apply_all(dag, prefix);
  const std::string before = fingerprint(s);
  const int index = static_cast<int>(prefix.size());
  INFO("bad step: " << bad.describe());
  bool thrown = false;
  try {
    apply_step(s, bad, index);
  } catch (const ScheduleError& e) {
    thrown = true;
    const std::string what = e.what();
    INFO("what(): " << what);
    CHECK(e.step_index() == index);
    CHECK(what.find("step " + std::to_string(index)) != std::string::npos);
    CHECK(what.find(bad.describe()) != std::string::npos);
    CHECK(what.find(reason) != std::string::npos);
  }
  REQUIRE(thrown);
  CHECK(fingerprint(s) == before);

  Trace t{prefix};
  t.steps.push_back(bad);
  bool replay_thrown = false;
  try {
    replay(dag, t);
  } catch (const ScheduleError& e) {
    replay_thrown = true;
    CHECK(e.step_index() == index);
  }
  CHECK(replay_thrown);
}

// trace -> JSON -> trace gives the same JSON text and the same replayed State.
inline void require_round_trip(const ComputeDAG& dag, const Trace& trace) {
  const std::string json = trace_to_json(trace);
  INFO("json: " << json);
  Trace back = trace_from_json(json);
  CHECK(trace_to_json(back) == json);
  CHECK(trace_to_json(trace_from_json(trace_to_json(trace, true))) == json);
  REQUIRE(back.steps.size() == trace.steps.size());
  for (size_t i = 0; i < trace.steps.size(); ++i) CHECK(back.steps[i].describe() == trace.steps[i].describe());
  CHECK(fingerprint(replay(dag, back)) == fingerprint(replay(dag, trace)));
  CHECK(replay(dag, back).to_string() == replay(dag, trace).to_string());
}

// The selects in a lowered statement's expressions (an inlined padding's bounds tests left inside).
inline int count_selects(const Stmt& s) {
  int n = 0;
  visit_exprs(s, [&](const Expr& e) {
    rewrite(e, [&](const Expr& x) -> Expr {
      n += x->op == ExprOp::Select;
      return nullptr;
    });
  });
  return n;
}

inline std::vector<int64_t> leaf_extents(const Stage& s) {
  std::vector<int64_t> out;
  for (int l : s.leaves) out.push_back(s.vars[l].extent);
  return out;
}
inline std::vector<Annotation> leaf_annotations(const Stage& s) {
  std::vector<Annotation> out;
  for (int l : s.leaves) out.push_back(s.vars[l].annotation);
  return out;
}
inline std::vector<std::string> names(std::initializer_list<const char*> l) {
  return std::vector<std::string>(l.begin(), l.end());
}

// Pre-order list of every statement in the lowered function.
inline std::vector<Stmt> all_stmts(const Stmt& s) {
  std::vector<Stmt> out;
  visit(s, [&](const Stmt& x) { out.push_back(x); });
  return out;
}
inline int count_op(const Stmt& s, StmtOp op) {
  int n = 0;
  visit(s, [&](const Stmt& x) { n += x->op == op; });
  return n;
}

inline int count_occurrences(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

}  // namespace tessel::schedtest
