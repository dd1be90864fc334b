#!/usr/bin/env python3
"""Writes the best ok schedule a tuning log holds for a suite case's workload (by name) as JSON.

usage: best_trace.py EXPORT.jsonl WORKLOAD_TEXT_FILE OUT.json
  EXPORT.jsonl        `tessel db export --db LOG`
  WORKLOAD_TEXT_FILE  `tessel show --suite S --case C --emit te` (the workload's canonical text)
"""
import json
import sys

records = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
text = open(sys.argv[2]).read().strip()
ok = [r for r in records if r["error"] == "ok" and r["workload"]["text"].strip() == text]
if not ok:
    sys.exit(f"error: no ok record of that workload in {sys.argv[1]}")
best = min(ok, key=lambda r: r["median_s"])
open(sys.argv[3], "w").write(best["trace_json"])
print(f"best of {len(ok)} ok records: median {best['median_s'] * 1e3:.3f} ms")
