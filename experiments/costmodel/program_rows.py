#!/usr/bin/env python3
"""Leave-one-workload-out ranking with one feature vector per program instead of the cost model's
sum over store rows: does describing a program by its heaviest row (the store with the most float
operations), or that row with the other rows' mean or max and min, transfer better? Reads the CSV
that `transfer_eval --dump FILE` writes; trains XGBoost (Python package, rank:pairwise on each
workload's latency ranks, depth 6, eta 0.1, 200 rounds) on the other workloads; prints each held-out
workload's pairwise accuracy and top-5% recall and their means, as transfer_eval does.

usage: /usr/bin/python3 program_rows.py DUMP.csv heavy|heavy+mean|heavy+max [pairwise|ndcg]
"""
import csv
import sys
from collections import defaultdict

import numpy as np
import xgboost as xgb

from ranking import ranking_scores

if len(sys.argv) < 3:
    sys.exit(__doc__.strip().splitlines()[-1])
path, mode = sys.argv[1], sys.argv[2]
objective = sys.argv[3] if len(sys.argv) > 3 else "pairwise"
reader = csv.reader(open(path))
names = next(reader)[3:]
col = {n: i for i, n in enumerate(names)}
rows, key_of, latency_of = defaultdict(list), {}, {}
for r in reader:
    p = int(r[0])
    key_of[p], latency_of[p] = r[1], float(r[2])
    rows[p].append([float(x) for x in r[3:]])
programs = [p for p in sorted(rows) if latency_of[p] > 0]
keys = sorted({key_of[p] for p in programs})
FLOAT = [col[n] for n in ["float_addsub", "float_mul", "float_div", "float_minmax_abs", "float_cmp",
                          "float_select", "float_exp_log", "float_sqrt", "float_act"]]


def program_vector(program_rows):
    m = np.array(program_rows)
    heavy = m[int(np.argmax(np.exp2(m[:, FLOAT]).sum(1)))]
    if mode == "heavy":
        return heavy
    if mode == "heavy+mean":
        return np.concatenate([heavy, m.mean(0), [len(m)]])
    if mode == "heavy+max":
        return np.concatenate([heavy, m.max(0), m.min(0), [len(m)]])
    sys.exit(f"error: mode '{mode}' is not heavy, heavy+mean or heavy+max")


X = np.array([program_vector(rows[p]) for p in programs])
y = np.array([latency_of[p] for p in programs])
group = np.array([keys.index(key_of[p]) for p in programs])
results = []
for i, key in enumerate(keys):
    train = group != i
    order = np.argsort(group[train], kind="stable")
    Xt, yt, gt = X[train][order], y[train][order], group[train][order]
    label = np.zeros(len(yt))
    for g in np.unique(gt):
        m = gt == g
        q = np.argsort(np.argsort(yt[m])) / max(1, m.sum() - 1)  # 0 = fastest
        label[m] = 1 - q if objective == "pairwise" else np.select([q < 0.05, q < 0.2, q < 0.5], [3, 2, 1], 0)
    d = xgb.DMatrix(Xt, label=label)
    d.set_group([int((gt == g).sum()) for g in np.unique(gt)])
    booster = xgb.train({"objective": f"rank:{objective}", "max_depth": 6, "eta": 0.1, "nthread": 2}, d, 200)
    results.append(ranking_scores(booster.predict(xgb.DMatrix(X[group == i])), y[group == i]))
    print(f"{key}  {results[-1][0]:.3f}  {results[-1][1]:.3f}", flush=True)
mean = np.mean(results, 0)
print(f"{mode} {objective}: mean {mean[0]:.3f} {mean[1]:.3f} over {len(keys)} held-out workloads")
