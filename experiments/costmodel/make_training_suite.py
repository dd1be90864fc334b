#!/usr/bin/env python3
"""Random workloads for the cost model's training and held-out evaluation.

The held-out ranking improves with the number of training workloads (0.673 pairwise with a quarter
of a 97-workload H100 log's workloads, 0.767 with all of them), so this draws more of them: every
op of the library, shapes from a mix of powers of two and odd sizes, each workload's work kept
within bounds that tune quickly on the GPU (and whose reference outputs the tuner's output check
computes in seconds). Workloads already in the suites given with --exclude are skipped. The draw
depends only on --seed and the excluded suites, so the files are reproducible.

usage: make_training_suite.py --seed S --count N --parts P --out PREFIX [--exclude SUITE.json ...]
writes PREFIX_1.json .. PREFIX_P.json, N workloads dealt round-robin over the parts (each part
mixes the families, so a collection run cut short by its time budget still samples all of them).
To draw workloads beside the committed ones:
  /usr/bin/python3 experiments/costmodel/make_training_suite.py --seed 20 --count 100 --parts 4 \
      --out /tmp/more --exclude experiments/costmodel/training_workloads.json suites/operators.json
"""
import argparse
import json
import random

SIZES = [7, 16, 32, 48, 61, 64, 96, 100, 127, 128, 192, 197, 200, 256, 300, 333, 384, 500, 512, 555,
         640, 768, 771, 1000, 1024, 1280, 1536, 2048, 3072, 4096]
ACTS = ["none", "relu", "gelu", "gelu_tanh", "silu", "sigmoid"]
EXPRS = {1: ["exp(x)", "x*sigmoid(x)", "tanh(x)", "relu(x)*0.5+1", "0.5*x*(1+erf(x*0.7071067811))",
             "log(abs(x)+1)", "sqrt(abs(x))*2", "rsqrt(x*x+1)", "max(x, 0.1*x)", "sigmoid(x)*tanh(x)",
             "pow(abs(x), 1.5)", "min(max(x, -1), 1)"],
         2: ["x*y", "x+y*2", "tanh(x)*y", "x*sigmoid(y)", "max(x, y)", "exp(x-y)", "x*sigmoid(x)*y",
             "(x-y)*(x-y)"],
         3: ["x*y+z", "x*sigmoid(y)+z", "max(x, y)*z", "(x+y)*rsqrt(z*z+1)"]}
GFLOP = 1e9


def contraction(rng, op):
    while True:
        m, n, k = (rng.choice(SIZES) for _ in range(3))
        b = rng.choice([2, 3, 4, 8, 12, 16, 32, 48, 64, 96]) if op == "batch_matmul" else 1
        if op == "batch_matmul":
            m, n, k = (min(x, 1024) for x in (m, n, k))
        flops = 2.0 * b * m * n * k
        if 2e6 <= flops <= 4 * GFLOP:
            break
    params = {"M": m, "N": n, "K": k}
    if op == "batch_matmul":
        return f"bmm_{b}x{m}x{n}x{k}", dict(B=b, **params)
    if op == "dense":
        act = rng.choice(ACTS)
        return f"dense_{m}x{n}x{k}" + ("" if act == "none" else f"_{act}"), dict(params, bias=1, act=act)
    return f"mm_{m}x{n}x{k}", params


