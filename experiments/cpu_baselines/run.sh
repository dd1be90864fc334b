#!/usr/bin/env bash
# Runs the CPU baseline benchmark and writes experiments/results/cpu_baselines.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
out=experiments/results/cpu_baselines.md
{
  echo "# CPU baselines"
  echo
  echo "Command: \`make bench\` (runs \`$BUILD/experiments/bench_cpu_baselines --min-time 1\`)"
  echo "Machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; $(date -u +%Y-%m-%d)"
  echo
  "$BUILD/experiments/bench_cpu_baselines" --min-time 1
} | tee "$out"
