// Hand-built GPU loop nests shared by the CUDA printer and runtime tests, and helpers that skip a
// test (reported as skipped, tests/skip.h) when NVRTC or a CUDA device is missing.
#pragma once

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "codegen/cuda/cuda_backend.h"
#include "schedule/lower/lower.h"
#include "schedule/te/error.h"
#include "tests/skip.h"

namespace tessel::cuda_testing {

// Lowering for the GPU target.
inline LowerOptions gpu_options() {
  LowerOptions o;
  o.target = LowerTarget::Gpu;
  return o;
}

inline bool contains(const std::string& text, const std::string& piece) { return text.find(piece) != std::string::npos; }

inline BufferParam param(const std::string& name, int64_t n, bool is_output = false) {
  return BufferParam{name, DType::Float32, {n}, is_output};
}
inline Expr var(const std::string& name) { return make_var(name, kInt64); }
inline Expr fload(const std::string& buffer, Expr index) {
  return make_load(buffer, index, Type{DType::Float32, index->type.lanes});
}
inline Stmt serial(const std::string& v, int64_t extent, Stmt body, ForKind kind = ForKind::Serial) {
  return make_for(v, make_int(0), make_int(extent), kind, std::move(body));
}
inline Stmt bound(const std::string& v, int64_t extent, const std::string& tag, Stmt body) {
  return make_for(v, make_int(0), make_int(extent), ForKind::ThreadBound, std::move(body), tag);
}
inline Expr f2i(Expr e) { return make_cast(kInt64, std::move(e)); }
inline Expr i2f(Expr e) { return make_cast(kFloat32, std::move(e)); }

// C[i] = A[i] + B[i] for i < n, 256 threads per block, guarded tail.
inline LoweredFunc elementwise_add(int64_t n) {
  Expr i = var("i.o") * 256 + var("i.i");
  Stmt store = make_store("C", i, fload("A", i) + fload("B", i));
  LoweredFunc f;
  f.name = "add";
  f.params = {param("A", n), param("B", n), param("C", n, true)};
  f.body = bound("i.o", (n + 255) / 256, "blockIdx.x", bound("i.i", 256, "threadIdx.x", make_if(i < make_int(n), store)));
  return f;
}

// Each block of 64 reverses its slice through a shared buffer: B[b*64 + t] = A[b*64 + 63 - t].
inline LoweredFunc shared_reverse(int64_t blocks) {
  Expr b = var("b");
  Stmt load = make_store("S", var("t0"), fload("A", b * 64 + var("t0")));
  Stmt store = make_store("B", b * 64 + var("t1"), fload("S", make_int(63) - var("t1")));
  Stmt body = make_seq({bound("t0", 64, "threadIdx.x", load), make_barrier(), bound("t1", 64, "threadIdx.x", store)});
  LoweredFunc f;
  f.name = "shared_reverse";
  f.params = {param("A", blocks * 64), param("B", blocks * 64, true)};
  f.body = bound("b", blocks, "blockIdx.x", make_allocate("S", DType::Float32, {64}, MemScope::Shared, body));
  return f;
}

// 64 KiB of shared memory per block: over the static limit, so it becomes dynamic shared memory.
inline LoweredFunc big_shared_reverse(int64_t elements = 16384) {
  Expr b = var("b"), j = var("j"), t0 = var("t0"), t1 = var("t1");
  Stmt load = bound("t0", 256, "threadIdx.x",
                    serial("j", elements / 256, make_store("S", j * 256 + t0, fload("A", b * elements + j * 256 + t0))));
  Stmt store = bound("t1", 256, "threadIdx.x",
                     serial("k", elements / 256,
                            make_store("B", b * elements + var("k") * 256 + t1,
                                       fload("S", make_int(elements - 1) - (var("k") * 256 + t1)))));
  LoweredFunc f;
  f.name = "big_shared_reverse";
  f.params = {param("A", 2 * elements), param("B", 2 * elements, true)};
  f.body = bound("b", 2, "blockIdx.x",
                 make_allocate("S", DType::Float32, {elements}, MemScope::Shared, make_seq({load, make_barrier(), store})));
  return f;
}

// Out[t] = sum_k A[t*4 + k] * (k + 1) through a per-thread array, 64 threads.
inline LoweredFunc local_weighted_sum() {
  Expr t = var("bx") * 32 + var("tx");
  Expr k = var("k"), k2 = var("k2");
  Stmt fill = serial("k", 4, make_store("acc", k, fload("A", t * 4 + k) * i2f(k + make_int(1))), ForKind::Unrolled);
  Stmt sum = make_seq({make_store("Out", t, make_float(0.0)),
                       serial("k2", 4, make_store("Out", t, fload("Out", t) + fload("acc", k2)))});
  LoweredFunc f;
  f.name = "local_weighted_sum";
  f.params = {param("A", 256), param("Out", 64, true)};
  f.body = bound("bx", 2, "blockIdx.x",
                 bound("tx", 32, "threadIdx.x",
                       make_allocate("acc", DType::Float32, {4}, MemScope::Local, make_seq({fill, sum}))));
  return f;
}

// Out[v*lanes + offset + l] = A[same] * 2 + l for 64 threads; wide accesses only when provable.
inline LoweredFunc vector_scale(int lanes, int64_t offset) {
  Expr base = offset ? var("tx") * lanes + make_int(offset) : var("tx") * lanes;
  Expr index = make_ramp(base, make_int(1), lanes);
  Expr lane_ids = make_cast(Type{DType::Float32, lanes}, make_ramp(make_int(0), make_int(1), lanes));
  Expr value = fload("A", index) * make_broadcast(make_float(2.0), lanes) + lane_ids;
  LoweredFunc f;
  f.name = "vector_scale";
  int64_t n = 64 * lanes + offset;
  f.params = {param("A", n), param("Out", n, true)};
  f.body = bound("tx", 64, "threadIdx.x", make_store("Out", index, value));
  return f;
}

inline constexpr MathFn kAllMathFns[] = {MathFn::Exp,     MathFn::Log, MathFn::Sqrt, MathFn::Rsqrt, MathFn::Tanh,
                                         MathFn::Sigmoid, MathFn::Erf, MathFn::Abs,  MathFn::Pow};

// Out[f*n + i] = fn_f(A[i]) for every MathFn (Pow's exponent is 1.5), n = 128.
inline LoweredFunc all_math(int64_t n = 128) {
  Expr i = var("i");
  std::vector<Stmt> stores;
  for (size_t f = 0; f < std::size(kAllMathFns); ++f) {
    MathFn fn = kAllMathFns[f];
    Expr x = fload("A", i);
    Expr value = fn == MathFn::Pow ? make_call(fn, {x, make_float(1.5)})
                 : fn == MathFn::Abs ? make_call(fn, {x - make_float(1.0)})
                                     : make_call(fn, {x});
    stores.push_back(make_store("Out", make_int(int64_t(f) * n) + i, value));
  }
  LoweredFunc f;
  f.name = "all_math";
  f.params = {param("A", n), param("Out", n * int64_t(std::size(kAllMathFns)), true)};
  f.body = bound("i", n, "threadIdx.x", make_seq(stores));
  return f;
}

// Integer floor division / modulo with negative operands, and a Select of float min / max:
// Out[k*n + i] for x = i - 50: x fdiv 7, x fmod 7, x fdiv 8, x fmod 8, x fdiv -3, x fmod -3,
// select(A[i] > 0, max(A[i], 0.5), min(A[i], -0.5)).
inline LoweredFunc int_ops_and_select(int64_t n = 100) {
  Expr i = var("i");
  Expr x = i - make_int(50);
  std::vector<Expr> values = {
      i2f(make_binary(ExprOp::FloorDiv, x, make_int(7))),  i2f(make_binary(ExprOp::FloorMod, x, make_int(7))),
      i2f(make_binary(ExprOp::FloorDiv, x, make_int(8))),  i2f(make_binary(ExprOp::FloorMod, x, make_int(8))),
      i2f(make_binary(ExprOp::FloorDiv, x, make_int(-3))), i2f(make_binary(ExprOp::FloorMod, x, make_int(-3))),
      make_select(fload("A", i) > make_float(0.0), max(fload("A", i), make_float(0.5)),
                  min(fload("A", i), make_float(-0.5)))};
  std::vector<Stmt> stores;
  for (size_t k = 0; k < values.size(); ++k) stores.push_back(make_store("Out", make_int(int64_t(k) * n) + i, values[k]));
  LoweredFunc f;
  f.name = "int_ops";
  f.params = {param("A", n), param("Out", n * int64_t(values.size()), true)};
  f.body = bound("i", n, "threadIdx.x", make_seq(stores));
  return f;
}

// Two kernels through a scratch buffer: T[i] = A[i] * 2, then B[i] = T[i] + 1 (n = 512).
inline LoweredFunc two_kernels(int64_t n = 512) {
  Expr i = var("i.o") * 128 + var("i.i"), j = var("j.o") * 128 + var("j.i");
  Stmt k1 = bound("i.o", n / 128, "blockIdx.x",
                  bound("i.i", 128, "threadIdx.x", make_store("T", i, fload("A", i) * make_float(2.0))));
  Stmt k2 = bound("j.o", n / 128, "blockIdx.x",
                  bound("j.i", 128, "threadIdx.x", make_store("B", j, fload("T", j) + make_float(1.0))));
  LoweredFunc f;
  f.name = "two_kernels";
  f.params = {param("A", n), param("B", n, true)};
  f.body = make_allocate("T", DType::Float32, {n}, MemScope::Global, make_seq({k1, k2}));
  return f;
}

// Compiles for sm_90; false, with the test marked skipped, when NVRTC cannot be loaded here.
inline bool compile_or_skip(const CudaProgram& program, std::vector<char>* cubin = nullptr) {
  try {
    std::vector<char> out = nvrtc_compile(program, "sm_90");
    REQUIRE(!out.empty());
    if (cubin) *cubin = std::move(out);
    return true;
  } catch (const CompileError&) {
    throw;
  } catch (const Error& e) {
    std::string message = e.what();
    if (message.rfind("NVRTC not available", 0) != 0) throw;
    tessel_test::skip_test(message);
    return false;
  }
}

// The runtime, or nullptr with the test marked skipped when this machine has no usable GPU.
inline CudaRuntime* runtime_or_skip() {
  std::string why;
  CudaRuntime* rt = CudaRuntime::get(&why);
  if (!rt) tessel_test::skip_test(why);
  return rt;
}

}  // namespace tessel::cuda_testing
