#!/usr/bin/env bash
# What the neural ranker costs on the GPU host, for choosing the default network of `tessel tune` and
# `tessel model train` (issue 6): run from the repository root on the host, with the bundle
# (`BUNDLE_EXTRA=transfer_eval make bundle`) and the inputs carried.
#
#   OUT=... [CACHE_XZ=carry/c654.xz] [SMALL_GZ=carry/small17.db.gz] [TUNE_S=80] [PARTS="round tune fold0"] \
#     [FOLD0_THREADS="16 4"] [FOLD0_TREES=1] bash experiments/costmodel/ranker_cost_gpu_host.sh
# PARTS: which of the three below to run.
#
# 1. One tuning round's training, as `tessel model train` on SMALL_GZ (17 workloads x 128 records of the
#    H100 log: a 17-task session half-way), for each network, on 16, 4 and 1 CPUs (taskset: the model
#    uses the CPUs the process may run on).            -> round.txt
# 2. `tessel tune --all --target cuda` for TUNE_S seconds with each network, a line per round with the
#    seconds spent learning (-v).                       -> tune_summary.txt, tune_deepsets.txt
# 3. Training on 589 workloads (fold 0 of the 654-workload log's 10; transfer_eval from the cache
#    CACHE_XZ, made by transfer_eval --cache and xz), the deepsets network cut to 30 passes, its products on 16 and 4 threads, and the
#    trees alone: seconds a step at full scale.          -> fold0.txt
# host.txt: the CPU and GPU. Each run is timed by `time` and cut by `timeout`.
set -uo pipefail
B=${B:-bundle}
OUT=${OUT:?set OUT}
CACHE_XZ=${CACHE_XZ:-carry/c654.xz}
SMALL_GZ=${SMALL_GZ:-carry/small17.db.gz}
TUNE_S=${TUNE_S:-80}
PARTS=${PARTS:-round tune fold0}
has() { [[ " $PARTS " == *" $1 "* ]]; }
mkdir -p "$OUT"
[ -d "$B" ] || tar -xzf "${BUNDLE_TGZ:-carry/bundle.tgz}"
T=$B/bin/tessel
SMALL=/tmp/small17.db
gunzip -c "$SMALL_GZ" > $SMALL
{ nproc; lscpu | grep -E '^CPU\(s\)|Model name'; grep -m1 'model\s*:' /proc/cpuinfo; grep -m1 'cpu family' /proc/cpuinfo
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv; } > "$OUT/host.txt" 2>&1

timed() {  # timed LIMIT_S FILE COMMAND...: the command's output and its time appended to FILE
  local limit=$1 file=$2
  shift 2
  echo "\$ $*" >> "$file"
  { time timeout "$limit" "$@" ; } >> "$file" 2>&1
  echo "rc=$?" >> "$file"
}

has round && for network in summary deepsets; do
  for cpus in 0-15 0-3 0; do
    timed 120 "$OUT/round.txt" taskset -c $cpus $T model train --db "$SMALL" --target cuda --mlp-network $network \
      -o /tmp/round_$network.json
  done
done

suite=$B/suite.json
has tune && for network in summary deepsets; do
  rm -f /tmp/tune_$network.db /tmp/tune_$network.db-wal /tmp/tune_$network.db-shm
  timed $((TUNE_S + 90)) "$OUT/tune_$network.txt" $T tune --suite "$suite" --all --target cuda --trials 200 \
    --db /tmp/tune_$network.db --seed 1 --time-budget-s "$TUNE_S" --mlp-network $network -v
done

has fold0 || exit 0
xz -dc "$CACHE_XZ" > /tmp/c654
ds=(--mlp 2 --mlp-encoder 512 --mlp-hidden 256 --mlp-hidden2 0 --mlp-dropout 0.2 --mlp-epochs 30)
for threads in ${FOLD0_THREADS:-16 4}; do
  timed 200 "$OUT/fold0.txt" $B/bin/transfer_eval --db none --target cuda --cache /tmp/c654 --folds 10 --only-folds 0 \
    "${ds[@]}" --mlp-threads $threads
done
[ "${FOLD0_TREES:-1}" = 1 ] &&
  timed 120 "$OUT/fold0.txt" $B/bin/transfer_eval --db none --target cuda --cache /tmp/c654 --folds 10 --only-folds 0 --mlp 0
grep -E '^\$|trained|^real|^user|^sys|^mean|rc=' "$OUT/fold0.txt" > "$OUT/fold0_summary.txt"
