#!/usr/bin/env bash
# Correctness over random schedules: `tessel check --random-schedules N` (N random schedules and the
# default, each checked against the reference interpreter) for every op template at small odd
# shapes, and convolutions in channel blocks (depthwise and strided, dilated, a stem reading NCHW),
# all at once; prints each one's summary and exit status.
#
#   [TARGET=cuda|llvm] [T=bundle/bin/tessel] [DTYPE=fp16|bf16] bash experiments/gpu/check_random.sh WORKDIR [N]
# TARGET defaults to cuda (run on the GPU host from the bundle); TARGET=llvm T=build/tools/tessel
# checks this CPU's code the same way. DTYPE checks the templates that take one (matmul, dense,
# batch_matmul, conv2d) in that type, at shapes that are no multiple of 16.
set -uo pipefail
TARGET=${TARGET:-cuda}
T=${T:-bundle/bin/tessel}
W=${1:?work directory}
N=${2:-50}
DTYPE=${DTYPE:-}
mkdir -p "$W"
ops=(
  "matmul --param M=61 --param N=7 --param K=13"
  "dense --param M=13 --param N=61 --param K=7 --param bias=1 --param act=gelu"
  "batch_matmul --param B=3 --param M=7 --param N=13 --param K=61"
  "conv2d --param N=2 --param C=4 --param H=13 --param W=7 --param F=6 --param KH=3 --param KW=3 --param pad=1 --param stride=2 --param groups=2 --param bias=1 --param act=silu"
  "conv2d --param N=1 --param C=13 --param H=11 --param W=9 --param F=13 --param KH=3 --param KW=3 --param pad=1 --param stride=2 --param groups=13 --param bias=1 --param act=relu --param layout=nchw8c"
  "conv2d --param N=1 --param C=11 --param H=13 --param W=9 --param F=19 --param KH=3 --param KW=3 --param pad=2 --param dilation=2 --param stride=2 --param layout=nchw16c"
  "conv2d --param N=1 --param C=3 --param H=15 --param W=13 --param F=21 --param KH=7 --param KW=7 --param pad=3 --param stride=2 --param bias=1 --param act=relu --param layout=nchw-to-nchw8c"
  "softmax --param rows=7 --param cols=61"
  "layernorm --param rows=13 --param cols=127"
  "rmsnorm --param rows=13 --param cols=61"
  "reduce_sum --param rows=61 --param cols=127"
  "bias_residual_layernorm --param rows=7 --param cols=61"
  "elementwise --param shape=7x13x3 --param inputs=3 --param expr=tanh(x)*y+exp(z)-pow(abs(x),y)"
)
dtype=()
if [ -n "$DTYPE" ]; then
  dtype=(--dtype "$DTYPE")
  ops=(
    "matmul --param M=197 --param N=771 --param K=61"
    "dense --param M=7 --param N=1000 --param K=197 --param bias=1 --param act=gelu"
    "batch_matmul --param B=3 --param M=61 --param N=197 --param K=7"
    "conv2d --param N=1 --param C=7 --param H=61 --param W=61 --param F=13 --param KH=3 --param KW=3 --param pad=1 --param stride=2"
  )
fi
i=0
for op in "${ops[@]}"; do
  # shellcheck disable=SC2086  # $op is the op and its parameters, one word each
  ( echo "== tessel check --op $op ${dtype[*]} --target $TARGET --random-schedules $N"
    timeout 600 "$T" check --op $op "${dtype[@]}" --target "$TARGET" --random-schedules "$N" 2>&1 |
      grep -E "FAIL|checked|error" | cut -c1-400
    echo "rc=${PIPESTATUS[0]}" ) > "$W/check_$i.part" &
  i=$((i+1))
done
wait
cat "$W"/check_*.part
rm -f "$W"/check_*.part
