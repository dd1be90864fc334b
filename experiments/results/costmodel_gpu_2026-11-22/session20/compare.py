"""Mean per-workload pairwise / top-5% recall over the workloads of `tessel model eval` outputs (the lines
of model_eval_folds.sh runs: key, programs, pairs, pairwise, recall), and of the same workloads in
transfer_eval outputs (key, programs, pairwise, recall).
usage: compare.py CLI.txt[,CLI2.txt...] [TRANSFER_EVAL.txt[,...] ...]"""
import re, statistics as st, sys

def load(files, columns):
    d = {}
    for f in files.split(','):
        for line in open(f):
            p = line.split()
            if len(p) == columns and re.fullmatch(r'[0-9a-f]{16}', p[0]):
                d[p[0]] = (float(p[-2]), float(p[-1]))
    return d

cli = load(sys.argv[1], 5)
keys = sorted(cli)
print('%-60s %4d workloads  pairwise %.4f  recall %.4f' % (sys.argv[1][-60:], len(keys), st.mean(cli[k][0] for k in keys),
                                                          st.mean(cli[k][1] for k in keys)))
for f in sys.argv[2:]:
    d = load(f, 4)
    missing = [k for k in keys if k not in d]
    if missing: sys.exit('%s lacks %d of the workloads' % (f, len(missing)))
    print('%-60s %4d workloads  pairwise %.4f  recall %.4f' % (f[-60:], len(keys), st.mean(d[k][0] for k in keys),
                                                              st.mean(d[k][1] for k in keys)))
