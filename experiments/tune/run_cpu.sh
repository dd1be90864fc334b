#!/usr/bin/env bash
# `tessel tune` on this CPU: five suite cases tuned for TRIALS trials each (default 500) in one tuning
# session, each best schedule against its default; then the best matmul 1024^3 schedule timed against
# OpenBLAS sgemm with the same threads, interleaved in one process (bench_cpu_baselines, built with
# -DTESSEL_BUILD_EXPERIMENTS=ON). Writes OUT/README.md (the results table, with the command and the
# machine) and OUT/gemm_1024_best.json; the log and the tuner's progress stay in WORK.
#
#   [OUT=experiments/results/tune_cpu] [WORK=dir] experiments/tune/run_cpu.sh [TRIALS]
set -euo pipefail
cd "$(dirname "$0")/../.."
TRIALS=${1:-500}
BUILD=${BUILD:-build}
T="$BUILD/tools/tessel"
OUT=${OUT:-experiments/results/tune_cpu}
WORK=${WORK:-$(mktemp -d)}
DB=${DB:-$WORK/tune_cpu.db}
mkdir -p "$OUT" "$WORK"
[ -x "$BUILD/experiments/bench_cpu_baselines" ] \
  || { echo "error: $BUILD/experiments/bench_cpu_baselines is missing (configure with -DTESSEL_BUILD_EXPERIMENTS=ON)" >&2; exit 2; }
cases=(gemm_1024 dense_bias_gelu_1024x768x3072 conv2d_bias_relu_b1_64x56x56_k3 softmax_8192x8192 layernorm_16384x1024)
args=()
for c in "${cases[@]}"; do args+=(--case "$c"); done
{
  echo "# tessel tune on the CPU: ${cases[*]}"
  echo
  echo "Machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; $(date -u +%Y-%m-%dT%H:%M:%SZ); tessel $(git rev-parse --short HEAD)"
  echo
  echo "Command: \`experiments/tune/run_cpu.sh $TRIALS\`, which runs \`$T tune --suite suites/operators.json ${args[*]} --target llvm --trials $TRIALS --db LOG --seed 1 -v\`"
  echo
  echo '```'
  start=$(date +%s)
  "$T" tune --suite suites/operators.json "${args[@]}" --target llvm --trials "$TRIALS" --db "$DB" --seed 1 -v 2> "$WORK/tune_progress.txt"
  echo "wall: $(( $(date +%s) - start )) s"
  echo '```'
  echo
  "$T" db export --db "$DB" > "$WORK/records.jsonl"
  "$T" show --suite suites/operators.json --case gemm_1024 --schedule none --emit te > "$WORK/gemm_1024.te"
  python3 experiments/tune/best_trace.py "$WORK/records.jsonl" "$WORK/gemm_1024.te" "$OUT/gemm_1024_best.json"
  echo
  echo "Best matmul 1024^3 schedule vs OpenBLAS, same threads, interleaved in one process:"
  echo "\`$BUILD/experiments/bench_cpu_baselines --min-time 1 --matmul-schedule $OUT/gemm_1024_best.json\`"
  echo
  "$BUILD/experiments/bench_cpu_baselines" --min-time 1 --matmul-schedule "$OUT/gemm_1024_best.json"
} | tee "$OUT/README.md"
echo "log and progress in $WORK"
