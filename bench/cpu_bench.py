#!/usr/bin/env python3
"""CPU benchmark: hla's compiled hla2 / ahla / hla3 against float32 numpy
implementations of the same chunked algorithms (BLAS matmuls), in one
process.

    /usr/bin/python3 bench/cpu_bench.py [--hla-opt build/bin/hla-opt] [--reps 10]

The compiled side is a shared library made by `hla-opt --emit=shared` and
called through ctypes (hla.runtime); the numpy side is batched over (B, H)
with a loop over chunks (hla2 uses the cumulative-sum form of
../shared/bench/torch_anchors.py). Both get the same fresh random inputs
(a rotation of 3 sets); each time is the median of `reps` runs after a
warm-up. Outputs are cross-checked before timing.
"""

import argparse
import ctypes
import datetime
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import hla.runtime  # noqa: E402

C = 64  # chunk size of both sides


def hla2_numpy(q, k, v):
    """Masked HLA2, [B,H,T,d] float32, the chunked form with cumsums."""
    B, H, N, d = q.shape
    dv = v.shape[-1]
    M = N // C
    q = q.reshape(B, H, M, C, d); k = k.reshape(B, H, M, C, d); v = v.reshape(B, H, M, C, dv)
    L = np.tril(np.ones((C, C), np.float32)); Ls = np.tril(np.ones((C, C), np.float32), -1)
    kt = np.swapaxes(k, -1, -2); qt = np.swapaxes(q, -1, -2)
    dS = kt @ k; dC = qt @ v
    dG = kt @ ((Ls * (k @ qt)) @ v)
    S0 = np.cumsum(dS, 2) - dS; C0 = np.cumsum(dC, 2) - dC
    inc = dG + dS @ C0; G0 = np.cumsum(inc, 2) - inc
    W = L * (q @ kt)
    o = q @ (S0 @ C0 - G0) + ((q @ S0 @ qt) * L) @ v + ((W @ np.swapaxes(W, -1, -2)) * L) @ v
    return o.reshape(B, H, N, dv)


def ahla_numpy(q, k, v):
    """AHLA (SEMANTICS §3), chunk loop with carried P, E."""
    B, H, N, d = q.shape
    dv = v.shape[-1]
    L = np.tril(np.ones((C, C), np.float32))
    P = np.zeros((B, H, d, dv), np.float32); E = np.zeros((B, H, d, dv), np.float32)
    out = np.empty((B, H, N, dv), np.float32)
    for s in range(0, N, C):
        Q, K, V = q[:, :, s:s + C], k[:, :, s:s + C], v[:, :, s:s + C]
        Kt = np.swapaxes(K, -1, -2)
        A = L * (Q @ Kt)
        out[:, :, s:s + C] = Q @ E + A @ (Q @ P) + ((A @ A) * L) @ V
        E = E + (Kt @ Q) @ P + Kt @ (A @ V)
        P = P + Kt @ V
    return out


def hla3_numpy(q, k, v):
    """HLA3 (SEMANTICS §4), chunk loop with carried S, P, X."""
    B, H, N, d = q.shape
    dv = v.shape[-1]
    L = np.tril(np.ones((C, C), np.float32))
    S = np.zeros((B, H, d, d), np.float32); P = np.zeros((B, H, d, dv), np.float32)
    X = np.zeros((B, H, d, dv), np.float32)
    out = np.empty((B, H, N, dv), np.float32)
    for s in range(0, N, C):
        Q, K, V = q[:, :, s:s + C], k[:, :, s:s + C], v[:, :, s:s + C]
        Qt, Kt = np.swapaxes(Q, -1, -2), np.swapaxes(K, -1, -2)
        A = L * (Q @ Kt)
        At = np.swapaxes(A, -1, -2)
        Y = Q @ P + A @ V
        Z = L * (Q @ S @ Qt + Q @ Kt @ At)
        out[:, :, s:s + C] = Q @ X + Z @ Y
        X = X + (S @ Qt + Kt @ At) @ Y
        S = S + Kt @ K
        P = P + Kt @ V
    return out


