// Statements in CUDA C: loops (a thread-bound loop becomes its index, under a guard when its
// siblings use more threads), allocations, stores (a vector store lane by lane or as one float2 /
// float4), and reductions across threads by warp shuffles and shared memory.
#include <algorithm>
#include <string>
#include <vector>

#include "codegen/cuda/cuda_printer.h"
#include "schedule/ir/warpgroup.h"
#include "schedule/lower/arith.h"
#include "schedule/te/error.h"
#include "schedule/te/tensor_size.h"

namespace tessel::cuda_detail {

void CudaPrinter::emit_stmt(const Stmt& s, bool in_seq) {
  switch (s->op) {
    case StmtOp::For:
      return emit_for(s, in_seq);
    case StmtOp::Store:
      return emit_store(s);
    case StmtOp::Allocate:
      return emit_allocate(s);
    case StmtOp::IfThenElse: {
      if (s->cond->type != kBool) throw CompileError("cuda codegen: if condition is not a scalar bool");
      line("if (" + strip_parens(expr(s->cond, 0)) + ") {");
      block(s->body[0]);
      if (s->body.size() > 1 && s->body[1]) {
        line("} else {");
        block(s->body[1]);
      }
      line("}");
      return;
    }
    case StmtOp::Seq:
      for (const Stmt& child : s->body) emit_stmt(child, true);
      return;
    case StmtOp::Barrier:
      // Warpgroup products read shared memory through the async proxy: the generic writes before
      // the barrier (copies, zero-filled edges) are made visible to it first.
      if (info_.warpgroup) line("asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");");
      line("__syncthreads();");
      return;
    case StmtOp::CommitCopies: {
      if (s->async_copy) line("asm volatile(\"cp.async.commit_group;\" ::: \"memory\");");
      const int64_t wait = *as_int(s->extent);
      if (wait >= 0) line("asm volatile(\"cp.async.wait_group " + std::to_string(wait) + ";\" ::: \"memory\");");
      return;
    }
    case StmtOp::AllReduce:
      return emit_allreduce(s);
    case StmtOp::Matrix:
      return emit_matrix(s);
    case StmtOp::Provide:
      throw CompileError("cuda codegen: Provide to '" + s->buffer + "' reached codegen (storage not flattened)");
    case StmtOp::Prefetch:
      throw CompileError("cuda codegen: a CPU prefetch of '" + s->buffer + "' reached codegen (verify rejects it)");
  }
  throw CompileError("cuda codegen: unknown statement");
}

void CudaPrinter::block(const Stmt& body) {
  ++indent_;
  emit_stmt(body, false);
  --indent_;
}

void CudaPrinter::define_var(const Stmt& loop) {
  if (!vars_.insert(loop->var).second)
    throw CompileError("cuda codegen: loop variable '" + loop->var + "' is defined twice");
  ranges_[loop->var] = loop_range(loop->min, loop->extent, ranges_);
}

void CudaPrinter::undefine_var(const Stmt& loop) {
  vars_.erase(loop->var);
  ranges_.erase(loop->var);
}

void CudaPrinter::emit_for(const Stmt& s, bool in_seq) {
  const std::string& v = names_.id(s->var);
  std::string min = expr(s->min, 0);
  if (s->for_kind == ForKind::ThreadBound && !is_vthread(s->thread_tag)) {
    int slot = tag_slot(s->thread_tag);
    // A sibling bound to the same index with a smaller extent runs on a subset of the threads.
    bool guard = *as_int(s->extent) < info_.extent[slot];
    bool scoped = in_seq || guard;
    if (scoped) line("{");
    if (scoped) ++indent_;
    define_var(s);
    line("const " + index_type() + " " + v + " = " + (is_int_value(s->min, 0) ? "" : strip_parens(min) + " + ") + s->thread_tag +
         ";");
    if (guard) {
      line("if (" + std::string(s->thread_tag) + " < " + int_literal(*as_int(s->extent)) + ") {");
      block(s->body[0]);
      line("}");
    } else {
      emit_stmt(s->body[0], false);
    }
    undefine_var(s);
    if (scoped) --indent_;
    if (scoped) line("}");
    return;
  }
  std::string extent = expr(s->extent, 0);
  std::string end = is_int_value(s->min, 0) ? strip_parens(extent) : min + " + " + extent;
  if (s->for_kind == ForKind::Unrolled) line("#pragma unroll");
  define_var(s);
  line("for (" + index_type() + " " + v + " = " + strip_parens(min) + "; " + v + " < " + end + "; ++" + v + ") {");
  block(s->body[0]);
  line("}");
  undefine_var(s);
}

// Every thread of a row (the threadIdx.x extent n) ends with the combination of all the row's
// values. n <= 32 (a power of two): the row is a group of n lanes of one warp, combined by xor
// shuffles within the group. n > 32 (whole warps): each warp combines its lanes, lane 0 of each
// warp writes the warp's value to shared memory, and every thread combines the row's warps.
void CudaPrinter::emit_allreduce(const Stmt& s) {
  const int64_t n = *as_int(s->extent);
  if (s->thread_tag != "threadIdx.x" || info_.extent[3] != n)
    throw CompileError("cuda codegen: a reduction across " + std::to_string(n) + " threads of " + s->thread_tag +
                       " in a block of blockDim.x = " + std::to_string(info_.extent[3]) + " (they must be equal)");
  const std::string ref = names_.id(s->buffer) + "[" + strip_parens(expr(s->indices[0], 0)) + "]";
  auto combine = [&](const std::string& a, const std::string& b) {
    if (s->combiner == ExprOp::Add) return a + " + " + b;
    return "(" + b + (s->combiner == ExprOp::Max ? " > " : " < ") + a + ") ? " + b + " : " + a;
  };
  const std::string r = names_.fresh("red"), o = names_.fresh("other");
  // r combined with the r of the lanes `width / 2`, ..., 1 away: every lane of a group of `width`.
  auto shuffle_down_to_one = [&](const std::string& mask, int64_t width) {
    for (int64_t off = width / 2; off > 0; off /= 2) {
      line("{");
      line("  const float " + o + " = __shfl_xor_sync(" + mask + ", " + r + ", " + std::to_string(off) + ", " +
           std::to_string(width) + ");");
      line("  " + r + " = " + combine(r, o) + ";");
      line("}");
    }
  };
  line("{");
  ++indent_;
  line("float " + r + " = " + ref + ";");
  if (n <= 32) {
    std::string mask = "0xffffffffu";
    if (n < 32) {
      // The lane of this thread within its warp: threads are numbered x fastest, then y, then z.
      std::string linear = "threadIdx.x + " + std::to_string(n) + " * (threadIdx.y + " +
                           std::to_string(info_.extent[4]) + " * threadIdx.z)";
      mask = names_.fresh("group");
      line("const unsigned " + mask + " = " + std::to_string((1ull << n) - 1) + "u << ((" + linear + ") & " +
           std::to_string(32 - n) + ");");
    }
    shuffle_down_to_one(mask, n);
  } else {
    const int64_t warps = n / 32, rows = info_.extent[4] * info_.extent[5];
    shuffle_down_to_one("0xffffffffu", 32);
    const std::string warp_values = names_.fresh("warp_values"), base = names_.fresh("row_base");
    line("__shared__ float " + warp_values + "[" + std::to_string(rows * warps) + "];");
    line("const int " + base + " = (threadIdx.y + " + std::to_string(info_.extent[4]) + " * threadIdx.z) * " +
         std::to_string(warps) + ";");
    line("if ((threadIdx.x & 31) == 0) " + warp_values + "[" + base + " + threadIdx.x / 32] = " + r + ";");
    line("__syncthreads();");
    line(r + " = " + warp_values + "[" + base + "];");
    line("#pragma unroll");
    const std::string w = names_.fresh("w");
    line("for (int " + w + " = 1; " + w + " < " + std::to_string(warps) + "; ++" + w + ") {");
    line("  const float " + o + " = " + warp_values + "[" + base + " + " + w + "];");
    line("  " + r + " = " + combine(r, o) + ";");
    line("}");
    line("__syncthreads();  // before the next combine at this point reuses " + warp_values);
  }
  line(ref + " = " + r + ";");
  --indent_;
  line("}");
}

void CudaPrinter::emit_allocate(const Stmt& s) {
  int64_t elements = 1;
  for (int64_t e : s->extents) {
    if (e < 0) throw CompileError("cuda codegen: negative extent in allocation of '" + s->buffer + "'");
    elements *= e;
  }
  elements = std::max<int64_t>(elements, 1);
  const std::string& id = names_.id(s->buffer);
  std::string type = c_type(s->dtype);
  // Its own block: loop partitioning can leave two allocations of one buffer side by side.
  line("{");
  ++indent_;
  if (is_fragment(s->scope)) {
    // A fragment: each tile's registers (f32 accumulators; 16-bit operands two to a 32-bit register).
    elements *= fragment_registers_per_tile(s->scope, s->dtype);
    const bool floats = s->scope == MemScope::Accumulator || s->scope == MemScope::WgAccumulator;
    line(std::string(floats ? "float " : "unsigned ") + id + "[" +
         std::to_string(elements) + "];");
  } else if (s->scope == MemScope::Shared && info_.dynamic_shared) {
    line(type + "* __restrict__ " + id + " = reinterpret_cast<" + type + "*>(tessel_dynamic_shared + " +
         std::to_string(info_.shared_offset.at(s.get())) + ");");
  } else if (s->scope == MemScope::Shared) {
    line("__shared__ __align__(32) " + type + " " + id + "[" + std::to_string(elements) + "];");
  } else {
    line("__align__(16) " + type + " " + id + "[" + std::to_string(elements) + "];");
  }
  if (!buffers_.emplace(s->buffer, s->dtype).second)
    throw CompileError("cuda codegen: buffer '" + s->buffer + "' is allocated twice");
  scopes_[s->buffer] = s->scope;
  if (s->swizzle_cols > 0) swizzled_[s->buffer] = {s->swizzle_rows, s->swizzle_cols};
  emit_stmt(s->body[0], false);
  buffers_.erase(s->buffer);
  scopes_.erase(s->buffer);
  swizzled_.erase(s->buffer);
  --indent_;
  line("}");
}

int CudaPrinter::fragment_registers(const std::string& buffer) const {
  auto it = scopes_.find(buffer);
  if (it == scopes_.end() || !is_fragment(it->second))
    throw CompileError("cuda codegen: '" + buffer + "' is not a fragment in scope");
  return fragment_registers_per_tile(it->second, buffer_dtype(buffer));
}

std::string CudaPrinter::fragment_register(const MatrixOperand& o, int r) {
  const int n = fragment_registers(o.buffer);
  std::string tile = strip_parens(expr(o.indices.at(0), 0));
  return names_.id(o.buffer) + "[" + (tile == "0" ? "" : "(" + tile + ") * " + std::to_string(n) + " + ") +
         std::to_string(r) + "]";
}

// The asm input naming a memory operand's tile and the state space of the wmma instruction.
std::string CudaPrinter::memory_address(const MatrixOperand& o, std::vector<std::string>& inputs, const char*& space) {
  auto it = scopes_.find(o.buffer);
  const std::string element = "&" + names_.id(o.buffer) + "[" + strip_parens(expr(o.indices.at(0), 0)) + "]";
  if (it != scopes_.end() && it->second == MemScope::Shared) {
    space = ".shared";
    inputs.push_back("\"r\"(tessel_shared_address(" + element + "))");
  } else if (it == scopes_.end() || it->second == MemScope::Global) {
    space = ".global";
    inputs.push_back("\"l\"(" + element + ")");
  } else {
    throw CompileError("cuda codegen: a tile of '" + o.buffer + "' is in " + to_string(it->second) +
                       " memory; tensor-core tiles load from and store to shared or global memory");
  }
  return "%" + std::to_string(inputs.size() - 1);
}

// One warp-collective wmma instruction (PTX ISA, "Warp Level Matrix Multiply-Accumulate"). Operand
// numbering: outputs first, then inputs, as the asm statement lists them.
void CudaPrinter::emit_matrix(const Stmt& s) {
  const std::vector<MatrixOperand>& o = s->operands;
  if (is_warpgroup_op(s->matrix_op) ||
      (s->matrix_op == MatrixOpKind::FillZero && scopes_.count(o[0].buffer) &&
       scopes_.at(o[0].buffer) == MemScope::WgAccumulator))
    return emit_warpgroup_mma(s);
  auto layout = [](bool row_major) { return row_major ? "row" : "col"; };
  auto type_name = [&](DType t) -> std::string {
    if (t == DType::BFloat16) return "bf16";
    if (t == DType::Float16) return "f16";
    throw CompileError("cuda codegen: tensor-core operands are float16 or bfloat16, not " + std::string(to_string(t)));
  };
  std::vector<std::string> outputs, inputs;
  auto reg_list = [&](const MatrixOperand& f, std::vector<std::string>& into, const char* constraint, size_t base) {
    std::string list = "{";
    for (int r = 0; r < fragment_registers(f.buffer); ++r) {
      list += (r ? ", %" : "%") + std::to_string(base + into.size());
      into.push_back(std::string("\"") + constraint + "\"(" + fragment_register(f, r) + ")");
    }
    return list + "}";
  };
  std::string text;
  switch (s->matrix_op) {
    case MatrixOpKind::FillZero:
      for (int r = 0; r < fragment_registers(o[0].buffer); ++r) line(fragment_register(o[0], r) + " = 0.0f;");
      return;
    case MatrixOpKind::LoadA:
    case MatrixOpKind::LoadB: {
      std::string regs = reg_list(o[0], outputs, "=r", 0);
      const char* space = "";
      // Inputs are numbered after the outputs.
      std::vector<std::string> in;
      std::string addr = memory_address(o[1], in, space);
      addr = "%" + std::to_string(outputs.size());
      in.push_back("\"r\"(" + std::to_string(o[1].stride) + "u)");
      inputs = in;
      text = std::string("wmma.load.") + (s->matrix_op == MatrixOpKind::LoadA ? "a" : "b") + ".sync.aligned." +
             layout(o[1].row_major) + ".m16n16k16" + space + "." + type_name(buffer_dtype(o[0].buffer)) + " " + regs +
             ", [" + addr + "], %" + std::to_string(outputs.size() + 1) + ";";
      break;
    }
    case MatrixOpKind::MmaSync: {
      const DType t = buffer_dtype(o[1].buffer);
      if (buffer_dtype(o[2].buffer) != t) throw CompileError("cuda codegen: tensor-core operands of different types");
      std::string acc = reg_list(o[0], outputs, "+f", 0);
      std::string a = reg_list(o[1], inputs, "r", outputs.size());
      std::string b = reg_list(o[2], inputs, "r", outputs.size());
      std::string types = t == DType::BFloat16 ? ".f32.bf16.bf16.f32" : ".f32.f32";
      text = std::string("wmma.mma.sync.aligned.") + layout(o[1].row_major) + "." + layout(o[2].row_major) +
             ".m16n16k16" + types + " " + acc + ", " + a + ", " + b + ", " + acc + ";";
      break;
    }
    case MatrixOpKind::Store: {
      if (buffer_dtype(o[0].buffer) != DType::Float32)
        throw CompileError("cuda codegen: an accumulator is stored to a float32 buffer, not '" + o[0].buffer + "'");
      const char* space = "";
      std::string addr = memory_address(o[0], inputs, space);
      std::string regs = reg_list(o[1], inputs, "f", 0);
      inputs.push_back("\"r\"(" + std::to_string(o[0].stride) + "u)");
      text = std::string("wmma.store.d.sync.aligned.") + layout(o[0].row_major) + ".m16n16k16" + space + ".f32 [" +
             addr + "], " + regs + ", %" + std::to_string(inputs.size() - 1) + ";";
      break;
    }    default:
      throw CompileError(std::string("cuda codegen: ") + to_string(s->matrix_op) + " is a warpgroup operation");
  }
  auto join = [](const std::vector<std::string>& v) {
    std::string out;
    for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + v[i];
    return out;
  };
  line("asm volatile(\"" + text + "\"");
  line("    : " + join(outputs));
  line("    : " + join(inputs) + ");");
}

std::string CudaPrinter::element(const std::string& buffer, const Expr& index, int lane) {
  return names_.id(buffer) + "[" + element_offset(buffer, index, lane, "tessel_swizzle") + "]";
}

// Lane `lane` of an integer index as a scalar expression; null for a vector index that is neither
// a ramp nor a broadcast.
static Expr lane_of(const Expr& index, int lane) {
  if (index->type.lanes == 1) return index;
  if (index->op == ExprOp::Broadcast) return index->args[0];
  if (index->op == ExprOp::Ramp) return lane == 0 ? index->args[0] : index->args[0] + index->args[1] * make_int(lane);
  return nullptr;
}

std::string CudaPrinter::element_offset(const std::string& buffer, const Expr& index, int lane, const char* permute) {
  auto it = swizzled_.find(buffer);
  if (it == swizzled_.end()) return strip_parens(expr(index, lane));
  const auto [rows, cols] = it->second;
  const bool one_block = cols == kSwizzleBlockCols && std::string(permute) == "tessel_swizzle";
  auto permuted = [&](const Expr& i) {
    const std::string text = strip_parens(expr(i, lane));
    if (one_block) return "tessel_swizzle64(" + text + ")";
    return std::string(permute) + "(" + text + ", " + std::to_string(rows) + "u, " + std::to_string(cols) + "u)";
  };
  const Expr scalar = lane_of(index, lane);
  if (!scalar) return permuted(index);
  // The permutation on the part of the index that is not a whole copy or row group (typically
  // the thread's own chunk, the same every iteration), the rest added outside it.
  SwizzleSplit split = split_swizzled_index(scalar, rows, cols, ranges_);
  auto fits = [&](const Expr& e) {
    Interval b = bound_of(e, ranges_);
    return !info_.index32 || (b.lo && b.hi && *b.lo >= INT32_MIN && *b.hi <= INT32_MAX);
  };
  if (is_int_value(split.outer, 0) || !fits(split.outer) || !fits(split.rest)) return permuted(scalar);
  return strip_parens(expr(split.outer, 0)) + " + " + permuted(split.rest);
}

// The matrix descriptor of a warpgroup product's shared operand (schedule/ir/warpgroup.h): the
// unpermuted address of the tile's first element; between column blocks (an operand contiguous in
// M or N) the block's bytes, between groups of 8 rows 1024 bytes.
std::string CudaPrinter::warpgroup_descriptor(const MatrixOperand& o, bool k_major) {
  auto it = swizzled_.find(o.buffer);
  if (it == swizzled_.end() || scopes_.at(o.buffer) != MemScope::Shared)
    throw CompileError("cuda codegen: a warpgroup product reads '" + o.buffer + "', not a swizzled shared tile");
  const auto [rows, cols] = it->second;
  const int64_t block_bytes = rows * kSwizzleRowBytes;
  return "tessel_wgmma_desc(tessel_shared_address(" + names_.id(o.buffer) + ") + 2u * (" +
         element_offset(o.buffer, o.indices.at(0), 0, "tessel_swizzle_block") + "), " +
         std::to_string(k_major ? 16 : block_bytes) + "u, " + std::to_string(kSwizzleAlignment) + "u)";
}

// Warpgroup operations (PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate"): a
// product of a 64 x 16 and a 16 x N tile into N / 2 accumulator registers a thread, both operands
// read from shared memory through descriptors; the fences and groups that order them.
void CudaPrinter::emit_warpgroup_mma(const Stmt& s) {
  const std::vector<MatrixOperand>& o = s->operands;
  auto registers = [&](const MatrixOperand& acc) {
    std::vector<std::string> regs;
    const std::string base = strip_parens(expr(acc.indices.at(0), 0));
    for (int64_t r = 0; r < acc.stride; ++r)
      regs.push_back(names_.id(acc.buffer) + "[" + (base == "0" ? "" : "(" + base + ") + ") + std::to_string(r) + "]");
    return regs;
  };
  switch (s->matrix_op) {
    case MatrixOpKind::FillZero:
      for (const std::string& r : registers(o[0])) line(r + " = 0.0f;");
      return;
    case MatrixOpKind::WgmmaFence:
      line("asm volatile(\"wgmma.fence.sync.aligned;\" ::: \"memory\");");
      return;
    case MatrixOpKind::WgmmaCommit:
      line("asm volatile(\"wgmma.commit_group.sync.aligned;\" ::: \"memory\");");
      return;
    case MatrixOpKind::WgmmaWait:
      line("asm volatile(\"wgmma.wait_group.sync.aligned " + std::to_string(*as_int(s->extent)) + ";\" ::: \"memory\");");
      return;
    case MatrixOpKind::WgmmaMma: {
      const DType t = buffer_dtype(o[1].buffer);
      if (buffer_dtype(o[2].buffer) != t || !Type{t, 1}.is_half())
        throw CompileError("cuda codegen: warpgroup operands are float16 or bfloat16, both of one type");
      // a is (m, k), b is (k, n); a tile contiguous along m or n is read transposed.
      const bool a_k_major = o[1].row_major, b_k_major = !o[2].row_major;
      const std::vector<std::string> regs = registers(o[0]);
      const size_t n = regs.size();
      std::string list;
      for (size_t r = 0; r < n; ++r) list += (r ? ", %" : "%") + std::to_string(r);
      const std::string type = t == DType::BFloat16 ? "bf16" : "f16";
      line("{");
      ++indent_;
      line("const unsigned long long a_desc = " + warpgroup_descriptor(o[1], a_k_major) + ";");
      line("const unsigned long long b_desc = " + warpgroup_descriptor(o[2], b_k_major) + ";");
      line("asm volatile(\"{ .reg .pred p; setp.ne.b32 p, 1, 0; wgmma.mma_async.sync.aligned.m64n" +
           std::to_string(2 * n) + "k16.f32." + type + "." + type + " {" + list + "}, %" + std::to_string(n) + ", %" +
           std::to_string(n + 1) + ", p, 1, 1, " + (a_k_major ? "0" : "1") + ", " + (b_k_major ? "0" : "1") + "; }\"");
      std::string outputs;
      for (size_t r = 0; r < n; ++r) outputs += (r ? ", " : "") + std::string("\"+f\"(") + regs[r] + ")";
      line("    : " + outputs);
      line("    : \"l\"(a_desc), \"l\"(b_desc) : \"memory\");");
      --indent_;
      line("}");
      return;
    }
    default:
      throw CompileError(std::string("cuda codegen: ") + to_string(s->matrix_op) + " is not a warpgroup operation");
  }
}

DType CudaPrinter::buffer_dtype(const std::string& name) const {
  auto it = buffers_.find(name);
  if (it == buffers_.end())
    throw CompileError("cuda codegen: buffer '" + name + "' is neither a parameter nor allocated");
  return it->second;
}

// float2 / float4 when `index` is a contiguous Ramp whose start is a multiple of the lane count.
bool CudaPrinter::wide_access(const std::string& buffer, const Expr& index) const {
  int lanes = index->type.lanes;
  return (lanes == 2 || lanes == 4) && buffer_dtype(buffer) == DType::Float32 && is_aligned_ramp(index);
}

// Wide loads are read once into a temporary before the statement; lanes then name its fields.
void CudaPrinter::hoist_wide_loads(const Expr& e) {
  if (e->op == ExprOp::Load && hoisted_.count(e.get())) return;
  for (const Expr& a : e->args) hoist_wide_loads(a);
  if (e->op == ExprOp::Load && wide_access(e->name, e->args[0])) {
    std::string vec = e->type.lanes == 4 ? "float4" : "float2";
    std::string tmp = names_.fresh("v");
    line("const " + vec + " " + tmp + " = *reinterpret_cast<const " + vec + "*>(&" + names_.id(e->name) + "[" +
         strip_parens(expr(e->args[0]->args[0], 0)) + "]);");
    hoisted_[e.get()] = tmp;
  }
}

void CudaPrinter::emit_store(const Stmt& s) {
  DType dtype = buffer_dtype(s->buffer);
  const Expr& index = s->indices.at(0);
  const Expr& value = s->value;
  if (value->type.dtype != dtype)
    throw CompileError("cuda codegen: store of " + to_string(value->type) + " into buffer '" + s->buffer + "' of " +
                       to_string(dtype));
  int lanes = value->type.lanes;
  if (index->type.lanes != lanes) throw CompileError("cuda codegen: store index and value lanes differ");
  const std::string& buf = names_.id(s->buffer);
  if (s->async_copy) {
    // cp.async: 4, 8 or 16 bytes from global to shared memory (mark_async_copies checked the
    // alignment); .cg (around L1) where it may, 16 bytes.
    const Expr& from = value->op == ExprOp::Load ? value->args[0] : nullptr;
    const int64_t bytes = lanes * dtype_bytes(dtype);
    if (!from || (bytes != 4 && bytes != 8 && bytes != 16))
      throw CompileError("cuda codegen: an asynchronous copy into '" + s->buffer + "' is not a 4-, 8- or 16-byte load");
    // The shared address in 32 bits: the tile's start (the same every iteration) plus the offset.
    const std::string to = "tessel_shared_address(" + buf + ") + " + std::to_string(dtype_bytes(dtype)) + "u * (unsigned)(" +
                           element_offset(s->buffer, index, 0, "tessel_swizzle") + ")";
    line(std::string("asm volatile(\"cp.async.") + (bytes == 16 ? "cg" : "ca") + ".shared.global [%0], [%1], " +
         std::to_string(bytes) + ";\" :: \"r\"(" + to + "), \"l\"(&" + element(value->name, from) +
         ") : \"memory\");");
    return;
  }
  // A copy of 2, 4 or 8 consecutive 16-bit values between aligned places (operands staged for the
  // tensor cores): one 4-, 8- or 16-byte access each side.
  if (Type{dtype, 1}.is_half() && (lanes == 2 || lanes == 4 || lanes == 8) && value->op == ExprOp::Load &&
      buffer_dtype(value->name) == dtype) {
    if (is_aligned_ramp(index) && is_aligned_ramp(value->args[0])) {
      const char* word = lanes == 8 ? "uint4" : lanes == 4 ? "uint2" : "unsigned";
      line("*reinterpret_cast<" + std::string(word) + "*>(&" + element(s->buffer, index) +
           ") = *reinterpret_cast<const " + word + "*>(&" +
           element(value->name, value->args[0]) + ");");
      return;
    }
  }
  // 2 or 4 computed 16-bit values to aligned consecutive places (a warpgroup epilogue's adjacent
  // columns): computed lane by lane, stored as one 4- or 8-byte word.
  if (Type{dtype, 1}.is_half() && (lanes == 2 || lanes == 4) && is_aligned_ramp(index)) {
    line("{");
    ++indent_;
    std::vector<std::string> temps;
    for (int l = 0; l < lanes; ++l) {
      temps.push_back(names_.fresh("v"));
      line(std::string("const unsigned ") + temps[l] + " = " + strip_parens(expr(value, l)) + ";");
    }
    const std::string word = lanes == 2 ? "unsigned" : "uint2";
    const std::string packed =
        lanes == 2 ? temps[0] + " | (" + temps[1] + " << 16)"
                   : "make_uint2(" + temps[0] + " | (" + temps[1] + " << 16), " + temps[2] + " | (" + temps[3] + " << 16))";
    line("*reinterpret_cast<" + word + "*>(&" + element(s->buffer, index) +
         ") = " + packed + ";");
    --indent_;
    line("}");
    return;
  }
  bool has_vector = lanes > 1;
  visit_exprs(s, [&](const Expr& e) { has_vector = has_vector || e->type.lanes > 1; });
  if (!has_vector) {
    line(element(s->buffer, index) + " = " + strip_parens(expr(value, 0)) + ";");
    return;
  }
  line("{");
  ++indent_;
  hoisted_.clear();
  hoist_wide_loads(value);
  hoist_wide_loads(index);
  std::vector<std::string> lane_values;
  for (int l = 0; l < lanes; ++l) lane_values.push_back(strip_parens(expr(value, l)));
  if (wide_access(s->buffer, index)) {
    std::string vec = lanes == 4 ? "float4" : "float2";
    std::string args;
    for (int l = 0; l < lanes; ++l) args += (l ? ", " : "") + lane_values[l];
    line("*reinterpret_cast<" + vec + "*>(&" + buf + "[" + strip_parens(expr(index->args[0], 0)) + "]) = make_" + vec +
         "(" + args + ");");
  } else {
    // Every lane is computed before any is stored, as one vector store would.
    std::vector<std::string> temps;
    for (int l = 0; l < lanes; ++l) {
      temps.push_back(names_.fresh("v"));
      line(std::string("const ") + c_type(dtype) + " " + temps[l] + " = " + lane_values[l] + ";");
    }
    for (int l = 0; l < lanes; ++l) line(element(s->buffer, index, l) + " = " + temps[l] + ";");
  }
  hoisted_.clear();
  --indent_;
  line("}");
}

}  // namespace tessel::cuda_detail
