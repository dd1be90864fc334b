#!/usr/bin/env python3
"""Hand-written GPU schedules for the suite cases, written the way one writes a TVM / Halide
schedule: a list of primitives per stage, chosen by reasoning about the H100, not by search.

    python3 experiments/schedules/cuda/hand/hand.py     # rewrites the *.json files beside this script

Each function below returns the schedule of one suite case; the comment above it says why.
Loop names: a split of loop `i` makes `i.0`, `i.1`, ...; a fuse of `a`, `b` makes `a@b`; the loops of a
cache stage are `ax0`, `ax1`, ... (see `tessel show --case NAME --schedule none` for a case's loops).
"""
import json
import os


class Schedule:
    def __init__(self):
        self.steps = []

    def _add(self, kind, stage, **fields):
        self.steps.append(dict(kind=kind, stage=stage, **fields))

    def split(self, stage, loop, *factors):
        self._add("split", stage, loop=loop, factors=list(factors))
        return [f"{loop}.{i}" for i in range(len(factors) + 1)]

    def fuse(self, stage, *loops):
        self._add("fuse", stage, loops=list(loops))
        return "@".join(loops)

    def reorder(self, stage, *loops):
        self._add("reorder", stage, loops=list(loops))

    def bind(self, stage, loop, axis):  # axis: blockIdx.x, threadIdx.y, ...
        self._add("annotate", stage, loop=loop, annotation=axis)

    def unroll(self, stage, *loops):
        for loop in loops:
            self._add("annotate", stage, loop=loop, annotation="unroll")

    def vectorize(self, stage, loop):
        self._add("annotate", stage, loop=loop, annotation="vectorize")

    def auto_unroll(self, stage, loop, max_step):
        self._add("pragma", stage, loop=loop, pragma="auto_unroll_max_step", value=max_step)

    def inline(self, stage):
        self._add("compute_inline", stage)

    def compute_at(self, stage, target, loop):
        self._add("compute_at", stage, target=target, loop=loop)

    def cache_write(self, stage, scope="local"):
        self._add("cache_write", stage, scope=scope)
        return f"{stage}.{scope}"

    def cache_read(self, tensor, readers, scope="shared"):
        self._add("cache_read", tensor, scope=scope, readers=list(readers))
        return f"{tensor}.{scope}"

    def set_scope(self, stage, scope):
        self._add("set_scope", stage, scope=scope)

    def storage_align(self, stage, axis, factor, offset):
        self._add("storage_align", stage, axis=axis, factor=factor, offset=offset)

    def json(self):
        return {"version": 1, "steps": self.steps}


# ---- elementwise: a flat grid, 4 consecutive floats per thread in one 16-byte access -------------
# Memory-bound: the only goals are full 128-bit transactions and enough warps in flight. 256 threads
# per block of float4s keeps 2048 threads per SM resident (8 blocks); every shape in the suite has a
# multiple of 1024 elements, and the guard of a partial last block covers the others.
def elementwise(out="Y", loops=("i0", "i1"), threads=256, vector=4):
    s = Schedule()
    flat = s.fuse(out, *loops)
    block, thread, lanes = s.split(out, flat, threads, vector)
    s.bind(out, block, "blockIdx.x")
    s.bind(out, thread, "threadIdx.x")
    s.vectorize(out, lanes)
    return s


# A 2-D output tile per block: rows = (loop, threads, per thread) on blockIdx.y / threadIdx.y, and
# columns likewise on x; the per-thread part innermost and unrolled (registers). The `outer` loops
# (a batch, or an image row) are fused onto blockIdx.z. Returns the column thread loop, where the
# accumulating stage is computed.
def block_tile(s, out, outer, rows, cols):
    (row_loop, ty, tm), (col_loop, tx, tn) = rows, cols
    i_blk, i_thr, i_reg = s.split(out, row_loop, ty, tm)
    j_blk, j_thr, j_reg = s.split(out, col_loop, tx, tn)
    s.reorder(out, *outer, i_blk, j_blk, i_thr, j_thr, i_reg, j_reg)
    if outer:
        s.bind(out, s.fuse(out, *outer) if len(outer) > 1 else outer[0], "blockIdx.z")
    s.bind(out, i_blk, "blockIdx.y")
    s.bind(out, j_blk, "blockIdx.x")
    s.bind(out, i_thr, "threadIdx.y")
    s.bind(out, j_thr, "threadIdx.x")
    s.unroll(out, i_reg, j_reg)
    return j_thr


