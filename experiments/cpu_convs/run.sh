#!/usr/bin/env bash
# CPU convolutions, tessel against torch (oneDNN) on this machine: each shape tuned for TRIALS trials
# (`tessel tune --op conv2d`), then timed in ROUNDS interleaved rounds -- torch, tessel's default
# schedule, tessel's best from the log -- each at THREADS threads; each round's ratio compares them.
# TRIALS=0 skips tuning and compares the default. Writes OUT/README.md (the table, the command and
# the machine); the log stays in WORK.
#
#   [OUT=experiments/results/cpu_convs] [WORK=dir] [TRIALS=64] [ROUNDS=3] [LAYOUT=auto] experiments/cpu_convs/run.sh [SHAPE ...]
#
# SHAPE is one of the names below (default: all). LAYOUT is tessel's layout: nchw, nchw8c or
# nchw16c (channels in blocks; input, weights and output laid out ahead, outside the timing),
# nchw-to-nchw16c (the input as NCHW, weights and output in blocks), nchw8c-to-nchw16c (the input
# in blocks of 8), or auto: as a model's layout pass chooses on this CPU (frontend/channel_blocks.h):
# the output's channels in blocks of one vector (16 with AVX-512, 8 with AVX2) where they divide F,
# else of 8, else nchw; the input's likewise by C (left NCHW when its channels fill no block of 8, an
# image's 3). Needs build/tools/tessel and Debian's python3-torch.
set -euo pipefail
cd "$(dirname "$0")/../.."
T=${T:-build/tools/tessel}
PY=${PY:-/usr/bin/python3}
OUT=${OUT:-experiments/results/cpu_convs}
WORK=${WORK:-$(mktemp -d)}
TRIALS=${TRIALS:-64}
ROUNDS=${ROUNDS:-3}
THREADS=${THREADS:-$(nproc)}
LAYOUT=${LAYOUT:-auto}
DB=$WORK/cpu_convs.db
WIDEST=8  # a vector's float lanes, as tessel detects them: 16 with AVX-512
grep -qw avx512f /proc/cpuinfo && WIDEST=16
# name: N C H W F KH KW stride pad groups (batch 1): every distinct convolution of ResNet-50 and of
# MobileNetV2 (torchvision's), in the order the models run them
declare -A SHAPES=(
  [r50_7x7_3to64_224s2]="1 3 224 224 64 7 7 2 3 1"
  [r50_1x1_64to64_56]="1 64 56 56 64 1 1 1 0 1"
  [r50_3x3_64to64_56]="1 64 56 56 64 3 3 1 1 1"
  [r50_1x1_64to256_56]="1 64 56 56 256 1 1 1 0 1"
  [r50_1x1_256to64_56]="1 256 56 56 64 1 1 1 0 1"
  [r50_1x1_256to128_56]="1 256 56 56 128 1 1 1 0 1"
  [r50_3x3_128to128_56s2]="1 128 56 56 128 3 3 2 1 1"
  [r50_1x1_128to512_28]="1 128 28 28 512 1 1 1 0 1"
  [r50_1x1_256to512_56s2]="1 256 56 56 512 1 1 2 0 1"
  [r50_1x1_512to128_28]="1 512 28 28 128 1 1 1 0 1"
  [r50_3x3_128to128_28]="1 128 28 28 128 3 3 1 1 1"
  [r50_1x1_512to256_28]="1 512 28 28 256 1 1 1 0 1"
  [r50_3x3_256to256_28s2]="1 256 28 28 256 3 3 2 1 1"
  [r50_1x1_256to1024_14]="1 256 14 14 1024 1 1 1 0 1"
  [r50_1x1_512to1024_28s2]="1 512 28 28 1024 1 1 2 0 1"
  [r50_1x1_1024to256_14]="1 1024 14 14 256 1 1 1 0 1"
  [r50_3x3_256to256_14]="1 256 14 14 256 3 3 1 1 1"
  [r50_1x1_1024to512_14]="1 1024 14 14 512 1 1 1 0 1"
  [r50_3x3_512to512_14s2]="1 512 14 14 512 3 3 2 1 1"
  [r50_1x1_512to2048_7]="1 512 7 7 2048 1 1 1 0 1"
  [r50_1x1_1024to2048_14s2]="1 1024 14 14 2048 1 1 2 0 1"
  [r50_1x1_2048to512_7]="1 2048 7 7 512 1 1 1 0 1"
  [r50_3x3_512to512_7]="1 512 7 7 512 3 3 1 1 1"
  [mb2_3x3_3to32_224s2]="1 3 224 224 32 3 3 2 1 1"
  [mb2_dw_32_112]="1 32 112 112 32 3 3 1 1 32"
  [mb2_1x1_32to16_112]="1 32 112 112 16 1 1 1 0 1"
  [mb2_1x1_16to96_112]="1 16 112 112 96 1 1 1 0 1"
  [mb2_dw_96_112s2]="1 96 112 112 96 3 3 2 1 96"
  [mb2_1x1_96to24_56]="1 96 56 56 24 1 1 1 0 1"
  [mb2_1x1_24to144_56]="1 24 56 56 144 1 1 1 0 1"
  [mb2_dw_144_56]="1 144 56 56 144 3 3 1 1 144"
  [mb2_1x1_144to24_56]="1 144 56 56 24 1 1 1 0 1"
  [mb2_dw_144_56s2]="1 144 56 56 144 3 3 2 1 144"
  [mb2_1x1_144to32_28]="1 144 28 28 32 1 1 1 0 1"
  [mb2_1x1_32to192_28]="1 32 28 28 192 1 1 1 0 1"
  [mb2_dw_192_28]="1 192 28 28 192 3 3 1 1 192"
  [mb2_1x1_192to32_28]="1 192 28 28 32 1 1 1 0 1"
  [mb2_dw_192_28s2]="1 192 28 28 192 3 3 2 1 192"
  [mb2_1x1_192to64_14]="1 192 14 14 64 1 1 1 0 1"
  [mb2_1x1_64to384_14]="1 64 14 14 384 1 1 1 0 1"
  [mb2_dw_384_14]="1 384 14 14 384 3 3 1 1 384"
  [mb2_1x1_384to64_14]="1 384 14 14 64 1 1 1 0 1"
  [mb2_1x1_384to96_14]="1 384 14 14 96 1 1 1 0 1"
  [mb2_1x1_96to576_14]="1 96 14 14 576 1 1 1 0 1"
  [mb2_dw_576_14]="1 576 14 14 576 3 3 1 1 576"
  [mb2_1x1_576to96_14]="1 576 14 14 96 1 1 1 0 1"
  [mb2_dw_576_14s2]="1 576 14 14 576 3 3 2 1 576"
  [mb2_1x1_576to160_7]="1 576 7 7 160 1 1 1 0 1"
  [mb2_1x1_160to960_7]="1 160 7 7 960 1 1 1 0 1"
  [mb2_dw_960_7]="1 960 7 7 960 3 3 1 1 960"
  [mb2_1x1_960to160_7]="1 960 7 7 160 1 1 1 0 1"
  [mb2_1x1_960to320_7]="1 960 7 7 320 1 1 1 0 1"
  [mb2_1x1_320to1280_7]="1 320 7 7 1280 1 1 1 0 1"
)
ORDER=(
  r50_7x7_3to64_224s2 r50_1x1_64to64_56 r50_3x3_64to64_56 r50_1x1_64to256_56 r50_1x1_256to64_56
  r50_1x1_256to128_56 r50_3x3_128to128_56s2 r50_1x1_128to512_28 r50_1x1_256to512_56s2 r50_1x1_512to128_28
  r50_3x3_128to128_28 r50_1x1_512to256_28 r50_3x3_256to256_28s2 r50_1x1_256to1024_14 r50_1x1_512to1024_28s2
  r50_1x1_1024to256_14 r50_3x3_256to256_14 r50_1x1_1024to512_14 r50_3x3_512to512_14s2 r50_1x1_512to2048_7
  r50_1x1_1024to2048_14s2 r50_1x1_2048to512_7 r50_3x3_512to512_7 mb2_3x3_3to32_224s2 mb2_dw_32_112
  mb2_1x1_32to16_112 mb2_1x1_16to96_112 mb2_dw_96_112s2 mb2_1x1_96to24_56 mb2_1x1_24to144_56 mb2_dw_144_56
  mb2_1x1_144to24_56 mb2_dw_144_56s2 mb2_1x1_144to32_28 mb2_1x1_32to192_28 mb2_dw_192_28 mb2_1x1_192to32_28
  mb2_dw_192_28s2 mb2_1x1_192to64_14 mb2_1x1_64to384_14 mb2_dw_384_14 mb2_1x1_384to64_14 mb2_1x1_384to96_14
  mb2_1x1_96to576_14 mb2_dw_576_14 mb2_1x1_576to96_14 mb2_dw_576_14s2 mb2_1x1_576to160_7 mb2_1x1_160to960_7
  mb2_dw_960_7 mb2_1x1_960to160_7 mb2_1x1_960to320_7 mb2_1x1_320to1280_7
)
[ $# -gt 0 ] && ORDER=("$@")
mkdir -p "$OUT" "$WORK"
[ -x "$T" ] || { echo "error: $T is missing (run make first)" >&2; exit 2; }

rows=()
for name in "${ORDER[@]}"; do
  spec=${SHAPES[$name]:-}
  [ -n "$spec" ] || { echo "error: unknown shape '$name'" >&2; exit 2; }
  read -r n c h w f kh kw s p g <<< "$spec"
  layout=$LAYOUT
  if [ "$LAYOUT" = auto ]; then  # as a model's layout pass: each side in blocks of a vector, else 8, else NCHW
    block() {
      if [ $(($1 % WIDEST)) = 0 ]; then echo nchw${WIDEST}c; elif [ $(($1 % 8)) = 0 ]; then echo nchw8c; else echo nchw; fi
    }
    out=$(block "$f"); in=$(block "$c")
    [ "$g" = 1 ] || in=$out  # depthwise: the input in the output's blocks
    layout=$out
    [ "$out" = nchw ] || [ "$in" = "$out" ] || layout=$in-to-$out
  fi
  params=(--param N=$n --param C=$c --param H=$h --param W=$w --param F=$f --param KH=$kh --param KW=$kw
          --param stride=$s --param pad=$p --param groups=$g --param dilation=1 --param bias=0 --param act=none
          --param layout=$layout)
  if [ "$TRIALS" -gt 0 ]; then
    echo "== $name: tuning $TRIALS trials" >&2
    "$T" tune --op conv2d "${params[@]}" --trials "$TRIALS" --db "$DB" --seed 1 >> "$WORK/tune_$name.txt" 2>&1
  fi
  : > "$WORK/t_$name"; : > "$WORK/d_$name"; : > "$WORK/b_$name"
  for _ in $(seq "$ROUNDS"); do
    "$PY" experiments/cpu_convs/torch_conv.py $n $c $h $w $f $kh $kw $s $p $g "$THREADS" 1 |
      "$PY" -c 'import json,sys; print(json.load(sys.stdin)["median_s"])' >> "$WORK/t_$name"
    "$T" run --op conv2d "${params[@]}" --schedule default --threads "$THREADS" --min-time 1 --json |
      "$PY" -c 'import json,sys; print(json.load(sys.stdin)["median_ms"] / 1e3)' >> "$WORK/d_$name"
    [ "$TRIALS" -gt 0 ] || continue
    "$T" run --op conv2d "${params[@]}" --best --db "$DB" --threads "$THREADS" --min-time 1 --json |
      "$PY" -c 'import json,sys; print(json.load(sys.stdin)["median_ms"] / 1e3)' >> "$WORK/b_$name"
  done
  oh=$(( (h + 2 * p - kh) / s + 1 )); ow=$(( (w + 2 * p - kw) / s + 1 ))
  flops=$(( 2 * n * f * oh * ow * (c / g) * kh * kw ))
  rows+=("$("$PY" -c "
import statistics, sys
name, spec, layout, flops, work = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
def times(kind):
    with open(f'{work}/{kind}_{name}') as f:
        return [float(line) for line in f if line.strip()]
t, d, b = times('t'), times('d'), times('b')
x = b or d  # no tuning: the default is what is compared
# The speed is the median over rounds of each round's ratio: torch and tessel timed back to back
# see the same machine, where rounds apart may not.
speed = statistics.median(tt / xx for tt, xx in zip(t, x))
tuned = f'{statistics.median(b) * 1e3:.3f}' if b else '-'
print(f'| {name} | {spec} | {layout} | {statistics.median(t) * 1e3:.3f} | {statistics.median(d) * 1e3:.3f} | '
      f'{tuned} | {speed:.2f}x | {flops / statistics.median(x) / 1e9:.1f} |')
" "$name" "$spec" "$layout" "$flops" "$WORK")")
  echo "${rows[-1]}" >&2
done
{
  echo "# CPU convolutions: tessel against torch (oneDNN)"
  echo
  echo "Machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; $(date -u +%Y-%m-%d); tessel $(git rev-parse --short HEAD);"
  echo "torch $("$PY" -c 'import torch; print(torch.__version__)') (Debian's python3-torch). Threads: $THREADS for both."
  echo
  echo "Command: \`TRIALS=$TRIALS ROUNDS=$ROUNDS LAYOUT=$LAYOUT experiments/cpu_convs/run.sh ${ORDER[*]}\`"
  echo
  if [ "$TRIALS" -gt 0 ]; then
    echo "Each shape tuned for $TRIALS trials (\`tessel tune --op conv2d ... --seed 1\`), then $ROUNDS interleaved"
  else
    echo "No tuning (TRIALS=0: the \"vs torch\" and GFLOP/s columns are the default's). $ROUNDS interleaved"
  fi
  echo "rounds of: torch's median call time (the faster of NCHW and channels_last), tessel's default schedule, tessel's best from the log"
  echo "(\`tessel run --op conv2d ... --best\`, median of at least 1 s of calls); the times are medians over"
  echo "rounds, \"vs torch\" the median of each round's ratio (torch's time over tessel's tuned, timed back"
  echo "to back). Shape: N C H W F KH KW stride pad groups; batch 1, fp32. tessel's layout: nchw, or"
  echo "nchw8c / nchw16c (channels in blocks of 8 / 16: input, weights and output laid out so ahead of"
  echo "the timed calls, as a model's weights are at build time); torch takes NCHW or channels_last."
  echo "GFLOP/s count the real channels' work (2 N F H' W' C/g KH KW), not the padding lanes of a block."
  echo
  echo "| shape | N C H W F KH KW s p g | tessel layout | torch ms | tessel default ms | tessel tuned ms | vs torch | GFLOP/s |"
  echo "|---|---|---|---:|---:|---:|---:|---:|"
  printf '%s\n' "${rows[@]}"
} > "$OUT/README.md"
cat "$OUT/README.md"
