#!/usr/bin/env bash
# tessel's GPU schedules against PyTorch, everything measured in one run on one GPU: for each suite
# case of a group, the default schedule, the hand-written one (experiments/schedules/cuda/hand/) and
# the tuner's best (experiments/schedules/cuda/), timed without L2 flush (as torch's CUDA-graph
# replay runs; the default also with the flush), then torch eager / compile / max-autotune of the
# same cases (experiments/gpu/torch_baselines.py). The default and the hand-written schedules are
# checked against the reference interpreter where that is cheap. Run from the repository root on the
# GPU host, with bundle/ or dist/bundle.tar.xz from `make bundle`:
#
#   OUT=DIR [CHECKS=1] [BUDGET_S=200] bash experiments/gpu/run_schedules.sh [mem|compute|all]
#   python3 experiments/gpu/make_table.py DIR > table.md
#
# CHECKS=1: first the GPU tests and 50 random schedules of every op template checked on the GPU.
# BUDGET_S: seconds the torch script may spend before it skips the compiled modes (0: eager only);
# TORCH_TIMEOUT_S stops it. VARIANTS=DIR: also the alternatives `hand.py --variants DIR` writes,
# labelled hand:<name>. SKIP_FLUSH=1: no timing with L2 flush. Writes under OUT: gpu.txt,
# tessel_cuda.jsonl, baselines.jsonl, torch.txt (and test_cuda.txt, check_cuda.txt with CHECKS=1).
set -uo pipefail
group=${1:-mem}
B=${B:-bundle}
T=$B/bin/tessel
SUITE=${SUITE:-suites/operators.json}
SCHEDULES=experiments/schedules/cuda
OUT=${OUT:?set OUT}
mkdir -p "$OUT"
[ -d "$B" ] || tar -xJf "${BUNDLE_ARCHIVE:-dist/bundle.tar.xz}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$OUT/gpu.txt" 2>&1

if [ "${CHECKS:-0}" = 1 ]; then
  timeout 120 "$B/bin/test_cuda" > "$OUT/test_cuda.txt" 2>&1; echo "test_cuda rc=$?" >> "$OUT/test_cuda.txt"
  T=$T TARGET=cuda bash experiments/gpu/check_random.sh "$(mktemp -d)" 50 > "$OUT/check_cuda.txt"
fi

: > "$OUT/tessel_cuda.jsonl"
cases=$(python3 -c "
import json
for c in json.load(open('$SUITE'))['cases']:
    compute = c['flops'] > 0
    if '$group' == 'all' or ('$group' == 'compute') == compute: print(c['name'])")
[ -n "${VARIANTS:-}" ] && python3 $SCHEDULES/hand/hand.py --variants "$VARIANTS"
for c in $cases; do
  check=--check
  # The reference interpreter takes minutes for these three; their op templates are covered by the
  # random-schedule checks.
  case $c in gemm_4096|dense_bias_gelu_1024x768x3072|conv2d_bias_relu_b16_256x14x14_k3) check= ;; esac
  run() {  # LABEL [tessel run option ...]: one timing, appended to tessel_cuda.jsonl with its label
    local label=$1 line
    shift
    line=$(timeout 120 "$T" run --target cuda --suite "$SUITE" --case "$c" --json "$@" 2>> "$OUT/tessel_cuda.err") \
      || line="{\"workload\": \"$c\", \"failed\": true}"
    echo "$line" | python3 -c "import json,sys; r=json.load(sys.stdin); r['case']='$c'; r['schedule']='$label'; print(json.dumps(r))" \
      >> "$OUT/tessel_cuda.jsonl"
  }
  run default --no-flush-l2 $check
  [ "${SKIP_FLUSH:-0}" = 1 ] || run default-flush
  [ -f $SCHEDULES/hand/$c.json ] && run hand --no-flush-l2 --schedule $SCHEDULES/hand/$c.json $check
  [ -f $SCHEDULES/$c.json ] && run tuned --no-flush-l2 --schedule $SCHEDULES/$c.json
  for v in ${VARIANTS:+$VARIANTS/$c.*.json}; do
    [ -f "$v" ] || continue
    label=${v##*/$c.}
    run "hand:${label%.json}" --no-flush-l2 --schedule "$v"
  done
done

# torch on the same GPU in the same run.
BUDGET_S=${BUDGET_S:-200} OUT="$OUT" timeout "${TORCH_TIMEOUT_S:-400}" \
  python3 experiments/gpu/torch_baselines.py --suite "$SUITE" --group "$group" > "$OUT/torch.txt" 2>&1
echo "torch rc=$?" >> "$OUT/torch.txt"
