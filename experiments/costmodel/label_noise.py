#!/usr/bin/env python3
"""How far can any cost model rank a tuning log's records? Re-times N random ok records of a suite case
from a log (twice, in shuffled order, with `tessel run`) and prints the pairwise ranking agreement of the
log's latencies with the re-timed ones, and of the two re-timings with each other. A model is scored
against the log's latencies, so their agreement with a fresh measurement bounds what it can reach.

usage: label_noise.py TESSEL SUITE CASE EXPORT.jsonl [N] [SEED]
  EXPORT.jsonl  `tessel db export --db LOG` (the log the model is evaluated on)
"""
import json
import random
import subprocess
import sys
import tempfile

tessel, suite, case, export = sys.argv[1:5]
n = int(sys.argv[5]) if len(sys.argv) > 5 else 60
rng = random.Random(int(sys.argv[6]) if len(sys.argv) > 6 else 1)

text = subprocess.run([tessel, "show", "--suite", suite, "--case", case, "--emit", "te"], check=True,
                      capture_output=True, text=True).stdout.strip()
records = [json.loads(line) for line in open(export) if line.strip()]
ok = [r for r in records
      if r["error"] == "ok" and r["target"]["kind"] == "llvm" and r["workload"]["text"].strip() == text
      and r.get("purpose", "trial") == "trial"]  # a retime repeats a trial's schedule
if len(ok) < 2:
    sys.exit(f"error: {export} holds {len(ok)} ok records of {case}")
picked = rng.sample(ok, min(n, len(ok)))

work = tempfile.mkdtemp()
paths = []
for i, r in enumerate(picked):
    path = f"{work}/{i}.json"
    open(path, "w").write(r["trace_json"])
    paths.append(path)


def time_one(path):
    out = subprocess.run([tessel, "run", "--suite", suite, "--case", case, "--schedule", path, "--json",
                          "--min-time", "0.1"], check=True, capture_output=True, text=True).stdout
    return json.loads(out)["median_ms"] / 1e3


fresh = [[None] * len(picked) for _ in range(2)]
for rep in range(2):
    order = list(range(len(picked)))
    rng.shuffle(order)
    for k, i in enumerate(order):
        fresh[rep][i] = time_one(paths[i])
        print(f"\rre-timing {rep + 1}/2: {k + 1}/{len(order)}", end="", file=sys.stderr, flush=True)
print(file=sys.stderr)


def agreement(a, b):
    same = pairs = 0
    for i in range(len(a)):
        for j in range(i + 1, len(a)):
            if a[i] == a[j] or b[i] == b[j]:
                continue
            pairs += 1
            same += (a[i] < a[j]) == (b[i] < b[j])
    return same / pairs if pairs else float("nan")


logged = [r["median_s"] for r in picked]
print(f"{case}: {len(picked)} of {len(ok)} ok records re-timed twice with `tessel run --min-time 0.1`")
print(f"  pairwise agreement, log vs re-timing 1: {agreement(logged, fresh[0]):.3f}")
print(f"  pairwise agreement, log vs re-timing 2: {agreement(logged, fresh[1]):.3f}")
print(f"  pairwise agreement, re-timing 1 vs 2:   {agreement(fresh[0], fresh[1]):.3f}")
ratios = sorted(f / l for f, l in zip(fresh[0], logged))
print(f"  re-timed / logged latency: median {ratios[len(ratios) // 2]:.3f}, "
      f"10% {ratios[len(ratios) // 10]:.3f}, 90% {ratios[len(ratios) * 9 // 10]:.3f}")
