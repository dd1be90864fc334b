#!/usr/bin/env python3
"""tessel compare: one honest side-by-side of a tuned model against what you would otherwise run.

Exports a torchvision or BERT-style model (random weights; scripts/export_models.py) or takes an
ONNX file with --onnx, builds it with `tessel build` from a tuning log, checks tessel's outputs
against torch's, then times in this one process: tessel (through its Python module), torch eager,
torch.compile (default) and torch.compile(mode="max-autotune"), and onnxruntime where it is
installed. On the GPU every timing is of device work measured with CUDA events; TF32 is off for fp32
(torch.backends.*.allow_tf32 = False); max-autotune replays CUDA graphs, and so does tessel's
runtime. Writes compare.md, compare.json and compare.png (latency per system, and tessel's latency
broken down by task: each task's kernels timed inside the model's run, `tessel run --profile`) to --out.

    tools/compare.py --model resnet50 --target cuda --db log.db --out results/ [--tessel bundle/bin/tessel]

Needs torch (and torchvision for the CNNs); matplotlib for the chart; onnxruntime optional.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
# In the repository: tools/python and scripts/; in a bundle: python/ beside bin/ (export_models.py
# beside this file).
for path in (os.path.join(HERE, "python"), os.path.join(HERE, "..", "python"), os.path.join(HERE, "..", "scripts")):
    sys.path.insert(0, path)


SYSTEMS = ("tessel", "torch_eager", "torch_compile", "max_autotune", "onnxruntime")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", help="resnet18, resnet50, mobilenet_v2, bert_tiny or bert_base (exported here)")
    p.add_argument("--onnx", help="an ONNX file to compare instead (torch rows need --model)")
    p.add_argument("--target", choices=["cuda", "llvm"], default="cuda")
    p.add_argument("--db", help="the tuning log to build from (none: default schedules)")
    p.add_argument("--out", required=True, help="folder for compare.md, compare.json, compare.png")
    p.add_argument("--tessel", default="tessel", help="the tessel binary")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--image", type=int, default=224)
    p.add_argument("--min-time", type=float, default=1.0, help="seconds of samples per system")
    p.add_argument("--no-memory-target", action="store_true",
                   help="cuda: build with `tessel build --no-memory-target` (the fastest records, whatever "
                   "memory their scratch takes)")
    p.add_argument("--skip", default="",
                   help="comma-separated systems to leave out: tessel, torch_eager, torch_compile, max_autotune, "
                   "onnxruntime (skipping tessel, nothing is built and no speed-up given: e.g. a long max-autotune "
                   "compile run on its own to fill inductor's cache for a later comparison)")
    p.add_argument("--threads", type=int, default=0,
                   help="llvm: threads for tessel, torch and onnxruntime (default: the cores this process may use)")
    p.add_argument("--rounds", type=int, default=1,
                   help="time tessel, torch eager and onnxruntime this many times in turn; their speed-ups are the "
                        "medians of the rounds' ratios (a shared machine's slow spells then hit both sides of a "
                        "ratio); the torch.compile modes are timed in the first round only")
    p.add_argument("--dtype", choices=["fp32", "bf16", "fp16"], default="fp32",
                   help="bf16 / fp16: tessel builds with --dtype (weights and the values between kernels in 16 bits, "
                   "inputs and outputs float32) and torch runs the model and its input converted to the type; "
                   "outputs are checked against torch's float32 run at torch.testing's rtol for the type")
    p.add_argument("--max-compile-s", type=float, default=0,
                   help="give up on a torch.compile mode whose first call takes longer (0: wait however long); "
                   "part of the autotuning it finished may stay in inductor's on-disk cache (TORCHINDUCTOR_CACHE_DIR) "
                   "for a later run to resume from, not reliably")
    args = p.parse_args()
    unknown = set(filter(None, args.skip.split(","))) - set(SYSTEMS)
    if unknown:
        p.error(f"--skip: unknown system {', '.join(sorted(unknown))} (the systems: {', '.join(SYSTEMS)})")
    return args


def stats(samples):
    s = np.sort(np.array(samples))
    return {"median_s": float(np.median(s)), "p10_s": float(s[int(0.1 * (len(s) - 1))]),
            "p90_s": float(s[int(0.9 * (len(s) - 1))]), "runs": len(s)}


def time_gpu(fn, min_time):
    """Median of per-call device time (CUDA events on torch's stream around each call)."""
    import torch
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    samples = []
    while len(samples) < 20 or (sum(samples) < min_time and len(samples) < 2000):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) / 1e3)
    return stats(samples)


