#!/usr/bin/env python3
"""Where the held-out ranking falls short: the per-workload lines of a `transfer_eval` run (held-out
key, programs, pairwise, top-5% recall) grouped by how far apart each workload's programs are (the
90th over the 10th percentile of the latencies of its successful records, from the log) and by the
kind of op its tensor expression is (read from the text: a padded input is a convolution or pooling;
exp, max and sum a softmax; rsqrt and a sum a norm; a sum of products of two inputs a contraction;
another sum, max or min a reduction; anything else elementwise). Prints mean pairwise / recall per group.

usage: by_spread.py TRANSFER_EVAL_OUTPUT.txt LOG.jsonl[.gz] ...
  LOG: the records the run held out (`tessel db export`, or the committed experiments/costmodel/data files)
"""
import collections
import re
import sys

import numpy as np

from common import latency_spread, read_log

SPREADS = [(1, 1.1), (1.1, 1.5), (1.5, 3), (3, float("inf"))]


def op_kind(text):
    inputs = sum("placeholder" in line for line in text.splitlines())
    if "pad[" in text:
        return "convolution or pooling"
    if "sum(" in text and "max(" in text and "exp(" in text:
        return "softmax"
    if "sum(" in text and "rsqrt" in text:
        return "norm"
    if "sum(" in text and inputs >= 2 and re.search(r"\* *\w+\[", text):
        return "contraction"
    if "sum(" in text or re.search(r"= (max|min)\(", text):
        return "other reduction"
    return "elementwise"


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: " + __doc__.split("usage: ")[1].rstrip())
    held_out = {}
    with open(sys.argv[1]) as f:
        for line in f:
            p = line.split()
            if len(p) == 4 and re.fullmatch(r"[0-9a-f]{16}", p[0]):
                held_out[p[0]] = (float(p[2]), float(p[3]))
    if not held_out:
        sys.exit(f"error: {sys.argv[1]}: no per-workload lines (key, programs, pairwise, recall) of a transfer_eval run")
    latencies, text = collections.defaultdict(list), {}
    for r in read_log(sys.argv[2:]):
        key = r["workload"]["key"]
        text.setdefault(key, r["workload"]["text"])
        if r.get("error") == "ok":
            latencies[key].append(r["median_s"])
    missing = [k for k in held_out if not latencies[k]]
    if missing:
        sys.exit(f"error: {len(missing)} held-out workloads (first {missing[0]}) have no successful record in the logs given")
    print(f"{len(held_out)} held-out workloads")
    spread = {k: latency_spread(latencies[k]) for k in held_out}
    print("| spread | workloads | pairwise / top-5% recall |\n|---|---:|---:|")
    for lo, hi in SPREADS:
        m = np.array([held_out[k] for k in held_out if lo <= spread[k] < hi])
        if len(m):
            label = f"{lo}x and more" if hi == float("inf") else f"{lo}x to {hi}x"
            print(f"| {label} | {len(m)} | {m[:, 0].mean():.3f} / {m[:, 1].mean():.3f} |")
    kinds = collections.defaultdict(list)
    for k, v in held_out.items():
        kinds[op_kind(text[k])].append(v)
    print("| op | workloads | pairwise / top-5% recall |\n|---|---:|---:|")
    for kind, v in sorted(kinds.items(), key=lambda kv: -len(kv[1])):
        m = np.array(v)
        print(f"| {kind} | {len(m)} | {m[:, 0].mean():.3f} / {m[:, 1].mean():.3f} |")


if __name__ == "__main__":
    main()
