#!/usr/bin/env bash
# Times random GPU schedules (by seed) of the suite's compute cases on the device and appends
# {"case", "seed", "median_ms"} lines to $OUT/sweep.jsonl: the raw material for the hand-picked
# schedules under experiments/schedules/cuda/. Usage: sweep.sh SEEDS CASE...
set -uo pipefail
B=bundle; T=$B/bin/tessel; OUT=${OUT:-/tmp/out}
seeds=$1; shift
for c in "$@"; do
  for s in $(seq 1 "$seeds"); do
    f=/tmp/sweep_${c}_$s.json
    $T schedule --target cuda --suite $B/suite.json --case "$c" --random-seed "$s" > "$f" 2>/dev/null || continue
    ms=$(timeout 60 $T run --target cuda --suite $B/suite.json --case "$c" --schedule "$f" --json --min-time 0.03 2>/dev/null \
         | python3 -c "import json,sys; print(json.load(sys.stdin)['median_ms'])" 2>/dev/null) || continue
    [ -n "$ms" ] && echo "{\"case\": \"$c\", \"seed\": $s, \"median_ms\": $ms}" >> "$OUT/sweep.jsonl"
  done
done