NUMPY = {"hla2": hla2_numpy, "ahla": ahla_numpy, "hla3": hla3_numpy}


def graph(op, B, T, H, d):
    t = f"tensor<{B}x{T}x{H}x{d}xf32>"
    return (f"func.func @main(%q: {t}, %k: {t}, %v: {t}) -> {t} {{\n"
            f"  %o = hla.{op} %q, %k, %v : ({t}, {t}, {t}) -> {t}\n"
            f"  return %o : {t}\n}}\n")


def median_ms(fn, inputs, reps):
    fn(*inputs[0])  # warm-up
    times = []
    for r in range(reps):
        args = inputs[r % len(inputs)]
        start = time.perf_counter()
        fn(*args)
        times.append((time.perf_counter() - start) * 1e3)
    times.sort()
    return times[len(times) // 2]


def blas_library():
    """The BLAS shared object numpy actually loaded."""
    np.ones((64, 64), np.float32) @ np.ones((64, 64), np.float32)
    with open("/proc/self/maps") as f:
        libs = {line.split()[-1] for line in f if "blas" in line.lower()}
    return ", ".join(sorted(os.path.basename(l) for l in libs)) or "unknown"


def cpu_name():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--hla-opt", default=os.path.join(HERE, "..", "build", "bin", "hla-opt"))
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--ops", default="hla2,ahla,hla3")
    parser.add_argument("--flags", default="",
                        help="extra hla-opt flags, comma-separated (e.g. --chunk-form=fused)")
    args = parser.parse_args()
    shapes = [(1, 4096, 8, 64), (4, 1024, 8, 64)]
    work = tempfile.mkdtemp(prefix="hla-bench-")
    rng = np.random.default_rng(0)
    print(f"# {datetime.date.today()} | {cpu_name()} | {os.cpu_count()} cores | "
          f"numpy {np.__version__} with {blas_library()}")
    print("| op | B x T x H x d | hla compiled (ms) | numpy f32 chunked (ms) | numpy / hla | rel. diff |")
    print("|---|---|---|---|---|---|")
    for op in args.ops.split(","):
        for (B, T, H, d) in shapes:
            src = os.path.join(work, f"{op}_{B}_{T}.mlir")
            lib = os.path.join(work, f"{op}_{B}_{T}.so")
            with open(src, "w") as f:
                f.write(graph(op, B, T, H, d))
            subprocess.run([args.hla_opt, src, "--hla-target=cpu", "--emit=shared",
                            "-o", lib, f"--chunk-size={C}",
                            *[f for f in args.flags.split(",") if f]], check=True)
            fn = hla.runtime.load(lib).main
            scale = d ** -0.5
            sets = []
            for _ in range(3):
                q, k, v = (rng.standard_normal((B, T, H, d)).astype(np.float32) * (d ** -0.5)
                           for _ in range(3))
                # numpy side: [B, H, T, d], q pre-scaled as the op does.
                qn = np.ascontiguousarray(np.swapaxes(q, 1, 2)) * np.float32(scale)
                kn = np.ascontiguousarray(np.swapaxes(k, 1, 2))
                vn = np.ascontiguousarray(np.swapaxes(v, 1, 2))
                sets.append(((q, k, v), (qn, kn, vn)))
            got = fn(*sets[0][0])
            want = np.swapaxes(NUMPY[op](*sets[0][1]), 1, 2)
            diff = float(np.linalg.norm(got - want) / np.linalg.norm(want))
            t_hla = median_ms(fn, [s[0] for s in sets], args.reps)
            t_np = median_ms(NUMPY[op], [s[1] for s in sets], args.reps)
            print(f"| {op} | {B}x{T}x{H}x{d} | {t_hla:.1f} | {t_np:.1f} | "
                  f"{t_np / t_hla:.1f}x | {diff:.1e} |", flush=True)


if __name__ == "__main__":
    main()
