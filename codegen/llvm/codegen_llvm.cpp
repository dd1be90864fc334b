// LoweredFunc -> LLVM IR: statements and expressions.
//
// Shape of the output: `void name(void** args)` loads each buffer pointer from args and calls
// `name_impl(ptr noalias align 64 p0, ...)`, which holds the loop nest. The noalias arguments tell
// LLVM that distinct buffers never overlap (callers guarantee it, and 64-byte alignment); once the
// inliner merges the two, the facts survive as scoped alias metadata. Loops are SSA loops (a phi per
// loop variable) in rotated form, which is what LLVM's loop passes expect.
#include "codegen/llvm/codegen_llvm.h"

#include <algorithm>

#include "schedule/lower/arith.h"

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include "codegen/llvm/llvm_internal.h"
#include "codegen/llvm/vector_math.h"
#include "schedule/te/error.h"
#include "schedule/te/tensor_size.h"

namespace tessel::llvm_backend {

namespace {

constexpr int64_t kMaxStackAllocationBytes = 64 * 1024;
constexpr unsigned kBufferAlignment = 64;
constexpr int64_t kCacheLineBytes = 64;

// log2(v) when `e` is the constant v = 2^k > 0 (scalar or broadcast), else -1.
int power_of_two_log(const Expr& e) {
  const Expr& c = e->op == ExprOp::Broadcast ? e->args[0] : e;
  const int64_t* v = as_int(c);
  if (!v || *v <= 0 || (*v & (*v - 1)) != 0) return -1;
  int k = 0;
  while ((int64_t(1) << k) != *v) ++k;
  return k;
}

}  // namespace

CodeGenLLVM::CodeGenLLVM(llvm::Module& module, const LLVMOptions& options)
    : module_(module), ctx_(module.getContext()), options_(options), b_(module.getContext()) {
  // A multiply feeding an add may fuse into one FMA (one rounding instead of two), as C compilers
  // allow by default (-ffp-contract=on) and NVRTC does for the CUDA backend (--fmad=true): without
  // it a multiply-accumulate costs two instructions and a longer dependence chain (on AVX2 the
  // tuned matmul 1024^3 goes from fmul + fadd to vfmadd).
  // Results stay within the reference interpreter's tolerance; nothing else is relaxed.
  llvm::FastMathFlags flags;
  if (options_.fast_math) flags = llvm::FastMathFlags::getFast();
  else flags.setAllowContract(true);
  b_.setFastMathFlags(flags);
}

// A bfloat16 value is carried as its 16 bits (i16) and converted by hand (see emit_cast): LLVM's own
// bfloat conversions call a runtime function the system's libgcc does not have.
llvm::Type* CodeGenLLVM::value_type(Type t) {
  llvm::Type* elem = t.dtype == DType::Float32   ? b_.getFloatTy()
                     : t.dtype == DType::Float16 ? b_.getHalfTy()
                     : t.dtype == DType::BFloat16 ? b_.getInt16Ty()
                     : t.is_int()                 ? b_.getInt64Ty()
                                                  : b_.getInt1Ty();
  return t.lanes > 1 ? llvm::FixedVectorType::get(elem, t.lanes) : elem;
}

llvm::Type* CodeGenLLVM::memory_type(DType t) {
  switch (t) {
    case DType::Float32: return b_.getFloatTy();
    case DType::Int64: return b_.getInt64Ty();
    case DType::Float16: return b_.getHalfTy();
    case DType::BFloat16: return b_.getInt16Ty();
    case DType::Bool: break;
  }
  return b_.getInt8Ty();
}

const CodeGenLLVM::Buffer& CodeGenLLVM::lookup_buffer(const std::string& name) const {
  auto it = scope_.buffers.find(name);
  if (it == scope_.buffers.end())
    throw CompileError("llvm codegen: buffer '" + name + "' is neither a parameter nor allocated");
  return it->second;
}

llvm::AllocaInst* CodeGenLLVM::entry_alloca(llvm::Type* type, const std::string& name) {
  llvm::BasicBlock& entry = scope_.function->getEntryBlock();
  llvm::IRBuilder<> eb(&entry, entry.begin());
  llvm::AllocaInst* a = eb.CreateAlloca(type, nullptr, name);
  a->setAlignment(llvm::Align(kBufferAlignment));
  return a;
}

llvm::Function* CodeGenLLVM::declare_runtime(const std::string& name, llvm::FunctionType* type) {
  llvm::FunctionCallee callee = module_.getOrInsertFunction(name, type);
  return llvm::cast<llvm::Function>(callee.getCallee());
}

namespace {

// Outputs at least this large are streamed past the caches (see Buffer::streaming).
constexpr int64_t kStreamingBytes = int64_t(64) << 20;

int64_t param_bytes(const BufferParam& p) {
  int64_t n = dtype_bytes(p.dtype);
  for (int64_t e : p.shape) n *= e;
  return n;
}

bool is_write_only(const Stmt& body, const std::string& buffer) {
  bool read = false;
  visit_exprs(body, [&](const Expr& e) {
    if (!read)
      for (const std::string& t : tensors_read(e)) read |= t == buffer;
  });
  return !read;
}


}  // namespace

void CodeGenLLVM::generate(const LoweredFunc& func) {
  if (!func.body) throw CompileError("llvm codegen: function '" + func.name + "' has no body");
  func_name_ = func.name;
  llvm::Type* ptr = b_.getPtrTy();

  std::vector<llvm::Type*> param_types(func.params.size(), ptr);
  auto* impl_type = llvm::FunctionType::get(b_.getVoidTy(), param_types, false);
  auto* impl = llvm::Function::Create(impl_type, llvm::Function::InternalLinkage, func.name + "_impl", module_);
  add_target_attributes(impl);
  scope_ = Scope{};
  scope_.function = impl;
  for (size_t i = 0; i < func.params.size(); ++i) {
    llvm::Argument* arg = impl->getArg(i);
    arg->setName(func.params[i].name);
    arg->addAttr(llvm::Attribute::NoAlias);
    arg->addAttr(llvm::Attribute::getWithAlignment(ctx_, llvm::Align(kBufferAlignment)));
    Buffer buffer{arg, func.params[i].dtype};
    buffer.elements = 1;
    for (int64_t e : func.params[i].shape) buffer.elements *= e;
    buffer.streaming = func.params[i].is_output && is_write_only(func.body, func.params[i].name) &&
                       param_bytes(func.params[i]) >= kStreamingBytes;
    if (!scope_.buffers.emplace(func.params[i].name, buffer).second)
      throw CompileError("llvm codegen: duplicate parameter '" + func.params[i].name + "'");
  }
  b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", impl));
  emit_stmt(func.body);
  b_.CreateRetVoid();

  auto* outer_type = llvm::FunctionType::get(b_.getVoidTy(), {ptr}, false);
  auto* outer = llvm::Function::Create(outer_type, llvm::Function::ExternalLinkage, func.name, module_);
  add_target_attributes(outer);
  outer->getArg(0)->setName("args");
  b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", outer));
  std::vector<llvm::Value*> pointers;
  for (size_t i = 0; i < func.params.size(); ++i) {
    llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(ptr, outer->getArg(0), i);
    pointers.push_back(b_.CreateAlignedLoad(ptr, slot, llvm::Align(8), func.params[i].name));
  }
  b_.CreateCall(impl, pointers);
  b_.CreateRetVoid();

  std::string message;
  llvm::raw_string_ostream os(message);
  if (llvm::verifyModule(module_, &os))
    throw CompileError("llvm codegen produced invalid IR for '" + func.name + "': " + os.str());
}

// --- statements --------------------------------------------------------------------------------

void CodeGenLLVM::emit_stmt(const Stmt& s) {
  switch (s->op) {
    case StmtOp::For: return emit_for(s);
    case StmtOp::Store: return emit_store(s);
    case StmtOp::Allocate: return emit_allocate(s);
    case StmtOp::IfThenElse: return emit_if(s);
    case StmtOp::Seq:
      for (const Stmt& child : s->body) emit_stmt(child);
      return;
    case StmtOp::Provide:
      throw CompileError("llvm codegen: Provide to '" + s->buffer + "' reached codegen (storage not flattened)");
    case StmtOp::Barrier:
      throw CompileError("llvm codegen: a GPU barrier cannot run on the CPU target");
    case StmtOp::AllReduce:
      throw CompileError("llvm codegen: a reduction across GPU threads cannot run on the CPU target");
    case StmtOp::Prefetch: return emit_prefetch(s);
    case StmtOp::Matrix:
      throw CompileError("llvm codegen: a tensor-core operation cannot run on the CPU target");
    case StmtOp::CommitCopies:
      throw CompileError("llvm codegen: asynchronous GPU copies cannot run on the CPU target");
  }
  throw CompileError("llvm codegen: unknown statement");
}

void CodeGenLLVM::emit_for(const Stmt& s) {
  switch (s->for_kind) {
    case ForKind::Serial:
    case ForKind::Unrolled:
      emit_serial_loop(s->var, emit_expr(s->min), emit_expr(s->extent), s->body[0],
                       s->for_kind == ForKind::Unrolled);
      return;
    case ForKind::Parallel: return emit_parallel_for(s);
    case ForKind::Vectorized:
      throw CompileError("llvm codegen: vectorized loop '" + s->var +
                         "' reached codegen (the vectorize pass must remove it)");
    case ForKind::ThreadBound:
      throw CompileError("llvm codegen: loop '" + s->var + "' is bound to GPU thread '" + s->thread_tag +
                         "', which the CPU target cannot run");
  }
}

void CodeGenLLVM::emit_serial_loop(const std::string& var, llvm::Value* min, llvm::Value* extent,
                                   const Stmt& body, bool unroll) {
  llvm::Function* fn = scope_.function;
  llvm::Value* end = b_.CreateAdd(min, extent, var + ".end", false, true);
  llvm::BasicBlock* preheader = b_.GetInsertBlock();
  auto* body_block = llvm::BasicBlock::Create(ctx_, var + ".body", fn);
  auto* exit_block = llvm::BasicBlock::Create(ctx_, var + ".exit", fn);
  b_.CreateCondBr(b_.CreateICmpSLT(min, end), body_block, exit_block);

  b_.SetInsertPoint(body_block);
  llvm::PHINode* phi = b_.CreatePHI(b_.getInt64Ty(), 2, var);
  phi->addIncoming(min, preheader);
  if (!scope_.vars.emplace(var, phi).second)
    throw CompileError("llvm codegen: loop variable '" + var + "' is defined twice");
  emit_stmt(body);
  scope_.vars.erase(var);

  llvm::Value* next = b_.CreateAdd(phi, b_.getInt64(1), var + ".next", false, true);
  phi->addIncoming(next, b_.GetInsertBlock());
  llvm::BranchInst* back = b_.CreateCondBr(b_.CreateICmpSLT(next, end), body_block, exit_block);
  if (unroll) {
    llvm::MDNode* full = llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.unroll.full")});
    llvm::MDNode* loop_id = llvm::MDNode::getDistinct(ctx_, {nullptr, full});
    loop_id->replaceOperandWith(0, loop_id);
    back->setMetadata(llvm::LLVMContext::MD_loop, loop_id);
  }
  b_.SetInsertPoint(exit_block);
}

void CodeGenLLVM::emit_store(const Stmt& s) {
  const Buffer& buffer = lookup_buffer(s->buffer);
  const Expr& index = s->indices.at(0);
  const Expr& value_expr = s->value;
  if (value_expr->type.dtype != buffer.dtype)
    throw CompileError("llvm codegen: store of " + to_string(value_expr->type) + " into buffer '" + s->buffer +
                       "' of " + to_string(buffer.dtype));
  llvm::Value* value = emit_expr(value_expr);
  int lanes = value_expr->type.lanes;
  llvm::Type* mem = memory_type(buffer.dtype);
  if (buffer.dtype == DType::Bool) value = b_.CreateZExt(value, lanes > 1 ? llvm::FixedVectorType::get(mem, lanes) : mem);
  llvm::Align align(dtype_bytes(buffer.dtype));
  if (lanes == 1) {
    b_.CreateAlignedStore(value, element_pointer(buffer, emit_expr(index)), align);
  } else if (index->op == ExprOp::Ramp && is_int_value(index->args[1], 1)) {
    int64_t bytes = lanes * static_cast<int64_t>(dtype_bytes(buffer.dtype));
    if (buffer.streaming && bytes == kBufferAlignment && is_multiple_of(index->args[0], lanes)) {
      llvm::StoreInst* store =
          b_.CreateAlignedStore(value, element_pointer(buffer, emit_expr(index->args[0])), llvm::Align(bytes));
      llvm::Metadata* one = llvm::ConstantAsMetadata::get(b_.getInt32(1));
      store->setMetadata(llvm::LLVMContext::MD_nontemporal, llvm::MDNode::get(ctx_, {one}));
    } else {
      b_.CreateAlignedStore(value, element_pointer(buffer, emit_expr(index->args[0])), align);
    }
  } else {
    // A scatter; lanes that collide (a broadcast index) keep the highest lane, like a serial loop.
    b_.CreateMaskedScatter(value, element_pointer(buffer, emit_expr(index)), align);
  }
}

void CodeGenLLVM::emit_allocate(const Stmt& s) {
  int64_t elements = 1;
  for (int64_t extent : s->extents) {
    if (extent < 0) throw CompileError("llvm codegen: negative extent in allocation of '" + s->buffer + "'");
    elements *= extent;
  }
  elements = std::max<int64_t>(elements, 1);
  llvm::Type* mem = memory_type(s->dtype);
  int64_t bytes = elements * dtype_bytes(s->dtype);
  llvm::Value* ptr = nullptr;
  llvm::Function* free_fn = nullptr;
  if (bytes <= kMaxStackAllocationBytes) {
    ptr = entry_alloca(llvm::ArrayType::get(mem, elements), s->buffer);
  } else {
    llvm::Type* i64 = b_.getInt64Ty();
    llvm::Function* alloc_fn =
        declare_runtime("aligned_alloc", llvm::FunctionType::get(b_.getPtrTy(), {i64, i64}, false));
    free_fn = declare_runtime("free", llvm::FunctionType::get(b_.getVoidTy(), {b_.getPtrTy()}, false));
    int64_t rounded = (bytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
    ptr = b_.CreateCall(alloc_fn, {b_.getInt64(kBufferAlignment), b_.getInt64(rounded)}, s->buffer);
  }
  Buffer buffer{ptr, s->dtype};
  buffer.elements = elements;
  if (!scope_.buffers.emplace(s->buffer, buffer).second)
    throw CompileError("llvm codegen: buffer '" + s->buffer + "' is allocated twice");
  emit_stmt(s->body[0]);
  scope_.buffers.erase(s->buffer);
  if (free_fn) b_.CreateCall(free_fn, {ptr});
}

void CodeGenLLVM::emit_if(const Stmt& s) {
  if (s->cond->type != kBool) throw CompileError("llvm codegen: if condition is not a scalar bool");
  llvm::Value* cond = emit_expr(s->cond);
  llvm::Function* fn = scope_.function;
  auto* then_block = llvm::BasicBlock::Create(ctx_, "then", fn);
  auto* merge_block = llvm::BasicBlock::Create(ctx_, "endif", fn);
  bool has_else = s->body.size() > 1 && s->body[1];
  auto* else_block = has_else ? llvm::BasicBlock::Create(ctx_, "else", fn) : merge_block;
  b_.CreateCondBr(cond, then_block, else_block);
  b_.SetInsertPoint(then_block);
  emit_stmt(s->body[0]);
  b_.CreateBr(merge_block);
  if (has_else) {
    b_.SetInsertPoint(else_block);
    emit_stmt(s->body[1]);
    b_.CreateBr(merge_block);
  }
  b_.SetInsertPoint(merge_block);
}

// One prefetch per cache line the region may touch (a line-aligned start is known to touch fewer),
// into L2: locality 2, as an L1-sized lookahead would evict the data the loop is working on. The
// last address is the region's last element, and every address is clamped into the buffer, so a
// hint never reaches memory the region or the buffer does not cover.
void CodeGenLLVM::emit_prefetch(const Stmt& s) {
  const Buffer& buffer = lookup_buffer(s->buffer);
  const Expr& index = s->indices.at(0);
  const int64_t* elements = as_int(s->extent);
  if (!elements || *elements <= 0 || buffer.elements <= 0)
    throw CompileError("llvm codegen: prefetch of '" + s->buffer + "' needs a constant positive extent");
  const int64_t per_line = kCacheLineBytes / dtype_bytes(buffer.dtype);
  const int64_t lines = is_multiple_of(index, per_line) ? (*elements + per_line - 1) / per_line
                                                    : (*elements + per_line - 2) / per_line + 1;
  llvm::Value* start = emit_expr(index);
  llvm::Value* zero = b_.getInt64(0);
  llvm::Value* last = b_.getInt64(buffer.elements - 1);
  llvm::Function* prefetch = llvm::Intrinsic::getDeclaration(&module_, llvm::Intrinsic::prefetch, {b_.getPtrTy()});
  for (int64_t line = 0; line < lines; ++line) {
    int64_t step = std::min(line * per_line, *elements - 1);
    llvm::Value* at = step ? b_.CreateNSWAdd(start, b_.getInt64(step)) : start;
    at = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, at, zero);
    at = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, at, last);
    b_.CreateCall(prefetch, {element_pointer(buffer, at), b_.getInt32(0), b_.getInt32(2), b_.getInt32(1)});
  }
}

