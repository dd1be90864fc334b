#!/usr/bin/env python3
"""How much of a workload's own records the cost model needs: program summaries (as tessel's `programs`
input: the heaviest row, each column's max and min, the row count) from a `transfer_eval --dump` CSV,
grouped 10-fold over workloads (every workload is in one test fold, trained on the other folds'
workloads), XGBoost `rank:pairwise` with rank labels within a workload, 200 trees of depth 6.

Each test workload's records alternate into two halves by record order. The score is always on the
second half (pairwise accuracy and top-5% recall, as `tessel model eval` computes them, averaged over
workloads); `--own N` adds the first N records of the first half to the training set: 0 is the held-out
figure, N the figure after N trials of the workload itself (what the tuner's model has seen by then).

usage: transfer_kfold.py DUMP.csv [--own N ...] [--folds K]
  DUMP.csv: `build/experiments/transfer_eval --db LOG --target cuda --dump DUMP.csv`
Needs python3-xgboost and python3-numpy (Debian). The first run caches the parsed CSV as DUMP.csv.kfold.npz.
"""
import argparse
import csv
import os
import time

import numpy as np
import xgboost as xgb

from ranking import ranking_scores

FLOAT_COLUMNS = ["float_addsub", "float_mul", "float_div", "float_minmax_abs", "float_cmp", "float_select",
                 "float_exp_log", "float_sqrt", "float_act"]


def load(path):
    cache = path + ".kfold.npz"
    if os.path.exists(cache) and os.path.getmtime(cache) >= os.path.getmtime(path):
        z = np.load(cache, allow_pickle=True)
        return z["rows"], z["program"], z["latency"], list(z["workload"]), list(z["names"])
    rows, program, latency, workload = [], [], {}, {}
    with open(path) as f:
        reader = csv.reader(f)
        names = next(reader)[3:]
        for r in reader:
            p = int(r[0])
            program.append(p)
            workload[p] = r[1]
            latency[p] = float(r[2])
            rows.append([float(x) for x in r[3:]])
    ids = sorted(latency)
    rows = np.array(rows, dtype=np.float32)
    program = np.array(program)
    lat = np.array([latency[p] for p in ids])
    wl = [workload[p] for p in ids]
    np.savez(cache, rows=rows, program=program, latency=lat, workload=np.array(wl), names=np.array(names))
    return rows, program, lat, wl, names


def summaries(rows, program, names):
    """One vector per program, in program-id order (the dump lists a program's rows together)."""
    float_cols = [names.index(n) for n in FLOAT_COLUMNS]
    bytes_col = names.index("B0.bytes")
    order = np.argsort(program, kind="stable")
    rows, program = rows[order], program[order]
    ids = np.unique(program)
    begin = np.searchsorted(program, ids)
    end = np.append(begin[1:], len(program))
    out = []
    for b, e in zip(begin, end):
        r = rows[b:e]
        work = np.exp2(r[:, float_cols].astype(np.float64)).sum(1)
        # heaviest row; a tie within float rounding goes to the larger B0.bytes, then the first row
        tied = np.where(work >= work.max() * (1 - 1e-6))[0]
        heavy = tied[np.argmax(r[tied, bytes_col])]
        out.append(np.concatenate([r[heavy], r.max(0), r.min(0), [len(r)]]))
    return np.array(out)


def evaluate(X, y, group, own, folds):
    results = []
    for fold in range(folds):
        test_wl = np.unique(group[group % folds == fold])
        train = group % folds != fold
        scored = np.zeros(len(group), bool)
        for w in test_wl:
            idx = np.where(group == w)[0]
            scored[idx[1::2]] = True
            train[idx[0::2][:own]] = True
        order = np.argsort(group[train], kind="stable")
        Xt, yt, gt = X[train][order], y[train][order], group[train][order]
        labels = np.zeros(len(yt))
        sizes = []
        for w in np.unique(gt):
            m = gt == w
            labels[m] = np.argsort(np.argsort(-yt[m])) / max(1, m.sum() - 1)  # fastest = 1
            sizes.append(int(m.sum()))
        d = xgb.DMatrix(Xt, label=labels)
        d.set_group(sizes)
        booster = xgb.train({"objective": "rank:pairwise", "max_depth": 6, "eta": 0.1, "min_child_weight": 1,
                             "nthread": os.cpu_count()}, d, 200)
        for w in test_wl:
            m = (group == w) & scored
            results.append(ranking_scores(booster.predict(xgb.DMatrix(X[m])), y[m]))
    return np.mean(results, 0), len(results)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dump")
    ap.add_argument("--own", type=int, nargs="+", default=[0])
    ap.add_argument("--folds", type=int, default=10)
    a = ap.parse_args()
    rows, program, lat, wl, names = load(a.dump)
    X = summaries(rows, program, names)
    keys = sorted(set(wl))
    group = np.array([keys.index(w) for w in wl])
    ok = lat > 0  # failed candidates carry no latency to rank
    X, y, group = X[ok], lat[ok], group[ok]
    print(f"{len(y)} programs of {len(keys)} workloads, {X.shape[1]} values each, {a.folds} folds")
    print("own records  pairwise  top-5% recall  (second half of each workload)")
    for n in a.own:
        t = time.time()
        (pairwise, recall), count = evaluate(X, y, group, n, a.folds)
        print(f"{n:11d}  {pairwise:8.3f}  {recall:13.3f}  ({count} workloads, {time.time() - t:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
