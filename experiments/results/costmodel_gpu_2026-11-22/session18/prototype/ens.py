import sys, numpy as np
sys.path.insert(0, '/work/main/experiments/costmodel'); import common
z = np.load('/work/s18/sum.npz'); y, g = z['y'], z['g']
oofs = [np.load(f'/work/s18/oof_{t}.npy') for t in sys.argv[1].split(',')]
ws = [float(x) for x in sys.argv[2].split(',')] if len(sys.argv) > 2 else [1] * len(oofs)
def zs(s):
    out = np.zeros_like(s)
    for w in np.unique(g):
        m = g == w; out[m] = (s[m] - s[m].mean()) / (s[m].std() + 1e-12)
    return out
sc = sum(w * zs(o) for w, o in zip(ws, oofs))
pw, rc = [], []
for w in np.unique(g):
    m = g == w; a, r = common.ranking_scores(sc[m], y[m]); pw.append(a); rc.append(r)
print(sys.argv[1:], 'pairwise %.4f recall %.4f' % (np.mean(pw), np.mean(rc)))
