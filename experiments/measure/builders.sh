#!/usr/bin/env bash
# Builder-pool scaling: wall time of the build phase of one 40-candidate `tessel measure` session
# (random schedules of matmul 64^3, seeds 1..40, one batch: all 40 builds in one pool) with 1 builder and with every core, interleaved
# over ROUNDS rounds so both see the same machine load. Prints a markdown table.
#
#   experiments/measure/builders.sh [TESSEL] [ROUNDS]
set -euo pipefail
TESSEL=${1:-build/tools/tessel}
ROUNDS=${2:-2}
CORES=$(nproc)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

build_wall() {  # $1 = builders
  "$TESSEL" measure --op matmul --param M=64 --param N=64 --param K=64 --random-schedules 40 --seed 1 \
    --target llvm --builders "$1" --batch 40 --min-time-ms 5 --db "$work/log.db" | sed -n 's/.*builds: \([0-9.]*\) s wall.*/\1/p'
}

echo "| round | 1 builder: build wall s | $CORES builders: build wall s | speed-up |"
echo "|---:|---:|---:|---:|"
for r in $(seq 1 "$ROUNDS"); do
  one=$(build_wall 1)
  all=$(build_wall "$CORES")
  echo "| $r | $one | $all | $(python3 -c "print(f'{$one/$all:.2f}')") |"
done
