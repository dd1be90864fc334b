#!/usr/bin/env python3
"""Share of pairs within one workload whose latencies differ by less than 1, 2, 5 and 10% (pairs the
truth hardly orders). usage: /usr/bin/python3 pair_ties.py DUMP.csv  (DUMP from `transfer_eval --dump`)"""
import sys

import numpy as np

from common import Dump

dump = Dump(sys.argv[1])
latencies = {}
for p, w in dump.workload.items():
    latencies.setdefault(w, []).append(dump.latency[p])
total = 0
within = {0.01: 0, 0.02: 0, 0.05: 0, 0.1: 0}
for values in latencies.values():
    log = np.log(np.array([v for v in values if v > 0]))
    gaps = np.abs(log[:, None] - log[None, :])[np.triu_indices(len(log), 1)]
    total += len(gaps)
    for t in within:
        within[t] += (gaps < t).sum()
print(total, {t: within[t] / total for t in within})
