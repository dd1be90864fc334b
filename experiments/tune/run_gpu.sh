#!/usr/bin/env bash
# `tessel tune --target cuda` against PyTorch on one GPU: tunes the named suite cases for TRIALS
# trials each (one tuning session, one log), re-times each case's best schedule and its default
# without L2 flush (as torch's CUDA-graph replay runs), then times torch eager / compile /
# max-autotune of the same cases in the same run (experiments/gpu/torch_baselines.py). Run from the
# repository root on the GPU host, with bundle/ or dist/bundle.tar.xz from `make bundle`:
#
#   OUT=DIR [TRIALS=200] [TIME_BUDGET_S=300] [TORCH_BUDGET_S=200] [PRIOR=LOG.jsonl[.gz]] \
#     bash experiments/tune/run_gpu.sh CASE...
#   python3 experiments/tune/gpu_table.py DIR > table.md
#
# Writes under OUT: gpu.txt, tune.txt, tune_progress.txt, best_noflush.jsonl, default_noflush.jsonl,
# records.jsonl.gz (the log, exported), baselines.jsonl, torch.txt.
# PRIOR: an exported log (`tessel db export`) imported first, so that tuning resumes from it
#   (--trials counts the log's trials: a case already at TRIALS is only re-timed).
# EXTRA: more `tessel tune` options (e.g. --no-flush-l2: tune with the timing the tables use).
# COSTMODEL: a cost model from `tessel costmodel train` to start from.
# CHECKS=1: first the GPU tests and 50 random schedules of every op template checked on the GPU
#   (appended to gpu.txt). TORCH_BUDGET_S=0: no torch baselines.
set -uo pipefail
B=${B:-bundle}
T=$B/bin/tessel
SUITE=${SUITE:-suites/operators.json}
OUT=${OUT:?set OUT}
TRIALS=${TRIALS:-200}
DB=${DB:-/tmp/tune_gpu_$$.db}
mkdir -p "$OUT"
[ -d "$B" ] || tar -xJf "${BUNDLE_ARCHIVE:-dist/bundle.tar.xz}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$OUT/gpu.txt" 2>&1
if [ "${CHECKS:-0}" = 1 ]; then
  { timeout 120 "$B/bin/test_cuda" 2>&1 | tail -4; echo "test_cuda rc=${PIPESTATUS[0]}"; } >> "$OUT/gpu.txt"
  T=$T TARGET=cuda bash experiments/gpu/check_random.sh "$(mktemp -d)" 50 >> "$OUT/gpu.txt" 2>&1
fi
if [ -n "${PRIOR:-}" ]; then
  case $PRIOR in *.gz) gunzip -c "$PRIOR" > /tmp/prior_$$.jsonl; PRIOR=/tmp/prior_$$.jsonl ;; esac
  "$T" db import --db "$DB" "$PRIOR" >> "$OUT/tune_progress.txt" 2>&1
fi
args=()
for c in "$@"; do args+=(--case "$c"); done
start=$(date +%s)
# shellcheck disable=SC2086  # EXTRA holds several options
"$T" tune --suite "$SUITE" "${args[@]}" --target cuda --trials "$TRIALS" --db "$DB" --seed 1 \
  --time-budget-s "${TIME_BUDGET_S:-300}" ${COSTMODEL:+--costmodel "$COSTMODEL"} ${EXTRA:-} -v > "$OUT/tune.txt" 2>> "$OUT/tune_progress.txt"
echo "tune rc=$? wall $(( $(date +%s) - start )) s" >> "$OUT/tune.txt"
for c in "$@"; do
  "$T" run --suite "$SUITE" --case "$c" --target cuda --best --db "$DB" --no-flush-l2 --json \
    >> "$OUT/best_noflush.jsonl" 2>> "$OUT/tune_progress.txt"
  "$T" run --suite "$SUITE" --case "$c" --target cuda --schedule default --no-flush-l2 --json \
    >> "$OUT/default_noflush.jsonl" 2>> "$OUT/tune_progress.txt"
done
"$T" db export --db "$DB" | gzip -c > "$OUT/records.jsonl.gz"
if [ "${TORCH_BUDGET_S:-200}" = 0 ]; then
  echo "torch baselines skipped (TORCH_BUDGET_S=0)" > "$OUT/torch.txt"
else
  BUDGET_S=${TORCH_BUDGET_S:-200} OUT="$OUT" timeout 400 python3 experiments/gpu/torch_baselines.py --suite "$SUITE" "$@" \
    > "$OUT/torch.txt" 2>&1
  echo "torch rc=$?" >> "$OUT/torch.txt"
fi
echo "total wall $(( $(date +%s) - start )) s" >> "$OUT/tune.txt"
