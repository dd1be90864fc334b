// The CUDA C printer on hand-built loop nests: launch dimensions, shared and local memory, wide
// vector accesses, math and integer helpers, scratch buffers, the errors for unmappable IR, and
// NVRTC compilation (sm_90) of every program, including a failing one.
#include <catch2/catch.hpp>

#include "codegen/cuda/cuda_kernel_info.h"
#include "tests/cuda/cuda_test_util.h"

using namespace tessel;
using namespace tessel::cuda_testing;
using Catch::Matchers::Contains;

namespace {

bool has(const std::string& source, const std::string& text) { return source.find(text) != std::string::npos; }

}  // namespace

TEST_CASE("elementwise kernel binds blocks and threads and guards the tail", "[cuda][printer]") {
  CudaProgram p = emit_cuda(elementwise_add(1000));
  INFO(p.source);
  REQUIRE(p.launches.size() == 1);
  const CudaLaunch& l = p.launches[0];
  CHECK(l.kernel_name == "kernel_0");
  CHECK(l.grid[0] == 4);
  CHECK(l.grid[1] == 1);
  CHECK(l.block[0] == 256);
  CHECK(l.block[2] == 1);
  CHECK(l.dynamic_shared_bytes == 0);
  CHECK(l.args == std::vector<std::string>{"A", "B", "C"});
  CHECK(has(p.source, "extern \"C\" __global__ void __launch_bounds__(256) kernel_0("));
  CHECK(has(p.source, "const float* __restrict__ A"));
  CHECK(has(p.source, "float* __restrict__ C"));
  CHECK_FALSE(has(p.source, "const float* __restrict__ C"));
  CHECK(has(p.source, "const int i_o = blockIdx.x;"));
  CHECK(has(p.source, "const int i_i = threadIdx.x;"));
  CHECK(has(p.source, "if (((i_o * 256) + i_i) < 1000) {"));
  CHECK(p.scratch.empty());
  compile_or_skip(p);
}

TEST_CASE("shared buffer and barrier", "[cuda][printer]") {
  CudaProgram p = emit_cuda(shared_reverse(4));
  INFO(p.source);
  CHECK(has(p.source, "__shared__ __align__(32) float S[64];"));
  CHECK(has(p.source, "__syncthreads();"));
  CHECK(p.launches[0].block[0] == 64);
  CHECK(p.launches[0].grid[0] == 4);
  CHECK(p.launches[0].dynamic_shared_bytes == 0);
  compile_or_skip(p);
}

TEST_CASE("shared memory over 48 KiB becomes dynamic shared memory", "[cuda][printer]") {
  CudaProgram p = emit_cuda(big_shared_reverse());
  INFO(p.source);
  CHECK(p.launches[0].dynamic_shared_bytes == 64 * 1024);
  CHECK(has(p.source, "extern __shared__ __align__(128) unsigned char tessel_dynamic_shared[];"));
  CHECK(has(p.source, "float* __restrict__ S = reinterpret_cast<float*>(tessel_dynamic_shared + 0);"));
  compile_or_skip(p);

  CHECK_THROWS_WITH(emit_cuda(big_shared_reverse(64 * 1024)), Contains("bytes of shared memory, over the device limit"));
}

TEST_CASE("local array and unrolled loop", "[cuda][printer]") {
  CudaProgram p = emit_cuda(local_weighted_sum());
  INFO(p.source);
  CHECK(has(p.source, "__align__(16) float acc[4];"));
  CHECK(has(p.source, "#pragma unroll\n"));
  CHECK(has(p.source, "for (int k = 0; k < 4; ++k) {"));
  compile_or_skip(p);
}

TEST_CASE("vector accesses are float4 / float2 only where alignment is provable", "[cuda][printer]") {
  SECTION("4 lanes at tx*4: float4") {
    CudaProgram p = emit_cuda(vector_scale(4, 0));
    INFO(p.source);
    CHECK(has(p.source, "*reinterpret_cast<const float4*>(&A[tx * 4])"));
    CHECK(has(p.source, "*reinterpret_cast<float4*>(&Out[tx * 4]) = make_float4("));
    compile_or_skip(p);
  }
  SECTION("4 lanes at tx*4 + 8: still float4") {
    CudaProgram p = emit_cuda(vector_scale(4, 8));
    INFO(p.source);
    CHECK(has(p.source, "float4"));
    compile_or_skip(p);
  }
  SECTION("4 lanes at tx*4 + 2: element-wise") {
    CudaProgram p = emit_cuda(vector_scale(4, 2));
    INFO(p.source);
    CHECK_FALSE(has(p.source, "float4"));
    CHECK(has(p.source, "Out[((tx * 4) + 2) + 3] = "));
    compile_or_skip(p);
  }
  SECTION("2 lanes: float2") {
    CudaProgram p = emit_cuda(vector_scale(2, 0));
    INFO(p.source);
    CHECK(has(p.source, "float2"));
    compile_or_skip(p);
  }
  SECTION("3 lanes: element-wise with a temporary per lane") {
    CudaProgram p = emit_cuda(vector_scale(3, 0));
    INFO(p.source);
    CHECK_FALSE(has(p.source, "float4"));
    CHECK_FALSE(has(p.source, "float2"));
    CHECK(has(p.source, "const float v2 = "));
    compile_or_skip(p);
  }
}

