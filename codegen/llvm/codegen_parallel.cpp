// Parallel loops: the body is outlined into `void body(i64 i, ptr closure)` and run through
// tessel_parallel_for(extent, body, &closure).
//
// The closure is a struct of everything the body reads from the enclosing function: the loop's min,
// the outer loop variables and the buffer pointers it uses. The outlined wrapper unpacks it and calls
// an inner function whose buffer arguments are noalias, so that the body keeps the aliasing facts of
// the enclosing function after inlining.
#include <algorithm>
#include <set>

#include "codegen/llvm/codegen_llvm.h"
#include "codegen/llvm/llvm_internal.h"
#include "schedule/te/error.h"

namespace tessel::llvm_backend {

namespace {

// Names of the variables and buffers that `body` refers to.
void collect_uses(const Stmt& body, std::set<std::string>& vars, std::set<std::string>& buffers) {
  visit(body, [&](const Stmt& s) {
    if (s->op == StmtOp::Store) buffers.insert(s->buffer);
  });
  visit_exprs(body, [&](const Expr& e) {
    for (const std::string& v : free_vars(e)) vars.insert(v);
    for (const std::string& b : tensors_read(e)) buffers.insert(b);
  });
}

}  // namespace

void CodeGenLLVM::emit_parallel_for(const Stmt& s) {
  std::set<std::string> used_vars, used_buffers;
  collect_uses(s->body[0], used_vars, used_buffers);
  // Captured: what is defined outside the loop. Names defined inside (inner loops, allocations) are
  // not in scope yet and stay local to the outlined function.
  std::vector<std::string> vars, buffers;
  for (const std::string& v : used_vars)
    if (scope_.vars.count(v)) vars.push_back(v);
  for (const std::string& b : used_buffers)
    if (scope_.buffers.count(b)) buffers.push_back(b);

  llvm::Type* i64 = b_.getInt64Ty();
  llvm::Type* ptr = b_.getPtrTy();
  std::vector<llvm::Type*> fields(1 + vars.size(), i64);
  fields.insert(fields.end(), buffers.size(), ptr);
  auto* closure_type = llvm::StructType::get(ctx_, fields);

  // The closure, filled in the enclosing function.
  llvm::Value* min = emit_expr(s->min);
  llvm::Value* extent = emit_expr(s->extent);
  llvm::AllocaInst* closure = entry_alloca(closure_type, s->var + ".closure");
  std::vector<llvm::Value*> captured{min};
  for (const std::string& v : vars) captured.push_back(scope_.vars.at(v));
  for (const std::string& b : buffers) captured.push_back(scope_.buffers.at(b).ptr);
  for (size_t i = 0; i < captured.size(); ++i)
    b_.CreateStore(captured[i], b_.CreateStructGEP(closure_type, closure, i));

  // The inner function: (i, min, vars..., noalias buffers...).
  std::string base = func_name_ + "_parallel" + std::to_string(parallel_count_++);
  std::vector<llvm::Type*> inner_params{i64};
  inner_params.insert(inner_params.end(), fields.begin(), fields.end());
  auto* inner_type = llvm::FunctionType::get(b_.getVoidTy(), inner_params, false);
  auto* inner = llvm::Function::Create(inner_type, llvm::Function::InternalLinkage, base + "_body", module_);
  add_target_attributes(inner);
  Scope inner_scope;
  inner_scope.function = inner;
  inner->getArg(0)->setName(s->var + ".i");
  inner->getArg(1)->setName(s->var + ".min");
  for (size_t i = 0; i < vars.size(); ++i) {
    llvm::Argument* arg = inner->getArg(2 + i);
    arg->setName(vars[i]);
    inner_scope.vars[vars[i]] = arg;
  }
  for (size_t i = 0; i < buffers.size(); ++i) {
    llvm::Argument* arg = inner->getArg(2 + vars.size() + i);
    arg->setName(buffers[i]);
    arg->addAttr(llvm::Attribute::NoAlias);
    {
      Buffer inner = scope_.buffers.at(buffers[i]);
      inner.ptr = arg;
      inner_scope.buffers[buffers[i]] = inner;
    }
  }

  // Emit the body into the inner function, then come back.
  llvm::IRBuilderBase::InsertPoint saved_ip = b_.saveIP();
  Scope saved_scope = std::move(scope_);
  scope_ = std::move(inner_scope);
  b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", inner));
  scope_.vars[s->var] = b_.CreateAdd(inner->getArg(1), inner->getArg(0), s->var, false, true);
  emit_stmt(s->body[0]);
  b_.CreateRetVoid();
  scope_ = std::move(saved_scope);

  // The wrapper with the runtime's signature: unpacks the closure and calls the inner function.
  auto* wrapper_type = llvm::FunctionType::get(b_.getVoidTy(), {i64, ptr}, false);
  auto* wrapper = llvm::Function::Create(wrapper_type, llvm::Function::InternalLinkage, base, module_);
  add_target_attributes(wrapper);
  b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", wrapper));
  std::vector<llvm::Value*> args{wrapper->getArg(0)};
  for (size_t i = 0; i < fields.size(); ++i)
    args.push_back(b_.CreateLoad(fields[i], b_.CreateStructGEP(closure_type, wrapper->getArg(1), i)));
  b_.CreateCall(inner, args);
  b_.CreateRetVoid();

  b_.restoreIP(saved_ip);
  auto* runtime_type = llvm::FunctionType::get(b_.getVoidTy(), {i64, ptr, ptr}, false);
  llvm::Function* runtime = declare_runtime("tessel_parallel_for", runtime_type);
  b_.CreateCall(runtime, {extent, wrapper, closure});
}

}  // namespace tessel::llvm_backend
