#!/usr/bin/env bash
# Whole models on a GPU host. Per model: exported from torch with random weights
# (scripts/export_models.py), tuned with `tessel tune --target TARGET` for a bounded time, built from
# its tuning log, checked against torch's output and timed against torch eager, torch.compile and
# max-autotune in one process (tools/compare.py). Each model's folder under OUT keeps the tune's
# progress, `tessel tasks`, and compare.md / compare.json / compare.png; its tuning log is
# OUT/MODEL_bBATCH.db, resumed when it is there already, so a long tuning runs in bounded steps.
#
# Usage, from the repository root with bundle/ from `make bundle`:
#   OUT=DIR [TARGET=cuda] [TUNE_S=180] [COMPARE=1] [SKIP=max_autotune] [MAX_COMPILE_S=0] [ROUNDS=1] \
#     [MEMORY_TARGET=1] [DTYPE=fp32] [FLUSH_CACHE=0] [TORCH_CACHE=DIR] \
#     bash experiments/models/run_gpu.sh MODEL[:BATCH] ...
# MODEL is resnet18, resnet50, mobilenet_v2, bert_tiny or bert_base; images are 224x224, sequences
# 128 tokens. TUNE_S=0 tunes nothing (the build takes the log as it is, or default schedules);
# COMPARE=0 only tunes. TARGET=llvm tunes and runs on the host's CPU cores instead, against torch
# eager and onnxruntime's CPU provider on as many threads (SKIP=torch_compile,max_autotune there);
# its logs are OUT/MODEL_bBATCH_llvm.db. ROUNDS>1 times the systems in turn that many times and gives
# the speed-ups as medians of the rounds' ratios (for a CPU shared with other work). MEMORY_TARGET=0
# builds with `tessel build --no-memory-target` (cuda: the fastest records, whatever their scratch).
# DTYPE=bf16 or fp16 stores the model in 16 bits (`--dtype`) and times torch in that type; its logs
# are OUT/MODEL_bBATCH_bf16.db. FLUSH_CACHE=1 (TARGET=llvm) tunes with `--flush-cache`, each
# candidate's inputs evicted from the caches before every sample, into OUT/MODEL_bBATCH_llvm_flush.db.
# TORCH_CACHE=DIR keeps torch inductor's and Triton's on-disk caches there: a max-autotune compile
# stopped at MAX_COMPILE_S may leave part of its finished autotuning in them for a later run with the
# same folder (copied between hosts of one kind) to resume from, though not reliably: a resumed
# compile can autotune again what the stopped one had finished. The compile time a run reports is
# its own step's.
set -uo pipefail
OUT=${OUT:?set OUT to a folder for the results}
T=${T:-bundle/bin/tessel}
TUNE_S=${TUNE_S:-180}
TARGET=${TARGET:-cuda}
COMPARE=${COMPARE:-1}
SKIP=${SKIP:-}
MAX_COMPILE_S=${MAX_COMPILE_S:-0}  # give up on a torch.compile mode whose compile takes longer
ROUNDS=${ROUNDS:-1}
MEMORY_TARGET=${MEMORY_TARGET:-1}
DTYPE=${DTYPE:-fp32}
FLUSH_CACHE=${FLUSH_CACHE:-0}
export PYTHONPATH=bundle/python${PYTHONPATH:+:$PYTHONPATH}
if [ -n "${TORCH_CACHE:-}" ]; then
  mkdir -p "$TORCH_CACHE"
  cache=$(cd "$TORCH_CACHE" && pwd)
  export TORCHINDUCTOR_CACHE_DIR=$cache/inductor TRITON_CACHE_DIR=$cache/triton
fi
mkdir -p "$OUT"
[ -x "$T" ] || { [ -f dist/bundle.tar.xz ] && tar -xJf dist/bundle.tar.xz; }

status=0
for spec in "$@"; do
  name=${spec%%:*}
  batch=1
  [ "$spec" != "$name" ] && batch=${spec#*:}
  suffix=""
  [ "$TARGET" != cuda ] && suffix="_$TARGET"
  [ "$DTYPE" != fp32 ] && suffix="${suffix}_$DTYPE"
  tune_flags=()
  if [ "$FLUSH_CACHE" = 1 ]; then suffix="${suffix}_flush"; tune_flags+=(--flush-cache); fi
  dir="$OUT/${name}_b$batch$suffix"
  mkdir -p "$dir"
  echo "== $name, batch $batch"
  BATCH=$batch SEQ=128 IMAGE=224 python3 bundle/bin/export_models.py "$dir/export" "$name" || { status=1; continue; }
  onnx="$dir/export/$name/model.onnx"
  "$T" tasks "$onnx" --target "$TARGET" --dtype "$DTYPE" > "$dir/tasks.txt" 2>&1
  log="$OUT/${name}_b$batch$suffix.db"
  if [ "$TUNE_S" != 0 ]; then
    start=$SECONDS
    "$T" tune "$onnx" --target "$TARGET" --dtype "$DTYPE" --trials 1000000 --time-budget-s "$TUNE_S" --db "$log" "${tune_flags[@]}" -v \
      >> "$dir/tune.txt" 2>&1 || status=1
    echo "tuning wall time: $((SECONDS - start)) s" | tee -a "$dir/tune.txt"
    tail -n 40 "$dir/tune.txt"
    # The log as one file (SQLite's write-ahead log folded in), to be carried to the next run.
    python3 -c "import sqlite3, sys; sqlite3.connect(sys.argv[1]).execute('PRAGMA wal_checkpoint(TRUNCATE)')" "$log"
  fi
  db=()
  [ -f "$log" ] && db=(--db "$log")
  [ "$MEMORY_TARGET" = 0 ] && [ "$TARGET" = cuda ] && db+=(--no-memory-target)
  if [ "$COMPARE" != 0 ]; then
    python3 bundle/bin/compare.py --model "$name" --batch "$batch" --seq 128 --image 224 --target "$TARGET" \
      "${db[@]}" --out "$dir" --tessel "$T" --skip "$SKIP" --max-compile-s "$MAX_COMPILE_S" \
      --rounds "$ROUNDS" --dtype "$DTYPE" || status=1
  fi
  rm -rf "$dir/export" "$dir/$name" "$dir"/*.tsl  # weights and builds: regenerated, not kept
done
exit $status
