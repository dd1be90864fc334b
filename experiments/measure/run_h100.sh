#!/usr/bin/env bash
# Issue 5 on the GPU host, from the bundle (`make bundle`): the fault-injection session with
# --target cuda, leftover-process check, GPU timing stability, and the GPU tests. Writes under $OUT.
#
#   OUT=/some/dir experiments/measure/run_h100.sh [BUNDLE]
set -uo pipefail
B=${1:-bundle}
OUT=${OUT:?set OUT}
T="$B/bin/tessel"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$OUT/gpu.txt" 2>&1

# 1. Forty random GPU schedules with four injected faults.
start=$(date +%s.%N)
"$T" measure --op matmul --param M=64 --param N=64 --param K=64 --random-schedules 40 \
  --inject crash@3,hang@5,wrong@7,oob@9 --target cuda --db "$OUT/inject_cuda.db" -v > "$OUT/inject_cuda.txt" 2>&1
echo "exit code $?; wall $(python3 -c "import time; print(f'{time.time() - $start:.1f}')") s" >> "$OUT/inject_cuda.txt"
"$T" db export --db "$OUT/inject_cuda.db" > "$OUT/inject_cuda.jsonl"
"$T" db best --db "$OUT/inject_cuda.db" >> "$OUT/inject_cuda.txt" 2>&1
# Anything left of the session (runners, builders)?
ps -eo pid,ppid,stat,args | grep -E "tessel(-runner)?( |$)" | grep -v grep > "$OUT/leftover_processes.txt"
echo "leftover processes: $(wc -l < "$OUT/leftover_processes.txt")" >> "$OUT/inject_cuda.txt"

# 2. The same schedule in 10 separate sessions.
bash experiments/measure/stability.sh cuda rowsum_8192x8192 10 "$T" "$B/suite.json" > "$OUT/stability_cuda.md" 2>&1
bash experiments/measure/stability.sh cuda layernorm_16384x1024 10 "$T" "$B/suite.json" >> "$OUT/stability_cuda.md" 2>&1

# 3. The GPU tests.
"$B/bin/test_cuda" > "$OUT/test_cuda.txt" 2>&1; echo "exit $?" >> "$OUT/test_cuda.txt"
grep -B3 -A30 FAILED "$OUT/test_cuda.txt" > "$OUT/test_cuda_failures.txt"
