# Ranking by a rough analytic GPU time estimated from the feature columns alone (no learning): mean
# pairwise accuracy per workload of each term. Usage: /usr/bin/python3 analytic_signal.py DUMP.csv LOG.db
import csv, sys, math, sqlite3, numpy as np
from collections import defaultdict
db=sqlite3.connect(sys.argv[2]); flops={k:f for k,f in db.execute('select key,flops from workloads')}
rd=csv.reader(open(sys.argv[1])); h=next(rd); names=h[3:]; c={n:i for i,n in enumerate(names)}
rows=defaultdict(list); pw={}; pl={}
for r in rd:
    p=int(r[0]); pw[p]=r[1]; pl[p]=float(r[2]); rows[p].append(np.array([float(x) for x in r[3:]]))
FL=[c[n] for n in ['float_addsub','float_mul','float_div','float_minmax_abs','float_cmp','float_select','float_exp_log','float_sqrt','float_act']]
def e(x): return 2**x-1
def est(p):
    F=max(flops[pw[p]],1)
    # per kernel? approximate: per row
    tot_l2=0; tot_dram=0; tot_smem=0; comp=0; inv_par=0
    for R in rows[p]:
        fl=sum(2**R[i] for i in FL if R[i]>-60)*F
        par=R[c['occupancy']]*R[c['sm_fill']]*max(R[c['wave_efficiency']],1e-3)
        comp+=fl/max(par,1e-3)
        for k in range(5):
            b=lambda n: R[c['B%d.%s'%(k,n)]]
            if b('bytes')==0: continue
            if b('scope_local')>0: continue
            if b('scope_shared')>0:
                tot_smem+=e(b('bytes'))*max(1,b('bank_ways'))
            else:
                we=b('warp_efficiency'); we=we if we>0 else 1
                tot_l2+=e(b('bytes'))/we/max(R[c['sm_fill']],1e-3)
                tot_dram+=e(b('unique_bytes'))
    return dict(l2=tot_l2, dram=tot_dram, smem=tot_smem, comp=comp, nrows=len(rows[p]),
                rough=comp/60e12*1e0+tot_l2/10e12+tot_smem/30e12+tot_dram/3e12)
by=defaultdict(list)
for p in rows:
    if pl[p]>0: by[pw[p]].append(p)
def acc(s,l):
    s=np.array(s); l=np.array(l); dl=l[:,None]-l[None,:]; ds=s[:,None]-s[None,:]; m=np.triu(dl!=0,1)
    return (((np.sign(dl)==np.sign(ds))&(ds!=0)&m).sum()+0.5*((ds==0)&m).sum())/m.sum()
res=defaultdict(list)
for w,ps in by.items():
    E=[est(p) for p in ps]; L=[pl[p] for p in ps]
    for k in E[0]: res[k].append(acc([x[k] for x in E],L))
for k,v in res.items(): print(k,'%.3f'%np.mean(v))
