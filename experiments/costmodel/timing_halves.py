#!/usr/bin/env python3
"""How well a tuning log's timings can order its own records: each record's timing samples are split
into two halves (even and odd samples), each half gives a median, and per workload the share of record
pairs the two halves order the same way is printed, with the spread of its latencies (90th / 10th
percentile). It bounds from above what a cost model scored against the log can reach (it misses
drift between records measured at different times, so the true bound is lower). Needs the full
export (`tessel db export`), not a log cut to medians.

usage: timing_halves.py EXPORT.jsonl [EXPORT.jsonl ...]
"""
import collections
import sys

import numpy as np

from common import latency_spread, read_log


def main():
    halves = collections.defaultdict(list)
    for r in read_log(sys.argv[1:]):
        s = np.array(r.get("samples_s") or [])
        if r.get("error") == "ok" and len(s) >= 4:
            halves[r["workload"]["key"]].append((np.median(s[0::2]), np.median(s[1::2]), np.median(s)))
    rows = []
    for key, v in halves.items():
        a, b, m = (np.array(x) for x in zip(*v))
        i, j = np.triu_indices(len(v), 1)
        agree = np.mean(np.sign(a[i] - a[j]) == np.sign(b[i] - b[j]))
        rows.append((agree, latency_spread(m), len(v), key))
    for agree, spread, n, key in sorted(rows):
        print(f"{key}  {n:4d} records  halves agree {agree:.3f}  p90/p10 {spread:.2f}")
    print(f"mean over {len(rows)} workloads: halves agree {np.mean([r[0] for r in rows]):.3f}")


if __name__ == "__main__":
    main()