// --- expressions -------------------------------------------------------------------------------

llvm::Value* CodeGenLLVM::emit_expr(const Expr& e) {
  switch (e->op) {
    case ExprOp::IntImm:
      return llvm::ConstantInt::get(value_type(e->type), static_cast<uint64_t>(e->int_value), true);
    case ExprOp::FloatImm: return llvm::ConstantFP::get(value_type(e->type), e->float_value);
    case ExprOp::Var: {
      auto it = scope_.vars.find(e->name);
      if (it == scope_.vars.end()) throw CompileError("llvm codegen: unknown variable '" + e->name + "'");
      return it->second;
    }
    case ExprOp::Add: case ExprOp::Sub: case ExprOp::Mul: case ExprOp::Div: case ExprOp::FloorDiv:
    case ExprOp::FloorMod: case ExprOp::Min: case ExprOp::Max: case ExprOp::EQ: case ExprOp::NE:
    case ExprOp::LT: case ExprOp::LE: case ExprOp::GT: case ExprOp::GE: case ExprOp::And: case ExprOp::Or:
      return emit_binary(e);
    case ExprOp::Not: return b_.CreateNot(emit_expr(e->args[0]));
    case ExprOp::Select: return emit_select(e);
    case ExprOp::Cast: return emit_cast(e);
    case ExprOp::Call: {
      std::vector<llvm::Value*> args;
      for (const Expr& a : e->args) args.push_back(emit_expr(a));
      return emit_math_function(b_, e->math_fn(), args);
    }
    case ExprOp::TensorRead:
      throw CompileError("llvm codegen: tensor read of '" + e->name + "' reached codegen (storage not flattened)");
    case ExprOp::Load: return emit_load(e);
    case ExprOp::Ramp: return emit_ramp(e);
    case ExprOp::Broadcast: return b_.CreateVectorSplat(e->type.lanes, emit_expr(e->args[0]));
  }
  throw CompileError(std::string("llvm codegen: unsupported expression ") + to_string(e->op));
}

