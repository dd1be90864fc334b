#!/usr/bin/env python3
"""The ablation's comparison measured in one run. The three searches of ablation.sh run one after the
other, minutes apart, and on a shared machine the same schedule can time 20% apart between them (their
default schedules do), so comparing their logged bests compares machine states as much as searches.
This script takes each method's best-so-far schedule at trial checkpoints (by its own log), re-times all
of them in one process run after run, interleaved over ROUNDS rounds in a shuffled order, and reports
the median of each. Checkpoints: the fixed ones below that a log reaches, and its last trial. Against
random search's best at its last trial, two readings for the full method: the first checkpoint whose
best re-times no slower ("first reaches"), and the first from which every later checkpoint does
("stays").

usage: [ROUNDS=11] [MIN_TIME=0.5] ablation_retime.py TESSEL SUITE WORK OUT CASE...
Writes OUT/retime.md and OUT/retime.csv.
"""
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile

from log_best import best_by_trial

TESSEL, SUITE, WORK, OUT, CASES = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
ROUNDS = int(os.environ.get("ROUNDS", "11"))
MIN_TIME = os.environ.get("MIN_TIME", "0.5")  # seconds of samples per timing (tessel run --min-time)
CHECKPOINTS = {
    "random": [150, 300, 500],
    "evolution_no_model": [150, 300],
    "full": [25, 50, 75, 100, 125, 150, 200, 250, 300],
}


def best_at(path, checkpoints):
    """{checkpoint: (logged latency, trace json)} of the best schedule after the first k trials (by
    log_best's rule), for the checkpoints the log reaches and its last trial."""
    curve = best_by_trial(path)
    return {k: curve[k - 1] for k in set(checkpoints) | {len(curve)}
            if 0 < k <= len(curve) and curve[k - 1][1] is not None}


def time_one(case, trace_path):
    out = subprocess.run([TESSEL, "run", "--suite", SUITE, "--case", case, "--schedule", trace_path, "--json",
                          "--min-time", MIN_TIME], check=True, capture_output=True, text=True).stdout
    return json.loads(out)["median_ms"] / 1e3


rng = random.Random(1)
work = tempfile.mkdtemp()
md = ["# The ablation re-timed in one run", "",
      f"Each method's best schedule at the listed trials (chosen by its own log), re-timed {ROUNDS} times, "
      f"interleaved in a shuffled order each round, by `tessel run --min-time {MIN_TIME}` in this one run; medians.", ""]
csv = ["case,method,trial,logged_s,retimed_median_s,retimed_min_s,retimed_max_s"]
for case in CASES:
    # Checkpoints often share their best schedule: each distinct one gets one file and one timing a round.
    points = []  # (method, trial, logged, path of the schedule's file)
    path_of = {}  # trace json -> its file
    for method, cps in CHECKPOINTS.items():
        for trial, (logged, trace) in sorted(best_at(f"{WORK}/{case}.{method}.jsonl", set(cps)).items()):
            if trace not in path_of:
                path_of[trace] = f"{work}/{case}.{len(path_of)}.json"
                open(path_of[trace], "w").write(trace)
            points.append((method, trial, logged, path_of[trace]))
    samples = {path: [] for path in path_of.values()}
    for rnd in range(ROUNDS):
        order = list(samples)
        rng.shuffle(order)
        for i, path in enumerate(order):
            samples[path].append(time_one(case, path))
            print(f"\r{case}: round {rnd + 1}/{ROUNDS}, {i + 1}/{len(order)}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    median = {}
    for method, trial, logged, path in points:
        s = samples[path]
        median[(method, trial)] = statistics.median(s)
        csv.append(f"{case},{method},{trial},{logged},{statistics.median(s)},{min(s)},{max(s)}")
    if not any(m == "random" for m, _ in median) or not any(m == "full" for m, _ in median):
        sys.exit(f"error: {case}: no ok record in the random or the full log under {WORK}")
    last_random = max(t for m, t in median if m == "random")
    target = median[("random", last_random)]
    full = sorted(t for m, t in median if m == "full")
    first = next((t for t in full if median[("full", t)] <= target), None)
    stays = next((t for i, t in enumerate(full) if all(median[("full", u)] <= target for u in full[i:])), None)
    md += [f"## {case}", "", f"| method | trial | logged best ms | re-timed median ms | vs random@{last_random} |",
           "|---|---:|---:|---:|---:|"]
    for method, trial, logged, _ in points:
        md.append(f"| {method} | {trial} | {logged * 1e3:.4f} | {median[(method, trial)] * 1e3:.4f} | "
                  f"{median[(method, trial)] / target:.3f} |")
    md += ["", f"Full method re-timed no slower than random search's {last_random}-trial best: first at trial "
           f"**{first if first else 'none'}**, at every checkpoint from trial **{stays if stays else 'none'}** on "
           f"(its last: {full[-1]})", ""]
open(f"{OUT}/retime.md", "w").write("\n".join(md) + "\n")
open(f"{OUT}/retime.csv", "w").write("\n".join(csv) + "\n")
print("\n".join(md))