def cpu_times():
    """The machine's CPU time so far as (all, stolen) clock ticks, from /proc/stat's first line; None
    where it cannot be read. Stolen: time a virtual machine's CPUs were ready to run but the
    hypervisor ran something else."""
    try:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    # user nice system idle iowait irq softirq steal [guest guest_nice, already counted in user, nice]
    return sum(fields[:8]), (fields[7] if len(fields) > 7 else 0)


def cpu_quota():
    """The CPUs' worth of time this process's cgroup may use (cgroup v2's cpu.max, v1's
    cpu.cfs_quota_us), or None when it has no quota or none can be read. A pool of threads that
    spin can exhaust a quota smaller than its thread count and be stopped for the rest of each
    period."""
    try:
        with open("/proc/self/cgroup") as f:
            groups = [line.rstrip("\n").split(":", 2) for line in f]
    except OSError:
        return None
    for _, controllers, path in groups:
        path = path.lstrip("/")
        try:
            if controllers == "":  # v2: "0::/path"
                with open(os.path.join("/sys/fs/cgroup", path, "cpu.max")) as f:
                    quota, period = f.read().split()
                if quota != "max":
                    return int(quota) / int(period)
            elif "cpu" in controllers.split(","):
                base = os.path.join("/sys/fs/cgroup", controllers)
                if not os.path.isdir(base):
                    base = "/sys/fs/cgroup/cpu"
                with open(os.path.join(base, path, "cpu.cfs_quota_us")) as f:
                    quota = int(f.read())
                with open(os.path.join(base, path, "cpu.cfs_period_us")) as f:
                    period = int(f.read())
                if quota > 0:
                    return quota / period
        except (OSError, ValueError):
            continue
    return None


def time_cpu(fn, min_time):
    # The system timed before may leave its thread pool spinning for a while (OpenMP's threads spin
    # for tens of milliseconds after a parallel region); let those threads go to sleep first, so
    # they take no cores from this one.
    time.sleep(0.3)
    for _ in range(3):
        fn()
    samples = []
    before = cpu_times()
    while len(samples) < 10 or (sum(samples) < min_time and len(samples) < 2000):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    result = stats(samples)
    after = cpu_times()
    if before and after and after[0] > before[0]:
        result["cpu_stolen"] = (after[1] - before[1]) / (after[0] - before[0])
    return result


def max_error(got, want):
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    return float(np.abs(got - want).max()), float(np.abs(want).max())


class CompileTimeout(Exception):
    pass


def first_call_within(fn, limit_s, target):
    """Runs fn once (a compiled model's first call: its compile); False when it takes over limit_s."""
    import signal
    import torch

    expired = []

    def expire(signum, frame):
        expired.append(True)
        raise CompileTimeout()
    previous = signal.signal(signal.SIGALRM, expire)
    if limit_s > 0:
        signal.setitimer(signal.ITIMER_REAL, limit_s)
    try:
        fn()
        if target == "cuda":
            torch.cuda.synchronize()
        return True
    except Exception:
        if expired:  # torch may wrap the timeout in an error of its own
            return False
        raise
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def peak_memory(system, fn, target):
    """torch's own count of the device memory one more call holds at its peak (weights included)."""
    if target != "cuda":
        return
    import torch
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    fn()
    torch.cuda.synchronize()
    system["max_memory_allocated"] = torch.cuda.max_memory_allocated()


