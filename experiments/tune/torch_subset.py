#!/usr/bin/env python3
"""Runs ../shared/bench/torch_baselines.py (carried in the bundle as torch_baselines.py) on named
cases only: the same definitions, the same measurement (do_bench_cudagraph medians, TF32 off), the
script's own loop, with its case list filtered. Writes $OUT/baselines.jsonl like the script.
usage: CASES="a b c" python3 torch_subset.py PATH/torch_baselines.py"""
import os
import sys

path = sys.argv[1]
wanted = set(os.environ["CASES"].split())
source = open(path).read()
# Split before the measuring loop: define everything, filter cases(), then run the loop unchanged.
cut = source.index('info = {"gpu"')
env = {"__name__": "__main__", "__file__": path}
sys.argv = [path, "all"]
exec(compile(source[:cut], path, "exec"), env)
all_cases = env["cases"]
env["cases"] = lambda: (c for c in all_cases() if c[0] in wanted)
exec(compile(source[cut:], path, "exec"), env)