llvm::Value* CodeGenLLVM::emit_binary(const Expr& e) {
  const Type t = e->args[0]->type;
  llvm::Value* a = emit_expr(e->args[0]);
  llvm::Value* b = emit_expr(e->args[1]);
  if (t.is_float()) {
    switch (e->op) {
      case ExprOp::Add: return b_.CreateFAdd(a, b);
      case ExprOp::Sub: return b_.CreateFSub(a, b);
      case ExprOp::Mul: return b_.CreateFMul(a, b);
      case ExprOp::Div: return b_.CreateFDiv(a, b);
      case ExprOp::Min: return b_.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, a, b);
      case ExprOp::Max: return b_.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, a, b);
      case ExprOp::EQ: return b_.CreateFCmpOEQ(a, b);
      case ExprOp::NE: return b_.CreateFCmpUNE(a, b);
      case ExprOp::LT: return b_.CreateFCmpOLT(a, b);
      case ExprOp::LE: return b_.CreateFCmpOLE(a, b);
      case ExprOp::GT: return b_.CreateFCmpOGT(a, b);
      case ExprOp::GE: return b_.CreateFCmpOGE(a, b);
      default: break;
    }
  } else if (t.is_int()) {
    switch (e->op) {
      case ExprOp::Add: return b_.CreateNSWAdd(a, b);
      case ExprOp::Sub: return b_.CreateNSWSub(a, b);
      case ExprOp::Mul: return b_.CreateNSWMul(a, b);
      case ExprOp::Div:  // integer Div is floor division, as `operator/` builds it
      case ExprOp::FloorDiv:
      case ExprOp::FloorMod: return emit_floor_div_mod(e, a, b);
      case ExprOp::Min: return b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, a, b);
      case ExprOp::Max: return b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, a, b);
      case ExprOp::EQ: return b_.CreateICmpEQ(a, b);
      case ExprOp::NE: return b_.CreateICmpNE(a, b);
      case ExprOp::LT: return b_.CreateICmpSLT(a, b);
      case ExprOp::LE: return b_.CreateICmpSLE(a, b);
      case ExprOp::GT: return b_.CreateICmpSGT(a, b);
      case ExprOp::GE: return b_.CreateICmpSGE(a, b);
      default: break;
    }
  } else {
    switch (e->op) {
      case ExprOp::And: return b_.CreateAnd(a, b);
      case ExprOp::Or: return b_.CreateOr(a, b);
      case ExprOp::EQ: return b_.CreateICmpEQ(a, b);
      case ExprOp::NE: return b_.CreateICmpNE(a, b);
      case ExprOp::LT: return b_.CreateICmpULT(a, b);
      case ExprOp::LE: return b_.CreateICmpULE(a, b);
      case ExprOp::GT: return b_.CreateICmpUGT(a, b);
      case ExprOp::GE: return b_.CreateICmpUGE(a, b);
      default: break;
    }
  }
  throw CompileError(std::string("llvm codegen: ") + to_string(e->op) + " on " + to_string(t));
}