def memory_lines(systems):
    """tessel's device memory against weights + 1.2 x the liveness bound, and torch's peaks."""
    m = systems.get("tessel", {}).get("memory")
    if not m or not any(s.get("max_memory_allocated") for s in systems.values()):
        return []
    mb = 1e-6
    total = m["weights"] + m["arena"] + m["inputs"] + m["outputs"]
    limit = m["weights"] + 1.2 * m["liveness_bound"]
    lines = ["", "| device memory | MB |", "|---|---:|",
             f"| tessel: weights {m['weights'] * mb:.1f} + arena {m['arena'] * mb:.1f}" +
             (f" + inputs and outputs {(m['inputs'] + m['outputs']) * mb:.1f}" if m["inputs"] + m["outputs"]
              else " (inputs and outputs inside)") + f" | {total * mb:.1f} |",
             f"| weights + 1.2 x liveness bound ({m['liveness_bound'] * mb:.1f}) | {limit * mb:.1f} |"]
    for name, s in systems.items():
        if s.get("max_memory_allocated"):
            lines.append(f"| {name}: torch.cuda.max_memory_allocated | {s['max_memory_allocated'] * mb:.1f} |")
    return lines


def build(args, onnx_path, out_dir):
    tsl = os.path.join(out_dir, "model.tsl")
    cmd = [args.tessel, "build", onnx_path, "--target", args.target, "-o", tsl, "--json"]
    if args.db:
        cmd += ["--db", args.db]
    if args.no_memory_target:
        cmd += ["--no-memory-target"]
    if args.dtype != "fp32":
        cmd += ["--dtype", args.dtype]
    t0 = time.perf_counter()
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        raise SystemExit("error: tessel build failed:\n" + run.stderr)
    return tsl, time.perf_counter() - t0, json.loads(run.stdout), run.stderr


def profile(args, tsl, x, out_dir):
    """tessel's time by kernel inside the model's run (`tessel run --profile`, each kernel timed in
    turn), summed per task: {workload key: seconds per run}; {} when the run fails."""
    if x is None:
        return {}
    image = os.path.join(out_dir, "input.npy")
    np.save(image, x.cpu().numpy())
    run = subprocess.run([args.tessel, "run", tsl, "--input", image, "--profile", "--json"],
                         capture_output=True, text=True)
    if run.returncode != 0:
        progress("profile not taken: " + run.stderr.strip())
        return {}
    tasks = {}
    for t in json.loads(run.stdout)["profile"]["tasks"]:
        tasks[t["workload_key"]] = tasks.get(t["workload_key"], 0.0) + t["seconds"]
    return tasks


