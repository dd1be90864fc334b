#!/usr/bin/env bash
# Records for the cost model's training and held-out evaluation, on the GPU host from the bundle:
# tunes every case of each SUITE_FILE[:case,case...] into one log, TRIALS trials a workload (a round
# of 64 is a search from an empty log guided by a model of the records so far), no leader re-timing
# (its timings are not records), then exports the log. Run from the repository root on the GPU host,
# with bundle/ or dist/bundle.tar.xz from `make bundle`:
#
#   OUT=DIR TRIALS=64 BUDGET_S=500 bash experiments/costmodel/collect_gpu.sh SUITE.json[:a,b] ...
#   e.g. ... collect_gpu.sh experiments/costmodel/training_workloads.json:mm_771x1000x127,softmax_16384x127
#
# Writes under OUT: gpu.txt, tune_<n>.txt (one per suite file, -v), tune_progress.txt and
# records.jsonl.gz (this run's records; experiments/costmodel/slim_log.py cuts an export to what
# the cost model reads, for committing). The time budget is shared: each suite file gets what the
# earlier ones left, split evenly among the files still to run.
# RESUME_LOGS='experiments/costmodel/data/*.jsonl.gz' imports those logs first: the tuner then
# resumes each named workload from its records (TRIALS is the total, so 128 adds a second round of
# 64 to the committed log's workloads). MIN_TIME_MS sets the samples' total time per candidate (the
# tuner's default on cuda: 50). SEED_OFFSET is added to the search seeds (1, 2, ... per suite file).
set -uo pipefail
B=${B:-bundle}
T=$B/bin/tessel
OUT=${OUT:?set OUT}
DB=${DB:-/tmp/collect_$$.db}
mkdir -p "$OUT"
[ -d "$B" ] || tar -xJf "${BUNDLE_ARCHIVE:-dist/bundle.tar.xz}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$OUT/gpu.txt" 2>&1
start=$(date +%s)
since=$(date -u +%Y-%m-%dT%H:%M:%S)
if [ -n "${RESUME_LOGS:-}" ]; then
  # shellcheck disable=SC2086  # RESUME_LOGS is a glob
  zcat $RESUME_LOGS > "$DB.resume.jsonl" && $T db import --db "$DB" "$DB.resume.jsonl" >> "$OUT/tune_progress.txt" 2>&1 \
    || { echo "error: importing $RESUME_LOGS into $DB failed" >&2; exit 1; }
  rm -f "$DB.resume.jsonl"
fi
extra=()
[ -n "${MIN_TIME_MS:-}" ] && extra+=(--min-time-ms "$MIN_TIME_MS")
n=0
left=$#
for spec in "$@"; do
  n=$((n + 1))
  file=${spec%%:*}
  cases=()
  if [ "$file" != "$spec" ]; then
    IFS=, read -ra names <<< "${spec#*:}"
    for c in "${names[@]}"; do cases+=(--case "$c"); done
  else
    cases=(--all)
  fi
  remaining=$(( ${BUDGET_S:-500} - ($(date +%s) - start) ))
  budget=$(( remaining / left ))
  left=$((left - 1))
  [ "$budget" -lt 10 ] && { echo "$file: skipped, time budget spent" >> "$OUT/tune_progress.txt"; continue; }
  $T tune --suite "$file" "${cases[@]}" --target cuda --trials "${TRIALS:-64}" --db "$DB" --seed "$((n + ${SEED_OFFSET:-0}))" \
    --retime-leaders 0 --time-budget-s "$budget" "${extra[@]}" -v > "$OUT/tune_$n.txt" 2>> "$OUT/tune_progress.txt"
  echo "$file: rc=$? budget ${budget} s, wall $(( $(date +%s) - start )) s so far" >> "$OUT/tune_progress.txt"
done
# This run's records only (timestamps are ISO-8601 UTC, so text order is time order): without
# RESUME_LOGS that is the whole log.
$T db export --db "$DB" | python3 -c '
import json, sys
since = sys.argv[1]
for line in sys.stdin:
    if json.loads(line)["timestamp"] >= since: sys.stdout.write(line)' "$since" | gzip -c > "$OUT/records.jsonl.gz"
echo "total wall $(( $(date +%s) - start )) s" >> "$OUT/tune_progress.txt"
