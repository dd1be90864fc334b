#!/usr/bin/env bash
# --devices on a host with several GPUs: the suite case gemm_1024 tuned for BUDGET seconds on GPU 0
# alone, then for as long with --devices all (each batch spread over every GPU, one runner per GPU),
# each from an empty log. Prints each run's trials, wall time and trials per minute, and how the
# records split over the GPUs (the "gpu" field of their measurement settings).
#
# From the repository root on the GPU host, with bundle/ from `make bundle`:
#   [BUDGET=100] [CASE=gemm_1024] bash experiments/workers/run_gpus.sh
set -uo pipefail
T=${T:-bundle/bin/tessel}
BUDGET=${BUDGET:-100}
CASE=${CASE:-gemm_1024}
WORK=$(mktemp -d)
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm --format=csv
for devices in 0 all; do
  log="$WORK/devices_$devices.db"
  start=$(date +%s.%N)
  "$T" tune --suite suites/operators.json --case "$CASE" --target cuda --trials 100000 --time-budget-s "$BUDGET" \
    --db "$log" --devices "$devices" -v > "$WORK/devices_$devices.txt" 2>&1 || { tail "$WORK/devices_$devices.txt"; exit 1; }
  wall=$(python3 -c "import time; print(round(time.time() - $start, 1))")
  tail -n 6 "$WORK/devices_$devices.txt"
  "$T" db export --db "$log" | python3 -c '
import collections, json, sys
wall = float(sys.argv[1])
per_gpu = collections.Counter()
for line in sys.stdin:
    r = json.loads(line)
    if r.get("purpose", "trial") == "trial":
        per_gpu[json.loads(r["settings_json"]).get("gpu", "-")] += 1
trials = sum(per_gpu.values())
print(f"--devices {sys.argv[2]}: {trials} trials in {wall} s, {trials / wall * 60:.0f} per minute, by GPU {dict(per_gpu)}")
' "$wall" "$devices"
done
rm -rf "$WORK"