def main():
    args = parse_args()
    os.makedirs(args.out, exist_ok=True)
    import torch
    import tessel
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = "cuda" if args.target == "cuda" else "cpu"
    result = {"target": args.target, "systems": {}, "model": args.model or args.onnx}
    if args.target == "llvm":  # torch's own default can be fewer threads than cores
        torch.set_num_threads(args.threads or len(os.sched_getaffinity(0)))
        result["threads"] = torch.get_num_threads()
        os.environ["TESSEL_NUM_THREADS"] = str(result["threads"])  # read when tessel's first kernel runs
        result["cpu_quota"] = cpu_quota()
        result["load_average"] = os.getloadavg()[0]  # other work on the machine as the run starts

    model = x = None
    if args.model:
        import export_models
        os.environ["BATCH"], os.environ["SEQ"], os.environ["IMAGE"] = str(args.batch), str(args.seq), str(args.image)
        export_models.export(args.model, args.out, args.batch, args.seq, args.image, 17)
        onnx_path = os.path.join(args.out, args.model, "model.onnx")
        torch.manual_seed(0)
        model, x = export_models.make(args.model, args.batch, args.seq, args.image)
        model.eval().to(device)
        x = x.to(device)
    else:
        onnx_path = args.onnx
    skip = set(filter(None, args.skip.split(",")))
    ctx = tsl = None
    if "tessel" not in skip:
        tsl, build_s, report, warnings = build(args, onnx_path, args.out)
        result["build_s"] = build_s
        result["build"] = report
        result["build_warnings"] = warnings
        ctx = tessel.load(tsl).context()
    base_timer = time_gpu if args.target == "cuda" else time_cpu
    timed = {}  # name -> (the call, its timer), for the later rounds

    def timer(fn, min_time, name, how=None, again=True):
        how = how or base_timer
        if again:
            timed[name] = (fn, how)
        s = how(fn, min_time)
        s["round_medians_s"] = [s["median_s"]]
        return s

    x_fp32 = x  # tessel's input (and onnxruntime's): the model's own float32
    if model is not None:
        with torch.no_grad():
            want = model(x).float().cpu().numpy()
            xin = x if args.target == "cuda" else x.cpu().numpy()
            result["dtype"] = args.dtype
            if ctx is not None:
                got = ctx.run(xin)
                got = got.cpu().numpy() if hasattr(got, "cpu") else np.asarray(got)
                err, ref = max_error(got, want)
                rtol = {"fp32": 1e-3, "fp16": 1e-3, "bf16": 1.6e-2}[args.dtype]
                result["check"] = {"max_abs_error": err, "max_abs_reference": ref, "bound": rtol * ref + 1e-5,
                                   "ok": err <= rtol * ref + 1e-5}
                progress(f"outputs: max |error| {err:.3g} (bound {result['check']['bound']:.3g})")
            if args.dtype != "fp32":  # torch timed in the type, on the input converted
                torch_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[args.dtype]
                model = model.to(torch_dtype)
                x = x.to(torch_dtype) if x.is_floating_point() else x
            if ctx is not None:
                result["systems"]["tessel"] = timer(lambda: ctx.run(xin), args.min_time, "tessel")
                result["systems"]["tessel"]["memory"] = ctx.memory()
                result["profile"] = profile(args, tsl, x_fp32, args.out)
                done(args, result, "tessel")
            if "torch_eager" not in skip:
                result["systems"]["torch_eager"] = timer(lambda: model(x), args.min_time, "torch_eager")
                peak_memory(result["systems"]["torch_eager"], lambda: model(x), args.target)
                done(args, result, "torch_eager")
            for name, kwargs in (("torch_compile", {}), ("max_autotune", {"mode": "max-autotune"})):
                if name in skip:
                    continue
                torch._dynamo.reset()
                compiled = torch.compile(model, **kwargs)
                progress(f"{name}: compiling (its first call)")
                t0 = time.perf_counter()
                if not first_call_within(lambda: compiled(x), args.max_compile_s, args.target):
                    result["systems"][name] = {"compile_s": time.perf_counter() - t0, "gave_up": True}
                    torch._dynamo.reset()
                    done(args, result, name)
                    continue
                compile_s = time.perf_counter() - t0
                result["systems"][name] = timer(lambda: compiled(x), args.min_time, name, again=False)
                result["systems"][name]["compile_s"] = compile_s
                peak_memory(result["systems"][name], lambda: compiled(x), args.target)
                done(args, result, name)
    try:
        import onnxruntime as ort
        if "onnxruntime" not in skip:
            providers = ["CUDAExecutionProvider"] if args.target == "cuda" and "CUDAExecutionProvider" in \
                ort.get_available_providers() else ["CPUExecutionProvider"]
            if args.target == "llvm" or providers[0] == "CUDAExecutionProvider":
                options = ort.SessionOptions()
                if args.target == "llvm":
                    options.intra_op_num_threads = result["threads"]
                session = ort.InferenceSession(onnx_path, sess_options=options, providers=providers)
                feed = {session.get_inputs()[0].name: (x_fp32.cpu().numpy() if x_fp32 is not None else None)}
                result["systems"]["onnxruntime"] = timer(lambda: session.run(None, feed), args.min_time, "onnxruntime",
                                                         how=time_cpu)
                result["systems"]["onnxruntime"]["provider"] = providers[0]
                done(args, result, "onnxruntime")
    except ImportError:
        pass
    for r in range(1, args.rounds):
        progress(f"round {r + 1} of {args.rounds}")
        for name, (fn, how) in timed.items():
            again = how(fn, args.min_time)
            result["systems"][name]["round_medians_s"].append(again["median_s"])
            if "cpu_stolen" in again:
                system = result["systems"][name]
                system["cpu_stolen"] = max(system.get("cpu_stolen", 0.0), again["cpu_stolen"])

    write_reports(args, result)
    print_summary(args, result)
    if not result.get("check", {}).get("ok", True):
        c = result["check"]
        raise SystemExit(f"error: tessel's outputs differ from torch's: max |error| {c['max_abs_error']:.3g} over the "
                         f"bound {c['bound']:.3g} (the timings above are of a wrong result)")


