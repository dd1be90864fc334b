#!/usr/bin/env python3
"""Cut a `tessel db export` (JSON lines) to what the cost model reads, for committing a training
log: each record keeps its median as its only timing sample (`samples_s` = [median_s]); everything
else, the trace and the session included, is kept. `tessel db import` takes the result.

usage: slim_log.py EXPORT.jsonl [EXPORT.jsonl ...] | gzip -9 > LOG.jsonl.gz
"""
import json
import sys

for path in sys.argv[1:]:
    with open(path) as f:
        for line in f:
            record = json.loads(line)
            if record.get("samples_s"):
                record["samples_s"] = [record["median_s"]]
            sys.stdout.write(json.dumps(record, separators=(",", ":")) + "\n")
