#include "schedule/lower/verify.h"

#include <set>

#include "schedule/te/error.h"

namespace tessel {

namespace {

class Verifier {
 public:
  Verifier(const LoweredFunc& f, LowerTarget target) : target_(target) {
    for (const BufferParam& p : f.params) buffers_.insert(p.name);
  }

  void run(const Stmt& s) {
    switch (s->op) {
      case StmtOp::For:
        if (s->for_kind == ForKind::Vectorized) fail("a vectorized loop survived vectorization: " + s->var);
        if (s->for_kind == ForKind::ThreadBound && target_ == LowerTarget::Cpu)
          throw ScheduleError(-1, "annotate(" + s->var + ", " + s->thread_tag + ")",
                              "loop " + s->var + " is bound to " + s->thread_tag +
                                  ", which the CPU target does not have (use --target cuda)");
        check(s->min);
        check(s->extent);
        if (!vars_.insert(s->var).second) fail("loop variable " + s->var + " is bound twice");
        run(s->body[0]);
        vars_.erase(s->var);
        return;
      case StmtOp::Allocate:
        if (!buffers_.insert(s->buffer).second) fail("buffer " + s->buffer + " is allocated twice");
        run(s->body[0]);
        buffers_.erase(s->buffer);
        return;
      case StmtOp::Provide: fail("a tensor access survived storage flattening: " + s->buffer);
      case StmtOp::Store:
        if (!buffers_.count(s->buffer)) fail("store to unknown buffer " + s->buffer);
        check(s->indices[0]);
        check(s->value);
        return;
      case StmtOp::IfThenElse:
        check(s->cond);
        for (const Stmt& b : s->body) run(b);
        return;
      case StmtOp::Seq:
        for (const Stmt& b : s->body) run(b);
        return;
      case StmtOp::Barrier:
        if (target_ == LowerTarget::Cpu) fail("barrier on the CPU target");
        return;
    }
  }

 private:
  void check(const Expr& e) {
    switch (e->op) {
      case ExprOp::Var:
        if (!vars_.count(e->name)) fail("variable " + e->name + " is used outside its loop");
        break;
      case ExprOp::TensorRead: fail("a tensor read survived storage flattening: " + e->name);
      case ExprOp::Load:
        if (!buffers_.count(e->name)) fail("load from unknown buffer " + e->name);
        break;
      default: break;
    }
    for (const Expr& a : e->args) check(a);
  }

  [[noreturn]] void fail(const std::string& why) { throw CompileError("lowered code is invalid: " + why); }

  LowerTarget target_;
  std::set<std::string> buffers_;
  std::set<std::string> vars_;
};

}  // namespace

void verify_lowered(const LoweredFunc& func, LowerTarget target) { Verifier(func, target).run(func.body); }

}  // namespace tessel
