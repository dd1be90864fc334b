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
Needs python3-xgboost and python3-numpy (Debian).
"""
import argparse
import time

import numpy as np
import xgboost as xgb

from common import Dump, program_summaries, ranking_scores, train_ranker, workload_folds


def evaluate(X, y, group, own, folds):
    results = []
    for train, test in workload_folds(group, folds):
        for idx in test:
            train[idx[0::2][:own]] = True
        booster = train_ranker(X[train], y[train], group[train])
        for idx in test:
            scored = idx[1::2]
            results.append(ranking_scores(booster.predict(xgb.DMatrix(X[scored])), y[scored]))
    return np.mean(results, 0), len(results)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dump")
    ap.add_argument("--own", type=int, nargs="+", default=[0])
    ap.add_argument("--folds", type=int, default=10)
    a = ap.parse_args()
    X, y, group, keys = program_summaries(Dump(a.dump))
    print(f"{len(y)} programs of {len(keys)} workloads, {X.shape[1]} values each, {a.folds} folds")
    print("own records  pairwise  top-5% recall  (second half of each workload)")
    for n in a.own:
        t = time.time()
        (pairwise, recall), count = evaluate(X, y, group, n, a.folds)
        print(f"{n:11d}  {pairwise:8.3f}  {recall:13.3f}  ({count} workloads, {time.time() - t:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
