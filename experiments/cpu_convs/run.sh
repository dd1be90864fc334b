#!/usr/bin/env bash
# CPU convolutions, tessel against torch (oneDNN) on this machine: each shape tuned for TRIALS trials
# (`tessel tune --op conv2d`), then timed in ROUNDS interleaved rounds -- torch, tessel's default
# schedule, tessel's best from the log -- each at THREADS threads, and the medians over rounds
# compared. Writes OUT/README.md (the table, the command and the machine); the log stays in WORK.
#
#   [OUT=experiments/results/cpu_convs] [WORK=dir] [TRIALS=64] [ROUNDS=3] [LAYOUT=auto] experiments/cpu_convs/run.sh [SHAPE ...]
#
# SHAPE is one of the names below (default: all). LAYOUT is tessel's layout: nchw, nchw8c or
# nchw16c (channels in blocks; input, weights and output laid out ahead, outside the timing),
# nchw-to-nchw16c (the input as NCHW, weights and output in blocks), or auto: as a model's layout
# pass chooses (frontend/channel_blocks.h): blocks of 16 where they divide F, else nchw, with the
# input left NCHW when its channels fill no block of 8 (an image's 3). Needs build/tools/tessel and
# Debian's python3-torch.
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
# name: N C H W F KH KW stride pad groups (batch 1, the models' own shapes)
declare -A SHAPES=(
  [r50_conv1_7x7s2]="1 3 224 224 64 7 7 2 3 1"
  [r50_3x3_64_56]="1 64 56 56 64 3 3 1 1 1"
  [r50_3x3s2_128_56]="1 128 56 56 128 3 3 2 1 1"
  [r50_3x3_256_14]="1 256 14 14 256 3 3 1 1 1"
  [r50_1x1_256to64_56]="1 256 56 56 64 1 1 1 0 1"
  [r50_1x1s2_256to512_56]="1 256 56 56 512 1 1 2 0 1"
  [mb2_dw_144_56]="1 144 56 56 144 3 3 1 1 144"
  [mb2_dw_s2_96_112]="1 96 112 112 96 3 3 2 1 96"
  [mb2_dw_576_14]="1 576 14 14 576 3 3 1 1 576"
  [mb2_pw_144to24_56]="1 144 56 56 24 1 1 1 0 1"
)
ORDER=(r50_conv1_7x7s2 r50_3x3_64_56 r50_3x3s2_128_56 r50_3x3_256_14 r50_1x1_256to64_56 r50_1x1s2_256to512_56
       mb2_dw_144_56 mb2_dw_s2_96_112 mb2_dw_576_14 mb2_pw_144to24_56)
[ $# -gt 0 ] && ORDER=("$@")
mkdir -p "$OUT" "$WORK"
[ -x "$T" ] || { echo "error: $T is missing (run make first)" >&2; exit 2; }

median() { sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
rows=()
for name in "${ORDER[@]}"; do
  spec=${SHAPES[$name]:-}
  [ -n "$spec" ] || { echo "error: unknown shape '$name'" >&2; exit 2; }
  read -r n c h w f kh kw s p g <<< "$spec"
  layout=$LAYOUT
  if [ "$LAYOUT" = auto ]; then
    layout=nchw
    if [ $((f % 16)) = 0 ]; then
      layout=nchw16c; [ "$g" = 1 ] && [ $((c % 8)) != 0 ] && layout=nchw-to-nchw16c
    fi
  fi
  params=(--param N=$n --param C=$c --param H=$h --param W=$w --param F=$f --param KH=$kh --param KW=$kw
          --param stride=$s --param pad=$p --param groups=$g --param dilation=1 --param bias=0 --param act=none
          --param layout=$layout)
  echo "== $name: tuning $TRIALS trials" >&2
  "$T" tune --op conv2d "${params[@]}" --trials "$TRIALS" --db "$DB" --seed 1 >> "$WORK/tune_$name.txt" 2>&1
  : > "$WORK/t_$name"; : > "$WORK/d_$name"; : > "$WORK/b_$name"
  for _ in $(seq "$ROUNDS"); do
    "$PY" experiments/cpu_convs/torch_conv.py $n $c $h $w $f $kh $kw $s $p $g "$THREADS" 1 |
      "$PY" -c 'import json,sys; print(json.load(sys.stdin)["median_s"])' >> "$WORK/t_$name"
    "$T" run --op conv2d "${params[@]}" --schedule default --threads "$THREADS" --min-time 1 --json |
      "$PY" -c 'import json,sys; print(json.load(sys.stdin)["median_ms"] / 1e3)' >> "$WORK/d_$name"
    "$T" run --op conv2d "${params[@]}" --best --db "$DB" --threads "$THREADS" --min-time 1 --json |
      "$PY" -c 'import json,sys; print(json.load(sys.stdin)["median_ms"] / 1e3)' >> "$WORK/b_$name"
  done
  oh=$(( (h + 2 * p - kh) / s + 1 )); ow=$(( (w + 2 * p - kw) / s + 1 ))
  flops=$(( 2 * n * f * oh * ow * (c / g) * kh * kw ))
  tt=$(median < "$WORK/t_$name"); td=$(median < "$WORK/d_$name"); tb=$(median < "$WORK/b_$name")
  rows+=("$("$PY" -c "
import sys
name, spec, layout, flops, t, d, b = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), *map(float, sys.argv[5:])
print(f'| {name} | {spec} | {layout} | {t * 1e3:.3f} | {d * 1e3:.3f} | {b * 1e3:.3f} | {t / b:.2f}x | {flops / b / 1e9:.1f} |')
" "$name" "$spec" "$layout" "$flops" "$tt" "$td" "$tb")")
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
  echo "Each shape tuned for $TRIALS trials (\`tessel tune --op conv2d ... --seed 1\`), then $ROUNDS interleaved"
  echo "rounds of: torch's median call time (the faster of NCHW and channels_last), tessel's default schedule, tessel's best from the log"
  echo "(\`tessel run --op conv2d ... --best\`, median of at least 1 s of calls); the table gives the median"
  echo "over rounds. Shape: N C H W F KH KW stride pad groups; batch 1, fp32. tessel's layout: nchw, or"
  echo "nchw8c / nchw16c (channels in blocks of 8 / 16: input, weights and output laid out so ahead of"
  echo "the timed calls, as a model's weights are at build time); torch takes NCHW or channels_last."
  echo "GFLOP/s count the real channels' work (2 N F H' W' C/g KH KW), not the padding lanes of a block."
  echo
  echo "| shape | N C H W F KH KW s p g | tessel layout | torch ms | tessel default ms | tessel tuned ms | tuned vs torch | tuned GFLOP/s |"
  echo "|---|---|---|---:|---:|---:|---:|---:|"
  printf '%s\n' "${rows[@]}"
} > "$OUT/README.md"
cat "$OUT/README.md"
