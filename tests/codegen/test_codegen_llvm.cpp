// The LLVM CPU backend on hand-built loop nests: scalar and vector memory access, integer and float
// arithmetic, control flow, allocations, IR text, shared objects and the errors for GPU-only IR.
#include "codegen/llvm/llvm_backend.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>

#include "schedule/te/error.h"
#include "tests/codegen/kernel_test_util.h"

using namespace tessel;
using namespace tessel::testing;

namespace {

// C[i*13 + j] = A[i*13 + j] + B[i*13 + j] over 7 x 13.
LoweredFunc add_7x13(ForKind outer = ForKind::Serial) {
  Expr idx = var("i") * 13 + var("j");
  Stmt store = make_store("C", idx, fload("A", idx) + fload("B", idx));
  LoweredFunc f;
  f.name = "add_7x13";
  f.params = {param("A", DType::Float32, 91), param("B", DType::Float32, 91), param("C", DType::Float32, 91, true)};
  f.body = serial("i", 7, serial("j", 13, store), outer);
  return f;
}

void check_add_7x13(const CompiledKernel& kernel) {
  AlignedBuffer<float> a(91), b(91), c(91, NAN);
  for (int i = 0; i < 91; ++i) {
    a[i] = 0.5f * i;
    b[i] = 100.0f - i;
  }
  void* args[] = {a.data(), b.data(), c.data()};
  kernel.run(args);
  for (int i = 0; i < 91; ++i) REQUIRE(c[i] == a[i] + b[i]);
}

// Out[k] = In[k*in_stride] * 2 + 1 via vectors of `lanes`, written at k*out_stride (n vectors).
LoweredFunc strided_copy(int lanes, int64_t in_stride, int64_t out_stride, int64_t vectors) {
  Expr base = var("v") * lanes;
  Expr in_index = make_ramp(base * in_stride, make_int(in_stride), lanes);
  Expr out_index = make_ramp(base * out_stride, make_int(out_stride), lanes);
  Expr value = fload("In", in_index) * make_float(2.0, lanes) + make_broadcast(make_float(1.0), lanes);
  LoweredFunc f;
  f.name = "strided_copy_" + std::to_string(lanes);
  int64_t n = vectors * lanes;
  f.params = {param("In", DType::Float32, n * in_stride), param("Out", DType::Float32, n * out_stride, true)};
  f.body = serial("v", vectors, make_store("Out", out_index, value));
  return f;
}

}  // namespace

TEST_CASE("scalar loop nest adds two 7x13 matrices", "[codegen][llvm]") {
  check_add_7x13(*jit_compile(add_7x13()));
}

TEST_CASE("every optimization level gives the same answer", "[codegen][llvm]") {
  for (int level : {0, 1, 2, 3}) {
    LLVMOptions options;
    options.opt_level = level;
    check_add_7x13(*jit_compile(add_7x13(), options));
  }
}

TEST_CASE("vector loads and stores at unit-stride ramps", "[codegen][llvm]") {
  for (int lanes : {4, 8, 16}) {
    CAPTURE(lanes);
    auto kernel = jit_compile(strided_copy(lanes, 1, 1, 5));
    int n = 5 * lanes;
    AlignedBuffer<float> in(n), out(n, NAN);
    for (int i = 0; i < n; ++i) in[i] = static_cast<float>(i) - 7;
    void* args[] = {in.data(), out.data()};
    kernel->run(args);
    for (int i = 0; i < n; ++i) REQUIRE(out[i] == in[i] * 2 + 1);
  }
}

TEST_CASE("gathers and scatters at non-unit-stride ramps", "[codegen][llvm]") {
  for (int lanes : {4, 8, 16}) {
    CAPTURE(lanes);
    auto kernel = jit_compile(strided_copy(lanes, 3, 2, 4));
    int n = 4 * lanes;
    AlignedBuffer<float> in(n * 3), out(n * 2, -5.0f);
    for (int i = 0; i < n * 3; ++i) in[i] = static_cast<float>(i);
    void* args[] = {in.data(), out.data()};
    kernel->run(args);
    for (int k = 0; k < n; ++k) {
      REQUIRE(out[2 * k] == in[3 * k] * 2 + 1);
      REQUIRE(out[2 * k + 1] == -5.0f);  // untouched between scattered lanes
    }
  }
}