// Floor division and modulo from the truncating instructions: when the remainder is nonzero and its
// sign differs from the divisor's, the truncated quotient is one too large (and the remainder off by
// one divisor). Positive power-of-two divisors become a shift and a mask.
llvm::Value* CodeGenLLVM::emit_floor_div_mod(const Expr& e, llvm::Value* a, llvm::Value* b) {
  bool is_div = e->op != ExprOp::FloorMod;
  int shift = power_of_two_log(e->args[1]);
  if (shift >= 0) {
    llvm::Type* t = a->getType();
    if (is_div) return b_.CreateAShr(a, llvm::ConstantInt::get(t, shift));
    return b_.CreateAnd(a, llvm::ConstantInt::get(t, (uint64_t(1) << shift) - 1));
  }
  llvm::Value* zero = llvm::ConstantInt::get(a->getType(), 0);
  // A divisor of zero (in the data, or in the lanes of a select's side that a masked load filled
  // with zeros) would trap the process: it divides by one instead. The result is the IR's to leave
  // undefined, not the machine's to crash on.
  if (!llvm::isa<llvm::Constant>(b))
    b = b_.CreateSelect(b_.CreateICmpEQ(b, zero), llvm::ConstantInt::get(a->getType(), 1), b);
  llvm::Value* rem = b_.CreateSRem(a, b);
  llvm::Value* signs_differ = b_.CreateICmpSLT(b_.CreateXor(rem, b), zero);
  llvm::Value* adjust = b_.CreateAnd(b_.CreateICmpNE(rem, zero), signs_differ);
  if (is_div) return b_.CreateSub(b_.CreateSDiv(a, b), b_.CreateZExt(adjust, a->getType()));
  return b_.CreateAdd(rem, b_.CreateSelect(adjust, b, zero));
}

