#!/usr/bin/env bash
# Issue 6, acceptance 1 on this CPU: five suite cases tuned for TRIALS trials each (default 500) in
# one session, then the best matmul 1024^3 schedule timed against OpenBLAS sgemm with the same
# threads, interleaved in one process. Writes OUT (default experiments/results/tune_cpu_<date>).
#
#   experiments/tune/cpu_acceptance.sh [TRIALS]
set -euo pipefail
cd "$(dirname "$0")/../.."
TRIALS=${1:-500}
BUILD=${BUILD:-build}
T="$BUILD/tools/tessel"
OUT=${OUT:-experiments/results/tune_cpu_$(date -u +%Y-%m-%d)}
WORK=${WORK:-$(mktemp -d)}
DB=${DB:-$WORK/tune_cpu.db}
mkdir -p "$OUT" "$WORK"
cases=(gemm_1024 dense_bias_gelu_1024x768x3072 conv2d_bias_relu_b1_64x56x56_k3 softmax_8192x8192 layernorm_16384x1024)
args=()
for c in "${cases[@]}"; do args+=(--case "$c"); done
{
  echo "# tessel tune on the CPU: ${cases[*]}"
  echo
  echo "Machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; $(date -u +%Y-%m-%dT%H:%M:%SZ); tessel $(git rev-parse --short HEAD)"
  echo
  echo "Command: \`$T tune --suite suites/operators.json ${args[*]} --target llvm --trials $TRIALS --db $DB --seed 1 -v\`"
  echo
  echo '```'
  start=$(date +%s)
  "$T" tune --suite suites/operators.json "${args[@]}" --target llvm --trials "$TRIALS" --db "$DB" --seed 1 -v 2> "$OUT/tune_progress.txt"
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
