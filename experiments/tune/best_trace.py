#!/usr/bin/env python3
"""Writes the best schedule a tuning log holds for a suite case's workload as JSON, by the rule of
tessel's replay (log_best.py: the upper median of each schedule's timings, retimes included).

usage: best_trace.py EXPORT.jsonl WORKLOAD_TEXT_FILE OUT.json
  EXPORT.jsonl        `tessel db export --db LOG`
  WORKLOAD_TEXT_FILE  `tessel show --suite S --case C --emit te` (the workload's canonical text)
"""
import json
import sys

from log_best import DISQUALIFYING, upper_median

records = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
text = open(sys.argv[2]).read().strip()
mine = [r for r in records if r["workload"]["text"].strip() == text]
ruled_out = {r["trace_json"] for r in mine if r["error"] in DISQUALIFYING}
timings = {}
for r in mine:
    if r["error"] == "ok" and r["trace_json"] not in ruled_out:
        timings.setdefault(r["trace_json"], []).append(r["median_s"])
if not timings:
    sys.exit(f"error: no ok record of that workload in {sys.argv[1]}")
latency, trace = min((upper_median(m), t) for t, m in timings.items())
open(sys.argv[3], "w").write(trace)
print(f"best of {len(timings)} schedules: {latency * 1e3:.3f} ms (upper median of {len(timings[trace])} timings)")
