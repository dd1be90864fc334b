// Math functions (MathFn) emitted as straight-line LLVM IR that works on scalars and vectors of any
// lane count alike, so that vectorized softmax / gelu kernels never fall back to libm per lane.
#pragma once

#include <vector>

#include <llvm/IR/IRBuilder.h>

#include "schedule/te/expr.h"

namespace tessel::llvm_backend {

// Emits fn(args) for float (or <N x float>) operands; Pow takes two operands of the same type.
llvm::Value* emit_math_function(llvm::IRBuilder<>& builder, MathFn fn, const std::vector<llvm::Value*>& args);

}  // namespace tessel::llvm_backend
