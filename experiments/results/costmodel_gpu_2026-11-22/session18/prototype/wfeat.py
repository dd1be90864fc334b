import json, re, math, numpy as np, sys
sys.path.insert(0, '/work/main/experiments/costmodel'); from by_spread import op_kind
z = np.load('/work/s18/sum.npz'); keys = list(z['keys'])
texts = {}
for line in open('/work/s18/h.jsonl'):
    r = json.loads(line); w = r['workload']
    if w['key'] not in texts: texts[w['key']] = (w['text'], w['flops'])
kinds = sorted({op_kind(t) for t, _ in texts.values()}); print(kinds)
def shape(s): return [int(x) for x in s.split(',')] if s.strip() else []
F = []
for k in keys:
    t, flops = texts[k]
    ph = [shape(m) for m in re.findall(r'placeholder\(float32\[([^\]]*)\]\)', t)]
    stages = re.findall(r'^(\w+)\[([^\]]*)\] = (.*)$', t, re.M)
    out = [int(e.split(':')[1]) for e in stages[-1][1].split(',')]
    red = [int(x) for st in stages for x in re.findall(r'\w+:(\d+)', st[2].split(';')[0]) if 'sum(' in st[2] or 'max(' in st[2]]
    inb = sum(4 * math.prod(s) for s in ph); outb = 4 * math.prod(out)
    inner = out[-1]
    row = [math.log2(max(flops, 1)), math.log2(inb), math.log2(outb), len(stages), len(ph),
           math.log2(max(red, default=1)), math.log2(inner), inner % 32 == 0, inner % 4 == 0,
           math.log2(max(flops, 1) / (inb + outb))] + [op_kind(t) == kk for kk in kinds]
    F.append(row)
np.save('/work/s18/wfeat.npy', np.array(F, dtype=float)); print(np.array(F).shape)
