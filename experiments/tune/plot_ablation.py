#!/usr/bin/env python3
"""Best-latency-versus-trials curves of the ablation (ablation.sh): ablation.png, curves.csv and a
README.md table. usage: plot_ablation.py WORK OUT CASE..."""
import math
import sys

from log_best import best_by_trial

WORK, OUT, CASES = sys.argv[1], sys.argv[2], sys.argv[3:]
METHODS = [("random", "random search"), ("evolution_no_model", "evolution, no model"), ("full", "evolution + XGBoost")]


def curve(path):
    return [latency for latency, _ in best_by_trial(path)]


curves = {(c, m): curve(f"{WORK}/{c}.{m}.jsonl") for c in CASES for m, _ in METHODS}
with open(f"{OUT}/curves.csv", "w") as f:
    f.write("case,method,trial,best_s\n")
    for (c, m), ys in curves.items():
        for i, y in enumerate(ys):
            f.write(f"{c},{m},{i + 1},{y if math.isfinite(y) else ''}\n")

lines = ["| case | random: trials, best | evolution without model: best | full: best | full reaches random's best at trial |",
         "|---|---|---|---|---|"]
for c in CASES:
    r, e, full = curves[(c, "random")], curves[(c, "evolution_no_model")], curves[(c, "full")]
    target = r[-1]
    reach = next((i + 1 for i, y in enumerate(full) if y <= target), None)
    lines.append(f"| {c} | {len(r)}, {target * 1e3:.4f} ms | {e[-1] * 1e3:.4f} ms | {full[-1] * 1e3:.4f} ms | "
                 f"{reach if reach else 'not reached'} |")
table = "\n".join(lines)
with open(f"{OUT}/README.md", "w") as f:
    f.write("# Search-efficiency ablation on the CPU\n\nCommands (one empty log each): see commands.txt "
            "(first line: machine, time, commit). Curves: ablation.png, curves.csv (best latency after each "
            "trial, trials in the order they were recorded; a schedule's latency is the upper median of its trial's "
            "median and those of its retimes so far, as tessel's replay ranks them).\n\n" + table + "\n")
print(table)

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

fig, axes = plt.subplots(1, len(CASES), figsize=(5 * len(CASES), 4))
for ax, c in zip(axes if len(CASES) > 1 else [axes], CASES):
    for m, label in METHODS:
        ys = [y * 1e3 if math.isfinite(y) else None for y in curves[(c, m)]]
        ax.plot(range(1, len(ys) + 1), ys, label=label)
    ax.set_title(c, fontsize=9)
    ax.set_xlabel("trials")
    ax.set_ylabel("best latency (ms)")
    ax.axvline(150, color="grey", linestyle=":", linewidth=1)
    ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(f"{OUT}/ablation.png", dpi=110)
