#!/usr/bin/env bash
# Issue 6, acceptance 4, on the GPU host from the bundle: tune the named suite cases with TRIALS
# trials each (one session, one log), re-time each best schedule and the default without L2 flush
# (as torch's CUDA-graph replay runs), then measure the torch baselines of the same cases in the
# same call. Writes eight files under $OUT (the device tool returns no more): gpu.txt, tune.txt,
# tune_progress.txt, best_noflush.jsonl, default_noflush.jsonl, records.jsonl.gz (the log, exported),
# baselines.jsonl, torch.txt.
#
#   OUT=... TRIALS=200 TIME_BUDGET_S=300 TORCH_BUDGET_S=200 [PRIOR=records.jsonl] \
#     bash experiments/tune/run_gpu.sh CASE...
# PRIOR: earlier calls' records (JSON lines, .gz allowed), imported first, so the session resumes.
# EXTRA: more `tessel tune` options (e.g. --no-flush-l2: tune with the timing the tables use).
# MODEL: a cost model from `tessel model train` to start from (e.g. trained on another GPU's log).
# CHECKS=1: first the GPU tests and `tessel check --random-schedules 50` of every op template at odd
# shapes (appended to gpu.txt). BUNDLE_TGZ: a compressed bundle (carry/bundle.tgz from `make
# bundle`), unpacked first when bundle/ is missing.
set -uo pipefail
B=${B:-bundle}
T=$B/bin/tessel
OUT=${OUT:?set OUT}
TRIALS=${TRIALS:-200}
DB=${DB:-/tmp/tune_gpu_$$.db}
mkdir -p "$OUT"
[ -d "$B" ] || tar -xzf "${BUNDLE_TGZ:-carry/bundle.tgz}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$OUT/gpu.txt" 2>&1
if [ "${CHECKS:-0}" = 1 ]; then
  { timeout 120 $B/bin/test_cuda 2>&1 | tail -4; echo "test_cuda rc=${PIPESTATUS[0]}"; } >> "$OUT/gpu.txt"
  check_dir=$(mktemp -d)
  B=$B bash experiments/gpu/check_random.sh "$check_dir" 50 >> "$OUT/gpu.txt" 2>&1
fi
if [ -n "${PRIOR:-}" ]; then
  case $PRIOR in *.gz) gunzip -c "$PRIOR" > /tmp/prior_$$.jsonl; PRIOR=/tmp/prior_$$.jsonl ;; esac
  $T db import --db "$DB" "$PRIOR" >> "$OUT/tune_progress.txt" 2>&1
fi
args=()
for c in "$@"; do args+=(--case "$c"); done
start=$(date +%s)
$T tune --suite $B/suite.json "${args[@]}" --target cuda --trials "$TRIALS" --db "$DB" --seed 1 \
  --time-budget-s "${TIME_BUDGET_S:-300}" ${MODEL:+--model "$MODEL"} ${EXTRA:-} -v > "$OUT/tune.txt" 2>> "$OUT/tune_progress.txt"
echo "tune rc=$? wall $(( $(date +%s) - start )) s" >> "$OUT/tune.txt"
for c in "$@"; do
  $T run --suite $B/suite.json --case "$c" --target cuda --best --db "$DB" --no-flush-l2 --json \
    >> "$OUT/best_noflush.jsonl" 2>> "$OUT/tune_progress.txt"
  $T run --suite $B/suite.json --case "$c" --target cuda --schedule default --no-flush-l2 --json \
    >> "$OUT/default_noflush.jsonl" 2>> "$OUT/tune_progress.txt"
done
$T db export --db "$DB" | gzip -c > "$OUT/records.jsonl.gz"  # compressed: big files do not come back
if [ "${TORCH_BUDGET_S:-200}" = 0 ]; then
  echo "torch baselines skipped (TORCH_BUDGET_S=0)" > "$OUT/torch.txt"
else
  CASES="$*" BUDGET_S=${TORCH_BUDGET_S:-200} OUT="$OUT" timeout 400 python3 experiments/tune/torch_subset.py \
    $B/torch_baselines.py > "$OUT/torch.txt" 2>&1
  echo "torch rc=$?" >> "$OUT/torch.txt"
fi
echo "total wall $(( $(date +%s) - start )) s" >> "$OUT/tune.txt"
