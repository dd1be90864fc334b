#include "schedule/lower/insert_barriers.h"

#include <set>

namespace tessel {

namespace {

std::set<std::string> buffers_written(const Stmt& s) {
  std::set<std::string> out;
  visit(s, [&](const Stmt& n) {
    if (n->op == StmtOp::Store || n->op == StmtOp::Provide) out.insert(n->buffer);
    if (n->op == StmtOp::Matrix && n->matrix_op == MatrixOpKind::Store) out.insert(n->operands[0].buffer);
  });
  return out;
}

bool binds_threads(const Stmt& s) {
  bool found = false;
  visit(s, [&](const Stmt& n) { found = found || (n->op == StmtOp::For && n->for_kind == ForKind::ThreadBound); });
  return found;
}

bool reads_any(const Stmt& s, const std::set<std::string>& buffers) {
  bool found = false;
  visit_exprs(s, [&](const Expr& e) {
    for (const std::string& t : tensors_read(e)) found = found || buffers.count(t) > 0;
  });
  visit(s, [&](const Stmt& n) {
    if (n->op == StmtOp::Matrix)
      for (const std::string& t : matrix_reads(*n)) found = found || buffers.count(t) > 0;
  });
  return found;
}

class BarrierInserter {
 public:
  Stmt run(const Stmt& s, bool in_loop) {
    switch (s->op) {
      case StmtOp::For: {
        bool thread = s->for_kind == ForKind::ThreadBound && s->thread_tag.rfind("threadIdx", 0) == 0;
        if (thread) ++thread_depth_;
        Stmt body = run(s->body[0], in_loop || s->for_kind != ForKind::ThreadBound);
        if (thread) --thread_depth_;
        return with_body(s, {body});
      }
      case StmtOp::Allocate: {
        bool shared = s->scope == MemScope::Shared;
        if (shared) shared_.insert(s->buffer);
        Stmt body = run(s->body[0], in_loop);
        if (shared) shared_.erase(s->buffer);
        return with_body(s, {body});
      }
      case StmtOp::Seq: return run_seq(s, in_loop);
      default: break;
    }
    if (s->body.empty()) return s;
    std::vector<Stmt> body;
    for (const Stmt& b : s->body) body.push_back(run(b, in_loop));
    return with_body(s, body);
  }

 private:
  // In a sequence, a barrier goes right before the first statement that reads shared data written
  // by an earlier one; inside a loop, another goes before the first such write, so the previous
  // iteration's readers are done before the buffer is overwritten.
  Stmt run_seq(const Stmt& s, bool in_loop) {
    std::vector<Stmt> items;
    for (const Stmt& b : s->body) items.push_back(run(b, in_loop));
    std::vector<Stmt> out;
    std::set<std::string> pending;  // shared buffers written since the last barrier
    bool wrote_any = false;
    for (const Stmt& item : items) {
      if (!pending.empty() && reads_any(item, pending)) {
        out.push_back(make_barrier());
        pending.clear();
      }
      // Inside a thread loop, a plain statement is the thread's own work on its own elements; only
      // a cooperative fetch (a nest that binds the thread index again) shares data across threads.
      std::set<std::string> shared_written;
      if (thread_depth_ == 0 || binds_threads(item))
        for (const std::string& b : buffers_written(item))
          if (shared_.count(b)) shared_written.insert(b);
      bool read_later = false;
      for (const Stmt& later : items) read_later = read_later || (&later > &item && reads_any(later, shared_written));
      if (read_later && in_loop && !wrote_any) out.push_back(make_barrier());
      if (read_later) {
        wrote_any = true;
        pending.insert(shared_written.begin(), shared_written.end());
      }
      out.push_back(item);
    }
    return make_seq(out);
  }

  std::set<std::string> shared_;
  int thread_depth_ = 0;
};

}  // namespace

Stmt insert_barriers(const Stmt& s) { return BarrierInserter().run(s, false); }

}  // namespace tessel
