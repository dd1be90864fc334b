# Share of pairs within one workload whose latencies differ by less than 1, 2 and 5% (pairs the truth
# hardly orders). Usage: python3 pair_ties.py DUMP.csv  (DUMP from `transfer_eval --dump`).
import csv, sys, numpy as np
from collections import defaultdict
lat=defaultdict(dict)
rd=csv.reader(open(sys.argv[1])); h=next(rd)
for r in rd: lat[r[1]][int(r[0])]=float(r[2])
tot=0; c={0.01:0,0.02:0,0.05:0,0.1:0}
for w,d in lat.items():
    l=np.array([v for v in d.values() if v>0]); L=np.log(l)
    dl=np.abs(L[:,None]-L[None,:])[np.triu_indices(len(l),1)]
    tot+=len(dl)
    for t in c: c[t]+=(dl<t).sum()
print(tot,{t:c[t]/tot for t in c})