TEST_CASE("every math function maps to its CUDA counterpart", "[cuda][printer]") {
  CudaProgram p = emit_cuda(all_math());
  INFO(p.source);
  for (const char* fn : {"expf(", "logf(", "sqrtf(", "rsqrtf(", "tanhf(", "tessel_sigmoid(", "erff(", "fabsf(",
                         "powf(A[i], 1.5f)"})
    CHECK(has(p.source, fn));
  CHECK_FALSE(has(p.source, "__expf"));  // no fast-math intrinsics
  compile_or_skip(p);
}

TEST_CASE("floor division, modulo and select", "[cuda][printer]") {
  CudaProgram p = emit_cuda(int_ops_and_select());
  INFO(p.source);
  CHECK(has(p.source, "tessel_floordiv((i - 50), 7)"));
  CHECK(has(p.source, "tessel_floormod((i - 50), 7)"));
  CHECK(has(p.source, "((i - 50) >> 3)"));
  CHECK(has(p.source, "((i - 50) & 7)"));
  CHECK(has(p.source, "tessel_floordiv((i - 50), (-3))"));
  CHECK(has(p.source, "const int i = threadIdx.x;"));  // negative quotients and remainders in 32 bits
  CHECK(has(p.source, "fmaxf(A[i], 0.5f)"));
  CHECK(has(p.source, "fminf(A[i], (-0.5f))"));
  CHECK(has(p.source, " ? "));
  compile_or_skip(p);
}

