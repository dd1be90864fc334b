"""The two figures `tessel model eval` prints (costmodel/ranking_metrics.cpp), for the Python experiments here."""
import math

import numpy as np


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
