#!/usr/bin/env bash
# Replays a tuning log against PyTorch on one GPU, nothing tuned: imports the log, times each named
# case's best schedule (`tessel run --best`) and its default without L2 flush, then times torch
# eager / compile / max-autotune of the same cases in the same run. Quicker than run_gpu.sh on a
# finished log: no tuning session is set up (the output checks' reference outputs of the large cases
# take minutes). Run from the repository root on the GPU host, with bundle/ or dist/bundle.tar.xz:
#
#   PRIOR=LOG.jsonl[.gz] OUT=DIR [BUDGET=300] bash experiments/tune/gpu_replay.sh CASE...
#   python3 experiments/tune/gpu_table.py DIR > table.md
#
# Writes under OUT: gpu.txt, tune_progress.txt, best_noflush.jsonl, default_noflush.jsonl,
# baselines.jsonl, torch.txt. BUDGET: seconds the torch script may spend before it skips the
# compiled modes.
set -uo pipefail
B=${B:-bundle}
T=$B/bin/tessel
SUITE=${SUITE:-suites/operators.json}
OUT=${OUT:?set OUT}
PRIOR=${PRIOR:?set PRIOR to an exported tuning log}
BUDGET=${BUDGET:-300}
DB=/tmp/replay_$$.db
mkdir -p "$OUT"
[ -d "$B" ] || tar -xJf "${BUNDLE_ARCHIVE:-dist/bundle.tar.xz}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$OUT/gpu.txt" 2>&1
case $PRIOR in
  *.gz) gunzip -c "$PRIOR" > /tmp/replay_$$.jsonl ;;
  *) cp "$PRIOR" /tmp/replay_$$.jsonl ;;
esac
"$T" db import --db "$DB" /tmp/replay_$$.jsonl > "$OUT/tune_progress.txt" 2>&1
for c in "$@"; do
  "$T" run --suite "$SUITE" --case "$c" --target cuda --best --db "$DB" --no-flush-l2 --json \
    >> "$OUT/best_noflush.jsonl" 2>> "$OUT/tune_progress.txt"
  "$T" run --suite "$SUITE" --case "$c" --target cuda --schedule default --no-flush-l2 --json \
    >> "$OUT/default_noflush.jsonl" 2>> "$OUT/tune_progress.txt"
done
BUDGET_S=$BUDGET OUT="$OUT" timeout $((BUDGET + 100)) python3 experiments/gpu/torch_baselines.py --suite "$SUITE" "$@" \
  > "$OUT/torch.txt" 2>&1
echo "torch rc=$?" >> "$OUT/torch.txt"
