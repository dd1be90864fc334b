"""Neural rankers of tessel's program features, held out by workload fold, on a GPU with PyTorch.

Reads the npz that rows_npz.py writes (summaries X, padded feature rows R with mask M, latencies y,
workload index w, fold f: transfer_eval's, the i-th workload in first-record order in fold i mod K) and for
every variant named on the command line trains one network per fold on the other folds' workloads and
scores the held-out fold; writes OUT/oof_VARIANT.npy and prints the per-workload mean pairwise accuracy and
top-5% recall. Loss: tessel's MlpRanker's (every pair of PPG programs drawn from each of GB workloads a
step, -log sigmoid(s_fast - s_slow), a workload's pairs scaled by 1/(n - 1)), Adam with L2 on the gradient.

Variant: KIND[:key=value...], KIND one of
  S   the summary network (478 -> h -> h/2 -> 1, tessel's MlpRanker)
  D   deep sets: every row through a shared encoder (159 -> h -> h), summed per program, -> h/2 -> 1
  DM  deep sets, the rows' encodings summed and max-pooled
  DS  deep sets with the program summary beside the pooled encoding
keys: h (256), he (the row encoder's width, 0: h), e (epochs, 300), gb (64), ppg (16), lr (1e-3), wd (1e-5), s (seed, 0), drop (0).
usage: nets.py DATA.npz OUTDIR VARIANT..."""
import math, sys, time
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

dev = 'cuda' if torch.cuda.is_available() else 'cpu'
torch.set_num_threads(2)


def parse(spec):
    kind, *kv = spec.split(':')
    o = dict(h=256, he=0, e=300, gb=64, ppg=16, lr=1e-3, wd=1e-5, s=0, drop=0.0)
    for item in kv:
        k, v = item.split('=')
        o[k] = type(o[k])(float(v)) if isinstance(o[k], float) else int(v)
    return kind, o


class Net(nn.Module):
    def __init__(self, kind, o, xw, rw):
        super().__init__()
        self.kind, h = kind, o['h']
        if kind == 'S':
            self.head = nn.Sequential(nn.Linear(xw, h), nn.ReLU(), nn.Dropout(o['drop']),
                                      nn.Linear(h, h // 2), nn.ReLU(), nn.Linear(h // 2, 1))
        else:
            he = o['he'] or h
            self.enc = nn.Sequential(nn.Linear(rw, he), nn.ReLU(), nn.Linear(he, he), nn.ReLU())
            width = he * (2 if kind == 'DM' else 1) + (xw if kind == 'DS' else 0)
            self.head = nn.Sequential(nn.Dropout(o['drop']), nn.Linear(width, h // 2), nn.ReLU(), nn.Linear(h // 2, 1))
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.kaiming_normal_(m.weight, nonlinearity='relu'); nn.init.zeros_(m.bias)

    def forward(self, X, R, M, idx):
        if self.kind == 'S':
            return self.head(X[idx])[:, 0]
        e = self.enc(R[idx]) * M[idx][:, :, None]
        parts = [e.sum(1)]
        if self.kind == 'DM': parts.append(e.max(1).values)
        if self.kind == 'DS': parts.append(X[idx])
        return self.head(torch.cat(parts, 1))[:, 0]


def standardize(A, use):
    mu = A[use].mean(0); sd = A[use].std(0); sd[sd < 1e-6] = 1
    return (A - mu) / sd


def run_variant(spec, d, folds):
    kind, o = parse(spec)
    torch.manual_seed(o['s']); gen = np.random.default_rng(o['s'])
    X, R, M, y, w, f = d
    oof = torch.zeros(len(y), device=dev)
    t0 = time.time()
    for fold in range(folds):
        tr = f != fold
        rows_tr = (M > 0) & tr[:, None]
        Xs = standardize(X, tr); Rs = (R - R[rows_tr].mean(0)) / R[rows_tr].std(0).clamp(min=1e-6)
        Rs = Rs * M[:, :, None]
        # the training workloads' members, padded with -1
        groups = [torch.nonzero(tr & (w == k))[:, 0] for k in torch.unique(w[tr])]
        groups = [gi for gi in groups if len(gi) > 1]
        size = torch.tensor([len(gi) for gi in groups], device=dev)
        members = torch.full((len(groups), int(size.max())), -1, dtype=torch.long, device=dev)
        for i, gi in enumerate(groups): members[i, :len(gi)] = gi
        net = Net(kind, o, X.shape[1], R.shape[2]).to(dev)
        opt = torch.optim.Adam(net.parameters(), lr=o['lr'], weight_decay=o['wd'])
        net.train()
        for ep in range(o['e']):
            order = torch.tensor(gen.permutation(len(groups)), device=dev)
            for s in range(0, len(order), o['gb']):
                G = order[s:s + o['gb']]
                keys = torch.rand(len(G), members.shape[1], device=dev)
                keys[members[G] < 0] = 2
                pos = keys.argsort(1)[:, :o['ppg']]
                sel = torch.gather(members[G], 1, pos)
                ok = sel >= 0
                n = ok.sum(1)
                sc = net(Xs, Rs, M, sel.clamp(min=0).flatten()).view(sel.shape)
                lat = y[sel.clamp(min=0)]
                faster = (lat[:, :, None] < lat[:, None, :]) & ok[:, :, None] & ok[:, None, :]
                pair = F.softplus(-(sc[:, :, None] - sc[:, None, :])) * faster
                loss = (pair.sum((1, 2)) / (n - 1).clamp(min=1)).sum() / len(G)
                opt.zero_grad(); loss.backward(); opt.step()
        net.eval()
        with torch.no_grad():
            te = torch.nonzero(~tr)[:, 0]
            for s in range(0, len(te), 4096):
                oof[te[s:s + 4096]] = net(Xs, Rs, M, te[s:s + 4096])
        print(f'  {spec} fold {fold} {time.time() - t0:.0f} s', flush=True)
    return oof.cpu().numpy()


def metrics(score, lat, w):
    """Per-workload mean pairwise accuracy and top-5% recall (costmodel/ranking_metrics.cpp's)."""
    pw, rc = [], []
    for k in np.unique(w):
        m = w == k; s, l = score[m], lat[m]
        diff = l[:, None] != l[None, :]
        agree = ((l[:, None] < l[None, :]) == (s[:, None] > s[None, :])) & (s[:, None] != s[None, :])
        tie = s[:, None] == s[None, :]
        pairs = np.triu(diff, 1)
        if pairs.sum() == 0: continue
        pw.append(((agree + 0.5 * tie) * pairs).sum() / pairs.sum())
        kk = max(1, math.ceil(0.05 * len(s)))
        rc.append(len(set(np.argsort(l, kind='stable')[:kk]) & set(np.argsort(-s, kind='stable')[:kk])) / kk)
    return np.mean(pw), np.mean(rc)


if __name__ == '__main__':
    z = np.load(sys.argv[1]); out = sys.argv[2]
    folds = int(z['folds'])
    t = lambda a, dt=torch.float32: torch.tensor(a, dtype=dt, device=dev)
    d = (t(z['X']), t(z['R']), t(z['M']), t(z['y'], torch.float64), t(z['w'], torch.long), t(z['f'], torch.long))
    lat, w = z['y'], z['w']
    for spec in sys.argv[3:]:
        t0 = time.time()
        oof = run_variant(spec, d, folds)
        np.save(f'{out}/oof_{spec.replace(":", "_").replace("=", "")}.npy', oof)
        print('%-40s pairwise %.4f recall %.4f  %.0f s' % ((spec,) + metrics(oof, lat, w) + (time.time() - t0,)), flush=True)