# ---- matrix products: the classic SGEMM blocking --------------------------------------------------
# Each block computes a BM x BN tile of the product from BK-wide slabs of both operands staged in
# shared memory; each of its (BM/TM) x (BN/TN) threads keeps a TM x TN tile in registers, so one
# shared-memory value feeds TM or TN multiply-adds. A thread's tile is contiguous, so its reads of a
# slab row are 16-byte aligned runs the compiler loads 4 floats at a time. The slabs are fetched by
# all threads together, 4 consecutive floats per thread (one 16-byte load and store).
# `acc` is the stage that accumulates: a cache_write of `out` (plain products), or the product stage
# itself held in registers when an epilogue (bias, activation) reads it (`acc_stage`).
def matmul(out="C", i="i", j="j", k="k", operands=("A", "B"), batch=None, acc_stage=None,
           bm=128, bn=128, bk=8, tm=8, tn=8, unroll_step=512):
    s = Schedule()
    if acc_stage:
        s.set_scope(acc_stage, "local")
        acc = acc_stage
    else:
        acc = s.cache_write(out)
    ty, tx = bm // tm, bn // tn
    j_thr = block_tile(s, out, [batch] if batch else [], (i, ty, tm), (j, tx, tn))
    s.compute_at(acc, out, j_thr)
    k_slab, k_in = s.split(acc, k, bk)
    acc_loops = ["b", "i", "j"] if batch else ["i", "j"]
    s.reorder(acc, k_slab, k_in, *acc_loops)
    s.unroll(acc, *acc_loops)
    s.auto_unroll(acc, k_slab, unroll_step)
    for tensor in operands:
        staged = s.cache_read(tensor, [acc])
        s.compute_at(staged, acc, k_slab)
        flat = s.fuse(staged, *[f"ax{d}" for d in range(3 if batch else 2)])
        _, f_ty, f_tx, f_vec = s.split(staged, flat, ty, tx, 4)
        s.bind(staged, f_ty, "threadIdx.y")
        s.bind(staged, f_tx, "threadIdx.x")
        s.vectorize(staged, f_vec)
    return s


