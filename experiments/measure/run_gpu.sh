#!/usr/bin/env bash
# The measurement harness on a GPU host: forty random GPU schedules measured with four injected
# faults (crash, hang, wrong answer, out-of-bounds store), a check that no tessel process is left,
# timing stability of two suite cases over 10 separate `tessel measure` processes, and the GPU tests.
# Run from the repository root on the GPU host, with bundle/ or dist/bundle.tar.xz from `make bundle`:
#
#   OUT=DIR bash experiments/measure/run_gpu.sh
#
# Writes under OUT: gpu.txt, inject_cuda.txt (the session's output, exit status, `db best`),
# inject_cuda.jsonl (its log exported), leftover_processes.txt, stability_cuda.md, test_cuda.txt.
set -uo pipefail
B=${B:-bundle}
OUT=${OUT:?set OUT}
T="$B/bin/tessel"
mkdir -p "$OUT"
[ -d "$B" ] || tar -xJf "${BUNDLE_ARCHIVE:-dist/bundle.tar.xz}"
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

# 2. The same schedule measured by 10 separate processes.
bash experiments/measure/stability.sh cuda rowsum_8192x8192 10 "$T" > "$OUT/stability_cuda.md" 2>&1
bash experiments/measure/stability.sh cuda layernorm_16384x1024 10 "$T" >> "$OUT/stability_cuda.md" 2>&1

# 3. The GPU tests.
"$B/bin/test_cuda" > "$OUT/test_cuda.txt" 2>&1; echo "exit $?" >> "$OUT/test_cuda.txt"
