#!/usr/bin/env python3
"""A comparison model against the ranker, held out over workloads: does a classifier of program pairs
("is A faster than B?") rank an unseen workload's programs better than a ranker of single programs?

Both see the same program summaries as tessel's `programs` input (the heaviest row, each column's max
and min, the row count; common.summary). The ranker is XGBoost `rank:pairwise` (common.train_ranker).
The comparer is XGBoost `binary:logistic` on pairs of one workload's programs: the features of a pair
are the difference of the two summaries (the columns are log2 values, so a difference is a log ratio
and the same for a small and a large workload) and their mean (what kind of program both are); the
label says whether the first is faster. Each training program is paired with PAIRS others of its
workload, both orders. A held-out program's score is the share of its workload's programs it is
predicted to beat (a Borda count), or of `--anchors` of them, so it ranks like any score.

Workloads are grouped into folds (`--folds`, every workload in one test fold, trained on the other
folds); the figures are pairwise accuracy and top-5% recall as `tessel model eval` computes them,
averaged over workloads, on all of each held-out workload's records.

usage: pair_compare.py DUMP.csv [--folds K] [--pairs N] [--rounds R] [--depth D] [--anchors A] [--no-context]
  DUMP.csv: `build/experiments/transfer_eval --db LOG --target cuda --dump DUMP.csv`
Needs python3-xgboost and python3-numpy (Debian).
"""
import argparse
import time

import numpy as np
import xgboost as xgb

from common import Dump, program_summaries, ranking_scores, train_ranker, workload_folds


def pair_rows(X, a, b, context=True):
    """A pair's features: the difference of the two summaries and, with `context`, their mean."""
    return np.hstack([X[a] - X[b], 0.5 * (X[a] + X[b])]) if context else X[a] - X[b]


def sample_pairs(latency, group, idx, pairs, rng):
    """Index pairs (a, b) within each workload of `idx`, each program with `pairs` partners of
    different latency, both orders; label 1 where a is faster."""
    A, B = [], []
    for g in np.unique(group[idx]):
        members = idx[group[idx] == g]
        for a in members:
            partners = rng.choice(members, size=min(pairs, len(members)), replace=False)
            partners = partners[latency[partners] != latency[a]]
            A.extend([a] * len(partners))
            B.extend(partners)
    A, B = np.array(A), np.array(B)
    A, B = np.concatenate([A, B]), np.concatenate([B, A])
    return A, B, (latency[A] < latency[B]).astype(float)


def train_comparer(X, latency, group, idx, a):
    rng = np.random.default_rng(a.seed)
    A, B, label = sample_pairs(latency, group, idx, a.pairs, rng)
    d = xgb.DMatrix(pair_rows(X, A, B, a.context), label=label)
    params = {"objective": "binary:logistic", "max_depth": a.depth, "eta": a.eta, "nthread": 2,
              "tree_method": "hist", "subsample": 0.8, "colsample_bytree": a.colsample}
    return xgb.train(params, d, a.rounds)


def borda(booster, X, members, anchors, context):
    """Each member's predicted share of wins against the anchors: all members, or `anchors` of them
    evenly spaced in record order (a program is not its own anchor)."""
    n = len(members)
    ref = members if anchors <= 0 or anchors >= n else members[np.linspace(0, n - 1, anchors).astype(int)]
    A = np.repeat(members, len(ref))
    B = np.tile(ref, n)
    p = booster.predict(xgb.DMatrix(pair_rows(X, A, B, context))).reshape(n, len(ref))
    p[A.reshape(n, len(ref)) == B.reshape(n, len(ref))] = 0
    own = (A == B).reshape(n, len(ref)).sum(1)
    return p.sum(1) / (len(ref) - own)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dump")
    ap.add_argument("--folds", type=int, default=10)
    ap.add_argument("--pairs", type=int, default=24)
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--eta", type=float, default=0.1)
    ap.add_argument("--colsample", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--anchors", type=int, default=0, help="score against this many of the workload's programs (0: all)")
    ap.add_argument("--no-context", dest="context", action="store_false", help="pair features: the difference only")
    ap.add_argument("--per-workload", action="store_true", help="print each held-out workload's figures")
    a = ap.parse_args()
    X, y, group, keys = program_summaries(Dump(a.dump))
    X = X[:, X.std(0) > 0]  # constant columns say nothing
    print(f"{len(y)} programs of {len(keys)} workloads, {X.shape[1]} varying values each, {a.folds} folds, "
          f"{a.pairs} partners a program, {a.rounds} rounds of depth {a.depth}", flush=True)
    rank, comp, both = [], [], []
    t = time.time()
    for fold, (train, test) in enumerate(workload_folds(group, a.folds)):
        ranker = train_ranker(X[train], y[train], group[train])
        comparer = train_comparer(X, y, group, np.where(train)[0], a)
        for members in test:
            rs = ranker.predict(xgb.DMatrix(X[members]))
            cs = borda(comparer, X, members, a.anchors, a.context)
            r, c = ranking_scores(rs, y[members]), ranking_scores(cs, y[members])
            # the two models together: the mean of each program's rank under either
            both.append(ranking_scores(np.argsort(np.argsort(rs)) + np.argsort(np.argsort(cs)), y[members]))
            rank.append(r)
            comp.append(c)
            if a.per_workload:
                print(f"  {keys[group[members[0]]]:32s} {len(members):4d}  ranker {r[0]:.3f} / {r[1]:.3f}  comparer {c[0]:.3f} / {c[1]:.3f}")
        print(f"fold {fold}: so far ranker {np.mean(rank, 0)[0]:.3f} / {np.mean(rank, 0)[1]:.3f}, comparer "
              f"{np.mean(comp, 0)[0]:.3f} / {np.mean(comp, 0)[1]:.3f} ({time.time() - t:.0f} s)", flush=True)
    r, c, b = np.mean(rank, 0), np.mean(comp, 0), np.mean(both, 0)
    print(f"held out, mean over {len(rank)} workloads: ranker {r[0]:.3f} / {r[1]:.3f}, comparer {c[0]:.3f} / {c[1]:.3f}, "
          f"both (mean rank) {b[0]:.3f} / {b[1]:.3f}")


if __name__ == "__main__":
    main()