TEST_CASE("indices are ints where they provably fit in 32 bits, long long otherwise", "[cuda][printer]") {
  SECTION("an elementwise kernel of 3e9 elements") {
    CudaProgram p = emit_cuda(elementwise_add(3'000'000'000LL));
    INFO(p.source);
    CHECK(has(p.source, "const long long i_o = blockIdx.x;"));
    CHECK(has(p.source, "if (((i_o * 256) + i_i) < 3000000000LL) {"));
    compile_or_skip(p);
  }
  SECTION("the same kernel of 2^31 - 256 elements") {
    CudaProgram p = emit_cuda(elementwise_add(2147483392LL));
    INFO(p.source);
    CHECK(has(p.source, "const int i_o = blockIdx.x;"));
    compile_or_skip(p);
  }
  // Each case stores A[index] for i < 1000, with an index whose intermediate values (or type) the
  // 32-bit form could not hold.
  auto kernel = [](Expr index, bool with_int_input = false) {
    LoweredFunc f;
    f.name = "index";
    f.params = {param("A", 1000), param("Out", 1000, true)};
    if (with_int_input) f.params.push_back(BufferParam{"Idx", DType::Int64, {1000}, false});
    f.body = bound("i", 1000, "threadIdx.x", make_store("Out", var("i"), fload("A", index)));
    return f;
  };
  const Expr i = var("i"), big = make_int(int64_t(1) << 32);
  SECTION("a product past 32 bits that cancels") {
    Stmt body = kernel((i * big) - (i * big) + i).body;
    CHECK_FALSE(cuda_detail::indices_fit_in_32_bits(body));
    CHECK(cuda_detail::indices_fit_in_32_bits(kernel(make_binary(ExprOp::FloorDiv, i * make_int(1000), make_int(-3)) + make_int(400)).body));
  }
  SECTION("an index mixing a loaded integer with the loop variable") {
    Expr loaded = make_load("Idx", i, kInt64);
    CHECK_FALSE(cuda_detail::indices_fit_in_32_bits(kernel(loaded + i, true).body));
    // An index that is a loaded value alone keeps the value's own type.
    CudaProgram p = emit_cuda(kernel(loaded, true));
    INFO(p.source);
    CHECK(has(p.source, "const int i = threadIdx.x;"));
    compile_or_skip(p);
  }
  SECTION("a float converted to an index") {
    CHECK_FALSE(cuda_detail::indices_fit_in_32_bits(kernel(f2i(i2f(i) * make_float(0.5)) + i).body));
  }
  SECTION("a vector index over its lanes") {
    Expr ramp = make_ramp(i * make_int(4), make_int(1), 4);
    CHECK(cuda_detail::indices_fit_in_32_bits(make_store("Out", ramp, fload("A", ramp))) == false);  // i unbounded
    CHECK(cuda_detail::indices_fit_in_32_bits(bound("i", 250, "threadIdx.x", make_store("Out", ramp, fload("A", ramp)))));
    Expr wide = make_ramp(i * make_int(1 << 29), make_int(1 << 28), 4);
    CHECK_FALSE(cuda_detail::indices_fit_in_32_bits(bound("i", 4, "threadIdx.x", make_store("Out", wide, fload("A", wide)))));
  }
}

TEST_CASE("two kernels share a scratch buffer", "[cuda][printer]") {
  CudaProgram p = emit_cuda(two_kernels());
  INFO(p.source);
  REQUIRE(p.launches.size() == 2);
  REQUIRE(p.scratch.size() == 1);
  CHECK(p.scratch[0].name == "T");
  CHECK(p.scratch[0].shape == std::vector<int64_t>{512});
  CHECK(p.launches[0].args == std::vector<std::string>{"A", "B", "T"});
  CHECK(p.launches[1].args == std::vector<std::string>{"A", "B", "T"});
  CHECK(has(p.source, "kernel_0(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ T)"));
  CHECK(has(p.source, "kernel_1(const float* __restrict__ A, float* __restrict__ B, const float* __restrict__ T)"));
  compile_or_skip(p);
}

TEST_CASE("two copies of one scratch allocation (a partitioned loop's) are one buffer", "[cuda][printer]") {
  // Found by mutating traces: the second copy was 'defined twice', an internal error.
  LoweredFunc f = two_kernels();
  f.body = make_seq({f.body, f.body});
  CudaProgram p = emit_cuda(f);
  REQUIRE(p.launches.size() == 4);
  REQUIRE(p.scratch.size() == 1);
  CHECK(p.scratch[0].name == "T");
  LoweredFunc g = two_kernels();
  g.body = make_seq({g.body, two_kernels(1024).body});  // the same name with another shape stays an error
  CHECK_THROWS_AS(emit_cuda(g), CompileError);
  compile_or_skip(p);
}

TEST_CASE("literals are exact and names become identifiers", "[cuda][printer]") {
  Expr i = var("i.inner");
  Expr value = make_float(0.1) + make_float(INFINITY) + make_float(-INFINITY) + make_float(NAN) + make_float(-2.5) +
               make_float(1e-45) + make_float(3.0);
  LoweredFunc f;
  f.name = "literals";
  f.params = {param("out.buf", 8, true)};
  f.body = bound("i.inner", 8, "threadIdx.x", make_store("out.buf", i + make_int(int64_t(1) << 40) - make_int(int64_t(1) << 40), value));
  CudaProgram p = emit_cuda(f);
  INFO(p.source);
  CHECK(has(p.source, "0.100000001f"));
  CHECK(has(p.source, "__int_as_float(0x7f800000)"));
  CHECK(has(p.source, "(-__int_as_float(0x7f800000))"));
  CHECK(has(p.source, "__int_as_float(0x7fc00000)"));
  CHECK(has(p.source, "(-2.5f)"));
  CHECK(has(p.source, "1.40129846e-45f"));
  CHECK(has(p.source, "3.0f"));
  CHECK(has(p.source, "1099511627776LL"));
  CHECK(has(p.source, "float* __restrict__ out_buf"));
  CHECK(has(p.source, "const long long i_inner = threadIdx.x;"));
  CHECK(p.launches[0].args == std::vector<std::string>{"out.buf"});
  compile_or_skip(p);
}

TEST_CASE("sibling thread loops of different extents are guarded", "[cuda][printer]") {
  Stmt a = bound("t0", 32, "threadIdx.x", make_store("A", var("t0"), make_float(1.0)));
  Stmt b = bound("t1", 64, "threadIdx.x", make_store("B", var("t1"), make_float(2.0)));
  LoweredFunc f;
  f.name = "siblings";
  f.params = {param("A", 32, true), param("B", 64, true)};
  f.body = bound("b", 1, "blockIdx.x", make_seq({a, b}));
  CudaProgram p = emit_cuda(f);
  INFO(p.source);
  CHECK(p.launches[0].block[0] == 64);
  CHECK(has(p.source, "if (threadIdx.x < 32) {"));
  compile_or_skip(p);

  // With a barrier inside the smaller one, a guard would deadlock the block.
  Stmt a_barrier = bound("t0", 32, "threadIdx.x", make_seq({make_barrier(), make_store("A", var("t0"), make_float(1.0))}));
  f.body = bound("b", 1, "blockIdx.x", make_seq({a_barrier, b}));
  CHECK_THROWS_AS(emit_cuda(f), CompileError);
}

TEST_CASE("IR that cannot map to kernels is a CompileError", "[cuda][printer]") {
  Stmt store = make_store("A", var("i"), make_float(1.0));
  LoweredFunc f;
  f.name = "bad";
  f.params = {param("A", 4096, true)};

  f.body = bound("i", 2048, "threadIdx.x", store);
  CHECK_THROWS_WITH(emit_cuda(f), Contains("blockDim.x = 2048, over the device limit 1024"));

  f.body = bound("i", 70000, "blockIdx.y", store);
  CHECK_THROWS_WITH(emit_cuda(f), Contains("gridDim.y = 70000"));

  f.body = bound("j", 32, "threadIdx.y", bound("i", 64, "threadIdx.x", store));
  CHECK_THROWS_WITH(emit_cuda(f), Contains("2048 threads per block"));

  // Nested loops may name the same index again (a cooperative fetch inside a thread tile), but only
  // with the same extent.
  f.body = bound("j", 4, "threadIdx.x", bound("i", 8, "threadIdx.x", store));
  CHECK_THROWS_WITH(emit_cuda(f), Contains("threadIdx.x is bound to extents 4 and 8"));
  f.body = bound("j", 4, "threadIdx.x", bound("i", 4, "threadIdx.x", store));
  CHECK_NOTHROW(emit_cuda(f));

  f.body = bound("i", 4, "threadIdx.x", make_allocate("G", DType::Float32, {4}, MemScope::Global, store));
  CHECK_THROWS_WITH(emit_cuda(f), Contains("global buffer 'G' is allocated inside kernel_0"));

  f.body = serial("i", 4, store, ForKind::Parallel);
  CHECK_THROWS_WITH(emit_cuda(f), Contains("loop 'i' is parallel"));

  f.body = bound("i", 4, "warpIdx", store);
  CHECK_THROWS_WITH(emit_cuda(f), Contains("unknown thread tag 'warpIdx'"));

  f.body = bound("i", 4, "threadIdx.x", make_store("A", var("k"), make_float(1.0)));
  CHECK_THROWS_WITH(emit_cuda(f), Contains("unknown variable 'k'"));

  f.body = bound("i", 4, "threadIdx.x", make_store("Missing", var("i"), make_float(1.0)));
  CHECK_THROWS_WITH(emit_cuda(f), Contains("buffer 'Missing' is neither a parameter nor allocated"));
}

TEST_CASE("vthread loops run serially inside the thread", "[cuda][printer]") {
  LoweredFunc f;
  f.name = "vthread";
  f.params = {param("A", 8, true)};
  f.body = bound("v", 2, "vthread", bound("t", 4, "threadIdx.x", make_store("A", var("v") * 4 + var("t"), make_float(1.0))));
  CudaProgram p = emit_cuda(f);
  INFO(p.source);
  CHECK(has(p.source, "for (int v = 0; v < 2; ++v) {"));
  CHECK(p.launches[0].block[0] == 4);
  compile_or_skip(p);
}

TEST_CASE("an NVRTC failure reports the log and the offending line", "[cuda][nvrtc]") {
  CudaProgram p;
  p.source = "extern \"C\" __global__ void broken(float* out) {\n"
             "  out[0] = undefined_name + 1.0f;\n"
             "}\n";
  try {
    nvrtc_compile(p, "sm_90");
    FAIL("a broken program compiled");
  } catch (const CompileError& e) {
    std::string message = e.what();
    CHECK_THAT(message, Contains("undefined_name"));
    CHECK_THAT(message, Contains("error"));
    CHECK_THAT(message, Contains("line 2:   out[0] = undefined_name + 1.0f;"));
  } catch (const Error& e) {
    std::string message = e.what();
    REQUIRE_THAT(message, Catch::Matchers::StartsWith("NVRTC not available"));
    tessel_test::skip_test(message);
  }
}
