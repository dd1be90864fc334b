import sys, time, numpy as np
sys.path.insert(0, '/work/main/experiments/costmodel'); import common
z = np.load('/work/s18/sum.npz'); X, y, g = z['X'], z['y'], z['g']
epochs = int(sys.argv[1]) if len(sys.argv) > 1 else 8
H1, H2, partners, lr, wd = 256, 128, 8, 1e-3, 1e-5
GB = int(sys.argv[3]) if len(sys.argv) > 3 else 4
PPG = int(sys.argv[4]) if len(sys.argv) > 4 else 0
if len(sys.argv) > 2 and sys.argv[2] == 'wf':
    X = np.hstack([X, np.load('/work/s18/wfeat.npy')[g]])
X = np.clip(X, -40, None)
rng = np.random.default_rng(0)
def init(a, b): return rng.normal(0, np.sqrt(2 / a), (a, b)).astype(np.float32), np.zeros(b, np.float32)
def fwd(P, x):
    (W1, b1), (W2, b2), (W3, b3) = P
    h1 = np.maximum(x @ W1 + b1, 0); h2 = np.maximum(h1 @ W2 + b2, 0)
    return (h2 @ W3 + b3)[:, 0], (h1, h2)
def train(Xt, yt, gt):
    P = [list(init(Xt.shape[1], H1)), list(init(H1, H2)), list(init(H2, 1))]
    M = [[np.zeros_like(a) for a in p] for p in P]; V = [[np.zeros_like(a) for a in p] for p in P]
    groups = [np.where(gt == w)[0] for w in np.unique(gt)]
    groups = [x for x in groups if len(x) > 1]
    step = 0
    for ep in range(epochs):
        order = rng.permutation(len(groups))
        for s in range(0, len(order), GB):
            gs = [groups[k] for k in order[s:s+GB]]
            if PPG: gs = [rng.choice(x, min(len(x), PPG), replace=False) for x in gs]
            idx = np.concatenate(gs)
            x = Xt[idx]
            out, (h1, h2) = fwd(P, x)
            go = np.zeros(len(idx), np.float32); off = 0
            for gi in gs:
                n = len(gi); sc = out[off:off+n]; l = yt[gi]
                faster = (l[:, None] < l[None, :])  # i faster than j
                d = sc[:, None] - sc[None, :]
                sig = 1 / (1 + np.exp(np.clip(d, -50, 50)))  # sigma(-(s_i - s_j))
                w = faster * sig / (n - 1) / len(gs)
                go[off:off+n] += -w.sum(1) + w.sum(0)
                off += n
            go = go[:, None]
            (W1, b1), (W2, b2), (W3, b3) = P
            gW3 = h2.T @ go; gb3 = go.sum(0)
            g2 = (go @ W3.T) * (h2 > 0); gW2 = h1.T @ g2; gb2 = g2.sum(0)
            g1 = (g2 @ W2.T) * (h1 > 0); gW1 = x.T @ g1; gb1 = g1.sum(0)
            grads = [(gW1, gb1), (gW2, gb2), (gW3, gb3)]
            step += 1
            for li in range(3):
                for k in range(2):
                    gr = grads[li][k] + wd * P[li][k]
                    M[li][k] = 0.9 * M[li][k] + 0.1 * gr; V[li][k] = 0.999 * V[li][k] + 0.001 * gr * gr
                    mh = M[li][k] / (1 - 0.9 ** step); vh = V[li][k] / (1 - 0.999 ** step)
                    P[li][k] -= (lr * mh / (np.sqrt(vh) + 1e-8)).astype(np.float32)
    return P
oof = np.zeros(len(y)); t0 = time.time()
for f in range(10):
    tr = g % 10 != f
    mu = X[tr].mean(0); sd = X[tr].std(0); sd[sd < 1e-6] = 1
    Xs = ((X - mu) / sd).astype(np.float32)
    P = train(Xs[tr], y[tr], g[tr])
    oof[~tr] = fwd(P, Xs[~tr])[0]
    print(f, round(time.time() - t0), flush=True)
tag = 'gmlp%d_%s_%d_%d' % (epochs, sys.argv[2] if len(sys.argv) > 2 else '', GB, PPG)
np.save(f'/work/s18/oof_{tag}.npy', oof)
pw, rc = [], []
for w in np.unique(g):
    m = g == w; a, r = common.ranking_scores(oof[m], y[m]); pw.append(a); rc.append(r)
print(tag, 'pairwise %.4f recall %.4f' % (np.mean(pw), np.mean(rc)))
