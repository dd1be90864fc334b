// LoweredFunc -> readable CUDA C (emit_cuda).
//
// Shape of the output: a short prelude of device helpers (floor division, integer min/max,
// sigmoid), then one `extern "C" __global__` kernel per top-level statement. Every kernel takes the
// same parameters, the function's buffers followed by the scratch buffers, so that a launch's
// argument list is always `params..., scratch...` and the runtime can map device pointers without
// knowing which kernel reads what. Vector expressions are printed lane by lane; a 2- or 4-lane
// contiguous access whose start is provably a multiple of its lane count becomes a float2 / float4
// access (every buffer is at least 16-byte aligned: cuMemAlloc, `__align__(16)` local arrays, and
// shared arrays and offsets into dynamic shared memory 32-byte aligned, as tensor-core tiles need).
// A tensor-core operation is printed as inline PTX (wmma), its fragments as per-thread register
// arrays, a tile's registers at [tile * registers per tile]; a warpgroup operation as wgmma, its
// operands' descriptors computed from the swizzled tiles' addresses.
#include "codegen/cuda/cuda_printer.h"

#include <string>

#include "schedule/ir/warpgroup.h"
#include "schedule/lower/verify.h"
#include "schedule/te/error.h"

namespace tessel {

namespace cuda_detail {

namespace {

const char* kPrelude = R"(// Floor division and modulo (round toward negative infinity), as the IR defines them, in the
// operands' common type: ints where a kernel's indices fit in 32 bits, long long otherwise.
template <typename A, typename B>
static __device__ __forceinline__ auto tessel_floordiv(A a, B b) -> decltype(a / b) {
  const auto q = a / b, r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q;
}
template <typename A, typename B>
static __device__ __forceinline__ auto tessel_floormod(A a, B b) -> decltype(a % b) {
  const auto r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
template <typename A, typename B>
static __device__ __forceinline__ auto tessel_imin(A a, B b) -> decltype(a + b) { return a < b ? a : b; }
template <typename A, typename B>
static __device__ __forceinline__ auto tessel_imax(A a, B b) -> decltype(a + b) { return a > b ? a : b; }
static __device__ __forceinline__ float tessel_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
)";

// Printed when the function holds a 16-bit float: its types and the conversions, rounding to nearest
// even as the CPU backend and the reference do.
const char* kHalfPrelude = R"(typedef unsigned short tessel_half;
typedef unsigned short tessel_bfloat16;
static __device__ __forceinline__ float tessel_half_to_float(tessel_half h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
static __device__ __forceinline__ tessel_half tessel_float_to_half(float f) {
  tessel_half h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
static __device__ __forceinline__ float tessel_bfloat16_to_float(tessel_bfloat16 b) {
  return __uint_as_float(static_cast<unsigned>(b) << 16);
}
static __device__ __forceinline__ tessel_bfloat16 tessel_float_to_bfloat16(float f) {
  unsigned u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<tessel_bfloat16>((u >> 16) | 0x40u);
  return static_cast<tessel_bfloat16>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
)";

// Printed when the function holds a tensor-core operation or an asynchronous copy: the 32-bit
// shared-memory address the wmma loads and stores and cp.async take (what __cvta_generic_to_shared
// gives, without a header).
const char* kMatrixPrelude = R"(static __device__ __forceinline__ unsigned tessel_shared_address(const void* p) {
  unsigned a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}
)";

// Printed when the function holds swizzled shared tiles or warpgroup operations (layouts in
// schedule/ir/warpgroup.h): where a tile's logical element sits, and a wgmma matrix descriptor.
const char* kWarpgroupPrelude = R"(// Element `i` of copies of an R x C tile: column blocks of 64 one after the other (the address a
// matrix descriptor names), then each row's 16-byte chunks permuted by the row's index mod 8. In
// unsigned arithmetic, so that divisions by the (constant) sizes become shifts where they can.
static __device__ __forceinline__ unsigned tessel_swizzle_block(unsigned i, unsigned rows, unsigned cols) {
  const unsigned tile = rows * cols, copy = i / tile, l = i - copy * tile, r = l / cols, c = l - r * cols;
  return copy * tile + (c >> 6) * (rows << 6) + (r << 6) + (c & 63u);
}
static __device__ __forceinline__ unsigned tessel_swizzle(unsigned i, unsigned rows, unsigned cols) {
  const unsigned a = tessel_swizzle_block(i, rows, cols);
  return a ^ ((a >> 3) & 56u);
}
// The same for tiles one block wide (64 columns): every copy's rows follow each other.
static __device__ __forceinline__ unsigned tessel_swizzle64(unsigned i) { return i ^ ((i >> 3) & 56u); }
// A shared-memory matrix descriptor: start address, leading- and stride-dimension byte offsets (all
// in 16-byte units), 128-byte swizzle.
static __device__ __forceinline__ unsigned long long tessel_wgmma_desc(unsigned address, unsigned lbo, unsigned sbo) {
  return (unsigned long long)((address >> 4) & 0x3FFF) | ((unsigned long long)((lbo >> 4) & 0x3FFF) << 16) |
         ((unsigned long long)((sbo >> 4) & 0x3FFF) << 32) | (1ull << 62);
}
)";

bool uses_warpgroup(const LoweredFunc& func) {
  bool found = false;
  visit(func.body, [&](const Stmt& s) {
    found = found || (s->op == StmtOp::Matrix && is_warpgroup_op(s->matrix_op)) ||
            (s->op == StmtOp::Allocate && s->swizzle_cols > 0);
  });
  return found;
}

bool uses_matrix(const LoweredFunc& func) {
  bool found = false;
  visit(func.body, [&](const Stmt& s) { found = found || s->op == StmtOp::Matrix || s->async_copy; });
  return found;
}

bool holds_half(const Expr& e) {
  if (e->type.is_half()) return true;
  for (const Expr& a : e->args)
    if (holds_half(a)) return true;
  return false;
}

bool uses_half(const LoweredFunc& func) {
  bool found = false;
  for (const BufferParam& p : func.params) found |= Type{p.dtype, 1}.is_half();
  visit(func.body, [&](const Stmt& s) {
    if (s->op == StmtOp::Allocate) found |= Type{s->dtype, 1}.is_half();
  });
  visit_exprs(func.body, [&](const Expr& e) { found = found || holds_half(e); });
  return found;
}

}  // namespace

CudaProgram CudaPrinter::print() {
  if (!func_.body) throw CompileError("cuda codegen: function '" + func_.name + "' has no body");
  for (const GpuKernel& k : split_gpu_kernels(func_.body)) {
    kernels_.push_back(k.body);
    for (const StmtNode* a : k.scratch) add_scratch(a);
  }
  for (size_t k = 0; k < kernels_.size(); ++k) names_.reserve("kernel_" + std::to_string(k));
  for (const BufferParam& p : func_.params) declare_buffer(p.name, p.dtype, "parameter");
  for (const BufferParam& p : program_.scratch) declare_buffer(p.name, p.dtype, "scratch buffer");
  visit(func_.body, [&](const Stmt& s) {
    if (s->op == StmtOp::For) names_.id(s->var);
    if (s->op == StmtOp::Allocate) names_.id(s->buffer);
  });
  out_ << "// Generated by tessel from '" << func_.name << "'.\n" << kPrelude;
  if (uses_half(func_)) out_ << kHalfPrelude;
  if (uses_matrix(func_) || uses_warpgroup(func_)) out_ << kMatrixPrelude;
  if (uses_warpgroup(func_)) out_ << kWarpgroupPrelude;
  visit(func_.body, [&](const Stmt& s) {
    program_.warpgroup_mma = program_.warpgroup_mma || (s->op == StmtOp::Matrix && is_warpgroup_op(s->matrix_op));
  });
  for (size_t k = 0; k < kernels_.size(); ++k) print_kernel(kernels_[k], "kernel_" + std::to_string(k));
  program_.source = out_.str();
  return std::move(program_);
}

// A global scratch allocation around kernels becomes a buffer the runtime allocates, once (the
// kernels inside one allocation list it each).
void CudaPrinter::add_scratch(const StmtNode* a) {
  if (!scratch_seen_.insert(a).second) return;
  // Loop partitioning can copy a nest with its allocation: the copies are one buffer.
  for (const BufferParam& p : program_.scratch)
    if (p.name == a->buffer && p.dtype == a->dtype && p.shape == a->extents) return;
  BufferParam scratch;
  scratch.name = a->buffer;
  scratch.dtype = a->dtype;
  scratch.shape = a->extents;
  program_.scratch.push_back(scratch);
}

void CudaPrinter::declare_buffer(const std::string& name, DType dtype, const char* what) {
  if (!buffers_.emplace(name, dtype).second)
    throw CompileError("cuda codegen: " + std::string(what) + " '" + name + "' is defined twice");
  names_.id(name);
}

void CudaPrinter::print_kernel(const Stmt& kernel, const std::string& name) {
  info_ = analyze_kernel(kernel, name, limits_);
  CudaLaunch launch;
  launch.kernel_name = name;
  for (int d = 0; d < 3; ++d) {
    launch.grid[d] = info_.extent[d];
    launch.block[d] = info_.extent[3 + d];
  }
  // Swizzled tiles need 1024-byte alignment: the kernel rounds the start of its shared memory up.
  if (info_.dynamic_shared) launch.dynamic_shared_bytes = info_.shared_bytes + (info_.swizzled ? kSwizzleAlignment : 0);
  int64_t threads = launch.block[0] * launch.block[1] * launch.block[2];

  out_ << "\nextern \"C\" __global__ void __launch_bounds__(" << threads << ") " << name << "(";
  std::vector<std::pair<std::string, DType>> args;
  for (const BufferParam& p : func_.params) args.emplace_back(p.name, p.dtype);
  for (const BufferParam& p : program_.scratch) args.emplace_back(p.name, p.dtype);
  for (size_t i = 0; i < args.size(); ++i) {
    // Buffers the kernel only reads are const: with __restrict__ that allows the read-only cache.
    out_ << (i ? ", " : "") << (info_.stored.count(args[i].first) ? "" : "const ") << c_type(args[i].second)
         << "* __restrict__ " << names_.id(args[i].first);
    launch.args.push_back(args[i].first);
  }
  out_ << ") {\n";
  indent_ = 1;
  if (info_.dynamic_shared && info_.swizzled) {
    line("extern __shared__ __align__(1024) unsigned char tessel_dynamic_shared_start[];");
    line("unsigned char* const tessel_dynamic_shared = tessel_dynamic_shared_start + "
         "((1024u - (tessel_shared_address(tessel_dynamic_shared_start) & 1023u)) & 1023u);");
  } else if (info_.dynamic_shared) {
    line("extern __shared__ __align__(128) unsigned char tessel_dynamic_shared[];");
  }
  vars_.clear();
  ranges_.clear();
  emit_stmt(kernel, false);
  out_ << "}\n";
  program_.launches.push_back(std::move(launch));
}

}  // namespace cuda_detail

CudaProgram emit_cuda(const LoweredFunc& func) { return cuda_detail::CudaPrinter(func).print(); }

}  // namespace tessel
