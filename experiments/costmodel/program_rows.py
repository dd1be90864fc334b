#!/usr/bin/env python3
"""Leave-one-workload-out ranking with one feature vector per program instead of the cost model's
sum over store rows: does describing a program by its heaviest row (the store with the most float
operations), or that row with the other rows' mean or max and min, transfer better? Reads the CSV
that `transfer_eval --dump FILE` writes; trains XGBoost (Python package, rank:pairwise on each
workload's latency ranks, depth 6, eta 0.1, 200 rounds) on the other workloads; prints each held-out
workload's pairwise accuracy and top-5% recall and their means, as transfer_eval does.

usage: /usr/bin/python3 program_rows.py DUMP.csv heavy|heavy+mean|heavy+max [pairwise|ndcg]
"""
import sys

import numpy as np
import xgboost as xgb

from common import Dump, ranking_scores, train_ranker

if len(sys.argv) < 3:
    sys.exit(__doc__.strip().splitlines()[-1])
path, mode = sys.argv[1], sys.argv[2]
objective = sys.argv[3] if len(sys.argv) > 3 else "pairwise"
dump = Dump(path)
programs = [p for p in sorted(dump.rows) if dump.latency[p] > 0]
keys = sorted({dump.workload[p] for p in programs})
FLOAT = dump.float_columns()


def program_vector(m):
    heavy = m[int(np.argmax(np.exp2(m[:, FLOAT]).sum(1)))]
    if mode == "heavy":
        return heavy
    if mode == "heavy+mean":
        return np.concatenate([heavy, m.mean(0), [len(m)]])
    if mode == "heavy+max":
        return np.concatenate([heavy, m.max(0), m.min(0), [len(m)]])
    sys.exit(f"error: mode '{mode}' is not heavy, heavy+mean or heavy+max")


X = np.array([program_vector(dump.rows[p]) for p in programs])
y = np.array([dump.latency[p] for p in programs])
group = np.array([keys.index(dump.workload[p]) for p in programs])
results = []
for i, key in enumerate(keys):
    booster = train_ranker(X[group != i], y[group != i], group[group != i], objective)
    results.append(ranking_scores(booster.predict(xgb.DMatrix(X[group == i])), y[group == i]))
    print(f"{key}  {results[-1][0]:.3f}  {results[-1][1]:.3f}", flush=True)
mean = np.mean(results, 0)
print(f"{mode} {objective}: mean {mean[0]:.3f} {mean[1]:.3f} over {len(keys)} held-out workloads")
