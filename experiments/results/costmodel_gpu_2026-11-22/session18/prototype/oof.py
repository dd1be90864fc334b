import sys, time, numpy as np, xgboost as xgb
sys.path.insert(0, '/work/main/experiments/costmodel')
import common
z = np.load('/work/s18/sum.npz')
X, y, g = z['X'], z['y'], z['g']
variant = sys.argv[1]; obj = sys.argv[2] if len(sys.argv) > 2 else 'pair'; folds = 10
extra = dict(a.split('=') for a in sys.argv[3:])
params = {"objective": "rank:pairwise", "max_depth": 6, "eta": 0.1, "nthread": 2, "tree_method": "hist"}
rounds = int(extra.pop('rounds', 200))
for k, v in extra.items(): params[k] = float(v) if '.' in v else int(v)
if obj == 'logreg': params['objective'] = 'reg:squarederror'
if obj == 'ndcg': params['objective'] = 'rank:ndcg'
import feats
X = feats.transform(variant, X, y, g, z)
def labels(yy, gg):
    lab = np.zeros(len(yy))
    for w in np.unique(gg):
        m = gg == w
        if obj == 'logreg': lab[m] = -(np.log2(yy[m]) - np.median(np.log2(yy[m])))
        else: lab[m] = 1 - np.argsort(np.argsort(yy[m])) / max(1, m.sum() - 1)
    return lab
oof = np.zeros(len(y)); t0 = time.time()
for f in range(folds):
    tr = g % folds != f
    Xt, yt, gt = X[tr], y[tr], g[tr]
    o = np.argsort(gt, kind='stable'); Xt, yt, gt = Xt[o], yt[o], gt[o]
    dm = xgb.DMatrix(Xt, label=labels(yt, gt)); dm.set_group(np.bincount(gt)[np.unique(gt)])
    b = xgb.train(params, dm, rounds)
    te = ~tr
    oof[te] = b.predict(xgb.DMatrix(X[te]))
    print(f, round(time.time() - t0), flush=True)
tag = '_'.join([variant, obj] + sys.argv[3:]); np.save(f'/work/s18/oof_{tag}.npy', oof)
pw, rc = [], []
for w in np.unique(g):
    m = g == w
    a, r = common.ranking_scores(oof[m], y[m]); pw.append(a); rc.append(r)
print(tag, 'pairwise %.4f recall %.4f' % (np.mean(pw), np.mean(rc)))
