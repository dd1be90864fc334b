#!/usr/bin/env python3
"""Merges one device call's outputs (tessel_cuda.jsonl, baselines.jsonl) with the suite into a
markdown table: tessel's default GPU schedule vs torch eager / compile / max-autotune, measured in
the same call. Usage: make_table.py OUTDIR [suite.json] > table.md"""
import json, sys, os

out = sys.argv[1]
suite = json.load(open(sys.argv[2] if len(sys.argv) > 2 else "experiments/suite.json"))
cases = {c["name"]: c for c in suite["cases"]}

tessel = {}
for line in open(os.path.join(out, "tessel_cuda.jsonl")):
    line = line.strip()
    if not line:
        continue
    r = json.loads(line)
    name = r["workload"]
    for n in cases:  # suite runs are named by their case
        if n == name or name.startswith(n):
            name = n
    tessel[name] = r

base = {}
path = os.path.join(out, "baselines.jsonl")
if os.path.exists(path):
    for line in open(path):
        r = json.loads(line)
        if "case" in r:
            base[r["case"]] = r

def graph_ms(rec, mode):
    v = rec.get(mode)
    return v.get("graph_ms") if isinstance(v, dict) else None

print("| case | tessel us | correct | eager us | compile us | max-autotune us | tessel / max-autotune (throughput) |")
print("|---|---:|:---:|---:|---:|---:|---:|")
for name in cases:
    t = tessel.get(name, {})
    b = base.get(name, {})
    tus = t.get("median_ms", 0) * 1e3 if "median_ms" in t else None
    ma = graph_ms(b, "max-autotune-no-cudagraphs")
    cols = [name,
            f"{tus:.2f}" if tus else ("failed" if t.get("failed") else "-"),
            {True: "yes", False: "NO", None: "-"}[t.get("correct")],
            f"{b['eager_graph_ms'] * 1e3:.2f}" if b.get("eager_graph_ms") else "-",
            f"{graph_ms(b, 'default') * 1e3:.2f}" if graph_ms(b, "default") else "-",
            f"{ma * 1e3:.2f}" if ma else "-",
            f"{(ma * 1e3) / tus:.2f}" if (ma and tus) else "-"]
    print("| " + " | ".join(cols) + " |")
