"""The best schedule of an exported tuning log (`tessel db export`) after each trial, by the rule
tessel's replay and tuner use: a schedule is ranked by the upper median of the scaled medians of its
ok records (its trial and the retimes of it written so far), and a wrong answer or crash in any of
its records rules it out. A record timed against the yardstick ("reference_s" > 0, the default
schedule's median beside it) scales as median * level / reference_s, level being the upper median of
every reference so far; a schedule with such records is ranked by them alone, others by their
medians. Retimes (lines with "purpose": "retime") are not trials."""
import json
import math

DISQUALIFYING = {"wrong_answer", "runtime_error"}


def upper_median(values):
    return sorted(values)[len(values) // 2]


def add_record(r, timings, ruled_out):
    """Adds one exported record to timings {trace json: [(ok median, reference)]} and ruled_out
    {trace json}."""
    # Every schedule enters on its first record, ok or not: ties go to the one recorded first.
    timings.setdefault(r["trace_json"], [])
    if r["error"] == "ok" and r["median_s"] > 0:
        timings[r["trace_json"]].append((r["median_s"], r.get("reference_s", 0)))
    elif r["error"] in DISQUALIFYING:
        ruled_out.add(r["trace_json"])


def best_of(timings, ruled_out):
    """(latency estimate in s, trace json) of the best schedule, (inf, None) when there is none."""
    references = [ref for m in timings.values() for _, ref in m if ref > 0]
    level = upper_median(references) if references else 0

    def scaled(median, ref):
        return median * level / ref if ref > 0 and level > 0 else median

    def estimate(m):
        # A schedule with referenced retimes counts those alone (its trial was picked for being fast).
        referenced = [scaled(*x) for x in m if x[1] > 0] if level > 0 else []
        return upper_median(referenced or [x[0] for x in m])

    ranked = [(estimate(m), k, t) for k, (t, m) in enumerate(timings.items()) if m and t not in ruled_out]
    return min(ranked)[::2] if ranked else (math.inf, None)


def best_by_trial(path):
    """[(latency estimate in s, trace json)] for trials 1..n, (inf, None) before any schedule ran.
    The entry of trial k counts every line before trial k + 1, so a round's retimes count for its
    last trial."""
    timings, ruled_out, out = {}, set(), []
    trials = 0
    for line in open(path):
        if not line.strip():
            continue
        r = json.loads(line)
        if r.get("purpose", "trial") == "trial":
            if trials:
                out.append(best_of(timings, ruled_out))
            trials += 1
        add_record(r, timings, ruled_out)
    if trials:
        out.append(best_of(timings, ruled_out))
    return out
