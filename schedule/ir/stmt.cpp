// Construction, traversal and printing of the loop-nest IR.
#include "schedule/ir/stmt.h"

#include <sstream>

#include "schedule/te/error.h"

namespace tessel {

int64_t num_elements(const BufferParam& p) {
  int64_t n = 1;
  for (int64_t e : p.shape) n *= e;
  return n;
}

const char* to_string(ForKind kind) {
  switch (kind) {
    case ForKind::Serial: return "for";
    case ForKind::Parallel: return "parallel";
    case ForKind::Vectorized: return "vectorized";
    case ForKind::Unrolled: return "unrolled";
    case ForKind::ThreadBound: return "bind";
  }
  return "?";
}

const char* to_string(MemScope scope) {
  switch (scope) {
    case MemScope::Global: return "global";
    case MemScope::Shared: return "shared";
    case MemScope::Local: return "local";
    case MemScope::MatrixA: return "matrix_a";
    case MemScope::MatrixB: return "matrix_b";
    case MemScope::Accumulator: return "accumulator";
    case MemScope::WgAccumulator: return "wg_accumulator";
  }
  return "?";
}

const char* to_string(MatrixOpKind kind) {
  switch (kind) {
    case MatrixOpKind::FillZero: return "fill_zero";
    case MatrixOpKind::LoadA: return "load_a";
    case MatrixOpKind::LoadB: return "load_b";
    case MatrixOpKind::MmaSync: return "mma_sync";
    case MatrixOpKind::Store: return "store_matrix";
    case MatrixOpKind::WgmmaMma: return "wgmma";
    case MatrixOpKind::WgmmaFence: return "wgmma_fence";
    case MatrixOpKind::WgmmaCommit: return "wgmma_commit";
    case MatrixOpKind::WgmmaWait: return "wgmma_wait";
  }
  return "?";
}

namespace {
Stmt finish(StmtNode node) { return std::make_shared<const StmtNode>(std::move(node)); }
}  // namespace

Stmt make_for(const std::string& var, Expr min, Expr extent, ForKind kind, Stmt body,
              const std::string& thread_tag, int pragma_unroll_max_step) {
  TESSEL_CHECK(min && extent && body, "incomplete for loop over " + var);
  TESSEL_CHECK(min->type == kInt64 && extent->type == kInt64, "loop bounds of " + var + " are not int64");
  StmtNode n{StmtOp::For};
  n.var = var;
  n.min = std::move(min);
  n.extent = std::move(extent);
  n.for_kind = kind;
  n.thread_tag = thread_tag;
  n.pragma_unroll_max_step = pragma_unroll_max_step;
  n.body = {std::move(body)};
  return finish(std::move(n));
}

Stmt make_provide(const std::string& tensor, std::vector<Expr> indices, Expr value) {
  TESSEL_CHECK(value != nullptr, "provide of a null value to " + tensor);
  StmtNode n{StmtOp::Provide};
  n.buffer = tensor;
  n.indices = std::move(indices);
  n.value = std::move(value);
  return finish(std::move(n));
}

Stmt make_store(const std::string& buffer, Expr index, Expr value) {
  TESSEL_CHECK(index && value, "incomplete store to " + buffer);
  TESSEL_CHECK(index->type.lanes == value->type.lanes, "store index and value lanes differ in " + buffer);
  StmtNode n{StmtOp::Store};
  n.buffer = buffer;
  n.indices = {std::move(index)};
  n.value = std::move(value);
  return finish(std::move(n));
}

Stmt make_allocate(const std::string& buffer, DType dtype, std::vector<int64_t> extents, MemScope scope,
                   Stmt body) {
  TESSEL_CHECK(body != nullptr, "allocate of " + buffer + " without a body");
  StmtNode n{StmtOp::Allocate};
  n.buffer = buffer;
  n.dtype = dtype;
  n.extents = std::move(extents);
  n.scope = scope;
  n.body = {std::move(body)};
  return finish(std::move(n));
}

Stmt make_if(Expr cond, Stmt then_case, Stmt else_case) {
  TESSEL_CHECK(cond && then_case, "incomplete if");
  TESSEL_CHECK(cond->type == kBool, "if condition is not a scalar bool: " + to_string(cond));
  StmtNode n{StmtOp::IfThenElse};
  n.cond = std::move(cond);
  n.body = {std::move(then_case)};
  if (else_case) n.body.push_back(std::move(else_case));
  return finish(std::move(n));
}

Stmt make_seq(std::vector<Stmt> stmts) {
  std::vector<Stmt> flat;
  for (Stmt& s : stmts) {
    if (!s) continue;
    if (s->op == StmtOp::Seq) flat.insert(flat.end(), s->body.begin(), s->body.end());
    else flat.push_back(std::move(s));
  }
  if (flat.size() == 1) return flat[0];
  StmtNode n{StmtOp::Seq};
  n.body = std::move(flat);
  return finish(std::move(n));
}

Stmt make_barrier() { return finish(StmtNode{StmtOp::Barrier}); }

Stmt make_commit_copies(int64_t wait_groups) {
  StmtNode n{StmtOp::CommitCopies};
  n.extent = make_int(wait_groups);
  n.async_copy = true;
  return finish(std::move(n));
}

Stmt make_wait_copies(int64_t wait_groups) {
  TESSEL_CHECK(wait_groups >= 0, "a wait for copies needs a group count");
  StmtNode n{StmtOp::CommitCopies};
  n.extent = make_int(wait_groups);
  n.async_copy = false;
  return finish(std::move(n));
}

Stmt make_prefetch(const std::string& buffer, Expr index, int64_t elements) {
  TESSEL_CHECK(index && index->type == kInt64, "prefetch of " + buffer + " needs a scalar int64 index");
  TESSEL_CHECK(elements > 0, "prefetch of " + buffer + " needs a positive element count");
  StmtNode n{StmtOp::Prefetch};
  n.buffer = buffer;
  n.indices = {std::move(index)};
  n.extent = make_int(elements);
  return finish(std::move(n));
}

Stmt make_allreduce(const std::string& buffer, std::vector<Expr> indices, ExprOp combiner,
                    const std::string& thread_tag, int64_t threads) {
  TESSEL_CHECK(combiner == ExprOp::Add || combiner == ExprOp::Max || combiner == ExprOp::Min,
               "allreduce of " + buffer + " needs an Add, Max or Min combiner");
  TESSEL_CHECK(threads > 0, "allreduce of " + buffer + " needs a positive thread count");
  StmtNode n{StmtOp::AllReduce};
  n.buffer = buffer;
  n.indices = std::move(indices);
  n.combiner = combiner;
  n.thread_tag = thread_tag;
  n.extent = make_int(threads);
  return finish(std::move(n));
}

Stmt make_matrix(MatrixOpKind kind, std::vector<MatrixOperand> operands, const std::string& row_var,
                 const std::string& col_var) {
  static constexpr size_t kCounts[] = {1, 2, 2, 3, 2, 3, 0, 0, 0};
  TESSEL_CHECK(operands.size() == kCounts[static_cast<int>(kind)],
               std::string("wrong operand count for matrix operation ") + to_string(kind));
  StmtNode n{StmtOp::Matrix};
  n.matrix_op = kind;
  n.operands = std::move(operands);
  n.var = row_var;
  n.col_var = col_var;
  return finish(std::move(n));
}

Stmt make_warpgroup_sync(MatrixOpKind kind, int64_t pending) {
  TESSEL_CHECK(kind == MatrixOpKind::WgmmaFence || kind == MatrixOpKind::WgmmaCommit || kind == MatrixOpKind::WgmmaWait,
               std::string("not a warpgroup synchronization: ") + to_string(kind));
  StmtNode n{StmtOp::Matrix};
  n.matrix_op = kind;
  if (kind == MatrixOpKind::WgmmaWait) n.extent = make_int(pending);
  return finish(std::move(n));
}

std::vector<std::string> matrix_reads(const StmtNode& s) {
  std::vector<std::string> out;
  const bool accumulates = s.matrix_op == MatrixOpKind::MmaSync || s.matrix_op == MatrixOpKind::WgmmaMma;
  for (size_t i = accumulates ? 0 : 1; i < s.operands.size(); ++i)
    out.push_back(s.operands[i].buffer);
  return out;
}

Stmt with_body(const Stmt& s, std::vector<Stmt> body) {
  if (s->op == StmtOp::Seq) return make_seq(std::move(body));
  StmtNode n = *s;
  n.body = std::move(body);
  return finish(std::move(n));
}

Stmt rewrite(const Stmt& s, const ExprRewriter& expr_fn, const StmtRewriter& stmt_fn) {
  StmtNode n = *s;
  bool changed = false;
  auto fix = [&](Expr& e) {
    if (!e || !expr_fn) return;
    Expr r = rewrite(e, expr_fn);
    changed |= r != e;
    e = r;
  };
  fix(n.min);
  fix(n.extent);
  fix(n.value);
  fix(n.cond);
  for (Expr& i : n.indices) fix(i);
  for (MatrixOperand& o : n.operands)
    for (Expr& i : o.indices) fix(i);
  for (Stmt& b : n.body) {
    Stmt r = rewrite(b, expr_fn, stmt_fn);
    changed |= r != b;
    b = r;
  }
  Stmt node = s;
  if (changed) node = s->op == StmtOp::Seq ? make_seq(std::move(n.body)) : finish(std::move(n));
  if (stmt_fn) {
    Stmt replaced = stmt_fn(node);
    if (replaced) return replaced;
  }
  return node;
}

void visit(const Stmt& s, const std::function<void(const Stmt&)>& f) {
  f(s);
  for (const Stmt& b : s->body) visit(b, f);
}

void visit_exprs(const Stmt& s, const std::function<void(const Expr&)>& f) {
  visit(s, [&](const Stmt& n) {
    for (const Expr* e : {&n->min, &n->extent, &n->value, &n->cond})
      if (*e) f(*e);
    for (const Expr& i : n->indices) f(i);
    for (const MatrixOperand& o : n->operands)
      for (const Expr& i : o.indices) f(i);
  });
}

namespace {

void print(std::ostringstream& out, const Stmt& s, int indent) {
  std::string pad(indent * 2, ' ');
  switch (s->op) {
    case StmtOp::For: {
      out << pad << to_string(s->for_kind) << " (" << s->var << ", " << to_string(s->min) << ", "
          << to_string(s->extent) << ")";
      if (!s->thread_tag.empty()) out << " " << s->thread_tag;
      if (s->pragma_unroll_max_step) out << " auto_unroll_max_step=" << s->pragma_unroll_max_step;
      if (s->double_buffer) out << " double_buffer";
      if (s->double_buffer && s->pipeline_stages != 2) out << "=" << s->pipeline_stages;
      out << " {\n";
      print(out, s->body[0], indent + 1);
      out << pad << "}\n";
      return;
    }
    case StmtOp::Provide: {
      out << pad << s->buffer << "[";
      for (size_t i = 0; i < s->indices.size(); ++i) out << (i ? ", " : "") << to_string(s->indices[i]);
      out << "] = " << to_string(s->value) << "\n";
      return;
    }
    case StmtOp::Store:
      out << pad << s->buffer << "[" << to_string(s->indices[0]) << "] " << (s->async_copy ? "<-async " : "= ")
          << to_string(s->value) << "\n";
      return;
    case StmtOp::Allocate: {
      out << pad << "allocate " << s->buffer << "[" << to_string(s->dtype) << " * ";
      for (size_t i = 0; i < s->extents.size(); ++i) out << (i ? " * " : "") << s->extents[i];
      out << "], " << to_string(s->scope);
      if (s->swizzle_cols) out << ", swizzled " << s->swizzle_rows << " x " << s->swizzle_cols;
      out << "\n";
      print(out, s->body[0], indent);
      return;
    }
    case StmtOp::IfThenElse:
      out << pad << "if (" << to_string(s->cond) << ") {\n";
      print(out, s->body[0], indent + 1);
      if (s->body.size() > 1) {
        out << pad << "} else {\n";
        print(out, s->body[1], indent + 1);
      }
      out << pad << "}\n";
      return;
    case StmtOp::Seq:
      for (const Stmt& b : s->body) print(out, b, indent);
      return;
    case StmtOp::Barrier: out << pad << "barrier()\n"; return;
    case StmtOp::CommitCopies:
      out << pad << (s->async_copy ? "commit_copies(wait " : "wait_copies(") << to_string(s->extent) << ")\n";
      return;
    case StmtOp::AllReduce: {
      out << pad << s->buffer << "[";
      for (size_t i = 0; i < s->indices.size(); ++i) out << (i ? ", " : "") << to_string(s->indices[i]);
      const char* kind = s->combiner == ExprOp::Add ? "sum" : s->combiner == ExprOp::Max ? "max" : "min";
      out << "] = allreduce_" << kind << "(over " << s->thread_tag << ", " << to_string(s->extent) << ")\n";
      return;
    }
    case StmtOp::Matrix: {
      out << pad << to_string(s->matrix_op) << "(";
      for (size_t k = 0; k < s->operands.size(); ++k) {
        const MatrixOperand& o = s->operands[k];
        out << (k ? ", " : "") << o.buffer << "[";
        for (size_t i = 0; i < o.indices.size(); ++i) out << (i ? ", " : "") << to_string(o.indices[i]);
        out << "]";
        if (o.stride) out << (o.row_major ? " row " : " col ") << o.stride;
      }
      if (!s->var.empty()) out << "; tile " << s->var << ", " << s->col_var;
      if (s->matrix_op == MatrixOpKind::WgmmaWait) out << "pending " << to_string(s->extent);
      out << ")\n";
      return;
    }
    case StmtOp::Prefetch:
      out << pad << "prefetch " << s->buffer << "[" << to_string(s->indices[0]) << "], " << to_string(s->extent)
          << "\n";
      return;
  }
}

}  // namespace

std::string to_string(const Stmt& s) {
  std::ostringstream out;
  if (s) print(out, s, 0);
  return out.str();
}

std::string to_string(const LoweredFunc& f) {
  std::ostringstream out;
  out << "func " << f.name << "(";
  for (size_t i = 0; i < f.params.size(); ++i) {
    const BufferParam& p = f.params[i];
    out << (i ? ", " : "") << p.name << ": " << to_string(p.dtype) << "[";
    for (size_t d = 0; d < p.shape.size(); ++d) out << (d ? ", " : "") << p.shape[d];
    out << "]" << (p.is_output ? " out" : "");
  }
  out << ") {\n";
  print(out, f.body, 1);
  out << "}\n";
  return out.str();
}

}  // namespace tessel
