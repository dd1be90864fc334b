#!/usr/bin/env python3
"""PyTorch baselines for the benchmark suite on this GPU: each case run eagerly, through torch.compile
(default mode) and through torch.compile(mode="max-autotune-no-cudagraphs"), fp32 with TF32 off.
Every variant is timed twice by Triton's helpers, both medians: as a CUDA-graph replay
(do_bench_cudagraph, the figure the tables compare with tessel's timings without L2 flush) and with
an L2 flush before each run (do_bench). A case is built from its suite entry (op and params), with
the definitions of tessel's op library (`tessel ops`), so the suite file is the only list of cases.

Appends JSON lines to $OUT/baselines.jsonl (default: the current directory): first {"info": GPU and
versions}, then one line per case: eager_ms / eager_graph_ms, and for each compiled mode
{"ms", "graph_ms", "compile_s", "rel_err"} or the reason it was skipped. experiments/gpu/make_table.py
and experiments/tune/gpu_table.py read it.

usage: torch_baselines.py [--suite FILE] [--group mem|compute|all] [CASE ...]
  CASE ...   only these suite cases (default: every case of the group)
  BUDGET_S   seconds after which the compiled modes are skipped (eager is always timed); 0: eager only
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.nn.functional as F
import triton
import triton.testing

DEVICE = "cuda"


def randn(*shape):
    return torch.randn(*shape, device=DEVICE)


def activation(name):
    acts = {
        "none": lambda v: v,
        "relu": torch.relu,
        "gelu": F.gelu,  # exact: 0.5 x (1 + erf(x / sqrt 2))
        "gelu_tanh": lambda v: F.gelu(v, approximate="tanh"),
        "silu": F.silu,
        "sigmoid": torch.sigmoid,
    }
    if name not in acts:
        sys.exit(f"error: activation '{name}' has no torch equivalent here")
    return acts[name]


def _binary(tensor_fn, scalar_fn):
    """min / max of the elementwise expressions: either side may be a number."""
    def fn(a, b):
        if isinstance(b, torch.Tensor) and isinstance(a, torch.Tensor):
            return tensor_fn(a, b)
        if isinstance(a, torch.Tensor):
            return scalar_fn(a, b)
        return scalar_fn(b, a)
    return fn


# The functions tessel's elementwise expressions may call (schedule/ops/elementwise_parser.cpp).
EXPR_FUNCTIONS = {
    "relu": torch.relu, "sigmoid": torch.sigmoid, "tanh": torch.tanh, "exp": torch.exp, "log": torch.log,
    "sqrt": torch.sqrt, "rsqrt": torch.rsqrt, "erf": torch.erf, "abs": torch.abs, "pow": torch.pow,
    "min": _binary(torch.minimum, torch.clamp_max), "max": _binary(torch.maximum, torch.clamp_min),
}


# Eager PyTorch launches one kernel per operator, so an eager baseline is fair only in the spelling a
# PyTorch user writes: these suite expressions as such a user writes them (the compiled modes fuse
# either spelling into the same kernel).
IDIOMATIC = {
    "x*sigmoid(x)*y": lambda x, y: F.silu(x) * y,
    "0.5*x*(1+tanh(0.7978845608*(x+0.044715*x*x*x)))": lambda x: 0.5 * x * (1.0 + torch.tanh(0.7978845608 * (x + 0.044715 * x**3))),
}


def build(case):
    """(function, make_inputs) of a suite case, the function taking the inputs as positional tensors."""
    op, p = case["op"], case["params"]
    if op == "elementwise":
        shape = [int(d) for d in str(p["shape"]).split("x")]
        names = ["x", "y", "z"][: int(p.get("inputs", 1))]
        # A real Python function of the inputs, so that torch.compile traces the expression itself.
        fn = IDIOMATIC.get(p["expr"].replace(" ", "")) or eval(f"lambda {', '.join(names)}: {p['expr']}",
                                                               {"__builtins__": {}, **EXPR_FUNCTIONS})
        return fn, lambda: tuple(randn(*shape) for _ in names)
    if op in ("softmax", "layernorm", "rmsnorm", "reduce_sum", "bias_residual_layernorm"):
        rows, cols, eps = int(p["rows"]), int(p["cols"]), float(p.get("eps", 1e-5))
        if op == "softmax":
            return (lambda x: torch.softmax(x, -1)), lambda: (randn(rows, cols),)
        if op == "layernorm":
            return (lambda x, g, b: F.layer_norm(x, (cols,), g, b, eps)), lambda: (randn(rows, cols), randn(cols), randn(cols))
        if op == "rmsnorm":
            return ((lambda x, g: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * g),
                    lambda: (randn(rows, cols), randn(cols)))
        if op == "reduce_sum":
            return (lambda x: x.sum(-1)), lambda: (randn(rows, cols),)
        return ((lambda x, b, r, g, beta: F.layer_norm(x + b + r, (cols,), g, beta, eps)),
                lambda: (randn(rows, cols), randn(cols), randn(rows, cols), randn(cols), randn(cols)))
    if op == "matmul":
        m, n, k = int(p["M"]), int(p["N"]), int(p["K"])
        return (lambda a, b: a @ b), lambda: (randn(m, k), randn(k, n))
    if op == "batch_matmul":
        bs, m, n, k = int(p["B"]), int(p["M"]), int(p["N"]), int(p["K"])
        return (lambda a, b: torch.bmm(a, b)), lambda: (randn(bs, m, k), randn(bs, k, n))
    if op == "dense":
        m, n, k = int(p["M"]), int(p["N"]), int(p["K"])
        act = activation(p.get("act", "none"))
        if int(p.get("bias", 0)):
            return (lambda x, w, b: act(x @ w + b)), lambda: (randn(m, k), randn(k, n), randn(n))
        return (lambda x, w: act(x @ w)), lambda: (randn(m, k), randn(k, n))
    if op == "conv2d":
        n, c, h, w = (int(p[key]) for key in ("N", "C", "H", "W"))
        f, kh, kw = int(p["F"]), int(p["KH"]), int(p["KW"])
        stride, pad = int(p.get("stride", 1)), int(p.get("pad", 0))
        dilation, groups = int(p.get("dilation", 1)), int(p.get("groups", 1))
        act = activation(p.get("act", "none"))
        conv = lambda x, wt, b=None: act(F.conv2d(x, wt, b, stride=stride, padding=pad, dilation=dilation, groups=groups))
        shapes = [(n, c, h, w), (f, c // groups, kh, kw)] + ([(f,)] if int(p.get("bias", 0)) else [])
        return conv, lambda: tuple(randn(*s) for s in shapes)
    sys.exit(f"error: suite case '{case['name']}': op '{op}' has no torch equivalent here")


def time_both(fn, args):
    """(median ms with an L2 flush before each run, median ms of a CUDA-graph replay or None)."""
    run = lambda: fn(*args)
    flushed = triton.testing.do_bench(run, warmup=25, rep=100, return_mode="median")
    try:
        graph = triton.testing.do_bench_cudagraph(run, rep=100, return_mode="median")
    except Exception:  # a function that cannot be captured in a graph: the flushed figure only
        graph = None
    return flushed, graph


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--suite", default="suites/operators.json")
    ap.add_argument("--group", choices=["mem", "compute", "all"], default="all",
                    help="memory-bound cases (no flops), compute cases, or both")
    ap.add_argument("cases", nargs="*", help="suite case names (default: every case of the group)")
    args = ap.parse_args()
    budget_s = float(os.environ.get("BUDGET_S", "520"))
    out_dir = os.environ.get("OUT", ".")

    suite = json.load(open(args.suite))["cases"]
    known = {c["name"] for c in suite}
    unknown = [name for name in args.cases if name not in known]
    if unknown:
        sys.exit(f"error: {args.suite} has no case {', '.join(unknown)}")
    chosen = []
    for case in suite:
        group = "compute" if case.get("flops", 0) > 0 else "mem"
        if args.cases and case["name"] not in args.cases:
            continue
        if not args.cases and args.group not in ("all", group):
            continue
        chosen.append((case, group))

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    start = time.time()
    info = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__}
    print(json.dumps(info), flush=True)
    with open(os.path.join(out_dir, "baselines.jsonl"), "a") as out:
        out.write(json.dumps({"info": info}) + "\n")
        for case, group in chosen:
            fn, make_inputs = build(case)
            inputs = make_inputs()
            rec = {"case": case["name"], "group": group, "bytes": case.get("min_bytes", 0), "flops": case.get("flops", 0)}
            expected = fn(*inputs)
            rec["eager_ms"], rec["eager_graph_ms"] = time_both(fn, inputs)
            for mode in ("default", "max-autotune-no-cudagraphs"):
                if time.time() - start > budget_s:
                    rec[mode] = "skipped: budget"
                    continue
                torch._dynamo.reset()
                try:
                    compiled = torch.compile(fn, mode=None if mode == "default" else mode, fullgraph=True)
                    t0 = time.time()
                    got = compiled(*inputs)
                    torch.cuda.synchronize()
                    compile_s = time.time() - t0
                    rel_err = ((got - expected).abs().max() / (expected.abs().max() + 1e-12)).item()
                    ms, graph_ms = time_both(compiled, inputs)
                    rec[mode] = {"ms": ms, "graph_ms": graph_ms, "compile_s": compile_s, "rel_err": rel_err}
                except Exception as e:  # a mode that fails is recorded, the others still run
                    rec[mode] = "error: " + repr(e)[:300]
            graphs = [rec["eager_graph_ms"]] + [v["graph_ms"] for v in rec.values() if isinstance(v, dict)]
            graphs = [g for g in graphs if g]
            if graphs:
                rec["best_graph_ms"] = min(graphs)
            print(json.dumps(rec), flush=True)
            out.write(json.dumps(rec) + "\n")
            out.flush()
            del inputs, expected
            torch.cuda.empty_cache()
    print(f"elapsed {time.time() - start:.1f} s")


if __name__ == "__main__":
    main()