TEST_CASE("broadcast index, broadcast value and select", "[codegen][llvm]") {
  // Out[ramp(8v, 1, 8)] = select(In[ramp] > S[0], In[ramp], S[0] broadcast)  (a vector max by hand)
  const int lanes = 8;
  Expr ramp = make_ramp(var("v") * lanes, make_int(1), lanes);
  Expr threshold = fload("S", make_broadcast(make_int(0), lanes));
  Expr x = fload("In", ramp);
  Stmt store = make_store("Out", ramp, make_select(x > threshold, x, threshold));
  LoweredFunc f{"clamp_below", {param("In", DType::Float32, 32), param("S", DType::Float32, 1),
                                param("Out", DType::Float32, 32, true)},
                serial("v", 4, store)};
  auto kernel = jit_compile(f);
  AlignedBuffer<float> in(32), s(1, 3.5f), out(32);
  for (int i = 0; i < 32; ++i) in[i] = static_cast<float>((i * 7) % 11);
  void* args[] = {in.data(), s.data(), out.data()};
  kernel->run(args);
  for (int i = 0; i < 32; ++i) REQUIRE(out[i] == std::max(in[i], 3.5f));
}

TEST_CASE("floordiv and floormod round toward negative infinity", "[codegen][llvm]") {
  // Q[i] = A[i] floordiv B[i], R[i] = A[i] floormod B[i]; plus constant divisors 4 (a shift) and 3.
  const int n = 64;
  Expr i = var("i");
  Expr a = iload("A", i), b = iload("B", i);
  Stmt body = make_seq({
      make_store("Q", i, make_binary(ExprOp::FloorDiv, a, b)),
      make_store("R", i, make_binary(ExprOp::FloorMod, a, b)),
      make_store("Q4", i, a / make_int(4)),
      make_store("R4", i, a % make_int(4)),
      make_store("Q3", i, a / make_int(3)),
      make_store("R3", i, a % make_int(3)),
  });
  std::vector<BufferParam> params{param("A", DType::Int64, n), param("B", DType::Int64, n)};
  for (const char* out : {"Q", "R", "Q4", "R4", "Q3", "R3"}) params.push_back(param(out, DType::Int64, n, true));
  auto kernel = jit_compile(LoweredFunc{"floor_ops", params, serial("i", n, body)});

  std::vector<std::unique_ptr<AlignedBuffer<int64_t>>> storage;
  for (int k = 0; k < 8; ++k) storage.push_back(std::make_unique<AlignedBuffer<int64_t>>(n));
  auto bufs = [&](int b) -> AlignedBuffer<int64_t>& { return *storage[b]; };
  for (int k = 0; k < n; ++k) {
    bufs(0)[k] = (k * 37) % 41 - 20;  // -20..20
    int64_t d = (k * 13) % 11 - 5;    // -5..5
    bufs(1)[k] = d == 0 ? 7 : d;
  }
  void* args[8];
  for (int k = 0; k < 8; ++k) args[k] = bufs(k).data();
  kernel->run(args);
  auto floor_div = [](int64_t x, int64_t y) { return static_cast<int64_t>(std::floor(double(x) / double(y))); };
  for (int k = 0; k < n; ++k) {
    int64_t x = bufs(0)[k], y = bufs(1)[k];
    CAPTURE(x, y);
    REQUIRE(bufs(2)[k] == floor_div(x, y));
    REQUIRE(bufs(3)[k] == x - floor_div(x, y) * y);
    REQUIRE(bufs(4)[k] == floor_div(x, 4));
    REQUIRE(bufs(5)[k] == x - floor_div(x, 4) * 4);
    REQUIRE(bufs(6)[k] == floor_div(x, 3));
    REQUIRE(bufs(7)[k] == x - floor_div(x, 3) * 3);
  }
}

