"""The network trained on 1024 random pairs a step (8 partners a program, drawn anew each epoch).
Usage: mlp.py [EPOCHS=8] [wf]"""
import sys, numpy as np
import net
from net import rng

epochs = int(sys.argv[1]) if len(sys.argv) > 1 else 8
columns = sys.argv[2] if len(sys.argv) > 2 else ''
partners = 8


def batches(Xt, yt, groups):
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
            m = len(i)

            def loss_grad(out, sign=sign, m=m):
                d = out[:m] - out[m:]
                gd = -sign / (1 + np.exp(sign * d)) / m  # d loss / d d
                return np.concatenate([gd, -gd])[:, None].astype(np.float32)
            yield np.vstack([Xt[i], Xt[j]]), loss_grad


X, y, g = net.load(columns)
net.evaluate(X, y, g, batches, 'mlp%d%s' % (epochs, columns))
