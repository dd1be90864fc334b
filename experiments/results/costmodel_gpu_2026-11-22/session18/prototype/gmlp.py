"""The network trained on whole groups (or PPG programs drawn from each), GB groups a step, every pair of
a group's programs in the loss, each group's pairs scaled by 1/(n - 1) as tessel's MlpRanker does.
Usage: gmlp.py [EPOCHS=8] [wf|x] [GB=4] [PPG=0]"""
import sys, numpy as np
import net
from net import rng

epochs = int(sys.argv[1]) if len(sys.argv) > 1 else 8
columns = sys.argv[2] if len(sys.argv) > 2 else ''
GB = int(sys.argv[3]) if len(sys.argv) > 3 else 4
PPG = int(sys.argv[4]) if len(sys.argv) > 4 else 0


def batches(Xt, yt, groups):
    groups = [x for x in groups if len(x) > 1]
    for ep in range(epochs):
        order = rng.permutation(len(groups))
        for s in range(0, len(order), GB):
            gs = [groups[k] for k in order[s:s+GB]]
            if PPG: gs = [rng.choice(x, min(len(x), PPG), replace=False) for x in gs]
            idx = np.concatenate(gs)

            def loss_grad(out, gs=gs, idx=idx):
                go = np.zeros(len(idx), np.float32); off = 0
                for gi in gs:
                    n = len(gi); sc = out[off:off+n]; l = yt[gi]
                    faster = (l[:, None] < l[None, :])  # i faster than j
                    d = sc[:, None] - sc[None, :]
                    sig = 1 / (1 + np.exp(np.clip(d, -50, 50)))  # sigma(-(s_i - s_j))
                    w = faster * sig / (n - 1) / len(gs)
                    go[off:off+n] += -w.sum(1) + w.sum(0)
                    off += n
                return go[:, None]
            yield Xt[idx], loss_grad


X, y, g = net.load(columns)
net.evaluate(X, y, g, batches, 'gmlp%d_%s_%d_%d' % (epochs, columns, GB, PPG))
