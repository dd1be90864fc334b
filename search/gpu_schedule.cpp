#include "search/gpu_schedule.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "schedule/ir/warpgroup.h"
#include "schedule/lower/lower.h"
#include "schedule/te/error.h"
#include "schedule/te/tensor_size.h"
#include "search/schedule_patterns.h"
#include "search/sketch.h"

namespace tessel {

namespace {

// The decisions a GPU schedule makes; the default uses fixed values, the random generator samples.
struct Knobs {
  int64_t elem_threads = 256;
  int64_t elem_vector = 4;
  int64_t elem_per_thread = 1;  // vectors per thread, an unrolled loop outside the threads
  int64_t row_threads = 0;  // 0: chosen from the row length
  int64_t block_rows = 64, block_cols = 64;  // contraction: output tile per block
  int64_t thread_rows = 4, thread_cols = 4;  // and per thread (registers)
  int64_t reduce_tile = 8;                   // reduction step staged through shared memory
  bool stage_a = true, stage_b = true;       // stage each operand in shared memory
  int64_t unroll_max_step = 0;
  bool stage_rows = false;                   // rows: each input row staged in shared memory once
  int64_t rows_per_block = 0;                // rows: threadIdx.y extent; 0: chosen from the row length
  bool warp_combine = true;                  // rows: partials combined by shuffles, else through shared memory
  int64_t fetch_vector = 4;                  // contraction: consecutive elements per thread in the shared fetch
  int64_t copies = 1;                        // contraction: copies of the staged tiles; from 2 on, the next
                                             // copies - 1 steps fetched (cp.async) during this step's products
  int64_t short_per_thread = 4;              // short reductions: adjacent outputs per thread
  int64_t short_rows = 4;                    // short reductions: next-axis values per block (threadIdx.y)
  int64_t short_row_regs = 1;                // short reductions: next-axis values per thread (registers)
  bool short_unroll_window = true;           // short reductions: the window's loops unrolled
  int64_t row_unroll = 1;                    // rows: a thread's values of a row loaded per (unrolled) step
  int64_t row_vector = 1;                    // rows: vector lanes of the elementwise output along the row
  bool contraction_rows = false;             // contraction: each output a row reduced across threads
  int64_t split_k = 1;                       // contraction: the first reduction axis in this many parts,
                                             // partial results in global memory summed by a second kernel
  bool fold_rows = true;                     // contraction: rows fewer than a block's, after an axis that
                                             // the same operand alone reads, fused with it (rows_fold)
  bool pad_up_front = true;                  // contraction: a padded input computed once into global
                                             // memory, else its bounds tests inlined into the fetch
  // Tensor cores (16-bit contractions): a block of warps_m x warps_n warps, each computing
  // tiles_m x tiles_n tiles of 16 x 16, the reduction staged in shared memory k_tiles x 16 at a time.
  bool tensor_core = true;
  int64_t warps_m = 2, warps_n = 2, tiles_m = 2, tiles_n = 2, k_tiles = 2;
  int64_t tc_fetch_vector = 8;               // consecutive 16-bit elements per thread in the shared fetch
  int64_t tc_out_vector = 4;                 // consecutive outputs per thread in the epilogue
  bool tc_double_buffer = true;              // the shared tiles in two copies, the next one fetched during the work
  // Warpgroup tensor cores (wgmma, sm_90): a block of wg_m x wg_n warpgroups, each computing wg_mi
  // tiles of 64 rows by wg_cols columns, the reduction staged 64 at a time in wg_stages copies of
  // swizzled shared tiles. Off where the target lacks them.
  bool warpgroup = true;
  int64_t wg_m = 2, wg_n = 1, wg_mi = 1, wg_cols = 128, wg_stages = 4;
};

// The reduction a warpgroup block stages per step: one 128-byte swizzled row of 16-bit elements.
constexpr int64_t kWarpgroupStep = 64;

// Narrows a warpgroup block until each thread's accumulators (wg_mi x wg_cols / 2) and about 48
// registers of addresses fit the registers a multiprocessor's 64 Ki give each of the block's
// threads (at most 255): 2 x 2 warpgroups of 64 x 256 tiles would need 176 of 128.
void fit_warpgroup_registers(Knobs& k) {
  auto fits = [&] {
    const int64_t threads = k.wg_m * k.wg_n * kWarpgroupThreads;
    return k.wg_mi * k.wg_cols / 2 + 48 <= std::min<int64_t>(255, 65536 / threads);
  };
  while (!fits() && k.wg_mi > 1) --k.wg_mi;
  while (!fits() && k.wg_cols > 64) k.wg_cols /= 2;
  while (!fits() && k.wg_n > 1) --k.wg_n;
}

// A matrix product, batched or not: out[.., i, j] = sum over k of a * b, with a and b two tensors
// read (each maybe through a cast to float32) at [.., i, k] or [.., k, i] and [.., k, j] or
// [.., j, k], every other index an output axis (a batch). An operand may have fewer batch axes than
// the output, its own the output's last ones (one weight matrix for every row of a batch of
// activations: a transformer's projections as torch exports them). Returns the contraction and its
// operand reads (a first: the one without j), or no contraction.
struct MatrixProduct {
  const Operation* op = nullptr;
  Expr a, b;
  bool same_batch = true;  // both operands have every batch axis of the output
};

MatrixProduct matrix_product(const ComputeDAG& dag) {
  const Operation* c = find_contraction(dag);
  if (!c || c->reduce_axes.size() != 1 || c->axes.size() < 2 || !c->body || c->body->args.size() != 2) return {};
  auto read_of = [](const Expr& e) -> Expr {
    const Expr r = e->op == ExprOp::Cast && e->type.dtype == DType::Float32 ? e->args[0] : e;
    return r->op == ExprOp::TensorRead ? r : nullptr;
  };
  Expr a = read_of(c->body->args[0]), b = read_of(c->body->args[1]);
  if (!a || !b || a->name == b->name) return {};
  const std::string& i = c->axes[c->axes.size() - 2].name;
  const std::string& j = c->axes.back().name;
  const std::string& k = c->reduce_axes[0].name;
  if (read_uses_axis(a, j)) std::swap(a, b);
  auto is_var = [](const Expr& e, const std::string& v) { return e->op == ExprOp::Var && e->name == v; };
  auto fits = [&](const Expr& r, const std::string& other) {
    const size_t n = r->args.size();
    if (n < 2 || n > c->axes.size()) return false;
    const Expr &x = r->args[n - 2], &y = r->args[n - 1];
    if (!((is_var(x, other) && is_var(y, k)) || (is_var(x, k) && is_var(y, other)))) return false;
    const size_t skipped = c->axes.size() - n;  // the output's leading batch axes the operand lacks
    for (size_t d = 0; d + 2 < n; ++d)
      if (!is_var(r->args[d], c->axes[skipped + d].name)) return false;
    return true;
  };
  if (!fits(a, i) || !fits(b, j)) return {};
  return {c, a, b, a->args.size() == c->axes.size() && b->args.size() == c->axes.size()};
}

// Whether a warpgroup product's rows fuse with the axis before them: one weight matrix for rows
// fewer than a tile's 64 that divide it (activations [sequence, batch 8, features]), so that each
// tile's rows are whole values of the axis before.
bool folds_warpgroup_rows(const MatrixProduct& m) {
  const size_t rank = m.op->axes.size();
  const int64_t rows = m.op->axes[rank - 2].extent;
  return !m.same_batch && rank >= 3 && rows < kWarpgroupTileRows && kWarpgroupTileRows % rows == 0;
}

// The rows of the default tensor-core block (2 warps of 2 tiles of 16).
constexpr int64_t kTensorCoreBlockRows = 64;

// A matrix product the tensor cores can compute: its operands 16-bit tensors of one type, each
// read through a cast to float32, and the sum not the DAG's output (an epilogue converts it back
// to 16 bits).
using TensorCoreContraction = MatrixProduct;

// With `fold_rows` (warpgroup tiles), rows fewer than a tile's that divide its 64 are fused with
// the axis before them instead (rows_fold).
TensorCoreContraction tensor_core_contraction(const ComputeDAG& dag, bool fold_rows = false) {
  const MatrixProduct m = matrix_product(dag);
  if (!m.op || m.op->name == dag.ops().back().name) return {};
  auto cast_of_half = [](const Expr& arg) {
    return arg->op == ExprOp::Cast && arg->type.dtype == DType::Float32 && arg->args[0]->type.is_half();
  };
  const Expr& x = m.op->body->args[0];
  const Expr& y = m.op->body->args[1];
  if (!cast_of_half(x) || !cast_of_half(y) || m.a->type.dtype != m.b->type.dtype) return {};
  // One weight matrix for rows fewer than a block's (activations [sequence, batch 8, features]):
  // the CUDA-core tiling folds them into the axis before them (rows_fold); here each block would
  // leave most of its rows idle.
  const int64_t rows = m.op->axes[m.op->axes.size() - 2].extent;
  if (!m.same_batch && rows < kTensorCoreBlockRows && !(fold_rows && folds_warpgroup_rows(m))) return {};
  return m;
}

// Threads per block (elementwise) or per row (a cross-thread reduction): whole warps, 32 to 1024.
const std::vector<int64_t>& warp_multiples() {
  static const std::vector<int64_t> v = [] {
    std::vector<int64_t> out;
    for (int64_t t = 32; t <= 1024; t += 32) out.push_back(t);
    return out;
  }();
  return v;
}

// Reductions this short (depthwise convolution's 3x3 window) run serially inside one thread each.
constexpr int64_t kShortReduction = 64;

int64_t ceil_pow2(int64_t n) {
  int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

int64_t floor_pow2(int64_t n) {
  int64_t p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

// A contraction with one reduction axis at least as long as its outputs are many (a matrix-vector
// product: a classifier at batch 1). Each output is better a row reduced across a warp or more than
// a tile of a multi-level tiling, whose blocks would be few and serial along the reduction.
bool few_outputs_long_reduction(const Operation& c, int64_t ratio) {
  return c.reduce_axes.size() == 1 && c.num_elements() <= ratio * c.reduce_axes[0].extent;
}

// The DAG's one reduction when it yields one value per output element under an elementwise
// epilogue (a matrix-vector product with its bias, as the model importer writes a one-row Gemm):
// each output is then a row of its own, not a value of a row the output's last axis runs along.
const Operation* reduction_per_output(const ComputeDAG& dag) {
  const Operation& out = dag.ops().back();
  if (out.reduce != ReduceKind::None) return nullptr;
  const Operation* found = nullptr;
  for (const Operation& op : dag.ops()) {
    if (op.reduce == ReduceKind::None) continue;
    if (found || op.reduce_axes.size() != 1) return nullptr;
    found = &op;
  }
  return found && found->num_elements() == out.num_elements() ? found : nullptr;
}

// Blocks enough to keep every multiprocessor of an H100 or H200 (132) busy with two.
constexpr int64_t kBusyBlocks = 264;

// The parts a contraction's reduction may be split into (split-K), 1 first: powers of two up to 32
// that leave each part at least two values of the split axis and 64 products, offered where the
// output fills fewer than kBusyBlocks blocks of 64 x 64 (larger outputs have blocks enough).
std::vector<int64_t> split_k_options(const Operation& c) {
  std::vector<int64_t> options{1};
  if (c.reduce_axes.empty() || c.num_elements() >= kBusyBlocks * 64 * 64) return options;
  int64_t products = 1;
  for (const Axis& r : c.reduce_axes) products *= r.extent;
  for (int64_t s = 2; s <= 32; s *= 2)
    if (c.reduce_axes[0].extent >= 2 * s && products / s >= 64) options.push_back(s);
  return options;
}

// Whether the contraction's rows (axis u) may fold into the axis before them: that axis reads the
// same operands as u (the activations' [sequence, batch] against one weight matrix, the rows of
// a transformer's products as torch exports them), and u is shorter than a block's rows, which
// it divides, as it divides a thread's rows or they divide it (the tiles stay whole boxes of the
// two axes, the staging and the registers exact).
bool rows_fold(const Operation& c, int u, int64_t block_rows, int64_t thread_rows) {
  if (u < 1 || u >= static_cast<int>(c.axes.size())) return false;
  const int64_t n = c.axes[u].extent;
  if (n >= block_rows || block_rows % n != 0 || (thread_rows % n != 0 && n % thread_rows != 0)) return false;
  for (const Expr& r : tensor_reads(c.body))
    if (read_uses_axis(r, c.axes[u - 1].name) != read_uses_axis(r, c.axes[u].name)) return false;
  return true;
}

// Whether the knobs fold the contraction's rows (rows_fold at their tiles).
bool folds_rows(const Operation& c, const Knobs& k) {
  return k.fold_rows && rows_fold(c, contraction_axes(c).u, k.block_rows, k.thread_rows);
}

// Whether a stage of the DAG pads an input of a reduction (a convolution's zeros around the image).
bool pads_input(const ComputeDAG& dag) {
  return std::any_of(dag.ops().begin(), dag.ops().end(),
                     [&](const Operation& op) { return pads_reduction_input(dag, op); });
}

// A buffer of `bytes` in global memory as the target counts it (whole lines of its alignment).
int64_t scratch_bytes_of(int64_t bytes, const GpuTargetSpec& target) {
  const int64_t line = std::max<int64_t>(1, target.scratch_alignment);
  return (bytes + line - 1) / line * line;
}

// The bytes the DAG's padded inputs take when computed up front (0 where nothing is padded).
int64_t padded_input_bytes(const ComputeDAG& dag, const GpuTargetSpec& target) {
  int64_t bytes = 0;
  for (const Operation& op : dag.ops())
    if (pads_reduction_input(dag, op)) bytes += scratch_bytes_of(op.num_elements() * dtype_bytes(op.dtype), target);
  return bytes;
}

// The contraction's rows as the knobs tile them: axis u, times the axis before it where they fold.
int64_t tiled_rows(const Operation& c, const Knobs& k) {
  const ContractionAxes ax = contraction_axes(c);
  if (ax.u < 0) return 1;
  return c.axes[ax.u].extent * (folds_rows(c, k) ? c.axes[ax.u - 1].extent : 1);
}

// The blocks of the knobs' block tiles that cover the contraction's output (one per value of every
// other axis; rows that fold counted with the axis they fold into).
int64_t tile_blocks(const Operation& c, const Knobs& k) {
  const ContractionAxes ax = contraction_axes(c);
  const bool fold = folds_rows(c, k);
  int64_t blocks = 1;
  for (int a = 0; a < static_cast<int>(c.axes.size()); ++a) {
    const int64_t n = c.axes[a].extent;
    if (fold && a == ax.u - 1) continue;
    blocks *= a == ax.v ? (n + k.block_cols - 1) / k.block_cols
                        : a == ax.u ? (tiled_rows(c, k) + k.block_rows - 1) / k.block_rows : n;
  }
  return blocks;
}

// Whether the knobs' tiles cover the contraction with no guard: the block tiles divide the rows
// (rows that fold counted with the axis they fold into) and the columns, the reduction step the
// first reduction axis. Otherwise every product of a thread's tile is guarded.
bool tiles_divide(const Operation& c, const Knobs& k) {
  return tiled_rows(c, k) % k.block_rows == 0 && c.axes[contraction_axes(c).v].extent % k.block_cols == 0 &&
         (c.reduce_axes.empty() || c.reduce_axes[0].extent % k.reduce_tile == 0);
}

// A contraction whose default tiles keep every multiprocessor busy and whose reduction is long
// (256 products an output or more), read straight from its operands (a matrix product; not a
// convolution's padded input). Its default takes the pipelined tiles (default_gpu_schedule).
bool long_plain_contraction(const ComputeDAG& dag, const Operation& c, const Knobs& k) {
  int64_t products = 1;
  for (const Axis& r : c.reduce_axes) products *= r.extent;
  return !pads_input(dag) && products >= 256 && k.split_k == 1 && tile_blocks(c, k) >= kBusyBlocks / 2;
}

// A batched matrix product of 64 to 255 products an output (attention's 64-wide heads) whose
// default tiles keep every multiprocessor busy: its default takes the pipelined tiles where they
// divide it. On an H200, fp32, in one run against cuBLAS: 48 x 256x256x64 in 13.9 us with them,
// 26.6 us with 4 x 4 outputs a thread in steps of 8, cuBLAS 17.0 us (96 x 128x128x64: 7.5, 13.5,
// 8.8 us). 1x1 convolutions of 64 to 192 channels, matrix products too, ran 1.6-3.2x slower with
// them, and keep theirs.
bool short_batched_product(const ComputeDAG& dag, const Operation& c, const Knobs& k) {
  const MatrixProduct m = matrix_product(dag);
  const bool batched = c.axes.size() >= 3 && m.op == &c && m.same_batch;
  const int64_t products = c.reduce_axes.empty() ? 0 : c.reduce_axes[0].extent;
  return batched && products >= 64 && products < 256 && k.split_k == 1 && tile_blocks(c, k) >= kBusyBlocks / 2;
}

// The default's split: where the default tiles (64 x 64 outputs a block) make fewer blocks than
// the multiprocessors, the fewest parts (of those offered) that make kBusyBlocks. A 3x3
// convolution of 512 channels at 7x7 makes 56 blocks: 8 parts of 64 input channels each.
int64_t default_split_k(const Operation& c, const Knobs& k) {
  const int64_t blocks = tile_blocks(c, k);
  if (blocks >= kBusyBlocks / 2) return 1;
  int64_t split = 1;
  for (int64_t s : split_k_options(c))
    if (split * blocks < kBusyBlocks) split = s;
  return split;
}

// Where the rows sketch is offered beside the multi-level tiling (the search chooses), and where
// the default takes it.
constexpr int64_t kRowsSketchRatio = 64, kRowsDefaultRatio = 1;

// The output is the DAG's only reduction, and a short one (a depthwise window): one thread each.
bool gpu_short_reductions_only(const ComputeDAG& dag) {
  for (const Operation& op : dag.ops())
    if (op.reduce != ReduceKind::None && op.name != dag.ops().back().name) return false;
  const Operation& out = dag.ops().back();
  if (out.reduce == ReduceKind::None) return false;
  int64_t n = 1;
  for (const Axis& r : out.reduce_axes) n *= r.extent;
  return n <= kShortReduction;
}

class GpuScheduler {
 public:
  GpuScheduler(const ComputeDAG& dag, const Knobs& knobs) : dag_(dag), b_(dag), k_(knobs) {}

  Trace run() {
    const Operation& out = dag_.ops().back();
    if (TensorCoreContraction wg = tensor_core_contraction(dag_, true); wg.op && k_.tensor_core && k_.warpgroup) {
      schedule_warpgroup(wg, out);
    } else if (TensorCoreContraction tc = tensor_core_contraction(dag_); tc.op && k_.tensor_core) {
      schedule_tensor_core(tc, out);
    } else if (const Operation* c = find_contraction(dag_)) {
      if (k_.contraction_rows && few_outputs_long_reduction(*c, kRowsSketchRatio)) schedule_rows(out, c);
      else schedule_contraction(*c, out);
    } else if (has_reduction() && short_reductions_only()) {
      schedule_short_reduction(out);
    } else if (has_reduction()) {
      schedule_rows(out, reduction_per_output(dag_));
    } else {
      for (const Operation& op : dag_.ops())
        if (!op.is_placeholder && op.name != out.name) apply(compute_inline_step(op.name));
      schedule_elementwise(out.name);
    }
    return b_.trace();
  }

 private:
  bool apply(const Step& step) { return b_.apply(step); }
  const State& state() const { return b_.state(); }
  std::vector<std::string> leaves(const std::string& stage) const { return state().stage(stage).leaf_names(); }
  int64_t extent(const std::string& stage, const std::string& loop) const {
    const Stage& s = state().stage(stage);
    return s.vars[s.find_var(loop)].extent;
  }
  bool has_reduction() const {
    for (const Operation& op : dag_.ops())
      if (op.reduce != ReduceKind::None) return true;
    return false;
  }
  // All axes fused, then [blocks, vectors per thread, threads, vector lanes].
  void schedule_elementwise(const std::string& name) {
    std::vector<std::string> loops = leaves(name);
    std::string f = loops[0];
    if (loops.size() > 1 && apply(fuse_step(name, loops))) f = leaves(name)[0];
    int64_t n = extent(name, f);
    int64_t threads = std::min(k_.elem_threads, std::max<int64_t>(32, floor_pow2(n)));
    int64_t vector = k_.elem_vector > 1 && n >= threads * k_.elem_vector ? k_.elem_vector : 1;
    int64_t per_thread = n >= threads * vector * k_.elem_per_thread ? k_.elem_per_thread : 1;
    // [blocks, per thread (unrolled), threads, vector lanes], the unit loops left out: each
    // unrolled step covers a contiguous threads x lanes span, so every step's loads stay coalesced.
    std::vector<int64_t> lengths;
    if (per_thread > 1) lengths.push_back(per_thread);
    lengths.push_back(threads);
    if (vector > 1) lengths.push_back(vector);
    bool split = apply(split_step(name, f, lengths));
    if (!split) {
      lengths = {threads};
      apply(split_step(name, f, lengths));
    }
    int level = 1;
    if (split && per_thread > 1) apply(annotate_step(name, f + "." + std::to_string(level++), Annotation::Unroll));
    apply(annotate_step(name, f + ".0", Annotation::BlockX));
    apply(annotate_step(name, f + "." + std::to_string(level++), Annotation::ThreadX));
    if (static_cast<size_t>(level) <= lengths.size()) apply(annotate_step(name, f + "." + std::to_string(level), Annotation::Vectorize));
  }

  bool short_reductions_only() const { return gpu_short_reductions_only(dag_); }

  // Each thread computes `short_per_thread` adjacent outputs along the innermost axis, and
  // `short_row_regs` consecutive values of the next axis, their (short) reductions serial loops
  // accumulating in registers (cache_write local): neighbouring windows share inputs, which the
  // unrolled body loads once. Threads along x are just enough for the axis (no guarded tail when
  // the per-thread count divides it), at most elem_threads; a block also takes `short_rows` groups
  // of the next axis on threadIdx.y. The other axes (with the outer parts) are fused into blocks: a
  // thread's index needs no division, only the block's. Producers (padding) inlined.
  void schedule_short_reduction(const Operation& out) {
    for (const Operation& op : dag_.ops())
      if (!op.is_placeholder && op.name != out.name) apply(compute_inline_step(op.name));
    std::string compute = out.name;
    if (apply(cache_write_step(out.name, MemScope::Local))) compute = cache_stage_name(out.name, MemScope::Local);
    std::vector<std::string> loops = leaves(out.name);
    std::vector<std::string> spatial(loops.begin(), loops.begin() + static_cast<long>(out.axes.size()));
    const std::string inner = spatial.back();
    int64_t n = extent(out.name, inner);
    int64_t per = std::max<int64_t>(1, std::min(k_.short_per_thread, n));
    int64_t threads = std::min(k_.elem_threads, (n + per - 1) / per);
    std::vector<int64_t> lengths{threads};
    if (per > 1) lengths.push_back(per);
    std::string thread = inner, block;
    int64_t regs = 1;
    if (apply(split_step(out.name, inner, lengths))) {
      spatial.back() = inner + ".0";
      thread = inner + ".1";
      std::string row_thread, row_reg;
      if (spatial.size() > 1) {
        const std::string row = spatial[spatial.size() - 2];
        const int64_t row_extent = extent(out.name, row);
        int64_t rows = std::min(k_.short_rows, row_extent);
        while (rows > 1 && rows * threads > 1024) rows /= 2;
        regs = row_extent >= rows * k_.short_row_regs ? k_.short_row_regs : 1;
        std::vector<int64_t> row_lengths;
        if (rows > 1) row_lengths.push_back(rows);
        if (regs > 1) row_lengths.push_back(regs);
        if (!row_lengths.empty() && apply(split_step(out.name, row, row_lengths))) {
          spatial[spatial.size() - 2] = row + ".0";
          if (rows > 1) row_thread = row + ".1";
          if (regs > 1) row_reg = row + (rows > 1 ? ".2" : ".1");
        } else {
          regs = 1;
        }
        std::vector<std::string> order = spatial;
        if (!row_thread.empty()) order.push_back(row_thread);
        order.push_back(thread);
        if (!row_reg.empty()) order.push_back(row_reg);
        if (per > 1) order.push_back(inner + ".2");
        apply(reorder_step(out.name, order));
      }
      block = spatial[0];
      if (spatial.size() > 1 && apply(fuse_step(out.name, spatial))) block = leaves(out.name)[0];
      if (!row_thread.empty()) apply(annotate_step(out.name, row_thread, Annotation::ThreadY));
      if (!row_reg.empty()) apply(annotate_step(out.name, row_reg, Annotation::Unroll));
      if (per > 1) apply(annotate_step(out.name, inner + ".2", Annotation::Unroll));
    } else {
      spatial.pop_back();
      block = spatial.empty() ? "" : spatial[0];
      if (spatial.size() > 1 && apply(fuse_step(out.name, spatial))) block = leaves(out.name)[0];
    }
    if (!block.empty()) apply(annotate_step(out.name, block, Annotation::BlockX));
    apply(annotate_step(out.name, thread, Annotation::ThreadX));
    if (compute != out.name) {
      apply(compute_at_step(compute, out.name, thread));
      if (per > 1) apply(annotate_step(compute, out.axes.back().name, Annotation::Unroll));
      if (regs > 1 && out.axes.size() > 1)
        apply(annotate_step(compute, out.axes[out.axes.size() - 2].name, Annotation::Unroll));
    }
    if (k_.short_unroll_window)
      for (const Axis& r : out.reduce_axes) apply(annotate_step(compute, r.name, Annotation::Unroll));
  }

  // Each input row read by several passes (softmax: max, sum, normalize) copied into shared memory
  // once per row by all the block's threads; the passes then read shared memory. The cache_read
  // comes first, while its readers still read the input directly (before inlining).
  std::vector<std::string> cache_rows_in_shared() {
    std::vector<std::string> staged;
    for (const Operation& op : dag_.ops()) {
      if (!op.is_placeholder || op.shape.size() < 2) continue;
      std::vector<std::string> readers = state().consumers(op.name);
      int passes = 0;
      for (const std::string& r : readers) passes += dag_.op(r).reduce != ReduceKind::None ? 1 : 2;
      if (passes < 2) continue;
      if (apply(cache_read_step(op.name, MemScope::Shared, readers)))
        staged.push_back(cache_stage_name(op.name, MemScope::Shared));
    }
    return staged;
  }

  // The staged rows of a block ([rows per block, row length]) fetched once by all its threads.
  void fetch_rows_cooperatively(const std::vector<std::string>& staged, const std::string& out,
                                const std::string& row, int64_t threads, int64_t per_block) {
    for (const std::string& shared : staged) {
      if (!apply(compute_at_step(shared, out, row))) continue;
      std::vector<std::string> loops = leaves(shared);
      std::string f = loops[0];
      if (loops.size() > 1 && apply(fuse_step(shared, loops))) f = leaves(shared)[0];
      if (per_block > 1 && apply(split_step(shared, f, {per_block, threads}))) {
        apply(annotate_step(shared, f + ".1", Annotation::ThreadY));
        apply(annotate_step(shared, f + ".2", Annotation::ThreadX));
      } else if (apply(split_step(shared, f, {threads}))) {
        apply(annotate_step(shared, f + ".1", Annotation::ThreadX));
      }
    }
  }

  // One row per threadIdx.y, `per_block` rows per block; the threads of a row (threadIdx.x) split
  // it, each reduction a cross-thread one when `warp_combine` (partial values in registers,
  // combined by shuffles), else partial values in shared memory that every thread combines.
  // With `per_output` (a reduction with one value per output element: a matrix-vector product, or
  // a contraction with few outputs), every output element is a row: its reduction is `per_output`,
  // and an elementwise epilogue (bias, activation) is computed from the combined value.
  void schedule_rows(const Operation& out, const Operation* per_output = nullptr) {
    std::vector<std::string> staged = k_.stage_rows ? cache_rows_in_shared() : std::vector<std::string>{};
    for (const Operation& op : dag_.ops())
      if (!op.is_placeholder && op.name != out.name && op.reduce == ReduceKind::None)
        apply(compute_inline_step(op.name));
    int64_t cols = out.reduce != ReduceKind::None ? out.reduce_axes[0].extent
                   : per_output                   ? per_output->reduce_axes[0].extent
                                                  : out.shape.back();
    // Each thread reduces cols / threads elements. On the H100 one warp per row was best up to
    // 1024 columns (layernorm 16384x1024), 256 threads for rows of 4096 and 8192 (rmsnorm, softmax).
    int64_t threads = k_.row_threads ? k_.row_threads
                                     : cols <= 1024 ? 32 : std::clamp<int64_t>(floor_pow2(cols / 16), 32, 256);
    // Short rows leave a one-warp block little to overlap: several rows per block keep more warps
    // of a multiprocessor busy than its limit on resident blocks allows. Partials in shared memory
    // serve one row per block.
    int64_t per_block = !k_.warp_combine ? 1 : k_.rows_per_block ? k_.rows_per_block : threads <= 32 ? 4 : 1;
    while (per_block > 1 && per_block * threads > 1024) per_block /= 2;
    std::string row;
    if (out.reduce != ReduceKind::None || per_output) {  // every output element a row
      if (out.reduce != ReduceKind::None) reduce_across_threads(out.name, threads);
      row = fuse_rows(out.name, static_cast<int>(out.axes.size()));
    } else {
      row = fuse_rows(out.name, static_cast<int>(out.axes.size()) - 1);
      std::string col = leaves(out.name).back();
      // [serial, threads, vector lanes]: each thread writes `vector` adjacent values per step.
      const int64_t vector = k_.row_vector > 1 && extent(out.name, col) >= threads * k_.row_vector ? k_.row_vector : 1;
      std::vector<int64_t> lengths{threads};
      if (vector > 1) lengths.push_back(vector);
      if (apply(split_step(out.name, col, lengths))) {
        apply(annotate_step(out.name, col + ".1", Annotation::ThreadX));
        if (vector > 1) apply(annotate_step(out.name, col + ".2", Annotation::Vectorize));
      }
    }
    if (per_block > 1 && apply(split_step(out.name, row, {per_block}))) {
      apply(annotate_step(out.name, row + ".0", Annotation::BlockX));
      apply(annotate_step(out.name, row + ".1", Annotation::ThreadY));
      row += ".1";
    } else {
      apply(annotate_step(out.name, row, Annotation::BlockX));
    }
    for (size_t i = dag_.ops().size(); i-- > 0;) {
      const Operation& op = dag_.ops()[i];
      if (op.is_placeholder || op.name == out.name || op.reduce == ReduceKind::None) continue;
      // Consumers first, each reduction right after its partial sums: a stage can only move into
      // the row loop once every stage that reads it is there.
      reduce_across_threads(op.name, threads);
      apply(set_scope_step(op.name, MemScope::Local));
      apply(compute_at_step(op.name, out.name, row));
      if (!k_.warp_combine) apply(compute_at_step(rfactor_stage_name(op.name), out.name, row));
    }
    if (out.reduce != ReduceKind::None && !k_.warp_combine)
      apply(compute_at_step(rfactor_stage_name(out.name), out.name, row));
    fetch_rows_cooperatively(staged, out.name, row, threads, per_block);
  }

  // R[i] = reduce_k f, k split [k.0, k.1 (threads)]: with warp_combine, k.1 is bound to threadIdx.x
  // (each thread folds k.0, then the threads combine); else partial_sums. With row_unroll u > 1
  // (and a row long enough for it), [k.0, k.1 (u, unrolled), k.2 (threads)]: each step of a thread
  // issues u independent loads, each a whole coalesced row span of the threads.
  void reduce_across_threads(const std::string& name, int64_t threads) {
    if (!k_.warp_combine) return partial_sums(name, threads);
    const Operation op = state().op(name);  // a copy: every applied step replaces the state
    if (op.reduce_axes.size() != 1) return;
    const std::string k = op.reduce_axes[0].name;
    const int64_t u = op.reduce_axes[0].extent >= 2 * k_.row_unroll * threads ? k_.row_unroll : 1;
    if (u > 1 && apply(split_step(name, k, {u, threads}))) {
      apply(annotate_step(name, k + ".1", Annotation::Unroll));
      apply(annotate_step(name, k + ".2", Annotation::ThreadX));
    } else if (apply(split_step(name, k, {threads}))) {
      apply(annotate_step(name, k + ".1", Annotation::ThreadX));
    }
  }

  std::string fuse_rows(const std::string& name, int rank) {
    std::vector<std::string> loops = leaves(name);
    std::vector<std::string> rows(loops.begin(), loops.begin() + rank);
    if (rows.size() > 1 && apply(fuse_step(name, rows))) return leaves(name)[0];
    return rows.empty() ? loops[0] : rows[0];
  }

  // R[i] = reduce_k f -> R.rf[i, t] = reduce over k.0 of f(k.0 * threads + t), one partial per thread
  // in shared memory; R then combines the partials in every thread.
  void partial_sums(const std::string& name, int64_t threads) {
    const Operation op = state().op(name);  // a copy: every applied step replaces the state
    if (op.reduce_axes.size() != 1) return;
    const std::string k = op.reduce_axes[0].name;
    if (!apply(split_step(name, k, {threads}))) return;
    if (!apply(rfactor_step(name, k + ".1", static_cast<int64_t>(op.axes.size())))) return;
    const std::string rf = rfactor_stage_name(name);
    apply(annotate_step(rf, k + ".1", Annotation::ThreadX));
    apply(set_scope_step(rf, MemScope::Shared));
  }

  void schedule_contraction(const Operation& contraction, const Operation& out) {
    if (k_.split_k > 1) {
      const TraceBuilder before = b_;
      if (schedule_split_reduction(contraction, out)) return;
      b_ = before;  // the reduction does not split that way: the plain tiling
    }
    std::string compute = contraction.name;
    if (contraction.name == out.name) {
      apply(cache_write_step(out.name, MemScope::Local));
      compute = cache_stage_name(out.name, MemScope::Local);
    } else {
      apply(set_scope_step(compute, MemScope::Local));
    }
    schedule_producers(compute, out.name);
    tile_contraction(out.name, compute);
  }

  // The stages besides the contraction and the output: padding (a Select) computed once up front
  // (unless the knobs keep it out of global memory), the others inlined. False where one is another
  // reduction (left alone) or does not inline.
  bool schedule_producers(const std::string& contraction, const std::string& out) {
    bool all = true;
    for (const Operation& op : dag_.ops()) {
      if (op.is_placeholder || op.name == out || op.name == contraction) continue;
      if (op.reduce != ReduceKind::None) all = false;
      else if (pads_reduction_input(dag_, op) && k_.pad_up_front) schedule_elementwise(op.name);  // up front
      else all = apply(compute_inline_step(op.name)) && all;
    }
    return all;
  }

  // The multi-level tiling of `compute` (the contraction, accumulating in registers) at the thread
  // tile of `out`: blocks and threads over out's tile, the reduction staged through shared memory.
  void tile_contraction(const std::string& out, const std::string& compute) {
    const std::vector<Expr> reads = tensor_reads(state().op(compute).body);
    const OutputTiles tiles = tile_output(out, compute);
    const std::string k0 = tile_thread(compute);
    stage_operands(reads, compute, k0, tiles);
    if (k_.copies > 1 && (k_.stage_a || k_.stage_b))
      apply(k_.copies > 2 ? pragma_step(compute, k0, "pipeline_stages", k_.copies)
                          : pragma_step(compute, k0, "double_buffer", 1));
  }

  // Split-K. The contraction C's first reduction axis k in split_k parts of `chunk` each:
  //   C.rf[part, ..] = the multi-level tiling's sum over k.1 (and the other reductions) at
  //                    k = part * chunk + k.1, the parts among the blocks (its own kernel);
  //   out[..]        = the epilogue of C[..] = sum over the parts of C.rf[part, ..], one output
  //                    per thread, the parts added in registers (a second kernel).
  // Few outputs with a long reduction (a 3x3 convolution at 7x7: 25088 outputs of 4608 products)
  // otherwise make too few blocks to fill the multiprocessors. False where the steps do not apply.
  bool schedule_split_reduction(const Operation& contraction, const Operation& out) {
    const Axis k = contraction.reduce_axes[0];
    const int64_t chunk = (k.extent + k_.split_k - 1) / k_.split_k;
    if ((k.extent + chunk - 1) / chunk < 2) return false;
    const std::string c = contraction.name, rf = rfactor_stage_name(c);
    if (!apply(split_step(c, k.name, {chunk})) || !apply(rfactor_step(c, k.name + ".0", 0))) return false;
    if (!schedule_producers(c, out.name) || !apply(cache_write_step(rf, MemScope::Local))) return false;
    tile_contraction(rf, cache_stage_name(rf, MemScope::Local));

    std::string sum = c;
    if (c == out.name) {
      if (!apply(cache_write_step(c, MemScope::Local))) return false;
      sum = cache_stage_name(c, MemScope::Local);
    } else if (!apply(set_scope_step(c, MemScope::Local))) {
      return false;
    }
    std::vector<std::string> loops = leaves(out.name);
    std::string f = loops[0];
    if (loops.size() > 1 && apply(fuse_step(out.name, loops))) f = leaves(out.name)[0];
    const int64_t threads = std::min(k_.elem_threads, std::max<int64_t>(32, floor_pow2(extent(out.name, f))));
    if (!apply(split_step(out.name, f, {threads}))) return false;
    apply(annotate_step(out.name, f + ".0", Annotation::BlockX));
    apply(annotate_step(out.name, f + ".1", Annotation::ThreadX));
    if (!apply(compute_at_step(sum, out.name, f + ".1"))) return false;
    apply(annotate_step(sum, k.name + ".0", Annotation::Unroll));
    return true;
  }

  // Tensor cores. With R the contraction and out its 16-bit epilogue:
  //   out:  [batch (blockIdx.z), i.0 (blockIdx.y), j.0 (blockIdx.x), then the block's tile fused and
  //          split over (serial, warps_m (threadIdx.z), warps_n (threadIdx.y), 32 lanes (threadIdx.x),
  //          vector)]: the epilogue, reading R from shared memory;
  //   R (shared, computed at j.0): each warp stores its tiles_m x tiles_n accumulator tiles;
  //   R.accumulator (computed at the warp): [k.0, k.1, tiles_m, tiles_n, 16 x 16 x 16 product];
  //   a and b staged in shared memory at k.0 (all threads, zero past the tensors' ends, rows padded
  //   by 16 bytes against bank conflicts), loaded into fragments at k.1.
  void schedule_tensor_core(const TensorCoreContraction& tc, const Operation& out) {
    const std::string R = tc.op->name, acc = cache_stage_name(R, MemScope::Accumulator);
    const int rank = static_cast<int>(out.axes.size());
    const int64_t wm = k_.warps_m, wn = k_.warps_n, bm = wm * k_.tiles_m * 16, bn = wn * k_.tiles_n * 16;
    for (const Operation& op : dag_.ops())
      if (!op.is_placeholder && op.name != out.name && op.name != R) apply(compute_inline_step(op.name));
    apply(cache_write_step(R, MemScope::Accumulator));
    const std::vector<std::pair<std::string, MemScope>> operands{{tc.a->name, MemScope::MatrixA},
                                                                 {tc.b->name, MemScope::MatrixB}};
    for (const auto& [t, scope] : operands) {
      apply(cache_read_step(t, MemScope::Shared, {acc}));
      apply(cache_read_step(cache_stage_name(t, MemScope::Shared), scope, {acc}));
    }
    apply(set_scope_step(R, MemScope::Shared));
    apply(storage_align_step(R, rank - 2, bn, 4));  // rows of floats padded by 16 bytes

    // The output: blocks, then the block's tile over all its threads.
    std::vector<std::string> loops = leaves(out.name);
    const std::string oi = loops[rank - 2], oj = loops[rank - 1];
    apply(split_step(out.name, oi, {bm}));
    apply(split_step(out.name, oj, {bn}));
    const std::vector<std::string> batch(loops.begin(), loops.begin() + rank - 2);
    bind_blocks(out.name, batch, {oi + ".0", oj + ".0", oi + ".1", oj + ".1"}, oi + ".0", oj + ".0");
    std::vector<std::string> order;
    cooperative(out.name, {oi + ".1", oj + ".1"}, bm * bn, k_.tc_out_vector);

    // R: each warp's accumulator tiles stored to shared memory.
    apply(compute_at_step(R, out.name, oj + ".0"));
    const std::vector<std::string> rl = leaves(R);
    const std::string ri = rl[rank - 2], rj = rl[rank - 1];
    apply(split_step(R, ri, {k_.tiles_m, 16}));
    apply(split_step(R, rj, {k_.tiles_n, 16}));
    order.assign(rl.begin(), rl.begin() + rank - 2);
    for (const std::string& l : {ri + ".0", rj + ".0", ri + ".1", rj + ".1", ri + ".2", rj + ".2"}) order.push_back(l);
    apply(reorder_step(R, order));
    apply(annotate_step(R, ri + ".0", Annotation::ThreadZ));
    apply(annotate_step(R, rj + ".0", Annotation::ThreadY));
    apply(annotate_step(R, ri + ".1", Annotation::Unroll));
    apply(annotate_step(R, rj + ".1", Annotation::Unroll));
    apply(tensorize_step(R, ri + ".2"));

    // The product, per warp.
    apply(compute_at_step(acc, R, rj + ".0"));
    const std::vector<std::string> al = leaves(acc);
    const std::string ai = al[rank - 2], aj = al[rank - 1], k = al[rank];
    apply(split_step(acc, ai, {16}));
    apply(split_step(acc, aj, {16}));
    apply(split_step(acc, k, {k_.k_tiles, 16}));
    order.assign(al.begin(), al.begin() + rank - 2);
    for (const std::string& l : {k + ".0", k + ".1", ai + ".0", aj + ".0", ai + ".1", aj + ".1", k + ".2"})
      order.push_back(l);
    apply(reorder_step(acc, order));
    apply(annotate_step(acc, ai + ".0", Annotation::Unroll));
    apply(annotate_step(acc, aj + ".0", Annotation::Unroll));
    apply(tensorize_step(acc, ai + ".1"));
    if (k_.tc_double_buffer) apply(pragma_step(acc, k + ".0", "double_buffer", 1));

    // Operands: staged at k.0 by all threads, loaded into fragments at k.1.
    const int64_t bk = k_.k_tiles * 16;
    for (const auto& [t, scope] : operands) {
      const std::string shared = cache_stage_name(t, MemScope::Shared), frag = cache_stage_name(shared, scope);
      apply(compute_at_step(frag, acc, k + ".1"));
      std::vector<std::string> fl = leaves(frag);
      const int t_rank = static_cast<int>(fl.size());  // the operand's own: maybe fewer batch axes
      const std::string d0 = fl[t_rank - 2], d1 = fl[t_rank - 1];
      apply(split_step(frag, d0, {16}));
      apply(split_step(frag, d1, {16}));
      order.assign(fl.begin(), fl.begin() + t_rank - 2);
      for (const std::string& l : {d0 + ".0", d1 + ".0", d0 + ".1", d1 + ".1"}) order.push_back(l);
      apply(reorder_step(frag, order));
      apply(annotate_step(frag, d0 + ".0", Annotation::Unroll));
      apply(annotate_step(frag, d1 + ".0", Annotation::Unroll));
      apply(tensorize_step(frag, d0 + ".1"));
      // The fragments' loads read the shared tile: it is computed around them, at k.0.
      apply(compute_at_step(shared, acc, k + ".0"));
      const int64_t rows_cols = (scope == MemScope::MatrixA ? bm : bn) * bk;
      // Rows padded by 8 elements (16 bytes): a warp's fragment loads then spread over the banks.
      apply(storage_align_step(shared, t_rank - 2, last_extent_hint(scope, bm, bn, bk, tc), 8));
      cooperative(shared, leaves(shared), rows_cols, k_.tc_fetch_vector);
    }
  }

  // Warpgroup tensor cores. With R the contraction and out its 16-bit epilogue:
  //   out: [batch (blockIdx.z), i.0 (blockIdx.y), j.0 (blockIdx.x), i.1 (warpgroups, threadIdx.z),
  //         j.1 (threadIdx.y), i.2 (a warpgroup's 64-row tiles, unrolled), 64 x wg_cols tensorized]:
  //         the epilogue, each thread computing it on the accumulators it holds;
  //   R.wg_accumulator (computed at the warpgroup): [k.0 (pipelined), k.1 (steps of 16, unrolled),
  //         i.0 (its tiles), j.0, 64 x wg_cols x 16 tensorized];
  //   a and b staged at k.0 by all threads in swizzled shared tiles, 64 of the reduction at a time
  //   (zero past the tensors' ends), read by the products straight from there.
  void schedule_warpgroup(const TensorCoreContraction& tc, const Operation& out) {
    const std::string R = tc.op->name, acc = cache_stage_name(R, MemScope::WgAccumulator);
    const bool fold = folds_warpgroup_rows(tc);
    int rank = static_cast<int>(out.axes.size());
    const int64_t wm = k_.wg_m, wn = k_.wg_n, mi = k_.wg_mi, n = k_.wg_cols;
    for (const Operation& op : dag_.ops())
      if (!op.is_placeholder && op.name != out.name && op.name != R) apply(compute_inline_step(op.name));
    apply(cache_write_step(R, MemScope::WgAccumulator));
    apply(compute_inline_step(R));  // the epilogue reads the accumulators
    const std::vector<std::string> operands{tc.a->name, tc.b->name};
    for (const std::string& t : operands) {
      apply(cache_read_step(t, MemScope::Shared, {acc}));
      apply(storage_swizzle_step(cache_stage_name(t, MemScope::Shared)));
    }

    std::vector<std::string> loops = leaves(out.name);
    if (fold) {  // one axis of rows: the rows with the axis before them
      apply(fuse_step(out.name, {loops[rank - 3], loops[rank - 2]}));
      loops = leaves(out.name);
      --rank;
    }
    const std::string oi = loops[rank - 2], oj = loops[rank - 1];
    apply(split_step(out.name, oi, {wm, mi, kWarpgroupTileRows}));
    apply(split_step(out.name, oj, {wn, n}));
    const std::vector<std::string> batch(loops.begin(), loops.begin() + rank - 2);
    bind_blocks(out.name, batch, {oi + ".0", oj + ".0", oi + ".1", oj + ".1", oi + ".2", oi + ".3", oj + ".2"},
                oi + ".0", oj + ".0");
    std::vector<std::string> order;
    apply(annotate_step(out.name, oi + ".1", Annotation::ThreadZ));
    apply(annotate_step(out.name, oj + ".1", Annotation::ThreadY));
    apply(annotate_step(out.name, oi + ".2", Annotation::Unroll));
    apply(tensorize_step(out.name, oi + ".3"));

    apply(compute_at_step(acc, out.name, oj + ".1"));
    if (fold) {
      const std::vector<std::string> l = leaves(acc);
      apply(fuse_step(acc, {l[rank - 2], l[rank - 1]}));
    }
    const std::vector<std::string> al = leaves(acc);
    const std::string ai = al[rank - 2], aj = al[rank - 1], k = al[rank];
    apply(split_step(acc, ai, {kWarpgroupTileRows}));
    apply(split_step(acc, aj, {n}));
    apply(split_step(acc, k, {kWarpgroupStep / kWarpgroupTileK, kWarpgroupTileK}));
    order.assign(al.begin(), al.begin() + rank - 2);
    for (const std::string& l : {aj + ".0", k + ".0", k + ".1", ai + ".0", ai + ".1", aj + ".1", k + ".2"})
      order.push_back(l);
    apply(reorder_step(acc, order));
    apply(annotate_step(acc, k + ".1", Annotation::Unroll));
    apply(annotate_step(acc, ai + ".0", Annotation::Unroll));
    apply(tensorize_step(acc, ai + ".1"));
    if (k_.wg_stages >= 2) apply(pragma_step(acc, k + ".0", "pipeline_stages", k_.wg_stages));

    const int64_t bm = wm * mi * kWarpgroupTileRows, bn = wn * n;
    for (const std::string& t : operands) {
      const std::string shared = cache_stage_name(t, MemScope::Shared);
      apply(compute_at_step(shared, acc, k + ".0"));
      const int64_t elements = (t == tc.a->name ? bm : bn) * kWarpgroupStep;
      std::vector<std::string> fl = leaves(shared);
      std::string f = fl[0];
      if (fl.size() > 1 && apply(fuse_step(shared, fl))) f = leaves(shared).back();
      const int64_t threads = wm * wn * kWarpgroupThreads;
      int64_t vector = 8;  // 16 bytes
      while (vector > 1 && elements % (threads * vector)) vector /= 2;
      std::vector<int64_t> lengths{wm, wn, kWarpgroupThreads};
      if (vector > 1) lengths.push_back(vector);
      if (!apply(split_step(shared, f, lengths))) continue;
      apply(annotate_step(shared, f + ".1", Annotation::ThreadZ));
      apply(annotate_step(shared, f + ".2", Annotation::ThreadY));
      apply(annotate_step(shared, f + ".3", Annotation::ThreadX));
      if (vector > 1) apply(annotate_step(shared, f + ".4", Annotation::Vectorize));
    }
  }

  // The output's loops reordered to `batch` then `tiles`; the batch axes fused onto blockIdx.z, the
  // block tiles' loops `rows` and `cols` onto blockIdx.y and blockIdx.x.
  void bind_blocks(const std::string& out, const std::vector<std::string>& batch, const std::vector<std::string>& tiles,
                   const std::string& rows, const std::string& cols) {
    std::vector<std::string> order = batch;
    order.insert(order.end(), tiles.begin(), tiles.end());
    apply(reorder_step(out, order));
    if (!batch.empty()) {
      std::string z = batch[0];
      if (batch.size() > 1 && apply(fuse_step(out, batch))) z = leaves(out)[0];
      apply(annotate_step(out, z, Annotation::BlockZ));
    }
    apply(annotate_step(out, rows, Annotation::BlockY));
    apply(annotate_step(out, cols, Annotation::BlockX));
  }

  // The row length of an operand's shared tile (its last dimension): k when the operand is read
  // [.., x, k], else the block's m or n.
  static int64_t last_extent_hint(MemScope scope, int64_t bm, int64_t bn, int64_t bk, const TensorCoreContraction& tc) {
    const Expr& r = scope == MemScope::MatrixA ? tc.a : tc.b;
    const Expr& last = r->args.back();
    bool k_last = last->op == ExprOp::Var && last->name == tc.op->reduce_axes[0].name;
    return k_last ? bk : scope == MemScope::MatrixA ? bm : bn;
  }

  // The loops `loops` of `stage` (a tile of `elements`) fused and spread over the block's threads:
  // [serial, warps_m (threadIdx.z), warps_n (threadIdx.y), 32 (threadIdx.x), vector].
  void cooperative(const std::string& stage, const std::vector<std::string>& loops, int64_t elements,
                   int64_t vector) {
    std::string f = loops[0];
    if (loops.size() > 1 && apply(fuse_step(stage, loops))) f = leaves(stage).back();
    const int64_t threads = k_.warps_m * k_.warps_n * 32;
    while (vector > 1 && elements % (threads * vector)) vector /= 2;
    std::vector<int64_t> lengths{k_.warps_m, k_.warps_n, 32};
    if (vector > 1) lengths.push_back(vector);
    if (!apply(split_step(stage, f, lengths))) return;
    apply(annotate_step(stage, f + ".1", Annotation::ThreadZ));
    apply(annotate_step(stage, f + ".2", Annotation::ThreadY));
    apply(annotate_step(stage, f + ".3", Annotation::ThreadX));
    if (vector > 1) apply(annotate_step(stage, f + ".4", Annotation::Vectorize));
  }

  // How the output was tiled: thread counts along v (x) and u (y, when there is one).
  struct OutputTiles {
    int64_t tx = 1, ty = 1;
    bool has_u = false;
  };

  // Output: [others (blockIdx.z), u.0 (blockIdx.y), v.0 (blockIdx.x), u.1 (threadIdx.y),
  //          v.1 (threadIdx.x), u.2, v.2]; the contraction computed at the thread's tile.
  // Rows that fold (rows_fold) are first fused with the axis before them: one axis of rows.
  OutputTiles tile_output(const std::string& out, const std::string& compute) {
    const Operation c = state().op(compute);  // a copy: every applied step replaces the state
    int rank = static_cast<int>(c.axes.size());
    const ContractionAxes ax = contraction_axes(c);
    int u = ax.u, v = ax.v;
    std::vector<std::string> axes = leaves(out);
    if (folds_rows(c, k_) &&
        apply(fuse_step(out, {axes[static_cast<size_t>(u - 1)], axes[static_cast<size_t>(u)]}))) {
      axes = leaves(out);
      --u, --v, --rank;
    }
    std::vector<std::string> others, blocks, threads, regs;
    OutputTiles tiles;
    for (int a = 0; a < rank; ++a) {
      const std::string& ax = axes[a];
      if (a != u && a != v) {
        others.push_back(ax);
        continue;
      }
      int64_t tile = a == v ? k_.block_cols : k_.block_rows, reg = a == v ? k_.thread_cols : k_.thread_rows;
      int64_t t = std::max<int64_t>(1, tile / reg);
      apply(split_step(out, ax, {t, reg}));
      blocks.push_back(ax + ".0");
      threads.push_back(ax + ".1");
      regs.push_back(ax + ".2");
      (a == v ? tiles.tx : tiles.ty) = t;
    }
    std::vector<std::string> order = others;
    for (auto* group : {&blocks, &threads, &regs}) order.insert(order.end(), group->begin(), group->end());
    apply(reorder_step(out, order));
    std::string z = others.empty() ? "" : others[0];
    if (others.size() > 1 && apply(fuse_step(out, others))) z = leaves(out)[0];
    if (!z.empty()) apply(annotate_step(out, z, Annotation::BlockZ));
    tiles.has_u = blocks.size() == 2;
    apply(annotate_step(out, blocks.back(), Annotation::BlockX));
    apply(annotate_step(out, threads.back(), Annotation::ThreadX));
    if (tiles.has_u) {
      apply(annotate_step(out, blocks.front(), Annotation::BlockY));
      apply(annotate_step(out, threads.front(), Annotation::ThreadY));
    }
    for (const std::string& r : regs) apply(annotate_step(out, r, Annotation::Unroll));
    apply(compute_at_step(compute, out, threads.back()));
    return tiles;
  }

  // The per-thread tile: [k.0, other reductions, k.1, spatial (unrolled)]. Returns the loop the
  // operands are staged at (k.0, or k when it does not split).
  std::string tile_thread(const std::string& compute) {
    const Stage& cs = state().stage(compute);
    std::vector<std::string> spatial, reduce;
    for (int a = 0; a < cs.num_roots; ++a) (a < cs.num_spatial_roots ? spatial : reduce).push_back(cs.vars[a].name);
    std::string k0 = reduce[0];
    std::vector<std::string> corder;
    if (apply(split_step(compute, reduce[0], {k_.reduce_tile}))) {
      k0 = reduce[0] + ".0";
      corder.push_back(k0);
      corder.insert(corder.end(), reduce.begin() + 1, reduce.end());
      corder.push_back(reduce[0] + ".1");
    } else {
      corder = reduce;
    }
    corder.insert(corder.end(), spatial.begin(), spatial.end());
    apply(reorder_step(compute, corder));
    for (const std::string& sp : spatial) apply(annotate_step(compute, sp, Annotation::Unroll));
    if (k_.unroll_max_step) apply(pragma_step(compute, corder.front(), "auto_unroll_max_step", k_.unroll_max_step));
    return k0;
  }

  // Operands staged in shared memory, fetched cooperatively by all threads of the block.
  void stage_operands(const std::vector<Expr>& reads, const std::string& compute, const std::string& k0,
                      const OutputTiles& tiles) {
    std::vector<std::string> tensors;
    for (const Expr& r : reads)
      if (std::find(tensors.begin(), tensors.end(), r->name) == tensors.end()) tensors.push_back(r->name);
    for (size_t t = 0; t < tensors.size(); ++t) {
      if (!(t == 0 ? k_.stage_a : k_.stage_b)) continue;
      if (!apply(cache_read_step(tensors[t], MemScope::Shared, {compute}))) continue;
      const std::string shared = cache_stage_name(tensors[t], MemScope::Shared);
      if (!apply(compute_at_step(shared, compute, k0))) continue;
      std::vector<std::string> loops = leaves(shared);
      std::string f = loops[0];
      if (loops.size() > 1 && apply(fuse_step(shared, loops))) f = leaves(shared)[0];
      // Each thread copies fetch_vector consecutive elements (one 16-byte access for 4 where the
      // tile's rows are aligned; element by element otherwise, still correct).
      int64_t vec = k_.fetch_vector > 1 && extent(shared, f) % k_.fetch_vector == 0 ? k_.fetch_vector : 1;
      std::vector<int64_t> lengths;
      if (tiles.has_u) lengths.push_back(tiles.ty);
      lengths.push_back(tiles.tx);
      if (vec > 1) lengths.push_back(vec);
      if (apply(split_step(shared, f, lengths))) {
        int level = 1;
        if (tiles.has_u) apply(annotate_step(shared, f + "." + std::to_string(level++), Annotation::ThreadY));
        apply(annotate_step(shared, f + "." + std::to_string(level++), Annotation::ThreadX));
        if (vec > 1) apply(annotate_step(shared, f + "." + std::to_string(level), Annotation::Vectorize));
      } else if (apply(split_step(shared, f, {tiles.tx}))) {
        apply(annotate_step(shared, f + ".1", Annotation::ThreadX));
      }
    }
  }

  const ComputeDAG& dag_;
  TraceBuilder b_;
  Knobs k_;
};

Knobs sample_knobs(std::mt19937_64& rng, const GpuTargetSpec& target) {
  auto pick = [&](const std::vector<int64_t>& v) { return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)]; };
  Knobs k;
  k.elem_threads = pick({32, 64, 128, 256, 512, 1024});
  if (pick({0, 1}) != 0) k.elem_threads = pick(warp_multiples());
  k.elem_vector = pick({1, 2, 4});
  k.row_threads = pick({0, 32, 64, 128, 256, 512});
  k.block_rows = pick({8, 16, 32, 64, 128});
  k.block_cols = pick({8, 16, 32, 64, 128});
  k.thread_rows = pick({1, 2, 4, 8});
  k.thread_cols = pick({1, 2, 3, 4, 8});
  k.reduce_tile = pick({1, 3, 4, 8, 16, 32});
  k.stage_a = pick({0, 1, 1}) != 0;
  k.stage_b = pick({0, 1, 1}) != 0;
  k.unroll_max_step = pick({0, 0, 16, 64, 512, 1024});
  k.stage_rows = pick({0, 1}) != 0;
  k.rows_per_block = pick({0, 1, 2, 4, 8});
  k.warp_combine = pick({0, 1, 1}) != 0;
  k.elem_per_thread = pick({1, 1, 2, 4});
  k.short_per_thread = pick({1, 2, 3, 4, 7, 8});
  k.fetch_vector = pick({1, 2, 4});
  const bool pipelined = pick({0, 1}) != 0;
  const int64_t copies = pick({2, 2, 3, 4});
  k.copies = pipelined ? copies : 1;
  k.short_rows = pick({1, 2, 4, 8});
  k.short_row_regs = pick({1, 1, 2, 4});
  k.short_unroll_window = pick({0, 1, 1}) != 0;
  k.row_unroll = pick({1, 1, 2, 4, 8});
  k.row_vector = pick({1, 2, 4});
  k.contraction_rows = pick({0, 1}) != 0;
  k.split_k = pick({1, 1, 1, 2, 4, 8, 16, 32});
  k.fold_rows = pick({0, 1}) != 0;
  if (pick({0, 1}) != 0) k.row_threads = pick(warp_multiples());
  k.tensor_core = pick({0, 1, 1}) != 0;
  k.warps_m = pick({1, 2, 4});
  k.warps_n = pick({1, 2, 4});
  k.tiles_m = pick({1, 2, 4});
  k.tiles_n = pick({1, 2, 4});
  k.k_tiles = pick({1, 2, 4});
  k.tc_fetch_vector = pick({1, 2, 4, 8});
  k.tc_out_vector = pick({1, 2, 4});
  k.tc_double_buffer = pick({0, 1}) != 0;
  k.warpgroup = target.warpgroup_mma && pick({0, 1, 1}) != 0;
  k.wg_m = pick({1, 2});
  k.wg_n = pick({1, 2});
  k.wg_cols = pick({64, 128, 256});
  k.wg_mi = k.wg_cols == 256 ? 1 : pick({1, 2});  // 256 accumulators a thread spill
  k.wg_stages = pick({2, 3, 4, 5});
  fit_warpgroup_registers(k);
  k.pad_up_front = pick({0, 1, 1}) != 0;
  while ((k.block_rows / std::min(k.block_rows, k.thread_rows)) * (k.block_cols / std::min(k.block_cols, k.thread_cols)) >
         target.max_threads_per_block)
    k.block_rows /= 2;
  return k;
}

// The knobs a DAG's pattern uses, each a decision: the elementwise ones (also padding before a
// convolution), the row ones, or the contraction's tiles, staging and unrolling. With
// `contraction_rows`, a contraction's outputs are rows (the row decisions, no staging of rows and
// no output vector: a row has one output, as with any reduction per output element).
Knobs decide_knobs(Decider& d, const ComputeDAG& dag, bool contraction_rows, bool tensor_core,
                   bool warpgroup = false) {
  Knobs k;
  k.contraction_rows = contraction_rows;
  k.tensor_core = tensor_core;
  k.warpgroup = warpgroup;
  if (warpgroup) {
    k.wg_m = d.choose("wg.warpgroups_m", {2, 1}, DecisionKind::ThreadBinding);
    k.wg_n = d.choose("wg.warpgroups_n", {1, 2}, DecisionKind::ThreadBinding);
    k.wg_cols = d.choose("wg.cols", {128, 256, 64}, DecisionKind::Tile);
    k.wg_mi = k.wg_cols == 256 ? 1 : d.choose("wg.tiles_m", {1, 2}, DecisionKind::Tile);
    k.wg_stages = d.choose("wg.stages", {4, 3, 5, 2}, DecisionKind::Structure);
    fit_warpgroup_registers(k);
    return k;
  }
  if (tensor_core) {
    k.warps_m = d.choose("tc.warps_m", {1, 2, 4}, DecisionKind::ThreadBinding);
    k.warps_n = d.choose("tc.warps_n", {1, 2, 4}, DecisionKind::ThreadBinding);
    k.tiles_m = d.choose("tc.tiles_m", {1, 2, 4}, DecisionKind::Tile);
    k.tiles_n = d.choose("tc.tiles_n", {1, 2, 4}, DecisionKind::Tile);
    k.k_tiles = d.choose("tc.k_tiles", {1, 2, 4}, DecisionKind::Tile);
    k.tc_fetch_vector = d.choose("tc.fetch_vector", {8, 4, 2, 1}, DecisionKind::Vector);
    k.tc_out_vector = d.choose("tc.out_vector", {4, 2, 1}, DecisionKind::Vector);
    k.tc_double_buffer = d.choose("tc.double_buffer", {1, 0}, DecisionKind::Structure) != 0;
    return k;
  }
  const Operation* contraction = contraction_rows ? nullptr : find_contraction(dag);
  // Rows of one output each: no row is read by several passes, and no row has outputs to vectorize.
  const bool per_output = contraction_rows || (!contraction && reduction_per_output(dag));
  const bool any_reduction = std::any_of(dag.ops().begin(), dag.ops().end(),
                                         [](const Operation& op) { return op.reduce != ReduceKind::None; });
  bool rows = contraction_rows || (!contraction && any_reduction);
  const bool elementwise = contraction ? pads_input(dag) : !rows;  // padding: an elementwise stage
  if (elementwise) {
    k.elem_threads = d.choose("elementwise.threads", warp_multiples(), DecisionKind::ThreadBinding);
    k.elem_vector = d.choose("elementwise.vector", {1, 2, 4}, DecisionKind::Vector);
    k.elem_per_thread = d.choose("elementwise.per_thread", {1, 2, 4, 8}, DecisionKind::Unroll);
  }
  bool short_reduction = rows && gpu_short_reductions_only(dag);
  if (short_reduction) {
    k.elem_threads = d.choose("elementwise.threads", warp_multiples(), DecisionKind::ThreadBinding);
    k.short_per_thread = d.choose("short.outputs_per_thread", {1, 2, 3, 4, 7, 8}, DecisionKind::Unroll);
    k.short_rows = d.choose("short.rows_per_block", {1, 2, 4, 8}, DecisionKind::ThreadBinding);
    k.short_row_regs = d.choose("short.rows_per_thread", {1, 2, 4}, DecisionKind::Tile);
    k.short_unroll_window = d.choose("short.unroll_window", {1, 0}, DecisionKind::Unroll) != 0;
  }
  if (rows && !short_reduction) {
    k.row_threads = d.choose("rows.threads", warp_multiples(), DecisionKind::ThreadBinding);
    if (!per_output) k.stage_rows = d.choose("rows.stage_in_shared", {0, 1}, DecisionKind::ComputeLocation) != 0;
    k.warp_combine = d.choose("rows.combine_by_shuffles", {1, 0}, DecisionKind::Structure) != 0;
    k.rows_per_block = k.warp_combine ? d.choose("rows.per_block", {1, 2, 4, 8}, DecisionKind::ThreadBinding) : 1;
    k.row_unroll = k.warp_combine ? d.choose("rows.unroll", {1, 2, 4, 8}, DecisionKind::Unroll) : 1;
    if (!per_output) k.row_vector = d.choose("rows.output_vector", {1, 2, 4}, DecisionKind::Vector);
  }
  if (contraction) {
    k.block_rows = d.choose("block.rows", {8, 16, 32, 64, 128}, DecisionKind::Tile);
    k.block_cols = d.choose("block.cols", {8, 16, 32, 64, 128}, DecisionKind::Tile);
    k.thread_rows = d.choose("thread.rows", {1, 2, 4, 8}, DecisionKind::ThreadBinding);
    k.thread_cols = d.choose("thread.cols", {1, 2, 3, 4, 8}, DecisionKind::ThreadBinding);
    k.reduce_tile = d.choose("reduce.tile", {1, 2, 4, 8, 16, 32}, DecisionKind::Tile);
    k.stage_a = d.choose("stage.a", {0, 1}, DecisionKind::ComputeLocation) != 0;
    k.stage_b = d.choose("stage.b", {0, 1}, DecisionKind::ComputeLocation) != 0;
    k.unroll_max_step = d.choose("auto_unroll", {0, 16, 64, 512, 1024}, DecisionKind::Unroll);
    k.fetch_vector = d.choose("fetch.vector", {1, 4}, DecisionKind::Vector);
    if (d.choose("stage.double_buffer", {0, 1}, DecisionKind::Structure) != 0)
      k.copies = d.choose("stage.copies", {2, 3, 4}, DecisionKind::Structure);
    const std::vector<int64_t> splits = split_k_options(*contraction);
    if (splits.size() > 1) k.split_k = d.choose("split_k", splits, DecisionKind::Structure);
    if (folds_rows(*contraction, k))  // fold_rows is on until decided
      k.fold_rows = d.choose("rows.fold", {1, 0}, DecisionKind::Structure) != 0;
    if (pads_input(dag)) k.pad_up_front = d.choose("pad.up_front", {1, 0}, DecisionKind::ComputeLocation) != 0;
  }
  // Tiles needing more threads than a block has are not schedules; shrink the block tile's rows
  // until they fit (as sample_knobs does), so that few samples are wasted.
  while (contraction && k.block_rows > 1 &&
         (k.block_rows / std::min(k.block_rows, k.thread_rows)) * (k.block_cols / std::min(k.block_cols, k.thread_cols)) >
             1024)
    k.block_rows /= 2;
  return k;
}

// The warpgroup blocks a default tries for contraction `c`, best first: the largest of 128 x 256,
// 128 x 128, 64 x 128 and 64 x 64 outputs that still gives most multiprocessors a block in its
// last wave, counting the work its tiles waste past the tensor's ends; each with as many pipeline
// stages (up to 4) as fit the shared memory.
std::vector<Knobs> warpgroup_defaults(const TensorCoreContraction& tc, const GpuTargetSpec& target) {
  const Operation& c = *tc.op;
  const bool fold = folds_warpgroup_rows(tc);
  struct Shape {
    int64_t wg_m, wg_cols, rows, cols;
    double tile_efficiency;  // a larger tile reads fewer operand bytes per product
  };
  const std::vector<Shape> shapes{{2, 256, 128, 256, 1.0}, {2, 128, 128, 128, 0.92}, {1, 128, 64, 128, 0.8},
                                  {1, 64, 64, 64, 0.6}};
  const size_t rank = c.axes.size();
  const int64_t n = c.axes.back().extent;
  int64_t m = c.axes[rank - 2].extent, batch = 1;
  for (size_t a = 0; a + 2 < rank; ++a) batch *= c.axes[a].extent;
  if (fold) {  // the rows fused with the axis before them
    m *= c.axes[rank - 3].extent;
    batch /= c.axes[rank - 3].extent;
  }
  const int64_t sms = std::max(1, target.multiprocessors);
  std::vector<std::pair<double, Knobs>> scored;
  for (const Shape& s : shapes) {
    const int64_t bm = (m + s.rows - 1) / s.rows, bn = (n + s.cols - 1) / s.cols, blocks = batch * bm * bn;
    const int64_t waves = (blocks + sms - 1) / sms;
    const double filled = static_cast<double>(blocks) / static_cast<double>(waves * sms);
    const double useful = static_cast<double>(m * n) / static_cast<double>(bm * s.rows * bn * s.cols);
    Knobs k;
    k.wg_m = s.wg_m;
    k.wg_n = 1;
    k.wg_mi = 1;
    k.wg_cols = s.wg_cols;
    const int64_t stage_bytes = (s.rows + s.cols) * kWarpgroupStep * 2;
    k.wg_stages = std::clamp<int64_t>((target.max_shared_bytes_tensor_core - kSwizzleAlignment) / stage_bytes, 2, 4);
    scored.push_back({filled * useful * s.tile_efficiency, k});
  }
  std::stable_sort(scored.begin(), scored.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
  std::vector<Knobs> out;
  for (const auto& [score, k] : scored) out.push_back(k);
  return out;
}

bool lowers(const ComputeDAG& dag, const Trace& t, const GpuTargetSpec& target) {
  try {
    LowerOptions options;
    options.target = LowerTarget::Gpu;
    options.gpu_limits.max_threads_per_block = target.max_threads_per_block;
    options.gpu_limits.max_shared_bytes = shared_limit(target, t);
    lower(replay(dag, t), "check", options);
    return true;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace

int64_t shared_limit(const GpuTargetSpec& target, const Trace& trace) {
  for (const Step& s : trace.steps)
    if (s.kind == StepKind::Tensorize) return target.max_shared_bytes_tensor_core;
  return target.max_shared_bytes;
}

Trace default_gpu_schedule(const ComputeDAG& dag, const GpuTargetSpec& target) {
  Knobs knobs;
  knobs.warpgroup = false;  // the warpgroup defaults below set it
  const Operation* c = find_contraction(dag);
  knobs.contraction_rows = c && few_outputs_long_reduction(*c, kRowsDefaultRatio);
  if (TensorCoreContraction tc = tensor_core_contraction(dag, true); tc.op && target.warpgroup_mma) {
    for (const Knobs& k : warpgroup_defaults(tc, target)) {
      Trace t = GpuScheduler(dag, k).run();
      if (lowers(dag, t, target)) return t;
    }
  }
  if (TensorCoreContraction tc = tensor_core_contraction(dag); tc.op) {
    knobs.warpgroup = false;
    // Warps of 64 x 64 (4 x 4 tiles: 16 products per 8 fragment loads) where the output is at least
    // 256 x 256: 2 x 2 of them per block where that still gives 1024 blocks (an H200: 443 us for a
    // 4096^3 bfloat16 matmul, against 630 us with 1 x 2), else 1 x 2 (2048^3: 81 us, against 123 us
    // with 2 x 2 warps of 2 x 2 tiles). Smaller outputs keep 64 x 64 blocks, more of them. Where
    // the double-buffered tiles and the block's float32 staging of its results do not fit the shared
    // memory, the reduction steps by 16, then the tiles are single.
    const int64_t m = tc.op->axes[tc.op->axes.size() - 2].extent, n = tc.op->axes.back().extent;
    if (m >= 256 && n >= 256) {
      knobs.tiles_m = knobs.tiles_n = 4;
      if ((m / 128) * (n / 128) < 1024) knobs.warps_m = 1;
    }
    for (int attempt = 0; attempt < 3; ++attempt) {
      Knobs k = knobs;
      if (attempt == 1) k.k_tiles = 1;
      if (attempt == 2) k.tc_double_buffer = false;
      Trace t = GpuScheduler(dag, k).run();
      if (lowers(dag, t, target)) return t;
    }
  }
  if (c && !knobs.contraction_rows) {
    // An output row shorter than the block's 64 columns (a convolution at 7x7 or 14x14) takes blocks
    // of the next power of two, one column a thread: the tuner's best for ResNet-50's convolutions
    // at 7x7 and 14x14 on an H200 had blocks 8 or 16 wide, 1 or 2 columns a thread.
    const int64_t row = c->axes[static_cast<size_t>(contraction_axes(*c).v)].extent;
    if (row < knobs.block_cols) {
      knobs.block_cols = std::max<int64_t>(8, ceil_pow2(row));
      knobs.thread_cols = 1;
    }
    // Scratch within the target's budget: a padded input past it is read through its bounds tests
    // instead (no copy), then the split-K partial sums take what is left.
    int64_t most = target.max_scratch_bytes;
    if (most > 0) {
      const int64_t padded = padded_input_bytes(dag, target);
      knobs.pad_up_front = padded <= most;
      if (knobs.pad_up_front) most = std::max<int64_t>(1, most - padded);
    }
    knobs.split_k = default_split_k(*c, knobs);
    auto partial_sums = [&](int64_t parts) {  // in float32
      return scratch_bytes_of(parts * c->num_elements() * static_cast<int64_t>(sizeof(float)), target);
    };
    while (knobs.split_k > 1 && most > 0 && partial_sums(knobs.split_k) > most) knobs.split_k /= 2;
    // Long matrix products: 8 x 4 outputs a thread, the reduction staged 32 at a time in two copies
    // (the next fetched with cp.async during this step's products), unrolled whole. On an H200, fp32,
    // in one run against cuBLAS: a 4096^3 matmul in 3019 us (cuBLAS 2687 us; 8 x 4 in steps of 16,
    // one copy, the best the tuner had found: 3385 us), 1024^3 in 54.1 us (cuBLAS 59.2 us). Where
    // the tiles do not divide the shape, only a thread's tile is unrolled: every product of it is
    // guarded, and the whole step's 1024 guarded products made 500 KB of CUDA that NVRTC took over
    // 15 s to compile (771 x 700 x 261).
    const bool short_batched = short_batched_product(dag, *c, knobs);
    if (long_plain_contraction(dag, *c, knobs) || short_batched) {
      Knobs pipelined = knobs;
      pipelined.thread_rows = 8;
      pipelined.thread_cols = 4;
      pipelined.reduce_tile = 32;
      pipelined.copies = 2;
      const bool divide = tiles_divide(*c, pipelined);
      pipelined.unroll_max_step = divide ? 1024 : 64;
      Trace t = GpuScheduler(dag, pipelined).run();
      if ((divide || !short_batched) && lowers(dag, t, target)) return t;
    }
  }
  Trace t = GpuScheduler(dag, knobs).run();
  if (lowers(dag, t, target)) return t;
  // A shape the fixed tile sizes do not fit (shared memory, say): fall back to smaller tiles.
  Knobs small;
  small.warpgroup = false;
  small.pad_up_front = knobs.pad_up_front;
  small.block_rows = small.block_cols = 16;
  small.thread_rows = small.thread_cols = 2;
  small.reduce_tile = 4;
  return GpuScheduler(dag, small).run();
}

Trace random_gpu_schedule(const ComputeDAG& dag, uint64_t seed, const GpuTargetSpec& target) {
  for (uint64_t attempt = 0; attempt < 64; ++attempt) {
    std::mt19937_64 rng(seed * 0x9e3779b97f4a7c15ULL + attempt);
    Trace t = GpuScheduler(dag, sample_knobs(rng, target)).run();
    if (lowers(dag, t, target)) return t;
  }
  return default_gpu_schedule(dag, target);
}

// The target's limits are checked when candidates lower; it says which tensor cores there are.
std::vector<Sketch> gpu_sketches(const ComputeDAG& dag, const GpuTargetSpec& target) {
  bool reduction = std::any_of(dag.ops().begin(), dag.ops().end(),
                               [](const Operation& op) { return op.reduce != ReduceKind::None; });
  const Operation* contraction = find_contraction(dag);
  const char* pattern = contraction                                ? "gpu/multi_level_tiling"
                        : reduction && gpu_short_reductions_only(dag) ? "gpu/thread_per_output"
                        : reduction                                 ? "gpu/cross_thread_reduction"
                                                                    : "gpu/elementwise";
  auto sketch = [&dag](const char* name, bool contraction_rows, bool tensor_core = false, bool warpgroup = false) {
    return Sketch{name, [dag, contraction_rows, tensor_core, warpgroup](Decider& d, TraceBuilder& b) {
                    Trace t = GpuScheduler(dag, decide_knobs(d, dag, contraction_rows, tensor_core, warpgroup)).run();
                    for (const Step& s : t.steps) b.apply(s);
                  }};
  };
  std::vector<Sketch> sketches;
  // A 16-bit contraction on the tensor cores first (a warpgroup's where the target has them, then a
  // warp's); the CUDA-core tiling stays a candidate.
  if (target.warpgroup_mma && tensor_core_contraction(dag, true).op)
    sketches.push_back(sketch("gpu/warpgroup_mma", false, true, true));
  if (tensor_core_contraction(dag).op) sketches.push_back(sketch("gpu/tensor_core", false, true));
  sketches.push_back(sketch(pattern, false));
  if (contraction && few_outputs_long_reduction(*contraction, kRowsSketchRatio))
    sketches.push_back(sketch("gpu/contraction_rows", true));
  return sketches;
}

}  // namespace tessel
