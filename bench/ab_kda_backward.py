#!/usr/bin/env python3
"""A/B of KDA backward artefacts (kda_backward_bench.py builds) in one process,
on the same inputs: 3 warm-ups, then 20 timed calls of each, interleaved
(CUDA events); prints each one's median and its gradients' largest relative
difference from the first's.

    ab_kda_backward.py B H T d SO [SO ...]
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_util import hla_call, kda_inputs  # noqa: E402


def main():
    B, H, T, d = map(int, sys.argv[1:5])
    ins = list(kda_inputs(B, T, H, d))
    do = torch.randn_like(ins[2])
    calls = []
    for so in sys.argv[5:]:
        grads = [torch.empty_like(x) for x in ins]
        calls.append((so, hla_call(so, ins + [do], grads), grads))
    for _, call, _ in calls:
        for _ in range(3):
            call()
    torch.cuda.synchronize()
    times = {so: [] for so, _, _ in calls}
    for _ in range(20):
        for so, call, _ in calls:
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            call()
            end.record()
            torch.cuda.synchronize()
            times[so].append(start.elapsed_time(end))
    first = calls[0][2]
    for so, _, grads in calls:
        t = sorted(times[so])
        diff = max(float((a.float() - b.float()).norm() / b.float().norm())
                   for a, b in zip(grads, first))
        print(f"{so} {B}x{H}x{T}x{d} bwd median {t[10]:.3f} ms (min {t[0]:.3f}) "
              f"max rel. difference from the first {diff:.1e}", flush=True)


if __name__ == "__main__":
    main()