llvm::Value* CodeGenLLVM::emit_cast(const Expr& e) {
  const Type from = e->args[0]->type;
  const Type to = e->type;
  llvm::Value* v = emit_expr(e->args[0]);
  llvm::Type* target = value_type(to);
  if (from.dtype == to.dtype) return v;
  if (from.is_half() || to.is_half()) return emit_float_conversion(v, from, to);
  if (from.is_float()) {
    if (to.is_int()) return b_.CreateFreeze(b_.CreateFPToSI(v, target));  // out of range: unspecified
    return b_.CreateFCmpUNE(v, llvm::Constant::getNullValue(v->getType()));
  }
  if (from.is_int()) {
    if (to.is_float()) return b_.CreateSIToFP(v, target);
    return b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
  }
  if (to.is_float()) return b_.CreateUIToFP(v, target);
  return b_.CreateZExt(v, target);
}

// Conversions between float types (expr.h allows a 16-bit float to convert to floats only). Float16
// uses LLVM's half (F16C instructions, or libgcc's helpers without them); bfloat16 is the upper half
// of a float32: widening shifts its bits up, narrowing rounds to nearest even on the integer bits
// (adding 0x7FFF plus the lowest kept bit) and keeps NaN a quiet NaN.
llvm::Value* CodeGenLLVM::emit_float_conversion(llvm::Value* v, Type from, Type to) {
  auto vec = [&](llvm::Type* elem) -> llvm::Type* {
    return from.lanes > 1 ? llvm::FixedVectorType::get(elem, from.lanes) : elem;
  };
  auto splat = [&](llvm::Type* elem, uint64_t c) -> llvm::Value* {
    llvm::Constant* k = llvm::ConstantInt::get(elem, c);
    return from.lanes > 1 ? llvm::ConstantVector::getSplat(llvm::ElementCount::getFixed(from.lanes), k) : k;
  };
  // To float32 first.
  llvm::Value* f = v;
  if (from.dtype == DType::Float16) {
    f = b_.CreateFPExt(v, vec(b_.getFloatTy()));
  } else if (from.dtype == DType::BFloat16) {
    llvm::Value* wide = b_.CreateShl(b_.CreateZExt(v, vec(b_.getInt32Ty())), splat(b_.getInt32Ty(), 16));
    f = b_.CreateBitCast(wide, vec(b_.getFloatTy()));
  }
  if (to.dtype == DType::Float32) return f;
  if (to.dtype == DType::Float16) return b_.CreateFPTrunc(f, vec(b_.getHalfTy()));
  llvm::Type* i32 = b_.getInt32Ty();
  llvm::Value* bits = b_.CreateBitCast(f, vec(i32));
  llvm::Value* lowest_kept = b_.CreateAnd(b_.CreateLShr(bits, splat(i32, 16)), splat(i32, 1));
  llvm::Value* rounded = b_.CreateLShr(b_.CreateAdd(b_.CreateAdd(bits, splat(i32, 0x7FFF)), lowest_kept),
                                       splat(i32, 16));
  llvm::Value* quiet_nan = b_.CreateOr(b_.CreateLShr(bits, splat(i32, 16)), splat(i32, 0x40));
  llvm::Value* is_nan = b_.CreateFCmpUNO(f, f);
  return b_.CreateTrunc(b_.CreateSelect(is_nan, quiet_nan, rounded), vec(b_.getInt16Ty()));
}

