#!/usr/bin/env python3
"""float32 matrix products on the GPU: variants of tessel's default tiling against cuBLAS, in one run.

Each variant is the default schedule of a suite case (`tessel schedule --target cuda`) with other
block and thread tiles, reduction step, unrolling and double buffering; each is timed by `tessel run
--schedule FILE --no-flush-l2` (median of CUDA-event samples), and cuBLAS (torch, TF32 off) as a
CUDA-graph replay (triton's do_bench_cudagraph) before and after them. Writes the schedule files to
OUT and prints a Markdown table.

usage: TESSEL=bundle/bin/tessel [OUT=DIR] [VARIANTS=V,V,...] python3 experiments/gpu/matmul_tiles.py [CASE ...]
  CASE   matmul cases of suites/operators.json (default: gemm_4096 gemm_1024)
  A variant is BMxBN_RIxRJ_kBK_uUNROLL[_db]: blocks of BM x BN outputs, RI x RJ a thread, the
  reduction staged BK at a time, loops of up to UNROLL steps unrolled, _db: two staged copies (the
  next fetched with cp.async during this step's products), _sN: N copies fetched N - 1 steps ahead.
  VARIANTS: the variants to time (default: the list below).
"""
import json
import os
import re
import subprocess
import sys
import tempfile

import torch
import triton.testing

TESSEL = os.environ.get("TESSEL", "bundle/bin/tessel")
OUT = os.environ.get("OUT") or tempfile.mkdtemp()
SUITE = "suites/operators.json"
VARIANTS = os.environ["VARIANTS"].split(",") if os.environ.get("VARIANTS") else [
    "64x64_8x4_k32_u1024_db", "64x64_8x4_k32_u1024_s3", "64x64_8x4_k32_u1024_s4", "64x64_8x4_k16_u1024_s3",
    "128x64_8x4_k16_u1024_s3", "128x128_8x8_k16_u1024_s3", "64x64_8x4_k16_u512_db", "64x64_8x4_k16_u1024_db",
    "64x64_8x4_k8_u512_db", "64x64_8x4_k16_u512", "64x128_8x4_k16_u512_db", "128x64_16x4_k16_u1024_db",
    "128x64_8x4_k16_u512_db", "128x64_16x4_k8_u512_db", "128x128_8x4_k16_u512_db", "128x128_8x8_k16_u1024_db"]
torch.backends.cuda.matmul.allow_tf32 = False


def variant(base, name):
    """The default's steps with this variant's tiles (the steps that make them, by kind and stage)."""
    m = re.fullmatch(r"(\d+)x(\d+)_(\d+)x(\d+)_k(\d+)_u(\d+)(_db|_s(\d))?", name)
    bm, bn, ri, rj, bk, unroll = (int(g) for g in m.groups()[:6])
    ty, tx = bm // ri, bn // rj
    steps, out_splits = [], 0
    compute = next(s["stage"] for s in base["steps"] if s["kind"] == "pragma")
    for s in base["steps"]:
        s = dict(s)
        if s["kind"] == "split" and s["stage"] == base["steps"][0]["stage"] and out_splits < 2:
            s["factors"] = [ty, ri] if out_splits == 0 else [tx, rj]
            out_splits += 1
        elif s["kind"] == "split" and s["stage"] == compute:
            s["factors"] = [bk]
        elif s["kind"] == "split" and s["stage"].endswith(".shared"):
            s["factors"] = [ty, tx, 4]
        elif s["kind"] == "pragma" and s["pragma"] in ("double_buffer", "pipeline_stages"):
            continue
        elif s["kind"] == "pragma":
            s["value"] = unroll
        steps.append(s)
    if m.group(8):
        steps.append({"kind": "pragma", "loop": "k.0", "pragma": "pipeline_stages", "stage": compute,
                      "value": int(m.group(8))})
    elif m.group(7):
        steps.append({"kind": "pragma", "loop": "k.0", "pragma": "double_buffer", "stage": compute, "value": 1})
    d = {k: v for k, v in base.items() if k != "decisions"}
    d["steps"] = steps
    return d


def tessel_us(case, schedule):
    cmd = [TESSEL, "run", "--suite", SUITE, "--case", case, "--target", "cuda", "--schedule", schedule,
           "--no-flush-l2", "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        return None
    return json.loads(out.stdout)["median_ms"] * 1e3


def cublas_us(n, k, m):
    a = torch.randn(n, k, device="cuda")
    b = torch.randn(k, m, device="cuda")
    return triton.testing.do_bench_cudagraph(lambda: a @ b) * 1000.0


def main():
    cases = sys.argv[1:] or ["gemm_4096", "gemm_1024"]
    suite = {c["name"]: c for c in json.load(open(SUITE))["cases"]}
    print(f"GPU: {torch.cuda.get_device_name()}, torch {torch.__version__}; schedules in {OUT}")
    print("| case | schedule | tessel us | TFLOP/s | vs cuBLAS |")
    print("|---|---|---:|---:|---:|")
    for case in cases:
        p = {k: int(v) for k, v in suite[case]["params"].items()}
        flops = 2 * p["M"] * p["N"] * p["K"]
        before = cublas_us(p["M"], p["K"], p["N"])
        default = json.loads(subprocess.run([TESSEL, "schedule", "--suite", SUITE, "--case", case, "--target", "cuda"],
                                            capture_output=True, text=True, check=True).stdout)
        rows = [("default", tessel_us(case, "default"))]
        for name in VARIANTS:
            path = os.path.join(OUT, f"{case}_{name}.json")
            with open(path, "w") as f:
                json.dump(variant(default, name), f, indent=1)
            rows.append((name, tessel_us(case, path)))
        blas = (before + cublas_us(p["M"], p["K"], p["N"])) / 2
        print(f"| {case} | cuBLAS | {blas:.1f} | {flops / blas / 1e6:.1f} | 1.00x |")
        for name, us in rows:
            text = f"{us:.1f} | {flops / us / 1e6:.1f} | {blas / us:.2f}x" if us else "failed | - | -"
            print(f"| {case} | {name} | {text} |", flush=True)


if __name__ == "__main__":
    main()
