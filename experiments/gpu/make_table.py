#!/usr/bin/env python3
"""Merges the outputs of one run of experiments/gpu/run_schedules.sh (tessel_cuda.jsonl,
baselines.jsonl) into a markdown table: tessel's GPU schedules vs torch eager / compile /
max-autotune, all measured in that run. Times in microseconds; a ratio above 1: tessel faster.
Usage: make_table.py OUTDIR [SUITE.json] > table.md"""
import json, sys, os

out = sys.argv[1]
suite = json.load(open(sys.argv[2] if len(sys.argv) > 2 else "suites/operators.json"))
names = [c["name"] for c in suite["cases"]]
runs = {}
for line in open(os.path.join(out, "tessel_cuda.jsonl")):
    if line.strip():
        r = json.loads(line)
        runs.setdefault(r["case"], {})[r["schedule"]] = r
base = {}
path = os.path.join(out, "baselines.jsonl")
if os.path.exists(path):
    for line in open(path):
        r = json.loads(line)
        if "case" in r:
            base[r["case"]] = r

def graph_us(rec, mode):
    v = rec.get(mode)
    return v["graph_ms"] * 1e3 if isinstance(v, dict) and v.get("graph_ms") else None

def us(r):
    return r["median_ms"] * 1e3 if r and "median_ms" in r else None

def fmt(x):
    return f"{x:.2f}" if x else "-"

print("| case | tessel default us | tessel hand us | tessel tuned us | correct | default, L2 flushed us | torch eager us "
      "| torch compile us | max-autotune us | hand / max-autotune | hand / eager | tuned / max-autotune |")
print("|---|---:|---:|---:|:---:|---:|---:|---:|---:|---:|---:|---:|")
for name in names:
    if name not in runs:
        continue
    r = runs[name]
    d, h, t, f = (us(r.get(k)) for k in ("default", "hand", "tuned", "default-flush"))
    correct = [x.get("correct") for x in (r.get("default"), r.get("hand")) if x and "correct" in x]
    ok = "-" if all(c is None for c in correct) else ("yes" if all(c in (True, None) for c in correct) else "NO")
    b = base.get(name, {})
    eager = b["eager_graph_ms"] * 1e3 if b.get("eager_graph_ms") else None
    ma = graph_us(b, "max-autotune-no-cudagraphs")
    ratio = lambda ref, x: f"{ref / x:.2f}" if (ref and x) else "-"
    print(f"| {name} | {fmt(d)} | {fmt(h)} | {fmt(t)} | {ok} | {fmt(f)} | {fmt(eager)} | {fmt(graph_us(b, 'default'))} "
          f"| {fmt(ma)} | {ratio(ma, h)} | {ratio(eager, h)} | {ratio(ma, t)} |")

variants = [(name, label, us(rec)) for name in names for label, rec in runs.get(name, {}).items()
            if label.startswith("hand:")]
if variants:
    print()
    print("| case | hand-written alternative | us | chosen hand schedule us |")
    print("|---|---|---:|---:|")
    for name, label, t in variants:
        print(f"| {name} | {label[5:]} | {fmt(t)} | {fmt(us(runs[name].get('hand')))} |")