TEST_CASE("an integer division by a zero in the data, or under a select's mask, does not trap", "[codegen][llvm]") {
  // Q[v] = select(B[v] != 0, A[v] floordiv B[v], -1) on 8 lanes: the division's side is evaluated in
  // every lane, its masked-off lanes loading zeros; and a plain division by zero.
  const int lanes = 8;
  Expr ramp = make_ramp(var("v") * lanes, make_int(1), lanes);
  Expr a = iload("A", ramp), b = iload("B", ramp);
  Stmt body = make_seq({
      make_store("Q", ramp, make_select(make_binary(ExprOp::NE, b, make_broadcast(make_int(0), lanes)), make_binary(ExprOp::FloorDiv, a, b),
                                        make_broadcast(make_int(-1), lanes))),
      make_store("R", ramp, make_binary(ExprOp::FloorMod, a, b)),
  });
  std::vector<BufferParam> params{param("A", DType::Int64, 16), param("B", DType::Int64, 16),
                                  param("Q", DType::Int64, 16, true), param("R", DType::Int64, 16, true)};
  auto kernel = jit_compile(LoweredFunc{"zero_divisors", params, serial("v", 2, body)});
  AlignedBuffer<int64_t> av(16), bv(16), q(16), r(16);
  for (int k = 0; k < 16; ++k) {
    av[k] = 3 * k - 20;
    bv[k] = k % 3 == 0 ? 0 : k % 5 - 2;
  }
  void* args[] = {av.data(), bv.data(), q.data(), r.data()};
  kernel->run(args);
  auto floor_div = [](int64_t x, int64_t y) { return static_cast<int64_t>(std::floor(double(x) / double(y))); };
  for (int k = 0; k < 16; ++k) {
    CAPTURE(k, av[k], bv[k]);
    REQUIRE(q[k] == (bv[k] != 0 ? floor_div(av[k], bv[k]) : -1));
  }
}

TEST_CASE("vector floordiv and floormod", "[codegen][llvm]") {
  // Q[ramp] = ramp(-17 + 8v, 1, 8) floordiv 5, R = ... floormod 5.
  Expr r = make_ramp(var("v") * 8 - 17, make_int(1), 8);
  Expr out = make_ramp(var("v") * 8, make_int(1), 8);
  Stmt body = make_seq({make_store("Q", out, r / make_int(5, 8)), make_store("R", out, r % make_int(5, 8))});
  auto kernel = jit_compile(
      LoweredFunc{"vec_floor", {param("Q", DType::Int64, 32, true), param("R", DType::Int64, 32, true)},
                  serial("v", 4, body)});
  AlignedBuffer<int64_t> q(32), rem(32);
  void* args[] = {q.data(), rem.data()};
  kernel->run(args);
  for (int k = 0; k < 32; ++k) {
    int64_t x = k - 17;
    int64_t fq = static_cast<int64_t>(std::floor(x / 5.0));
    REQUIRE(q[k] == fq);
    REQUIRE(rem[k] == x - 5 * fq);
  }
}

TEST_CASE("casts between float, int and bool", "[codegen][llvm]") {
  Expr i = var("i");
  Expr x = fload("X", i);
  Expr as_int = make_cast(kInt64, x);
  Stmt body = make_seq({
      make_store("I", i, as_int),                                           // truncation
      make_store("F", i, make_cast(kFloat32, as_int * make_int(3))),        // int -> float
      make_store("B", i, make_cast(kFloat32, make_cast(kBool, x))),         // float -> bool -> float
      make_store("J", i, make_cast(kInt64, make_cast(kBool, as_int))),      // int -> bool -> int
  });
  auto kernel = jit_compile(LoweredFunc{
      "casts",
      {param("X", DType::Float32, 8), param("I", DType::Int64, 8, true), param("F", DType::Float32, 8, true),
       param("B", DType::Float32, 8, true), param("J", DType::Int64, 8, true)},
      serial("i", 8, body)});
  AlignedBuffer<float> xs(8), fs(8), bs(8);
  AlignedBuffer<int64_t> is(8), js(8);
  const float values[8] = {0.0f, -0.0f, 2.7f, -2.7f, 0.4f, -1e6f, 12345.9f, NAN};
  for (int k = 0; k < 8; ++k) xs[k] = values[k];
  void* args[] = {xs.data(), is.data(), fs.data(), bs.data(), js.data()};
  kernel->run(args);
  for (int k = 0; k < 7; ++k) {  // NaN -> int is unspecified; its bool is checked below
    CAPTURE(values[k]);
    REQUIRE(is[k] == static_cast<int64_t>(values[k]));
    REQUIRE(fs[k] == static_cast<float>(static_cast<int64_t>(values[k]) * 3));
    REQUIRE(js[k] == (static_cast<int64_t>(values[k]) != 0 ? 1 : 0));
  }
  for (int k = 0; k < 8; ++k) REQUIRE(bs[k] == (values[k] != 0.0f ? 1.0f : 0.0f));
}

