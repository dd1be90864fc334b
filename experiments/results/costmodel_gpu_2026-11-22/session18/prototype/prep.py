import sys, numpy as np
sys.path.insert(0, '/work/main/experiments/costmodel')
import common
d = common.Dump('/work/s18/dump.csv')
X, y, g, keys = common.program_summaries(d)
progs = [p for p in sorted(d.rows) if d.latency[p] > 0]
np.savez('/work/s18/sum.npz', X=X, y=y, g=g, keys=np.array(keys), names=np.array(d.names), progs=np.array(progs))
print(X.shape, len(keys))
