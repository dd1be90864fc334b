"""Times one convolution in torch on the CPU (oneDNN), as tessel's conv2d op template defines it, with
the tensors in torch's default layout (NCHW) and in channels_last (NHWC, which oneDNN's depthwise and
strided kernels prefer), and reports the faster.

    /usr/bin/python3 experiments/cpu_convs/torch_conv.py N C H W F KH KW stride pad groups THREADS MIN_TIME

Prints one JSON object: the faster layout's median and spread of per-call times in seconds, and
each layout's median.
"""
import json
import sys
import time

import torch


def main():
    n, c, h, w, f, kh, kw, stride, pad, groups, threads = (int(a) for a in sys.argv[1:12])
    min_time = float(sys.argv[12])
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    best = None
    medians = {}
    for name, layout in (("nchw", torch.contiguous_format), ("channels_last", torch.channels_last)):
        x = torch.randn(n, c, h, w).to(memory_format=layout)
        conv = torch.nn.Conv2d(c, f, (kh, kw), stride=stride, padding=pad, groups=groups, bias=False)
        conv = conv.eval().to(memory_format=layout)
        samples = []
        with torch.no_grad():
            for _ in range(3):
                conv(x)
            start = time.perf_counter()
            while time.perf_counter() - start < min_time or len(samples) < 10:
                t = time.perf_counter()
                conv(x)
                samples.append(time.perf_counter() - t)
        samples.sort()
        medians[name] = samples[len(samples) // 2]
        if best is None or medians[name] < best["median_s"]:
            best = {"median_s": medians[name], "p10_s": samples[len(samples) // 10],
                    "p90_s": samples[(9 * len(samples)) // 10], "samples": len(samples), "layout": name}
    best.update({"medians_s": medians, "threads": torch.get_num_threads(), "torch": torch.__version__})
    print(json.dumps(best))

if __name__ == "__main__":
    main()
