#!/usr/bin/env python3
"""Suites of workloads already in the committed H100 training logs, for a second search round each
(issue 6, acceptance 3: more records per workload).

Reads every workload of experiments/costmodel/data/h100_training_s1*.jsonl.gz, finds the suite case
it came from (the case whose tensor expression, as `tessel show --emit te` prints it, is the
record's), keeps those with at least --min-records records (fewer: the search had exhausted its
sketch space, a second round would find nothing new), shuffles them with --seed and writes --parts
suite files of the cases, named OUT_1.json ... OUT_<parts>.json, in the shuffled order.

  /usr/bin/python3 experiments/costmodel/make_extend_suite.py --tessel build/tools/tessel \\
      --seed 17 --parts 8 --out experiments/costmodel/extend_s17
"""
import argparse
import collections
import glob
import json
import random
import subprocess
import sys

from common import read_log


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tessel", required=True, help="the tessel binary (for `show --emit te`)")
    ap.add_argument("--logs", default="experiments/costmodel/data/h100_training_s1*.jsonl.gz")
    ap.add_argument("--suites", default="experiments/costmodel/training_suite*.json suites/operators.json")
    ap.add_argument("--min-records", type=int, default=60)
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--parts", type=int, default=8)
    ap.add_argument("--out", required=True, help="path prefix of the suite files")
    args = ap.parse_args()

    text_of, count = {}, collections.Counter()
    for record in read_log(sorted(glob.glob(args.logs))):
        w = record["workload"]
        text_of[w["key"]] = w["text"]
        count[w["key"]] += 1
    key_of_text = {t: k for k, t in text_of.items()}

    cases = {}  # workload key -> (suite file, case)
    for suite in [p for pattern in args.suites.split() for p in sorted(glob.glob(pattern))]:
        with open(suite) as f:
            for case in json.load(f)["cases"]:
                te = subprocess.run([args.tessel, "show", "--suite", suite, "--case", case["name"], "--emit", "te",
                                     "--target", "cuda"], capture_output=True, text=True, check=True).stdout
                key = key_of_text.get(te)
                if key is not None and key not in cases:
                    cases[key] = (suite, case)
    missing = sorted(set(text_of) - set(cases))
    if missing:
        sys.exit(f"error: no suite case found for {len(missing)} logged workloads, e.g. {missing[0]}")

    keys = sorted(k for k in cases if count[k] >= args.min_records)
    random.Random(args.seed).shuffle(keys)
    names = collections.Counter(cases[k][1]["name"] for k in keys)
    clash = [n for n, c in names.items() if c > 1]
    if clash:
        sys.exit(f"error: case names repeat across the suites: {clash[:5]}")
    for part in range(args.parts):
        chosen = keys[part::args.parts]
        suite = {
            "about": f"Workloads of the committed H100 training logs for a second search round (issue 6, acceptance 3), "
                     f"part {part + 1} of {args.parts}: experiments/costmodel/make_extend_suite.py --seed {args.seed} "
                     f"--parts {args.parts} --min-records {args.min_records}. Each case as in its original suite file.",
            "cases": [cases[k][1] for k in chosen],
        }
        path = f"{args.out}_{part + 1}.json"
        with open(path, "w") as f:
            json.dump(suite, f, indent=1)
            f.write("\n")
        print(f"{path}: {len(chosen)} cases")
    print(f"{len(keys)} of {len(text_of)} logged workloads have {args.min_records} or more records")


if __name__ == "__main__":
    main()
