#!/usr/bin/env python3
"""Contractions on the GPU: tessel's default schedule against torch in one run, in float32 (CUDA
cores, TF32 off on both sides), bfloat16 and float16 (tensor cores).

For each case, times `tessel run --schedule default --no-flush-l2` (median of CUDA-event samples
without an L2 flush) and torch's eager op (cuBLAS) as a CUDA-graph replay (triton's
do_bench_cudagraph); with MAX_AUTOTUNE=1 also torch.compile(mode="max-autotune-no-cudagraphs") of
the same function, replayed in the same kind of CUDA graph (its compile time reported). Prints a
Markdown table and writes it with the raw figures to OUT/contractions.json.

usage: TESSEL=bundle/bin/tessel [MAX_AUTOTUNE=1] [OUT=DIR] python3 experiments/gpu/contractions.py [DTYPE ...]
  DTYPE   fp32, bf16 and/or fp16 (default: all three)
"""
import json
import os
import re
import subprocess
import sys
import time

import torch
import torch.nn.functional as F
import triton.testing

TESSEL = os.environ.get("TESSEL", "bundle/bin/tessel")
OUT = os.environ.get("OUT", ".")
MAX_AUTOTUNE = os.environ.get("MAX_AUTOTUNE") == "1"
TYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
torch.backends.cuda.matmul.allow_tf32 = False  # float32 products in float32, as tessel computes them
torch.backends.cudnn.allow_tf32 = False


def matmul(m, n, k):
    return (f"matmul {m}x{n}x{k}", "matmul", {"M": m, "N": n, "K": k}, 2 * m * n * k,
            lambda t: (torch.randn(m, k, device="cuda", dtype=t), torch.randn(k, n, device="cuda", dtype=t)),
            lambda a, b: a @ b)


def dense_gelu(m, n, k):
    return (f"dense+bias+gelu {m}x{n}x{k}", "dense", {"M": m, "N": n, "K": k, "bias": 1, "act": "gelu"}, 2 * m * n * k,
            lambda t: (torch.randn(m, k, device="cuda", dtype=t), torch.randn(k, n, device="cuda", dtype=t),
                       torch.randn(n, device="cuda", dtype=t)),
            lambda x, w, b: F.gelu(x @ w + b))


# (name, tessel op and params, FLOPs, torch inputs, torch function)
CASES = [
    matmul(4096, 4096, 4096),
    matmul(512, 4096, 4096),
    dense_gelu(512, 4096, 1024),
    matmul(1024, 1024, 1024),
    dense_gelu(1024, 3072, 768),
    ("batch_matmul 48x256x256x64", "batch_matmul", {"B": 48, "M": 256, "N": 256, "K": 64}, 2 * 48 * 256 * 256 * 64,
     lambda t: (torch.randn(48, 256, 64, device="cuda", dtype=t), torch.randn(48, 64, 256, device="cuda", dtype=t)),
     torch.bmm),
]


def tessel_us(op, params, dtype):
    cmd = [TESSEL, "run", "--target", "cuda", "--op", op, "--dtype", dtype, "--schedule", "default", "--no-flush-l2"]
    for k, v in params.items():
        cmd += ["--param", f"{k}={v}"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    m = re.search(r"median ([0-9.]+) us", out.stdout)
    if not m:
        raise RuntimeError(f"{' '.join(cmd)} failed: {out.stdout}{out.stderr}")
    return float(m.group(1))


def graph_us(fn, args):
    return triton.testing.do_bench_cudagraph(lambda: fn(*args)) * 1000.0


def main():
    dtypes = sys.argv[1:] or ["fp32", "bf16", "fp16"]
    rows = []
    print(f"GPU: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    print("| case | type | tessel us | TFLOP/s | torch eager us | vs eager | max-autotune us | vs max-autotune |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for dtype in dtypes:
        for name, op, params, flops, make, fn in CASES:
            args = make(TYPES[dtype])
            row = {"case": name, "dtype": dtype, "tessel_us": tessel_us(op, params, dtype),
                   "eager_us": graph_us(fn, args)}
            if MAX_AUTOTUNE:
                t0 = time.time()
                compiled = torch.compile(fn, mode="max-autotune-no-cudagraphs")
                compiled(*args)
                torch.cuda.synchronize()
                row["max_autotune_compile_s"] = time.time() - t0
                row["max_autotune_us"] = graph_us(compiled, args)
            rows.append(row)
            us = row["tessel_us"]
            ma = row.get("max_autotune_us")
            ma_text = f"{ma:.1f} | {ma / us:.2f}x" if ma else "- | -"
            print(f"| {name} | {dtype} | {us:.1f} | {flops / us / 1e6:.1f} | {row['eager_us']:.1f} | "
                  f"{row['eager_us'] / us:.2f}x | {ma_text} |", flush=True)
    with open(os.path.join(OUT, "contractions.json"), "w") as f:
        json.dump({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
