#!/usr/bin/env bash
# Timing stability: the same schedule (a suite case's default schedule) measured by SESSIONS separate
# `tessel measure` processes (a fresh runner each); reports each one's median and the max/min spread
# of the medians. Prints a markdown table.
#
#   experiments/measure/stability.sh TARGET CASE [SESSIONS] [TESSEL] [SUITE]
#   e.g. experiments/measure/stability.sh llvm rowsum_8192x8192 10
#   CASE may also be op arguments: "--op matmul --param M=768 --param N=768 --param K=768"
#   EXTRA="--threads 1" adds arguments to every `tessel measure`.
set -euo pipefail
TARGET=${1:?target llvm or cuda}
CASE=${2:?suite case}
SESSIONS=${3:-10}
TESSEL=${4:-build/tools/tessel}
SUITE=${5:-suites/operators.json}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

read -r -a extra <<< "${EXTRA:-}"
echo "### $CASE, default schedule, --target $TARGET ${EXTRA:-}, $SESSIONS sessions"
echo
if [[ "$CASE" == --op* ]]; then read -r -a workload <<< "$CASE"; else workload=(--suite "$SUITE" --case "$CASE"); fi
for _ in $(seq 1 "$SESSIONS"); do
  "$TESSEL" measure "${workload[@]}" --schedule default --target "$TARGET" "${extra[@]}" --db "$work/log.db" >/dev/null
done
"$TESSEL" db export --db "$work/log.db" | python3 -c '
import json, sys
records = [json.loads(line) for line in sys.stdin if line.strip()]
medians = [r["median_s"] * 1e3 for r in records if r["error"] == "ok"]
bad = [r["error"] for r in records if r["error"] != "ok"]
print("| session | median ms | samples |")
print("|---:|---:|---:|")
for i, r in enumerate(records, 1):
    ms, n = r["median_s"] * 1e3, len(r["samples_s"])
    print(f"| {i} | {ms:.4f} | {n} |")
if medians:
    print()
    print(f"sessions: {len(records)}, ok: {len(medians)}, errors: {bad or None}; "
          f"median of medians {sorted(medians)[len(medians)//2]:.4f} ms; "
          f"max/min spread {max(medians)/min(medians):.4f}")
print()
'
