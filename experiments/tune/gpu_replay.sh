#!/usr/bin/env bash
# On the GPU host, nothing tuned: import a tuning log (PRIOR, JSON lines .gz), replay each named
# case's best schedule (`tessel run --best`, the replay rule) and its default without L2 flush, then
# measure the torch baselines of the same cases in the same call. Writes under $OUT: gpu.txt,
# tune_progress.txt, best_noflush.jsonl, default_noflush.jsonl, baselines.jsonl, torch.txt
# (experiments/tune/gpu_table.py reads them).
#   PRIOR=carry/log.jsonl.gz OUT=... BUDGET=300 bash experiments/tune/gpu_replay.sh CASE...
set -u
B=${BUNDLE_TGZ:-carry/bundle.tgz}
rm -rf bundle && tar -xzf "$B"
T=bundle/bin/tessel
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $OUT/gpu.txt 2>&1
gunzip -c $PRIOR > /tmp/p.jsonl && $T db import --db /tmp/r.db /tmp/p.jsonl > $OUT/tune_progress.txt 2>&1
for c in "$@"; do
  $T run --suite bundle/suite.json --case $c --target cuda --best --db /tmp/r.db --no-flush-l2 --json >> $OUT/best_noflush.jsonl 2>> $OUT/tune_progress.txt
  $T run --suite bundle/suite.json --case $c --target cuda --schedule default --no-flush-l2 --json >> $OUT/default_noflush.jsonl 2>> $OUT/tune_progress.txt
done
CASES="$*" BUDGET_S=$BUDGET OUT=$OUT timeout $((BUDGET+60)) python3 experiments/tune/torch_subset.py bundle/torch_baselines.py > $OUT/torch.txt 2>&1
echo "torch rc=$?" >> $OUT/torch.txt