llvm::Value* CodeGenLLVM::element_pointer(const Buffer& buffer, llvm::Value* index) {
  return b_.CreateInBoundsGEP(memory_type(buffer.dtype), buffer.ptr, index);
}

namespace {

bool reads_memory(const Expr& e) {
  if (e->op == ExprOp::Load) return true;
  for (const Expr& a : e->args)
    if (reads_memory(a)) return true;
  return false;
}

}  // namespace

// select(c, a, b) guards a's loads with c (a non-divisible rfactor split reads past the reduction's
// end where c is false), so a side that reads memory must not load where it is not selected. Both
// sides are still evaluated (branch-free), but their loads are masked: a scalar load whose side is
// not selected reads element 0 instead, a vector load becomes a masked load or gather.
llvm::Value* CodeGenLLVM::emit_select(const Expr& e) {
  if (!reads_memory(e->args[1]) && !reads_memory(e->args[2]))
    return b_.CreateSelect(emit_expr(e->args[0]), emit_expr(e->args[1]), emit_expr(e->args[2]));
  llvm::Value* cond = emit_expr(e->args[0]);
  auto combine = [&](llvm::Value* outer, llvm::Value* inner) -> llvm::Value* {
    if (!outer) return inner;
    auto lanes_of = [](llvm::Value* v) {
      auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(v->getType());
      return vt ? static_cast<int>(vt->getNumElements()) : 1;
    };
    int lanes = std::max(lanes_of(outer), lanes_of(inner));
    if (lanes_of(outer) != lanes) outer = b_.CreateVectorSplat(lanes, outer);
    if (lanes_of(inner) != lanes) inner = b_.CreateVectorSplat(lanes, inner);
    return b_.CreateAnd(outer, inner);
  };
  llvm::Value* outer = load_mask_;
  load_mask_ = combine(outer, cond);
  llvm::Value* t = emit_expr(e->args[1]);
  load_mask_ = combine(outer, b_.CreateNot(cond));
  llvm::Value* f = emit_expr(e->args[2]);
  load_mask_ = outer;
  return b_.CreateSelect(cond, t, f);
}

