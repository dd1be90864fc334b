#!/usr/bin/env bash
# The cost model on workloads it never saw, through the product's own commands: the workloads of a
# tuning log split into K folds (the i-th workload in `tessel db best`'s order goes to fold i mod K),
# and for each fold `tessel costmodel train --exclude-workload ...` on the other folds' records, then
# `tessel costmodel eval --holdout-workload ...` on its own. Prints each fold's eval output and, at the
# end, the mean over every evaluated workload of the pairwise ranking accuracy and the top-5% recall.
# K = the number of workloads makes it leave-one-workload-out.
#
#   experiments/costmodel/model_eval_folds.sh LOG TARGET K [FOLD ...] [-- MODEL_TRAIN_OPTION ...]
# FOLD ...: only these folds (numbered from 0; default all), to split the work over machines.
# BUILD: the build directory with tools/tessel (default build); T: the tessel binary itself.
# The committed H100 log: zcat experiments/costmodel/data/h100_training.jsonl.gz > h.jsonl &&
#   build/tools/tessel db import --db h100.db h.jsonl
set -euo pipefail
LOG=${1:?tuning log}
TARGET=${2:?llvm or cuda}
K=${3:?number of folds}
shift 3
folds=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do folds+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
train_options=("$@")
T=${T:-${BUILD:-build}/tools/tessel}
[[ $K =~ ^[1-9][0-9]*$ ]] || { echo "error: K must be a positive number, not '$K'" >&2; exit 2; }
[ ${#folds[@]} -gt 0 ] || mapfile -t folds < <(seq 0 $((K - 1)))
for f in "${folds[@]}"; do  # a fold outside 0..K-1 (or a train option without --) would hold out nothing
  [[ $f =~ ^[0-9]+$ ]] && (( f < K )) || { echo "error: fold '$f' is not in 0..$((K - 1)) (train options go after --)" >&2; exit 2; }
done
cm=costmodel
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

"$T" db best --db "$LOG" --json | python3 -c "
import json, sys
for r in json.load(sys.stdin):
    if r['target']['kind'] == '$TARGET': print(r['workload'])" > "$WORK/keys"
total=$(wc -l < "$WORK/keys")
[ "$total" -ge "$K" ] || { echo "error: $LOG has $total $TARGET workloads, fewer than $K folds" >&2; exit 2; }

for f in "${folds[@]}"; do
  mapfile -t held < <(awk -v k="$K" -v f="$f" '(NR - 1) % k == f' "$WORK/keys")
  [ ${#held[@]} -gt 0 ] || { echo "error: fold $f holds no workload" >&2; exit 2; }
  args=()
  holdout=()
  for key in "${held[@]}"; do args+=(--exclude-workload "$key"); holdout+=(--holdout-workload "$key"); done
  echo "## fold $f of $K: ${#held[@]} workloads held out"
  echo "\$ tessel $cm train --db $LOG --target $TARGET ${train_options[*]} --exclude-workload ... -o model.json"
  start=$(date +%s)
  "$T" $cm train --db "$LOG" --target "$TARGET" "${train_options[@]}" "${args[@]}" -o "$WORK/model.json"
  echo "(train wall $(( $(date +%s) - start )) s)"
  echo "\$ tessel $cm eval --db $LOG --target $TARGET --costmodel model.json --holdout-workload ..."
  "$T" $cm eval --db "$LOG" --target "$TARGET" --costmodel "$WORK/model.json" "${holdout[@]}" | tee "$WORK/eval_$f.txt"
done

# The mean over every held-out workload of every fold run (the eval lines of a workload key).
cat "$WORK"/eval_*.txt | awk '
  $1 ~ /^[0-9a-f]+$/ && NF == 5 { pw += $4; rec += $5; n++ }
  END { if (n) printf "mean over %d held-out workloads: pairwise %.4f  top-5%% recall %.4f\n", n, pw / n, rec / n }'
