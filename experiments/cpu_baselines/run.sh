#!/usr/bin/env bash
# Runs the CPU baseline benchmark (bench_cpu_baselines: tessel's hand-written matmul schedule vs
# OpenBLAS sgemm, the default softmax / layernorm schedules vs this machine's copy bandwidth, all in
# one process) and writes its table, with the command and the machine, to
# experiments/results/cpu_baselines/README.md. Needs a build configured with
# -DTESSEL_BUILD_EXPERIMENTS=ON (`make bench` does that).
#
#   [BUILD=build] experiments/cpu_baselines/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
bench="$BUILD/experiments/bench_cpu_baselines"
[ -x "$bench" ] || { echo "error: $bench is missing (configure with -DTESSEL_BUILD_EXPERIMENTS=ON)" >&2; exit 2; }
out=experiments/results/cpu_baselines/README.md
mkdir -p "$(dirname "$out")"
{
  echo "# CPU baselines"
  echo
  echo "Command: \`make bench\` (runs \`$bench --min-time 1\`)"
  echo "Machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; $(date -u +%Y-%m-%d); tessel $(git rev-parse --short HEAD)"
  echo
  "$bench" --min-time 1
} | tee "$out"
