#!/bin/bash
# Every variant of nets.py in its own process, all at once on one GPU (each is mostly launch-bound), each
# stopped after LIMIT seconds (default 480); then OUT/log.txt (their output) and OUT/oofs.npz (every finished
# variant's held-out scores, keyed by its file name).  usage: OUT=DIR bash sweep_nets.sh DATA.npz VARIANT...
set -u
here=$(dirname "$0"); data=$1; shift
work=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$OUT/gpu.txt" 2>&1
i=0
for v in "$@"; do
  PYTHONUNBUFFERED=1 timeout "${LIMIT:-480}" "${PY:-python3}" "$here/nets.py" "$data" "$work" "$v" > "$work/log$i.txt" 2>&1 &
  i=$((i + 1))
done
wait
for f in "$work"/log*.txt; do cat "$f"; done > "$OUT/log.txt"
grep pairwise "$OUT/log.txt"
"${PY:-python3}" -c "
import glob, os, sys, numpy as np
np.savez_compressed(sys.argv[1], **{os.path.basename(f)[4:-4]: np.load(f) for f in glob.glob(sys.argv[2] + '/oof_*.npy')})
" "$OUT/oofs.npz" "$work"
