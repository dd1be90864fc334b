#!/usr/bin/env bash
# Runs bench_cpu_matmul (tessel's default matmul schedules against OpenBLAS sgemm, the same threads,
# one process, interleaved rounds) and writes its table, with the command and the machine, to
# experiments/results/cpu_matmul/README.md. Needs a build configured with
# -DTESSEL_BUILD_EXPERIMENTS=ON (`make bench` does that). Arguments go to the benchmark (e.g.
# --schedules DIR to time DIR/matmul_MxNxK.json beside the defaults, or sizes MxNxK).
#
#   [BUILD=build] experiments/cpu_baselines/run_matmul.sh [ARGS...]
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
bench="$BUILD/experiments/bench_cpu_matmul"
[ -x "$bench" ] || { echo "error: $bench is missing (configure with -DTESSEL_BUILD_EXPERIMENTS=ON)" >&2; exit 2; }
out=experiments/results/cpu_matmul/README.md
mkdir -p "$(dirname "$out")"
table=$("$bench" "$@")
{
  echo "# CPU matrix products: default schedules against OpenBLAS"
  echo
  echo "Command: \`experiments/cpu_baselines/run_matmul.sh${*:+ $*}\` (runs \`$bench${*:+ $*}\`)"
  echo "Machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; $(date -u +%Y-%m-%d); tessel $(git rev-parse --short HEAD)"
  echo
  echo "Each size's default schedule is checked against the reference interpreter, then OpenBLAS sgemm and"
  echo "tessel are timed back to back in 5 rounds (each the median of its calls over 0.3 s); a ratio is"
  echo "OpenBLAS's time over tessel's in one round, shown as the median of the rounds and their range."
  echo
  echo "$table"
} > "$out"
cat "$out"
