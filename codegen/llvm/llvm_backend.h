// The CPU backend: LoweredFunc -> LLVM IR -> native code for the host, JIT-compiled in process or
// written as a shared object another process can load. Public API free of LLVM headers.
#pragma once

#include <memory>
#include <string>

#include "schedule/ir/stmt.h"

namespace tessel {

// What the host CPU offers, detected once through LLVM.
struct HostTarget {
  std::string triple;
  std::string cpu;          // e.g. "znver4"
  std::string features;     // LLVM feature string, e.g. "+avx2,+avx512f,..."
  int vector_bits = 128;    // widest float vector register: 128 / 256 / 512
  int num_cores = 1;
};
const HostTarget& host_target();
// Floats per native vector register (vector_bits / 32).
int host_vector_lanes();

struct LLVMOptions {
  int opt_level = 3;
  bool fast_math = false;  // off by default (only FMA contraction): results must match the reference interpreter
};

// A compiled kernel: `run(args)` calls `void name(void** args)`.
class CompiledKernel {
 public:
  virtual ~CompiledKernel() = default;
  virtual void run(void** args) const = 0;
};

// The LLVM IR text of `func` after optimization (what `tessel show --emit llvm` prints).
std::string emit_llvm_ir(const LoweredFunc& func, const LLVMOptions& options = {});
// JIT-compiles `func` in this process. Throws CompileError with LLVM's message on failure.
std::unique_ptr<CompiledKernel> jit_compile(const LoweredFunc& func, const LLVMOptions& options = {});
// Writes a shared object exporting `func.name` to `path` (links the object with the system `cc`).
// The loading process must provide the parallel runtime (tessel_parallel_for).
void write_shared_object(const LoweredFunc& func, const std::string& path, const LLVMOptions& options = {});
// Loads a shared object written by write_shared_object and returns its kernel.
std::unique_ptr<CompiledKernel> load_shared_object(const std::string& path, const std::string& name);

}  // namespace tessel