def speed_up(system, tessel):
    """The system's time over tessel's: the median of the rounds' ratios when there were rounds."""
    ours, theirs = tessel.get("round_medians_s", []), system.get("round_medians_s", [])
    if len(ours) > 1 and len(ours) == len(theirs):
        return float(np.median([t / o for t, o in zip(theirs, ours)]))
    return system["median_s"] / tessel["median_s"]


def progress(line):
    print("compare: " + line, file=sys.stderr, flush=True)


def done(args, result, name):
    """One system measured: its line on stderr, and the reports so far written (a long compile
    of the next system, stopped from outside, leaves what was measured)."""
    s = result["systems"][name]
    if s.get("gave_up"):
        progress(f"{name}: compile stopped after {s['compile_s']:.0f} s")
    else:
        compile_s = f", compile {s['compile_s']:.1f} s" if "compile_s" in s else ""
        progress(f"{name}: {s['median_s'] * 1e6:.1f} us{compile_s}")
    write_reports(args, result)


def write_reports(args, result):
    with open(os.path.join(args.out, "compare.json"), "w") as f:
        json.dump(result, f, indent=1)
    systems = result["systems"]
    tessel_s = systems.get("tessel", {}).get("median_s")
    kind = "" if args.dtype == "fp32" else f", {args.dtype} (tessel's inputs and outputs float32" + \
        (f", torch's {args.dtype})" if args.model else ")")
    lines = [f"# {result['model']} on {args.target}{kind}", ""]
    if "threads" in result:
        quota = f"; this process's CPU quota {result['cpu_quota']:.1f} cores" if result.get("cpu_quota") else ""
        lines += [f"tessel, torch and onnxruntime on {result['threads']} threads (load average "
                  f"{result.get('load_average', 0):.2f} as the run began{quota}).", ""]
    lines += ["| system | median | p10 | p90 | tessel speed-up | compile |", "|---|---:|---:|---:|---:|---:|"]
    for name, s in systems.items():
        if s.get("gave_up"):
            lines.append(f"| {name} | not timed: its compile was stopped | - | - | - | > {s['compile_s']:.0f} s |")
            continue
        speed = f"{speed_up(s, systems['tessel']):.2f}x" if tessel_s else "-"
        compile_s = f"{s['compile_s']:.1f} s" if "compile_s" in s else "-"
        lines.append(f"| {name} | {s['median_s'] * 1e6:.1f} us | {s['p10_s'] * 1e6:.1f} us | "
                     f"{s['p90_s'] * 1e6:.1f} us | {speed} | {compile_s} |")
    stolen = [f"{name} {s['cpu_stolen']:.1%}" for name, s in systems.items() if "cpu_stolen" in s]
    if stolen:
        lines += ["", "Share of the machine's CPU time the hypervisor took while each was timed (the most of any "
                      "round; /proc/stat's steal): " +
                  ", ".join(stolen) + "."]
    rounds = len(systems.get("tessel", {}).get("round_medians_s", []))
    if rounds > 1:
        lines += ["", f"Timed in {rounds} rounds, tessel, torch eager and onnxruntime in turn each round (the "
                      "torch.compile modes in the first only); median, p10 and p90 are of the first round's calls, "
                      "a speed-up the median of the rounds' ratios where there were rounds."]
    if "check" in result:
        c = result["check"]
        lines += ["", f"tessel vs torch: max |error| {c['max_abs_error']:.3g} (bound {c['bound']:.3g}): "
                      f"{'ok' if c['ok'] else 'MISMATCH'}"]
    lines += memory_lines(systems)
    tasks = result.get("build", {}).get("tasks", [])
    if "build" in result:
        lines += ["", f"tessel build: {result['build_s']:.1f} s, {result['build']['kernels']} kernels of "
                      f"{len(tasks)} tasks",
                  "", "| task | weight | schedule | latency (log) | x weight | in the run |",
                  "|---|---:|---|---:|---:|---:|"]
    in_run = result.get("profile", {})
    for t in tasks:
        tuned = t["tuned_s"]
        schedule = f"record {t['record']}" if t["record"] >= 0 else "default"
        latency = f"{tuned * 1e6:.1f} us | {tuned * t['weight'] * 1e6:.1f} us" if tuned else "- | -"
        run_s = f"{in_run[t['key']] * 1e6:.1f} us" if t["key"] in in_run else "-"
        lines.append(f"| {t['name']} | {t['weight']} | {schedule} | {latency} | {run_s} |")
    if in_run:
        lines += ["", "\"latency (log)\": the task's schedule timed alone when tuned; \"in the run\": its kernels' "
                      f"time inside the model's runs (`tessel run --profile`, each kernel timed in turn; "
                      f"{sum(in_run.values()) * 1e6:.1f} us in all)."]
    if result.get("build_warnings"):
        lines += ["", "```", result["build_warnings"].strip(), "```"]
    with open(os.path.join(args.out, "compare.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        names = [n for n in systems if "median_s" in systems[n]]
        fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 4))
        ax.barh(names, [systems[n]["median_s"] * 1e3 for n in names],
                color=["#d62728" if n == "tessel" else "#1f77b4" for n in names])
        ax.set_xlabel("latency (ms, median)")
        ax.set_title(f"{result['model']} on {args.target}")
        # tessel's time by task inside the model's run (or, without a profile, the log's latency of
        # each task's schedule times its occurrences), against the model's measured total.
        if in_run:
            by_task = [(t["name"], in_run[t["key"]]) for t in tasks if t["key"] in in_run]
            bx.set_xlabel("ms per run (the task's kernels, timed in the run)")
        else:
            by_task = [(t["name"], t["tuned_s"] * t["weight"]) for t in tasks if t["tuned_s"]]
            bx.set_xlabel("ms per run (task latency x occurrences)")
        by_task = sorted(by_task, key=lambda t: -t[1])[:12]
        bx.barh([n[:40] for n, _ in by_task][::-1], [s * 1e3 for _, s in by_task][::-1])
        if tessel_s:
            bx.axvline(tessel_s * 1e3, color="#d62728", linestyle="--", label="tessel model total")
            bx.legend()
        bx.set_title("tessel by task")
        fig.tight_layout()
        fig.savefig(os.path.join(args.out, "compare.png"), dpi=120)
        plt.close(fig)
    except ImportError:
        pass


def print_summary(args, result):
    with open(os.path.join(args.out, "compare.md")) as f:
        lines = f.read().splitlines()
    table = lines.index("| system | median | p10 | p90 | tessel speed-up | compile |")
    print("\n".join(lines[:table + 2 + len(result["systems"])]))


if __name__ == "__main__":
    main()
