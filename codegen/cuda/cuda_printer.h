// The CUDA C printer (internal to codegen/cuda): one object prints one LoweredFunc. Its program
// structure and kernels are in cuda_printer.cpp, statements in cuda_printer_stmt.cpp, expressions
// (one vector lane at a time) in cuda_printer_expr.cpp.
#pragma once

#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/cuda/cuda_backend.h"
#include "codegen/cuda/cuda_kernel_info.h"
#include "codegen/cuda/cuda_names.h"
#include "schedule/lower/arith.h"

namespace tessel::cuda_detail {

// The C type of a buffer element or a value. 16-bit floats are kept as their bits (typedefs in the
// prelude) and converted by the prelude's helpers: no header is needed from NVRTC.
inline const char* c_type(DType t) {
  switch (t) {
    case DType::Float32: return "float";
    case DType::Int64: return "long long";
    case DType::Float16: return "tessel_half";
    case DType::BFloat16: return "tessel_bfloat16";
    case DType::Bool: break;
  }
  return "bool";
}

// Registers per 16 x 16 tile in each lane (PTX wmma m16n16k16): eight f32 accumulators; a or b
// operands in 32-bit registers, four for bfloat16, eight for float16 (whose fragments repeat values).
inline int fragment_registers_per_tile(MemScope scope, DType dtype) {
  if (scope == MemScope::WgAccumulator) return 1;  // flattened to its registers already
  if (scope == MemScope::Accumulator) return 8;
  return dtype == DType::BFloat16 ? 4 : 8;
}

class CudaPrinter {
 public:
  explicit CudaPrinter(const LoweredFunc& func) : func_(func), limits_(default_cuda_device_info()) {}

  CudaProgram print();

 private:
  // --- program structure (cuda_printer.cpp) ---
  void add_scratch(const StmtNode* a);
  void declare_buffer(const std::string& name, DType dtype, const char* what);
  void print_kernel(const Stmt& kernel, const std::string& name);

  // --- statements (cuda_printer_stmt.cpp) ---
  void line(const std::string& text) { out_ << std::string(2 * indent_, ' ') << text << "\n"; }
  void emit_stmt(const Stmt& s, bool in_seq);
  void block(const Stmt& body);
  void define_var(const Stmt& loop);  // its variable in scope, over the loop's range
  void undefine_var(const Stmt& loop);
  // The C type of loop variables: int where every index of the kernel fits in 32 bits.
  std::string index_type() const { return info_.index32 ? "int" : "long long"; }
  void emit_for(const Stmt& s, bool in_seq);
  void emit_allreduce(const Stmt& s);
  void emit_allocate(const Stmt& s);
  DType buffer_dtype(const std::string& name) const;
  bool wide_access(const std::string& buffer, const Expr& index) const;
  void hoist_wide_loads(const Expr& e);
  void emit_store(const Stmt& s);
  void emit_matrix(const Stmt& s);
  int fragment_registers(const std::string& buffer) const;
  std::string fragment_register(const MatrixOperand& o, int r);
  std::string memory_address(const MatrixOperand& o, std::vector<std::string>& inputs, const char*& space);
  void emit_warpgroup_mma(const Stmt& s);
  std::string warpgroup_descriptor(const MatrixOperand& o, bool k_major);
  // `buf[i]` for lane `lane` of a flat index (through the permutation of a swizzled tile).
  std::string element(const std::string& buffer, const Expr& index, int lane = 0);
  // The element offset alone; a swizzled tile's through `permute`, the prelude's tessel_swizzle
  // (where the element is stored) or tessel_swizzle_block (where it is before the permutation).
  std::string element_offset(const std::string& buffer, const Expr& index, int lane, const char* permute);

  // --- expressions, one lane at a time (cuda_printer_expr.cpp) ---
  static std::string strip_parens(const std::string& s);
  std::string expr(const Expr& e, int lane);
  std::string binary(const Expr& e, int lane);
  std::string cast(const Expr& e, int lane);
  std::string call(const Expr& e, int lane);

  const LoweredFunc& func_;
  CudaDeviceInfo limits_;
  CudaProgram program_;
  std::vector<Stmt> kernels_;
  std::set<const StmtNode*> scratch_seen_;
  NameTable names_;
  std::map<std::string, DType> buffers_;  // buffers in scope: parameters, scratch, allocations
  std::map<std::string, MemScope> scopes_; // allocations in scope: their memory scope
  std::map<std::string, std::pair<int64_t, int64_t>> swizzled_;  // swizzled tiles in scope: rows, columns
  std::set<std::string> vars_;            // loop variables in scope
  VarRanges ranges_;                       // and their ranges
  std::map<const ExprNode*, std::string> hoisted_;
  KernelInfo info_;
  std::ostringstream out_;
  int indent_ = 0;
};

}  // namespace tessel::cuda_detail
