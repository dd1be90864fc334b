import sys, time, numpy as np
sys.path.insert(0, '/work/main/experiments/costmodel'); import common
z = np.load('/work/s18/sum.npz'); X, y, g = z['X'], z['y'], z['g']
epochs = int(sys.argv[1]) if len(sys.argv) > 1 else 8
H1, H2, partners, lr, wd = 256, 128, 8, 1e-3, 1e-5
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
    step = 0
    for ep in range(epochs):
        I, J = [], []
        for idx in groups:
            n = len(idx)
            if n < 2: continue
            a = np.repeat(idx, partners); b = idx[rng.integers(0, n, n * partners)]
            I.append(a); J.append(b)
        I = np.concatenate(I); J = np.concatenate(J)
        keep = yt[I] != yt[J]; I, J = I[keep], J[keep]
        perm = rng.permutation(len(I)); I, J = I[perm], J[perm]
        for s in range(0, len(I), 1024):
            i, j = I[s:s+1024], J[s:s+1024]
            sign = np.where(yt[i] < yt[j], 1.0, -1.0).astype(np.float32)  # i faster: want s_i > s_j
            x = np.vstack([Xt[i], Xt[j]]); m = len(i)
            out, (h1, h2) = fwd(P, x)
            d = out[:m] - out[m:]
            gd = -sign / (1 + np.exp(sign * d)) / m  # d loss / d d
            go = np.concatenate([gd, -gd])[:, None].astype(np.float32)
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
tag = 'mlp%d%s' % (epochs, sys.argv[2] if len(sys.argv) > 2 else '')
np.save(f'/work/s18/oof_{tag}.npy', oof)
pw, rc = [], []
for w in np.unique(g):
    m = g == w; a, r = common.ranking_scores(oof[m], y[m]); pw.append(a); rc.append(r)
print(tag, 'pairwise %.4f recall %.4f' % (np.mean(pw), np.mean(rc)))
