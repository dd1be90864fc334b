#!/usr/bin/env bash
# One device call on the H100: GPU tests, random-schedule checks of every op template at odd shapes,
# tessel's default GPU schedules on the suite, and the torch baselines, all written under $OUT.
# Usage (from the repo root, with bundle/ carried): bash experiments/gpu/run_h100.sh [mem|compute|all]
set -uo pipefail
group=${1:-mem}
B=bundle
T=$B/bin/tessel
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$OUT/gpu.txt" 2>&1

# 1. GPU tests (kernels run and are checked on the device).
if [ "${DO_CHECKS:-1}" = 1 ]; then
timeout 120 $B/bin/test_cuda > "$OUT/test_cuda.txt" 2>&1; echo "test_cuda rc=$?" >> "$OUT/test_cuda.txt"

# 2. 50 random schedules + the default per op template at odd shapes, checked on the GPU.
B=$B bash experiments/gpu/check_random.sh "$OUT" 50 > "$OUT/check_cuda.txt"
fi

# 3. The suite cases of the group: the default GPU schedule, the hand-written one under
#    schedules/cuda/hand/ and the tuner's best under schedules/cuda/; timed without L2 flush (as
#    torch's CUDA-graph replay is) and, for the default, with it. The default and the hand-written
#    schedule are checked against the reference interpreter where it is cheap.
: > "$OUT/tessel_cuda.jsonl"
cases=$(python3 -c "
import json
g='$group'
for c in json.load(open('$B/suite.json'))['cases']:
    compute = c['flops'] > 0
    if g == 'all' or (g == 'compute') == compute: print(c['name'])")
[ -n "${VARIANTS:-}" ] && python3 experiments/schedules/cuda/hand/hand.py --variants "$VARIANTS"
for c in $cases; do
  check=--check
  case $c in gemm_4096|dense_bias_gelu_1024x768x3072|conv2d_bias_relu_b16_256x14x14_k3) check= ;; esac
  run() {  # label, extra args
    local label=$1; shift
    local line
    line=$(timeout 120 $T run --target cuda --suite $B/suite.json --case "$c" --json "$@" 2>> "$OUT/tessel_cuda.err") \
      || line="{\"workload\": \"$c\", \"failed\": true}"
    echo "$line" | python3 -c "import json,sys; r=json.load(sys.stdin); r['case']='$c'; r['schedule']='$label'; print(json.dumps(r))" >> "$OUT/tessel_cuda.jsonl"
  }
  run default --no-flush-l2 $check
  [ "${SKIP_FLUSH:-0}" = 1 ] || run default-flush
  [ -f $B/schedules/cuda/hand/$c.json ] && run hand --no-flush-l2 --schedule $B/schedules/cuda/hand/$c.json $check
  [ -f $B/schedules/cuda/$c.json ] && run tuned --no-flush-l2 --schedule $B/schedules/cuda/$c.json
  # VARIANTS=DIR: also the alternatives of `hand.py --variants DIR`, labelled hand:<name>.
  for v in ${VARIANTS:+$VARIANTS/$c.*.json}; do
    [ -f "$v" ] || continue
    label=${v##*/$c.}; run "hand:${label%.json}" --no-flush-l2 --schedule "$v"
  done
done

# 4. torch baselines, same GPU, same call.
if [ -f $B/torch_baselines.py ]; then
  cd "$OUT" && BUDGET_S=${BUDGET_S:-200} OUT="$OUT" timeout ${TORCH_TIMEOUT:-280} python3 "$OLDPWD/$B/torch_baselines.py" "$group" > torch.log 2>&1
fi
ls -la "$OUT"
