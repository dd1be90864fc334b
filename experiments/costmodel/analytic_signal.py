#!/usr/bin/env python3
"""Ranking by a rough analytic GPU time estimated from the feature columns alone (no learning): mean
pairwise accuracy per workload of each term. usage: /usr/bin/python3 analytic_signal.py DUMP.csv LOG.db"""
import sqlite3
import sys

import numpy as np

from common import Dump, ranking_scores

db = sqlite3.connect(sys.argv[2])
flops = {k: f for k, f in db.execute('select key,flops from workloads')}
dump = Dump(sys.argv[1])
c = dump.column
FL = dump.float_columns()
def e(x): return 2**x-1
def est(p):
    F=max(flops[dump.workload[p]],1)
    # per kernel? approximate: per row
    tot_l2=0; tot_dram=0; tot_smem=0; comp=0; inv_par=0
    for R in dump.rows[p]:
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
    return dict(l2=tot_l2, dram=tot_dram, smem=tot_smem, comp=comp, nrows=len(dump.rows[p]),
                rough=comp/60e12*1e0+tot_l2/10e12+tot_smem/30e12+tot_dram/3e12)
by = {}
for p in dump.rows:
    if dump.latency[p] > 0: by.setdefault(dump.workload[p], []).append(p)
res = {}
for w, ps in by.items():
    E = [est(p) for p in ps]
    L = np.array([dump.latency[p] for p in ps])
    for k in E[0]:  # an estimate is a time: lower = faster
        res.setdefault(k, []).append(ranking_scores(-np.array([x[k] for x in E]), L)[0])
for k, v in res.items(): print(k, '%.3f' % np.mean(v))
