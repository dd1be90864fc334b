import numpy as np
z = np.load('/work/s18/sum.npz'); X, y, g = z['X'], z['y'], z['g']
tot = 0; coll = 0; share = []; ratios = []
for w in np.unique(g):
    m = np.where(g == w)[0]; n = len(m)
    _, inv, counts = np.unique(X[m], axis=0, return_inverse=True, return_counts=True)
    c = (counts * (counts - 1) / 2).sum(); p = n * (n - 1) / 2
    share.append(c / p)
    for u in np.where(counts > 1)[0]:
        l = y[m][inv == u]; ratios.append(l.max() / l.min())
share = np.array(share)
print('mean share of pairs with identical summaries', share.mean(), 'workloads with >5%:', (share > .05).sum())
ratios = np.array(ratios)
print('collision groups', len(ratios), 'ratio pct 50/90', np.percentile(ratios, [50, 90]))
