#!/usr/bin/env python3
"""The outputs of one run of run_gpu.sh or gpu_replay.sh -> a markdown table: tessel's default and
tuned schedules (re-timed without L2 flush, like torch's CUDA-graph replay) against torch eager /
compile / max-autotune measured in the same run. Times in microseconds; the last column above 1:
tessel faster. usage: gpu_table.py OUTDIR"""
import gzip
import json
import os
import sys

out = sys.argv[1]


def lines(name):
    for path, opener in ((os.path.join(out, name), open), (os.path.join(out, name + ".gz"), gzip.open)):
        if os.path.exists(path):
            with opener(path, "rt") as f:
                return [json.loads(l) for l in f if l.strip()]
    return []


best = {r["workload"]: r for r in lines("best_noflush.jsonl")}
default = {r["workload"]: r for r in lines("default_noflush.jsonl")}
base = {r["case"]: r for r in lines("baselines.jsonl") if "case" in r}
trials = {}
for r in lines("records.jsonl"):
    if r.get("purpose", "trial") == "trial":  # a retime measures a trial's schedule again
        trials[r["workload"]["key"]] = trials.get(r["workload"]["key"], 0) + 1


def graph_us(rec, mode):
    v = rec.get(mode) if rec else None
    return v["graph_ms"] * 1e3 if isinstance(v, dict) and v.get("graph_ms") else None


def f(x):
    return f"{x:.2f}" if x else "-"


print("| case | trials in log | tessel default us | tessel tuned us | torch eager us | torch compile us | max-autotune us | max-autotune / tuned |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for case, b in best.items():
    d = default.get(case)
    t = b["median_ms"] * 1e3
    ma = graph_us(base.get(case), "max-autotune-no-cudagraphs")
    eager = base[case]["eager_graph_ms"] * 1e3 if case in base and base[case].get("eager_graph_ms") else None
    print(f"| {case} | {trials.get(b['workload_key'], '-')} | {f(d['median_ms'] * 1e3 if d else None)} | {f(t)} | "
          f"{f(eager)} | {f(graph_us(base.get(case), 'default'))} | {f(ma)} | {f(ma / t if ma else None)} |")
