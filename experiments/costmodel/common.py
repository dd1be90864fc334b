"""What the Python cost-model experiments here share: reading the CSV that `transfer_eval --dump FILE`
writes, training an XGBoost ranker on it, and the two figures `tessel model eval` prints
(costmodel/ranking_metrics.cpp). Needs python3-numpy and python3-xgboost (Debian)."""
import csv
import gzip
import json
import math

import numpy as np

# The columns whose 2^value sum to a row's share of the program's float operations (docs/costmodel_features.md).
FLOAT_COLUMNS = ["float_addsub", "float_mul", "float_div", "float_minmax_abs", "float_cmp", "float_select",
                 "float_exp_log", "float_sqrt", "float_act"]


class Dump:
    """One dump: `names` the feature columns, `column` name -> index; per program id (in the order the
    file lists them) `workload` its workload key, `latency` its latency in seconds (0 or less: failed)
    and `rows` its feature rows (a float64 array, one row per store row)."""

    def __init__(self, path):
        with open(path) as f:
            reader = csv.reader(f)
            self.names = next(reader)[3:]
            self.column = {n: i for i, n in enumerate(self.names)}
            self.workload, self.latency, rows = {}, {}, {}
            for r in reader:
                p = int(r[0])
                self.workload[p], self.latency[p] = r[1], float(r[2])
                rows.setdefault(p, []).append([float(x) for x in r[3:]])
        self.rows = {p: np.array(r) for p, r in rows.items()}

    def float_columns(self):
        return [self.column[n] for n in FLOAT_COLUMNS]


def summary(rows, float_cols, bytes_col):
    """tessel's program_summary: the heaviest row, each column's max and min, the row count."""
    work = np.exp2(rows[:, float_cols]).sum(1)
    # heaviest row; a tie within float rounding goes to the larger B0.bytes, then the first row
    tied = np.where(work >= work.max() * (1 - 1e-6))[0]
    heavy = tied[np.argmax(rows[tied, bytes_col])]
    return np.concatenate([rows[heavy], rows.max(0), rows.min(0), [len(rows)]])


def program_summaries(dump):
    """The successful programs of a dump in record order (failed candidates carry no latency to
    rank): (X their summaries, y their latencies, group their workload's index in `keys`, keys)."""
    programs = [p for p in sorted(dump.rows) if dump.latency[p] > 0]
    keys = sorted({dump.workload[p] for p in programs})
    float_cols, bytes_col = dump.float_columns(), dump.column["B0.bytes"]
    X = np.array([summary(dump.rows[p], float_cols, bytes_col) for p in programs])
    y = np.array([dump.latency[p] for p in programs])
    group = np.array([keys.index(dump.workload[p]) for p in programs])
    return X, y, group, keys


def read_log(paths):
    """The records of `tessel db export` files (JSON lines, plain or gzipped), one dict each."""
    for path in paths:
        with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
            for line in f:
                yield json.loads(line)


def latency_spread(latencies):
    """How far apart a workload's programs are: the 90th over the 10th percentile of their latencies."""
    return np.percentile(latencies, 90) / np.percentile(latencies, 10)


def workload_folds(group, folds):
    """Workloads held out in `folds` folds, a workload in fold (its index in `keys`) mod `folds`: per fold,
    (train, test) — the mask of the programs of the other folds' workloads, and for each workload of this
    fold the indices of its programs."""
    for fold in range(folds):
        in_fold = group % folds == fold
        yield ~in_fold, [np.where(group == w)[0] for w in np.unique(group[in_fold])]


def train_ranker(X, latency, group, objective="pairwise", rounds=200):
    """XGBoost `rank:<objective>` trees (depth 6, eta 0.1) on the programs X of the workloads `group`,
    labelled within each workload by their latency rank (1 = fastest) or, for ndcg, graded by the
    fastest 5 / 20 / 50%."""
    import xgboost as xgb  # only the scripts that train need it

    order = np.argsort(group, kind="stable")
    X, latency, group = X[order], latency[order], group[order]
    label = np.zeros(len(latency))
    sizes = []
    for g in np.unique(group):
        m = group == g
        q = np.argsort(np.argsort(latency[m])) / max(1, m.sum() - 1)  # 0 = fastest
        label[m] = 1 - q if objective == "pairwise" else np.select([q < 0.05, q < 0.2, q < 0.5], [3, 2, 1], 0)
        sizes.append(int(m.sum()))
    d = xgb.DMatrix(X, label=label)
    d.set_group(sizes)
    return xgb.train({"objective": f"rank:{objective}", "max_depth": 6, "eta": 0.1, "nthread": 2}, d, rounds)


def ranking_scores(score, latency):
    """(pairwise accuracy, top-5% recall) of predicted scores (higher = faster) against latencies.

    Pairwise: over the pairs of different latency, the share the scores order the same way (a tied score
    counts a half). Recall: how many of the fastest 5% (at least one) are among the 5% scored highest."""
    dl = latency[:, None] - latency[None, :]
    ds = score[:, None] - score[None, :]
    pairs = np.triu(dl != 0, 1)
    agree = ((np.sign(dl) == -np.sign(ds)) & pairs & (ds != 0)).sum() + 0.5 * ((ds == 0) & pairs).sum()
    k = max(1, math.ceil(0.05 * len(latency)))
    return agree / pairs.sum(), len(set(np.argsort(latency)[:k]) & set(np.argsort(-score)[:k])) / k
