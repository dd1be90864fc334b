#!/usr/bin/env bash
# Search efficiency on this CPU: each case is tuned three times from an empty log, TRIALS trials each
# (default 500): random search (sketch samples only), evolution without the cost model (children
# ranked at random), and the full method (evolution + XGBoost), the last two for MODEL_TRIALS trials
# (default TRIALS: the question is how early the full method reaches random search's best). Then the
# best latency after each trial is plotted (ablation.png, needs Debian's python3-matplotlib) and
# tabulated (README.md), and each method's best schedules at trial checkpoints are re-timed together,
# interleaved, in one run (retime.md: the three searches run minutes apart, and a shared machine's
# timings drift between them by more than their differences).
#
#   [EXTRA="--min-time-ms 30"] [MODEL_TRIALS=300] [OUT=experiments/results/ablation] [WORK=dir] \
#     experiments/tune/ablation.sh [TRIALS] [CASE...]
# WORK keeps the logs: rerun with the same WORK to resume an interrupted ablation.
set -euo pipefail
cd "$(dirname "$0")/../.."
TRIALS=${1:-500}
shift || true
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(bmm_qk_96x128x64x128 softmax_attn_96x128x128 bias_residual_layernorm_1024x768)
BUILD=${BUILD:-build}
T="$BUILD/tools/tessel"
OUT=${OUT:-experiments/results/ablation}
WORK=${WORK:-$(mktemp -d)}
mkdir -p "$OUT" "$WORK"
declare -A flags=([random]="--strategy random" [evolution_no_model]="--model-kind random" [full]="")
{
  echo "Machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; $(date -u +%Y-%m-%dT%H:%M:%SZ); tessel $(git rev-parse --short HEAD)"
  for c in "${cases[@]}"; do
    for m in random evolution_no_model full; do
      n=$TRIALS
      [ "$m" != random ] && n=${MODEL_TRIALS:-$TRIALS}
      cmd="$T tune --suite suites/operators.json --case $c --target llvm --trials $n --db $WORK/$c.$m.db --seed 1 ${flags[$m]} ${EXTRA:-}"
      echo "$cmd"
      $cmd > "$WORK/$c.$m.txt" 2>&1
      "$T" db export --db "$WORK/$c.$m.db" > "$WORK/$c.$m.jsonl"
    done
  done
} > "$OUT/commands.txt"
${PYTHON:-/usr/bin/python3} experiments/tune/plot_ablation.py "$WORK" "$OUT" "${cases[@]}"
${PYTHON:-/usr/bin/python3} experiments/tune/ablation_retime.py "$T" suites/operators.json "$WORK" "$OUT" "${cases[@]}" > /dev/null
echo "logs and exports in $WORK"