TEST_CASE("if-then-else and bool buffers", "[codegen][llvm]") {
  // if (i % 3 == 0) Out[i] = 1 else if-less branch writes 2; M[i] = i < 5 (a bool buffer), read back.
  Expr i = var("i");
  Stmt branch = make_if(make_binary(ExprOp::EQ, i % make_int(3), make_int(0)), make_store("Out", i, make_float(1.0)),
                        make_store("Out", i, make_float(2.0)));
  Stmt mask = make_store("M", i, i < make_int(5));
  Stmt use_mask = make_if(make_load("M", i, kBool), make_store("Out", i, fload("Out", i) + make_float(10.0)));
  Stmt only_then = make_if(i > make_int(8), make_store("Out", i, make_float(-1.0)));
  auto kernel = jit_compile(LoweredFunc{
      "branches", {param("Out", DType::Float32, 10, true), param("M", DType::Bool, 10, true)},
      serial("i", 10, make_seq({branch, mask, use_mask, only_then}))});
  AlignedBuffer<float> out(10, NAN);
  AlignedBuffer<uint8_t> m(10, 7);
  void* args[] = {out.data(), m.data()};
  kernel->run(args);
  for (int k = 0; k < 10; ++k) {
    float expect = (k % 3 == 0 ? 1.0f : 2.0f) + (k < 5 ? 10.0f : 0.0f);
    if (k > 8) expect = -1.0f;
    REQUIRE(out[k] == expect);
    REQUIRE(m[k] == (k < 5 ? 1 : 0));
  }
}

TEST_CASE("unrolled loops and loops with a nonzero min", "[codegen][llvm]") {
  // for i in [3, 3+5): unrolled for j in [0, 4): Out[i*4+j] = i - j
  Expr idx = (var("i") - make_int(3)) * 4 + var("j");
  Stmt inner = make_for("j", make_int(0), make_int(4), ForKind::Unrolled,
                        make_store("Out", idx, make_cast(kFloat32, var("i") - var("j"))));
  LoweredFunc f{"unrolled", {param("Out", DType::Float32, 20, true)},
                make_for("i", make_int(3), make_int(5), ForKind::Serial, inner)};
  LLVMOptions o0;
  o0.opt_level = 0;
  REQUIRE(emit_llvm_ir(f, o0).find("llvm.loop.unroll.full") != std::string::npos);
  auto kernel = jit_compile(f);
  AlignedBuffer<float> out(20, NAN);
  void* args[] = {out.data()};
  kernel->run(args);
  for (int i = 3; i < 8; ++i)
    for (int j = 0; j < 4; ++j) REQUIRE(out[(i - 3) * 4 + j] == static_cast<float>(i - j));
}

TEST_CASE("small and large allocations as scratch", "[codegen][llvm]") {
  for (int64_t n : {int64_t(256), int64_t(1) << 20}) {
    CAPTURE(n);
    // T[i] = In[i] * 3 ; Out[i] = T[n-1-i] + 1
    Expr i = var("i");
    Stmt fill = serial("i", n, make_store("T", i, fload("In", i) * make_float(3.0)));
    Stmt use = serial("k", n, make_store("Out", var("k"), fload("T", make_int(n - 1) - var("k")) + make_float(1.0)));
    Stmt body = make_allocate("T", DType::Float32, {n}, MemScope::Local, make_seq({fill, use}));
    LoweredFunc f{"scratch", {param("In", DType::Float32, n), param("Out", DType::Float32, n, true)}, body};
    std::string ir = emit_llvm_ir(f);
    bool heap = n * 4 > 64 * 1024;
    REQUIRE((ir.find("aligned_alloc") != std::string::npos) == heap);
    auto kernel = jit_compile(f);
    AlignedBuffer<float> in(n), out(n);
    for (int64_t k = 0; k < n; ++k) in[k] = static_cast<float>(k % 1000);
    void* args[] = {in.data(), out.data()};
    kernel->run(args);
    for (int64_t k = 0; k < n; ++k) REQUIRE(out[k] == in[n - 1 - k] * 3 + 1);
  }
}

TEST_CASE("16-lane kernels use 16-wide vector types in the IR", "[codegen][llvm]") {
  std::string ir = emit_llvm_ir(strided_copy(16, 1, 1, 4));
  REQUIRE(ir.find("<16 x float>") != std::string::npos);
  REQUIRE(ir.find("noalias") != std::string::npos);
  REQUIRE(ir.find("define void @strided_copy_16(ptr") != std::string::npos);
}