llvm::Value* CodeGenLLVM::emit_load(const Expr& e) {
  const Buffer& buffer = lookup_buffer(e->name);
  if (e->type.dtype != buffer.dtype)
    throw CompileError("llvm codegen: load of " + to_string(e->type) + " from buffer '" + e->name + "' of " +
                       to_string(buffer.dtype));
  const Expr& index = e->args[0];
  int lanes = e->type.lanes;
  llvm::Type* mem = memory_type(buffer.dtype);
  llvm::Align align(dtype_bytes(buffer.dtype));
  llvm::Value* v = nullptr;
  if (load_mask_) {
    auto* mask_type = llvm::dyn_cast<llvm::FixedVectorType>(load_mask_->getType());
    int mask_lanes = mask_type ? static_cast<int>(mask_type->getNumElements()) : 1;
    if (lanes > 1 && mask_lanes > 1 && mask_lanes != lanes)
      throw CompileError("llvm codegen: a " + std::to_string(lanes) + "-lane load of '" + e->name + "' under a " +
                         std::to_string(mask_lanes) + "-lane select");
    auto* vector = llvm::FixedVectorType::get(mem, lanes);
    if (lanes == 1 || index->op == ExprOp::Broadcast) {
      // One element for every lane: read it only if some lane is selected, else read element 0.
      llvm::Value* at = emit_expr(lanes == 1 ? index : index->args[0]);
      llvm::Value* any = mask_lanes > 1 ? b_.CreateOrReduce(load_mask_) : load_mask_;
      at = b_.CreateSelect(any, at, b_.getInt64(0));
      v = b_.CreateAlignedLoad(mem, element_pointer(buffer, at), align);
      if (lanes > 1) v = b_.CreateVectorSplat(lanes, v);
    } else if (mask_lanes == 1) {
      llvm::Value* mask = b_.CreateVectorSplat(lanes, load_mask_);
      v = index->op == ExprOp::Ramp && is_int_value(index->args[1], 1)
              ? b_.CreateMaskedLoad(vector, element_pointer(buffer, emit_expr(index->args[0])), align, mask,
                                    llvm::Constant::getNullValue(vector))
              : b_.CreateMaskedGather(vector, element_pointer(buffer, emit_expr(index)), align, mask,
                                      llvm::Constant::getNullValue(vector));
    } else if (index->op == ExprOp::Ramp && is_int_value(index->args[1], 1)) {
      v = b_.CreateMaskedLoad(vector, element_pointer(buffer, emit_expr(index->args[0])), align, load_mask_,
                              llvm::Constant::getNullValue(vector));
    } else {
      v = b_.CreateMaskedGather(vector, element_pointer(buffer, emit_expr(index)), align, load_mask_,
                                llvm::Constant::getNullValue(vector));
    }
  } else if (lanes == 1) {
    v = b_.CreateAlignedLoad(mem, element_pointer(buffer, emit_expr(index)), align);
  } else if (index->op == ExprOp::Ramp && is_int_value(index->args[1], 1)) {
    v = b_.CreateAlignedLoad(llvm::FixedVectorType::get(mem, lanes), element_pointer(buffer, emit_expr(index->args[0])),
                             align);
  } else if (index->op == ExprOp::Broadcast) {
    llvm::Value* scalar = b_.CreateAlignedLoad(mem, element_pointer(buffer, emit_expr(index->args[0])), align);
    v = b_.CreateVectorSplat(lanes, scalar);
  } else {
    v = b_.CreateMaskedGather(llvm::FixedVectorType::get(mem, lanes), element_pointer(buffer, emit_expr(index)),
                              align);
  }
  if (buffer.dtype == DType::Bool) v = b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
  return v;
}

llvm::Value* CodeGenLLVM::emit_ramp(const Expr& e) {
  int lanes = e->type.lanes;
  llvm::Value* base = b_.CreateVectorSplat(lanes, emit_expr(e->args[0]));
  llvm::Value* stride = b_.CreateVectorSplat(lanes, emit_expr(e->args[1]));
  std::vector<llvm::Constant*> steps;
  for (int i = 0; i < lanes; ++i) steps.push_back(b_.getInt64(i));
  return b_.CreateNSWAdd(base, b_.CreateNSWMul(stride, llvm::ConstantVector::get(steps)));
}

std::unique_ptr<llvm::Module> generate_module(const LoweredFunc& func, const LLVMOptions& options,
                                              llvm::LLVMContext& context, llvm::TargetMachine& machine) {
  auto module = std::make_unique<llvm::Module>(func.name, context);
  module->setTargetTriple(machine.getTargetTriple().str());
  module->setDataLayout(machine.createDataLayout());
  CodeGenLLVM codegen(*module, options);
  codegen.generate(func);
  return module;
}

}  // namespace tessel::llvm_backend
