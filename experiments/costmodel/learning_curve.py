#!/usr/bin/env python3
"""How the held-out ranking grows with the number of training workloads: for each fraction, every
fold's test workloads are ranked by an XGBoost ranker (common.train_ranker, the same program
summaries as tessel's `programs` input) trained on that fraction of the other folds' workloads,
drawn at random (REPS draws per fold below the whole). Prints the mean pairwise accuracy and top-5%
recall over the held-out workloads per fraction: if the figure still climbs at the whole, more
workloads in the training log are worth measuring. `--records N` trains on only the first N records
(in log order) of each training workload, to ask whether fewer trials a workload would do as well.

usage: learning_curve.py DUMP.csv [--folds K] [--fractions 0.25,0.5,0.75,1] [--reps R] [--seed S] [--records N]
  DUMP.csv: `build/experiments/transfer_eval --db LOG --target cuda --dump DUMP.csv`
"""
import argparse

import numpy as np
import xgboost as xgb

from common import Dump, program_summaries, ranking_scores, train_ranker, workload_folds


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dump")
    ap.add_argument("--folds", type=int, default=10)
    ap.add_argument("--fractions", default="0.25,0.5,0.75,1")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--records", type=int, default=0, help="train on the first N records of each workload (0: all)")
    a = ap.parse_args()
    X, y, group, keys = program_summaries(Dump(a.dump))
    X = X[:, X.std(0) > 0]
    rng = np.random.default_rng(a.seed)
    # position of each program among its workload's programs, in log order
    position = np.zeros(len(y), dtype=int)
    for g in np.unique(group):
        position[group == g] = np.arange((group == g).sum())
    usable = position < a.records if a.records > 0 else np.ones(len(y), dtype=bool)
    for frac in (float(f) for f in a.fractions.split(",")):
        scores, sizes = [], []
        for train, test in workload_folds(group, a.folds):
            others = np.unique(group[train])
            for _ in range(a.reps if frac < 1 else 1):
                pick = rng.choice(others, size=max(1, int(round(frac * len(others)))), replace=False)
                sizes.append(len(pick))
                m = np.isin(group, pick) & usable
                ranker = train_ranker(X[m], y[m], group[m])
                for members in test:
                    scores.append(ranking_scores(ranker.predict(xgb.DMatrix(X[members])), y[members]))
        s = np.mean(scores, 0)
        print(f"{frac:.2f} of the others ({np.mean(sizes):.0f} training workloads): {s[0]:.3f} / {s[1]:.3f}", flush=True)


if __name__ == "__main__":
    main()