# ---- direct convolution as an implicit GEMM -------------------------------------------------------
# The padded input is materialized by a flat elementwise kernel (it is ~1.3x the input). The output
# is tiled over filters (F) and output columns (OW, a power of two of threads, the tail guarded);
# one image row (n, oh) per blockIdx.z. Each thread accumulates TF x TW outputs in registers over
# RC-channel slabs of the filter and of the padded rows, both staged in shared memory by all threads
# of the block.
def conv2d(bf, tf, bw, tw, rc_tile, epilogue_out="Y", unroll_step=512, w_taps_per_thread=False):
    s = Schedule()
    s.set_scope("conv", "local")
    flat = s.fuse("pad", "pn", "pc", "ph", "pw")
    p_blk, p_thr = s.split("pad", flat, 256)
    s.bind("pad", p_blk, "blockIdx.x")
    s.bind("pad", p_thr, "threadIdx.x")
    out = epilogue_out
    w_thr = block_tile(s, out, ["n1", "oh1"], ("f1", bf // tf, tf), ("ow1", bw // tw, tw))
    s.compute_at("conv", out, w_thr)
    rc_slab, rc_in = s.split("conv", "rc", rc_tile)
    s.reorder("conv", rc_slab, "rh", "rw", rc_in, "n", "f", "oh", "ow")
    s.unroll("conv", "n", "f", "oh", "ow")
    s.auto_unroll("conv", rc_slab, unroll_step)
    # Both slabs are fetched flat, consecutive threads reading consecutive floats (coalesced). With
    # w_taps_per_thread, the filter slab goes by (filter, channel) pairs instead, each thread copying
    # a pair's KH x KW taps: no index divided by the kernel size, but strided reads (timed: slower).
    for tensor in ("pad", "W"):
        axes = ["ax0", "ax1"] if tensor == "W" and w_taps_per_thread else ["ax0", "ax1", "ax2", "ax3"]
        staged = s.cache_read(tensor, ["conv"])
        s.compute_at(staged, "conv", rc_slab)
        flat = s.fuse(staged, *axes)
        _, a_ty, a_tx = s.split(staged, flat, bf // tf, bw // tw)
        s.bind(staged, a_ty, "threadIdx.y")
        s.bind(staged, a_tx, "threadIdx.x")
        if len(axes) == 2:
            s.unroll(staged, "ax2", "ax3")
    return s


# ---- depthwise convolution: one output row segment per thread ------------------------------------
# Each output reads 9 inputs and 9 weights: there is no reuse across channels to stage, so each
# thread computes TW adjacent outputs of one row in registers (neighbouring outputs share two of
# their three input columns) and reads the zero-padded input through the inlined pad expression.
def depthwise(tw, rows_per_block, ow=112):
    s = Schedule()
    s.inline("pad")
    acc = s.cache_write("Y")
    h_blk, h_thr = s.split("Y", "oh", rows_per_block)
    w_blk, w_thr, w_reg = s.split("Y", "ow", ow // tw, tw)
    s.reorder("Y", "n", "f", h_blk, w_blk, h_thr, w_thr, w_reg)
    block = s.fuse("Y", "n", "f", h_blk, w_blk)
    s.bind("Y", block, "blockIdx.x")
    s.bind("Y", h_thr, "threadIdx.y")
    s.bind("Y", w_thr, "threadIdx.x")
    s.unroll("Y", w_reg)
    s.compute_at(acc, "Y", w_thr)
    s.unroll(acc, "ow", "rc", "rh", "rw")
    return s


# ---- row reductions (softmax, norms, row sums): one block of threads per row ----------------------
# `threads` threads stride over a row; every reduction of the row is split the same way, kept in a
# register per thread and combined across the threads (warp shuffles, then shared memory across
# warps). Short rows take several rows per block on threadIdx.y. A row that is read by several passes
# and is too big for L1 to keep is staged once in shared memory (`stage`: tensor and its readers).
def rows(out, i, j, reductions, inline=(), threads=256, rows_per_block=1, stage=None):
    s = Schedule()
    staged = s.cache_read(stage[0], stage[1]) if stage else None
    for st in inline:
        s.inline(st)
    if out not in [name for name, _ in reductions]:  # a plain row sum is its own reduction
        _, j_thr = s.split(out, j, threads)
        s.bind(out, j_thr, "threadIdx.x")
    if rows_per_block > 1:
        i_blk, i_thr = s.split(out, i, rows_per_block)
        s.bind(out, i_blk, "blockIdx.x")
        s.bind(out, i_thr, "threadIdx.y")
        row = i_thr
    else:
        s.bind(out, i, "blockIdx.x")
        row = i
    for stage_name, k in reductions:
        _, k_thr = s.split(stage_name, k, threads)
        s.bind(stage_name, k_thr, "threadIdx.x")
        if stage_name != out:
            s.set_scope(stage_name, "local")
            s.compute_at(stage_name, out, row)
    if staged:
        s.compute_at(staged, out, row)
        flat = s.fuse(staged, "ax0", "ax1")
        _, f_thr = s.split(staged, flat, threads)
        s.bind(staged, f_thr, "threadIdx.x")
    return s

def write_all(directory):
    cases = {
        "elemwise_chain_4096": elementwise(),
        "gelu_tanh_1024": elementwise(threads=128),
        "gelu_tanh_8192": elementwise(),
        "silu_mul_8192x11008": elementwise(),
        # A 32 KB row, read by three passes: staged once in shared memory.
        "softmax_8192x8192": rows("Y", "i3", "j3", [("row_sum", "k2"), ("row_max", "k")], inline=["exps"],
                                  threads=512, stage=("X", ["row_max", "exps"])),
        # 128-column rows: one warp per row (4 floats a lane), 4 rows per block.
        "softmax_attn_96x128x128": rows("Y", "i3", "j3", [("row_sum", "k2"), ("row_max", "k")], inline=["exps"],
                                        threads=32, rows_per_block=4),
        # A 4 KB row stays in L1 between the mean, variance and output passes.
        "layernorm_16384x1024": rows("Y", "i4", "j4", [("var_sum", "k2"), ("mean_sum", "k")],
                                     inline=["mean", "rstd"], threads=128),
        # A 16 KB row, read twice: staged in shared memory.
        "rmsnorm_8192x4096": rows("Y", "i2", "j2", [("sq_sum", "k")], inline=["rstd"], threads=512,
                                  stage=("X", ["sq_sum", "Y"])),
        # One pass: 256 threads per row, 32 floats each.
        "rowsum_8192x8192": rows("Y", "i", "k", [("Y", "k")], threads=256),
        # 768 columns, 1024 rows: 3 floats a thread, the bias and residual add recomputed per pass.
        "bias_residual_layernorm_1024x768": rows("Y", "i4", "j4", [("var_sum", "k2"), ("mean_sum", "k")],
                                                 inline=["h", "mean", "rstd"], threads=256),
        "gemm_1024": matmul(bm=64, bn=64),                     # 256 blocks: 2 per SM on 132 SMs
        "gemm_4096": matmul(),                                 # 1024 blocks of 128 x 128
        "dense_bias_gelu_1024x768x3072": matmul(out="Y", i="i1", j="j1", operands=("X", "W"),
                                                acc_stage="matmul", bm=64, bn=64),
        "bmm_qk_96x128x64x128": matmul(batch="b", bm=64, bn=64, tm=4, tn=4, bk=16),
        "conv2d_bias_relu_b1_64x56x56_k3": conv2d(bf=16, tf=2, bw=56, tw=2, rc_tile=4),
        "conv2d_bias_relu_b16_256x14x14_k3": conv2d(bf=64, tf=4, bw=16, tw=4, rc_tile=1),
        "depthwise_conv_b16_32x112x112_k3": depthwise(tw=4, rows_per_block=4),
    }
    for name, schedule in cases.items():
        with open(os.path.join(directory, name + ".json"), "w") as f:
            json.dump(schedule.json(), f, indent=1)
            f.write("\n")
    return sorted(cases)


# Alternatives timed beside the chosen schedules (experiments/gpu/run_schedules.sh with VARIANTS=DIR
# times every file of `hand.py --variants DIR`); experiments/results/gpu_schedules/ says which won.
def variants():
    return {
        "gemm_1024": {"64x64_8x8": matmul(bm=64, bn=64, tm=8, tn=8), "128x64_8x8": matmul(bm=128, bn=64),
                      "64x64_4x4": matmul(bm=64, bn=64, tm=4, tn=4)},
        "dense_bias_gelu_1024x768x3072": {
            f"{bm}x{bn}_{tm}x{tn}": matmul(out="Y", i="i1", j="j1", operands=("X", "W"), acc_stage="matmul",
                                           bm=bm, bn=bn, tm=tm, tn=tn)
            for bm, bn, tm, tn in ((64, 64, 8, 8), (128, 64, 8, 8), (128, 128, 8, 8))},
        "depthwise_conv_b16_32x112x112_k3": {
            f"w{tw}_rows{rows}": depthwise(tw=tw, rows_per_block=rows) for tw, rows in ((2, 4), (8, 4), (4, 8), (4, 2))},
        "conv2d_bias_relu_b1_64x56x56_k3": {
            "f16x2_w56x2_rc4_taps": conv2d(bf=16, tf=2, bw=56, tw=2, rc_tile=4, w_taps_per_thread=True),
            "f16x2_w64x2_rc4": conv2d(bf=16, tf=2, bw=64, tw=2, rc_tile=4),
            "f32x4_w56x2_rc2": conv2d(bf=32, tf=4, bw=56, tw=2, rc_tile=2)},
        "conv2d_bias_relu_b16_256x14x14_k3": {
            f"f{bf}x{tf}_w{bw}x{tw}_rc{rc}": conv2d(bf=bf, tf=tf, bw=bw, tw=tw, rc_tile=rc)
            for bf, tf, bw, tw, rc in ((32, 4, 14, 2, 8), (32, 2, 16, 8, 1), (64, 4, 14, 2, 1), (64, 8, 14, 2, 1),
                                       (32, 4, 14, 7, 2), (64, 4, 16, 4, 1))},
    }


if __name__ == "__main__":
    import sys
    if len(sys.argv) == 3 and sys.argv[1] == "--variants":
        os.makedirs(sys.argv[2], exist_ok=True)
        for case, named in variants().items():
            for label, schedule in named.items():
                with open(os.path.join(sys.argv[2], f"{case}.{label}.json"), "w") as f:
                    json.dump(schedule.json(), f)
        sys.exit(0)
    for name in write_all(os.path.dirname(os.path.abspath(__file__))):
        print("wrote", name)
