#!/usr/bin/env bash
# Records for cost-model training and held-out evaluation (issue 6, acceptance 3), on the GPU host
# from the bundle: tunes every case of each SUITE_FILE[:case,case...] in one log, TRIALS trials a
# workload (one round of 64 is a search from an empty log guided by a model of the records so far),
# no leader re-timing (its timings are not records), then exports the log. Writes under $OUT:
# gpu.txt, tune_<n>.txt (one per suite file, -v), tune_progress.txt, records.jsonl.gz.
#
#   OUT=... TRIALS=64 BUDGET_S=500 bash experiments/costmodel/collect_gpu.sh SUITE.json[:a,b] ...
# The time budget is shared: each suite file gets what the earlier ones left, evenly split among
# the files still to run. BUNDLE_TGZ as in experiments/tune/run_gpu.sh.
#
# To extend workloads already measured, RESUME_LOGS='experiments/costmodel/data/*.jsonl.gz' imports those
# logs first: the tuner then resumes each named workload from its records (TRIALS is the total,
# so 128 adds a second round of 64). records.jsonl.gz always holds only this call's records.
# MIN_TIME_MS sets the samples' total time per candidate (the tuner's default on cuda: 50).
# SEED_OFFSET is added to the search seeds (1, 2, ... per suite file): another search for a second round.
set -uo pipefail
B=${B:-bundle}
T=$B/bin/tessel
OUT=${OUT:?set OUT}
DB=${DB:-/tmp/collect_$$.db}
mkdir -p "$OUT"
[ -d "$B" ] || tar -xzf "${BUNDLE_TGZ:-carry/bundle.tgz}"
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
# This call's records only (timestamps are ISO-8601 UTC, so text order is time order): without
# RESUME_LOGS that is the whole log.
$T db export --db "$DB" | python3 -c '
import json, sys
since = sys.argv[1]
for line in sys.stdin:
    if json.loads(line)["timestamp"] >= since: sys.stdout.write(line)' "$since" | gzip -c > "$OUT/records.jsonl.gz"
echo "total wall $(( $(date +%s) - start )) s" >> "$OUT/tune_progress.txt"
