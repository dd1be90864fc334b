#!/usr/bin/env bash
# Issue 6, acceptance 3: the cost model on held-out workloads. For every workload of a tuning log,
# train on the other workloads' records and evaluate on that one's (pairwise ranking accuracy,
# recall of the true top 5% in the predicted top 5%).
#
#   experiments/tune/model_eval.sh LOG [TARGET]
set -euo pipefail
cd "$(dirname "$0")/../.."
LOG=${1:?tuning log}
TARGET=${2:-llvm}
T=${BUILD:-build}/tools/tessel
WORK=$(mktemp -d)
keys=$($T db export --db "$LOG" | python3 -c "
import json, sys
seen = []
for line in sys.stdin:
    k = json.loads(line)['workload']['key']
    if k not in seen: seen.append(k)
print(' '.join(seen))")
for k in $keys; do
  echo "## held out: $k"
  echo '```'
  echo "\$ $T model train --db $LOG --target $TARGET --exclude-workload $k -o model.json"
  $T model train --db "$LOG" --target "$TARGET" --exclude-workload "$k" -o "$WORK/model.json"
  echo "\$ $T model eval --db $LOG --target $TARGET --model model.json --holdout-workload $k"
  $T model eval --db "$LOG" --target "$TARGET" --model "$WORK/model.json" --holdout-workload "$k"
  echo '```'
done
rm -rf "$WORK"
