#!/usr/bin/env python3
"""CPU benchmark of LinSimp (favor, f32): the anchor window read out G
offsets per pass (hla-chunk's anchor-rows, issue 13) against one offset per
pass, and against the compiler of an earlier commit.

    /usr/bin/python3 bench/linsimp_cpu_bench.py [--before PATH] [--reps 5]

Each artefact is a shared library (`hla-opt --emit=shared`) called through
ctypes (hla.runtime) on the same fresh random inputs (small-norm q, k, r, a
rotation of 2 sets); each time is the median of `reps` runs after a
warm-up. Every output's first 128 tokens are checked against the float64
reference (hla.reference.linsimp; exact by causality) before it is timed.
Prints a markdown table.
"""

import argparse
import datetime
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "python", "tests"))
import hla.reference as ref  # noqa: E402
import hla.runtime  # noqa: E402
from codegen_util import linsimp_graph  # noqa: E402
from hla.random_features import random_features  # noqa: E402

from cpu_bench import cpu_name, median_ms  # noqa: E402

CHECKED_TOKENS = 128


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--hla-opt", default=os.path.join(HERE, "..", "build", "bin", "hla-opt"))
    parser.add_argument("--before", help="an hla-opt built from an earlier commit")
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    B, T, H, d = 1, 1024, 4, 64
    work = tempfile.mkdtemp(prefix="hla-linsimp-bench-")
    rng = np.random.default_rng(0)
    print(f"# {datetime.date.today()} | {cpu_name()} | {os.cpu_count()} cores | "
          f"B x T x H = {B}x{T}x{H}, d = dv = {d}, f32")
    print("| m | W | chunk | variant | ms | rel. err (first 128 tokens) |")
    print("|---|---|---|---|---|---|")
    for m, W in [(64, 64), (256, 64), (64, 16)]:
        omega = random_features(m, d, seed=1).astype(np.float32)
        sets = []
        for _ in range(2):
            q, k, r = (0.5 * rng.standard_normal((B, T, H, d)).astype(np.float32)
                       for _ in range(3))
            v, u = (rng.standard_normal((B, T, H, d)).astype(np.float32) for _ in range(2))
            sets.append((q, k, v, r, u, omega))
        n = CHECKED_TOKENS
        want = ref.linsimp(*(x[:, :n].astype(np.float64) for x in sets[0][:5]),
                           omega=omega.astype(np.float64), window=W)
        src = os.path.join(work, f"linsimp_{m}_{W}.mlir")
        with open(src, "w") as f:
            f.write(linsimp_graph(B, T, H, H, d, d, m, W))
        for chunk in [16, 32, 64]:
            variants = [("stacked", args.hla_opt, []),
                        ("one offset per pass", args.hla_opt,
                         [f"--linsimp-anchor-rows={chunk}"])]
            if args.before:
                variants.append(("before", args.before, []))
            for name, compiler, flags in variants:
                lib = os.path.join(work, f"linsimp_{m}_{W}_{chunk}_{len(flags)}_{name[0]}.so")
                subprocess.run([compiler, src, "--hla-target=cpu", "--emit=shared", "-o", lib,
                                f"--chunk-size={chunk}", *flags], check=True)
                fn = hla.runtime.load(lib).main
                got = fn(*sets[0])[:, :n]
                err = float(np.linalg.norm(got - want) / np.linalg.norm(want))
                if not err <= 1e-4:
                    print(f"| {m} | {W} | {chunk} | {name} | refused | {err:.1e} |", flush=True)
                    continue
                ms = median_ms(fn, sets, args.reps)
                print(f"| {m} | {W} | {chunk} | {name} | {ms:.1f} | {err:.1e} |", flush=True)


if __name__ == "__main__":
    main()
