#!/usr/bin/env bash
# Held-out evaluation of the cost model (issue 6, acceptance 3) under several tree options, on the
# GPU host's 16 cores (the evaluation needs no GPU; this machine's 2 cores take 18 minutes for one
# option set on the 654-workload log). Imports the committed H100 training logs (LOGS, default every
# experiments/costmodel/data/h100_training_s1*.jsonl.gz; session 16 had s1[2345]), builds the feature
# cache once, then runs `transfer_eval --folds 10` once per option set (one per line of OPTIONS, ""
# being the defaults) until TIME_S is spent. Writes under $OUT: sweep.txt (every run's full output,
# each headed by its options and wall time), run<N>.txt (the N-th run's output) and summary.txt (options,
# mean pairwise / top-5% recall).
#
# CACHE_GZ: a gzipped feature cache of the same logs (transfer_eval --cache, built here) to start from
# instead of extracting the features there (about two minutes of the call). Each run's output goes
# to $OUT/run<N>.txt as it is written, so a run cut off by the call's limit leaves what it printed.
#
#   OUT=... [TIME_S=540] [INPUT=programs] [LOGS=GLOB] [CACHE_GZ=FILE] bash experiments/costmodel/sweep_gpu_host.sh OPTIONS_FILE
# The bundle (carry/bundle.tgz, made with BUNDLE_EXTRA=transfer_eval) must hold bin/transfer_eval.
set -uo pipefail
B=${B:-bundle}
OUT=${OUT:?set OUT}
OPTIONS=${1:?options file: one option set a line}
mkdir -p "$OUT"
start=$(date +%s)
[ -d "$B" ] || tar -xzf "${BUNDLE_TGZ:-carry/bundle.tgz}"
[ -x "$B/bin/transfer_eval" ] || { echo "error: $B/bin/transfer_eval is missing (make the bundle with BUNDLE_EXTRA=transfer_eval)" >&2; exit 2; }
work=$(mktemp -d)
# shellcheck disable=SC2086  # LOGS is a glob
zcat ${LOGS:-experiments/costmodel/data/h100_training_s1*.jsonl.gz} > "$work/h.jsonl"
"$B/bin/tessel" db import --db "$work/g.db" "$work/h.jsonl" > "$OUT/import.txt" 2>&1 || { cat "$OUT/import.txt"; exit 1; }
echo "$(nproc) cores; $(date -u +%Y-%m-%dT%H:%M:%SZ); $(git rev-parse --short HEAD 2>/dev/null)" > "$OUT/summary.txt"
: > "$OUT/sweep.txt"
[ -n "${CACHE_GZ:-}" ] && zcat "$CACHE_GZ" > "$work/cache"
run=0
while IFS= read -r opts || [ -n "$opts" ]; do
  case "$opts" in \#*) continue ;; esac
  if [ $(( $(date +%s) - start )) -ge "${TIME_S:-540}" ]; then
    echo "[$opts] not run: time spent" >> "$OUT/summary.txt"
    continue
  fi
  t0=$(date +%s)
  run=$((run + 1))
  # shellcheck disable=SC2086  # each line is a list of options
  "$B/bin/transfer_eval" --db "$work/g.db" --target cuda --cache "$work/cache" --input "${INPUT:-programs}" \
    --folds 10 $opts > "$OUT/run$run.txt" 2>&1
  rc=$?
  { echo "== [$opts] rc=$rc, $(( $(date +%s) - t0 )) s"; cat "$OUT/run$run.txt"; } >> "$OUT/sweep.txt"
  echo "[$opts] rc=$rc $(( $(date +%s) - t0 )) s: $(grep '^mean' "$OUT/run$run.txt")" >> "$OUT/summary.txt"
done < "$OPTIONS"
rm -rf "$work"