def conv(rng):
    while True:
        n = rng.choice([1, 1, 2, 4, 8, 16])
        c = rng.choice([3, 16, 24, 32, 48, 61, 64, 96, 128, 192, 256, 384, 512])
        hw = rng.choice([7, 13, 14, 17, 27, 28, 35, 56, 61, 112])
        kk = rng.choice([1, 1, 3, 3, 3, 5, 7])
        stride = rng.choice([1, 1, 1, 2])
        depthwise = c > 3 and rng.random() < 0.3
        f = c if depthwise else rng.choice([16, 32, 64, 96, 128, 160, 256, 384, 512])
        pad = kk // 2
        out = (hw + 2 * pad - kk) // stride + 1
        flops = 2.0 * n * f * out * out * (1 if depthwise else c) * kk * kk
        if out >= 1 and 2e6 <= flops <= 4 * GFLOP:
            break
    p = {"N": n, "C": c, "H": hw, "W": hw, "F": f, "KH": kk, "KW": kk, "stride": stride, "pad": pad}
    name = f"{'depthwise' if depthwise else 'conv'}_b{n}_{c}x{hw}x{hw}_k{kk}" + (f"s{stride}" if stride > 1 else "")
    if depthwise:
        p["groups"] = c
    if rng.random() < 0.5:
        act = rng.choice(ACTS[1:])
        p.update(bias=1, act=act)
        name += f"_{act}"
    return name, p


def rows_op(rng, op):
    while True:
        rows, cols = rng.choice(SIZES + [8192, 16384]), rng.choice(SIZES + [8192, 11008, 30000])
        if 1e5 <= rows * cols <= 1.2e8:
            break
    short = {"reduce_sum": "rowsum", "bias_residual_layernorm": "brln"}.get(op, op)
    return f"{short}_{rows}x{cols}", {"rows": rows, "cols": cols}


def elementwise(rng):
    inputs = rng.choice([1, 1, 2, 2, 3])
    expr = rng.choice(EXPRS[inputs])
    while True:
        dims = [rng.choice(SIZES + [8192]) for _ in range(rng.choice([1, 2, 2, 3]))]
        total = 1
        for d in dims:
            total *= d
        if 1e5 <= total <= 1e8:
            break
    shape = "x".join(map(str, dims))
    return f"ew{inputs}_{EXPRS[inputs].index(expr)}_{shape}", {"shape": shape, "inputs": inputs, "expr": expr}


# Families and their weights: contractions and convolutions have the largest schedule spaces.
FAMILIES = [("matmul", 4), ("dense", 4), ("batch_matmul", 3), ("conv2d", 6), ("softmax", 2), ("layernorm", 1),
            ("rmsnorm", 1), ("reduce_sum", 1), ("bias_residual_layernorm", 1), ("elementwise", 2)]


def draw(rng, op):
    if op in ("matmul", "dense", "batch_matmul"):
        return contraction(rng, op)
    if op == "conv2d":
        return conv(rng)
    if op == "elementwise":
        return elementwise(rng)
    return rows_op(rng, op)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--parts", type=int, default=1)
    ap.add_argument("--out", required=True, help="prefix of the files written")
    ap.add_argument("--exclude", nargs="*", default=[], help="suite files whose workloads are not drawn again")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    seen = set()
    for path in a.exclude:
        for c in json.load(open(path))["cases"]:
            seen.add((c["op"], json.dumps(c["params"], sort_keys=True)))
    ops = [op for op, w in FAMILIES for _ in range(w)]
    cases = []
    names = set()
    while len(cases) < a.count:
        op = rng.choice(ops)
        name, params = draw(rng, op)
        key = (op, json.dumps(params, sort_keys=True))
        if key in seen or name in names:
            continue
        seen.add(key)
        names.add(name)
        cases.append({"name": name, "op": op, "params": params, "dtype": "float32"})
    for part in range(a.parts):
        about = (f"Random workloads for the cost model's training and held-out evaluation, part "
                 f"{part + 1} of {a.parts}: experiments/costmodel/make_training_suite.py --seed {a.seed} --count "
                 f"{a.count} --parts {a.parts}. No torch baselines.")
        with open(f"{a.out}_{part + 1}.json", "w") as f:
            f.write('{\n  "about": ' + json.dumps(about) + ',\n  "cases": [\n')
            mine = cases[part::a.parts]
            f.write(",\n".join("    " + json.dumps(c) for c in mine))
            f.write("\n  ]\n}\n")
        print(f"{a.out}_{part + 1}.json: {len(cases[part::a.parts])} workloads")


if __name__ == "__main__":
    main()
