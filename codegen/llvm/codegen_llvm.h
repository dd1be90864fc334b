// The IR emitter behind generate_module: walks a LoweredFunc and builds LLVM IR statement by
// statement. Private to codegen/llvm; parallel-loop outlining lives in codegen_parallel.cpp.
#pragma once

#include <string>
#include <unordered_map>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include "codegen/llvm/llvm_backend.h"

namespace tessel::llvm_backend {

class CodeGenLLVM {
 public:
  CodeGenLLVM(llvm::Module& module, const LLVMOptions& options);
  // Adds `void name(void** args)` and its helpers to the module.
  void generate(const LoweredFunc& func);

 private:
  struct Buffer {
    llvm::Value* ptr = nullptr;
    DType dtype = DType::Float32;
    // An output far larger than the caches that the function only writes: full-line vector
    // stores to it bypass the caches (no read-for-ownership of lines about to be overwritten).
    bool streaming = false;
    int64_t elements = 0;
  };
  // Everything that names a value while emitting one function body.
  struct Scope {
    llvm::Function* function = nullptr;
    std::unordered_map<std::string, llvm::Value*> vars;
    std::unordered_map<std::string, Buffer> buffers;
  };

  // Statements.
  void emit_stmt(const Stmt& s);
  void emit_for(const Stmt& s);
  void emit_serial_loop(const std::string& var, llvm::Value* min, llvm::Value* extent, const Stmt& body,
                        bool unroll);
  void emit_parallel_for(const Stmt& s);  // codegen_parallel.cpp
  void emit_store(const Stmt& s);
  void emit_allocate(const Stmt& s);
  void emit_if(const Stmt& s);
  void emit_prefetch(const Stmt& s);

  // Expressions.
  llvm::Value* emit_expr(const Expr& e);
  llvm::Value* emit_binary(const Expr& e);
  llvm::Value* emit_floor_div_mod(const Expr& e, llvm::Value* a, llvm::Value* b);
  llvm::Value* emit_cast(const Expr& e);
  llvm::Value* emit_float_conversion(llvm::Value* v, Type from, Type to);
  llvm::Value* emit_select(const Expr& e);
  llvm::Value* emit_load(const Expr& e);
  llvm::Value* emit_ramp(const Expr& e);
  // Pointer to element `index` of `buffer`: a scalar pointer or a vector of pointers.
  llvm::Value* element_pointer(const Buffer& buffer, llvm::Value* index);

  // Helpers.
  llvm::Type* value_type(Type t);   // i1 for bools: how a value lives in registers
  llvm::Type* memory_type(DType t);  // i8 for bools: how a value lives in buffers
  const Buffer& lookup_buffer(const std::string& name) const;
  llvm::AllocaInst* entry_alloca(llvm::Type* type, const std::string& name);
  llvm::Function* declare_runtime(const std::string& name, llvm::FunctionType* type);

  llvm::Module& module_;
  llvm::LLVMContext& ctx_;
  LLVMOptions options_;
  llvm::IRBuilder<> b_;
  std::string func_name_;
  Scope scope_;
  int parallel_count_ = 0;
  // Inside an arm of a select with a vector condition: the lanes whose loads may run (see emit_select).
  llvm::Value* load_mask_ = nullptr;
};

}  // namespace tessel::llvm_backend
