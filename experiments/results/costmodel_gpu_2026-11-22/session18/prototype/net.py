"""What mlp.py and gmlp.py share: the summaries (prep.py's), a 478-256-128-1 ReLU network trained by Adam on
a pairwise logistic loss whose per-batch gradient each script supplies, and the 10-fold held-out evaluation."""
import sys, time, numpy as np
sys.path.insert(0, '/work/main/experiments/costmodel'); import common

H1, H2, lr, wd = 256, 128, 1e-3, 1e-5
rng = np.random.default_rng(0)


def load(columns):
    z = np.load('/work/s18/sum.npz'); X, y, g = z['X'], z['y'], z['g']
    if columns == 'wf':
        X = np.hstack([X, np.load('/work/s18/wfeat.npy')[g]])
    return np.clip(X, -40, None), y, g


def init(a, b): return rng.normal(0, np.sqrt(2 / a), (a, b)).astype(np.float32), np.zeros(b, np.float32)


def fwd(P, x):
    (W1, b1), (W2, b2), (W3, b3) = P
    h1 = np.maximum(x @ W1 + b1, 0); h2 = np.maximum(h1 @ W2 + b2, 0)
    return (h2 @ W3 + b3)[:, 0], (h1, h2)


def train(Xt, yt, gt, batches):
    """`batches(Xt, yt, groups)` yields (x, loss_grad): the rows of a step and a function from their scores
    to d(loss)/d(score)."""
    P = [list(init(Xt.shape[1], H1)), list(init(H1, H2)), list(init(H2, 1))]
    M = [[np.zeros_like(a) for a in p] for p in P]; V = [[np.zeros_like(a) for a in p] for p in P]
    groups = [np.where(gt == w)[0] for w in np.unique(gt)]
    step = 0
    for x, loss_grad in batches(Xt, yt, groups):
        out, (h1, h2) = fwd(P, x)
        go = loss_grad(out)
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


def evaluate(X, y, g, batches, tag):
    """Each tenth of the workloads held out in turn; writes /work/s18/oof_TAG.npy and prints the means."""
    oof = np.zeros(len(y)); t0 = time.time()
    for f in range(10):
        tr = g % 10 != f
        mu = X[tr].mean(0); sd = X[tr].std(0); sd[sd < 1e-6] = 1
        Xs = ((X - mu) / sd).astype(np.float32)
        P = train(Xs[tr], y[tr], g[tr], batches)
        oof[~tr] = fwd(P, Xs[~tr])[0]
        print(f, round(time.time() - t0), flush=True)
    np.save(f'/work/s18/oof_{tag}.npy', oof)
    pw, rc = [], []
    for w in np.unique(g):
        m = g == w; a, r = common.ranking_scores(oof[m], y[m]); pw.append(a); rc.append(r)
    print(tag, 'pairwise %.4f recall %.4f' % (np.mean(pw), np.mean(rc)))
