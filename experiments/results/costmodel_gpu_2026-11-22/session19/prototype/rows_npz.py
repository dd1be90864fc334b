"""The npz nets.py reads, from a dump of `transfer_eval --dump`: summaries X, feature rows R padded to the
longest program with mask M (floored at -40, as tessel's ranker floors its inputs), latency y, workload
index w, fold f (transfer_eval --folds K: the i-th workload in first-record order in fold i mod K).
usage: rows_npz.py DUMP.csv OUT.npz [K=10]"""
import sys
import numpy as np
sys.path.insert(0, '/work/main/experiments/costmodel')
import common

d = common.Dump(sys.argv[1])
K = int(sys.argv[3]) if len(sys.argv) > 3 else 10
first = []
for p in sorted(d.rows):
    if d.workload[p] not in first: first.append(d.workload[p])
fold_of = {k: i % K for i, k in enumerate(first)}
X, y, g, keys = common.program_summaries(d)
progs = [p for p in sorted(d.rows) if d.latency[p] > 0]
n, width = len(progs), len(d.names)
rmax = max(len(d.rows[p]) for p in progs)
R = np.zeros((n, rmax, width), np.float32); M = np.zeros((n, rmax), np.float32)
for i, p in enumerate(progs):
    r = d.rows[p]; R[i, :len(r)] = np.clip(r, -40, None); M[i, :len(r)] = 1
f = np.array([fold_of[keys[k]] for k in g])
np.savez_compressed(sys.argv[2], X=np.clip(X, -40, None).astype(np.float32), R=R, M=M, y=y, w=g, f=f, folds=K,
                    keys=np.array(keys), program=np.array(progs))
print(n, 'programs,', len(keys), 'workloads, rows per program max', rmax, 'mean', M.sum() / n)
