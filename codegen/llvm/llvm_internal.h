// Private pieces of the LLVM backend shared between its .cpp files: one-time LLVM initialization,
// the host TargetMachine, IR generation and the optimization pipeline.
#pragma once

#include <memory>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include "codegen/llvm/llvm_backend.h"

namespace tessel::llvm_backend {

// Initializes the native target, asm printer and parser exactly once per process (thread-safe).
void initialize_native_target();

// A TargetMachine for the host CPU and features, position-independent so that its objects can go
// into shared libraries as well as into the JIT.
std::unique_ptr<llvm::TargetMachine> create_host_target_machine(int opt_level);

// Function attributes every generated function carries: target CPU/features and the preferred
// vector width (so that 512-bit vectors are not split on CPUs that would otherwise prefer 256).
void add_target_attributes(llvm::Function* fn);

// Builds the module holding `void name(void** args)` for `func` (unoptimized).
// Throws CompileError for IR that cannot reach a CPU code generator.
std::unique_ptr<llvm::Module> generate_module(const LoweredFunc& func, const LLVMOptions& options,
                                              llvm::LLVMContext& context, llvm::TargetMachine& machine);

// Runs the new-PassManager pipeline for options.opt_level (O0..O3) on `module`.
void optimize_module(llvm::Module& module, llvm::TargetMachine& machine, int opt_level);

}  // namespace tessel::llvm_backend
