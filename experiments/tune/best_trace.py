#!/usr/bin/env python3
"""Writes the best schedule a tuning log holds for a suite case's workload as JSON, by the rule of
tessel's replay (log_best.py: the upper median of each schedule's timings, retimes included).

usage: best_trace.py EXPORT.jsonl WORKLOAD_TEXT_FILE OUT.json
  EXPORT.jsonl        `tessel db export --db LOG`
  WORKLOAD_TEXT_FILE  `tessel show --suite S --case C --emit te` (the workload's canonical text)
"""
import json
import sys

from log_best import add_record, best_of

text = open(sys.argv[2]).read().strip()
timings, ruled_out = {}, set()
for line in open(sys.argv[1]):
    if line.strip():
        r = json.loads(line)
        if r["workload"]["text"].strip() == text:
            add_record(r, timings, ruled_out)
latency, trace = best_of(timings, ruled_out)
if trace is None:
    sys.exit(f"error: no ok record of that workload in {sys.argv[1]}")
open(sys.argv[3], "w").write(trace)
print(f"best of {len(timings)} schedules: {latency * 1e3:.3f} ms (upper median of {len(timings[trace])} timings)")
