"""Blends of held-out scores on transfer_eval's folds: the trees' (--scores CSV) and nets.py's (oofs.npz),
each z-scored within its workload, weighted and summed; metrics per workload as ranking_metrics.cpp.
usage: ens2.py DATA.npz TREES.csv OOFS.npz[,OOFS2.npz] 'name*w+name*w...'"""
import csv, sys, math
import numpy as np
z = np.load(sys.argv[1]); prog, y, w = z['program'], z['y'], z['w']
tree = {}
for r in csv.DictReader(open(sys.argv[2])): tree[int(r['program'])] = float(r['score'])
S = {'T': np.array([tree[p] for p in prog])}
for f in sys.argv[3].split(','):
    S.update(dict(np.load(f)))
def zs(s):
    out = np.zeros_like(s, dtype=float)
    for k in np.unique(w):
        m = w == k; out[m] = (s[m] - s[m].mean()) / (s[m].std() + 1e-12)
    return out
Z = {}
def metrics(score):
    pw, rc = [], []
    for k in np.unique(w):
        m = w == k; s, l = score[m], y[m]
        pairs = np.triu(l[:, None] != l[None, :], 1)
        if pairs.sum() == 0: continue
        agree = ((l[:, None] < l[None, :]) == (s[:, None] > s[None, :])) & (s[:, None] != s[None, :])
        tie = s[:, None] == s[None, :]
        pw.append(((agree + 0.5 * tie) * pairs).sum() / pairs.sum())
        kk = max(1, math.ceil(0.05 * len(s)))
        rc.append(len(set(np.argsort(l, kind='stable')[:kk]) & set(np.argsort(-s, kind='stable')[:kk])) / kk)
    return np.mean(pw), np.mean(rc)
for combo in sys.argv[4:]:
    tot = 0
    for term in combo.split('+'):
        name, wt = (term.split('*') + ['1'])[:2]
        if name not in Z: Z[name] = zs(S[name])
        tot = tot + float(wt) * Z[name]
    print('%-60s pairwise %.4f recall %.4f' % ((combo,) + metrics(tot)), flush=True)
