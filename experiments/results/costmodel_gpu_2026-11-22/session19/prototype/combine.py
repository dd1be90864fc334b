"""Mean per-workload pairwise / top-5% recall over the per-workload lines of several transfer_eval outputs
(parts of one --folds evaluation run with --only-folds), and the same workloads' figures in other runs.
usage: combine.py PART.txt[,PART2.txt...] [OTHER.txt ...]"""
import statistics as st, sys
def load(f):
    d = {}
    for l in open(f).read().split('\n')[1:]:
        p = l.split()
        if len(p) == 4 and p[0] != 'mean': d[p[0]] = (float(p[2]), float(p[3]))
    return d
parts = {}
for f in sys.argv[1].split(','): parts.update(load(f))
ks = sorted(parts)
print('%-50s %4d workloads  pairwise %.4f  recall %.4f' % (sys.argv[1], len(ks), st.mean(parts[k][0] for k in ks), st.mean(parts[k][1] for k in ks)))
for f in sys.argv[2:]:
    d = load(f)
    print('%-50s %4d workloads  pairwise %.4f  recall %.4f' % (f, len(ks), st.mean(d[k][0] for k in ks), st.mean(d[k][1] for k in ks)))
