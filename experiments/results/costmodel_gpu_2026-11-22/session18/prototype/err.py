import sys, numpy as np
z = np.load('/work/s18/sum.npz'); y, g = z['y'], z['g']
oof = np.load(sys.argv[1])
edges = [1.0, 1.01, 1.02, 1.05, 1.1, 1.2, 1.5, 2, 4, 1e9]
cnt = np.zeros(len(edges)-1); err = np.zeros(len(edges)-1); wsum = np.zeros(len(edges)-1)
for w in np.unique(g):
    m = np.where(g == w)[0]; n = len(m)
    l = y[m]; s = oof[m]
    r = np.maximum(l[:, None], l[None, :]) / np.minimum(l[:, None], l[None, :])
    iu = np.triu_indices(n, 1)
    rr = r[iu]; dl = (l[:, None] - l[None, :])[iu]; ds = (s[:, None] - s[None, :])[iu]
    ok = dl != 0
    wrong = np.where(ds == 0, 0.5, (np.sign(dl) == np.sign(ds)).astype(float))  # same sign = wrong (lower latency should have higher score)
    b = np.digitize(rr, edges) - 1
    npairs = ok.sum()
    for k in range(len(cnt)):
        mm = ok & (b == k)
        cnt[k] += mm.sum() / npairs; err[k] += wrong[mm].sum() / npairs
nw = len(np.unique(g))
print('ratio bucket | share of pairs (mean over workloads) | error contribution | error rate')
for k in range(len(cnt)):
    print('%5.2f-%-6.2f %.3f %.4f %.3f' % (edges[k], min(edges[k+1], 99), cnt[k]/nw, err[k]/nw, err[k]/max(cnt[k],1e-9)))
print('total error', err.sum()/nw)