TEST_CASE("shared object round trip gives the JIT's results", "[codegen][llvm]") {
  std::string path = "/tmp/tessel_test_codegen_" + std::to_string(getpid()) + ".so";
  LoweredFunc f = add_7x13(ForKind::Parallel);
  write_shared_object(f, path);
  auto loaded = load_shared_object(path, f.name);
  check_add_7x13(*loaded);
  check_add_7x13(*jit_compile(f));
  REQUIRE_THROWS_AS(load_shared_object(path, "no_such_kernel"), CompileError);
  std::remove(path.c_str());
  REQUIRE_THROWS_AS(load_shared_object(path + ".missing", f.name), CompileError);
}

TEST_CASE("IR that cannot run on a CPU is a CompileError", "[codegen][llvm]") {
  Stmt store = make_store("C", var("i"), make_float(1.0));
  std::vector<BufferParam> params{param("C", DType::Float32, 8, true)};
  auto func = [&](Stmt body) { return LoweredFunc{"bad", params, body}; };
  REQUIRE_THROWS_AS(jit_compile(func(serial("i", 8, store, ForKind::Vectorized))), CompileError);
  REQUIRE_THROWS_AS(jit_compile(func(make_for("i", make_int(0), make_int(8), ForKind::ThreadBound, store,
                                              "threadIdx.x"))),
                    CompileError);
  REQUIRE_THROWS_AS(jit_compile(func(make_seq({serial("i", 8, store), make_barrier()}))), CompileError);
  REQUIRE_THROWS_AS(jit_compile(func(serial("i", 8, make_provide("C", {var("i")}, make_float(1.0))))),
                    CompileError);
  REQUIRE_THROWS_AS(
      jit_compile(func(serial("i", 8, make_store("C", var("i"), make_tensor_read("A", {var("i")}))))),
      CompileError);
  REQUIRE_THROWS_AS(jit_compile(func(serial("i", 8, make_store("D", var("i"), make_float(1.0))))), CompileError);
  REQUIRE_THROWS_AS(jit_compile(func(serial("i", 8, make_store("C", var("j"), make_float(1.0))))), CompileError);
}

TEST_CASE("prefetches are llvm.prefetch per line, clamped into the buffer, and change nothing", "[codegen][llvm]") {
  // Out[i] = In[i] + 1, each iteration prefetching far outside In (before it, past its end) and
  // a region of 40 elements that starts inside a line (so it touches four lines, not three).
  const int64_t n = 100;
  Expr i = var("i");
  Stmt body = make_seq({make_prefetch("In", i * make_int(1000) - make_int(5000), 1),
                        make_prefetch("In", i + make_int(3), 40),
                        make_store("Out", i, fload("In", i) + make_float(1.0))});
  LoweredFunc f{"prefetching", {param("In", DType::Float32, n), param("Out", DType::Float32, n, true)},
                serial("i", n, body)};
  LLVMOptions o0;
  o0.opt_level = 0;
  std::string ir = emit_llvm_ir(f, o0);
  INFO(ir);
  // One line for the single element, four for 40 elements that may start inside a line.
  const std::string call = "call void @llvm.prefetch";
  int calls = 0;
  for (size_t p = ir.find(call); p != std::string::npos; p = ir.find(call, p + 1)) ++calls;
  CHECK(calls == 5);
  CHECK(ir.find("@llvm.smin.i64") != std::string::npos);
  CHECK(ir.find("@llvm.smax.i64") != std::string::npos);
  auto kernel = jit_compile(f);
  AlignedBuffer<float> in(n), out(n, NAN);
  for (int64_t k = 0; k < n; ++k) in[k] = static_cast<float>(k);
  void* args[] = {in.data(), out.data()};
  kernel->run(args);
  for (int64_t k = 0; k < n; ++k) REQUIRE(out[k] == static_cast<float>(k + 1));
}

TEST_CASE("host target is detected", "[codegen][llvm]") {
  const HostTarget& host = host_target();
  REQUIRE(!host.triple.empty());
  REQUIRE(!host.cpu.empty());
  REQUIRE((host.vector_bits == 128 || host.vector_bits == 256 || host.vector_bits == 512));
  REQUIRE(host_vector_lanes() == host.vector_bits / 32);
  REQUIRE(host.num_cores >= 1);
  if (host.features.find("+avx512f") != std::string::npos) REQUIRE(host.vector_bits == 512);
}
