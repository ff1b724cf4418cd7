#!/usr/bin/env python3
"""One LinSimp layer (favor, d = dv = 64, bf16) against causal
scaled_dot_product_attention at the same shape, on the GPU (issue 13).

    linsimp_bench.py build OUTDIR [HLA_OPT_BEFORE]   # here: compile the kernels
    linsimp_bench.py run OUTDIR                      # on the GPU machine

Shapes: W in {16, 64}, m in {64, 256}, B x H x T in {1x16x2048, 4x16x2048,
1x16x16384}. Each variant is a set of hla-opt options (chunk size, anchor
rows per pass, schedule); with HLA_OPT_BEFORE (an hla-opt built from an
earlier commit) the 1x16x2048 rows are also built by it at chunk 16, the
kernel before this change. The hla kernel is the attention op alone (q, k,
v, r, u and Omega in, o out), as SDPA is. One process; median of 20 timed
runs after warm-up with CUDA events; fresh random inputs (small-norm q, k,
r, as LinSimp needs). Every kernel's first output rows of sequence 0 are
checked against the float64 reference first (gpu_util.reference_error); a
kernel over the bf16 tolerance is not timed. FLOPs are the algorithm's,
2 W m (d + dv) per token and head (issue 13); the peak is a bf16 GEMM
measured in the same process. Writes $OUT/linsimp_bench.json (with the
commit the kernels were built from) and prints a table.
"""

import importlib.util
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from gpu_util import (hla_call, median_ms, provenance, record_build, reference_error,  # noqa: E402
                      refusal)

# (B, H, T): the seed model's heads (d_model 1024 = 16 x 64).
SHAPES = [(1, 16, 2048), (4, 16, 2048), (1, 16, 16384)]
D = 64
FEATURES_WINDOWS = [(64, 64), (256, 64), (64, 16), (256, 16)]
VARIANTS = {
    "auto": [],  # the search's choice: the rows on register tiles where they fit
    # The same pinned: the persistent loop keeping M and a, its rows (the
    # anchor window, one offset a pass) in a pass parallel over chunks.
    "tiles": ["--cuda-schedule=persistent", "--chunk-size=64", "--linsimp-anchor-rows=64",
              "--hoist-chunk-work=on", "--cuda-allow-spills=true"],
    # The phases' segmented form at 16-token chunks (the search's choice
    # before 2026-12-06; its variants of 2026-12-03 are in bench/RESULTS.md).
    "phases": ["--chunk-size=16", "--hoist-chunk-work=off"],
}
BEFORE = "before-c16"


def name_of(B, H, T, m, W, variant):
    return f"linsimp_bf16_B{B}_H{H}_T{T}_m{m}_W{W}_{variant}"


def flops(B, H, T, m, W):
    return 2.0 * B * H * T * W * m * (D + D)


def build(outdir, before=None):
    sys.path.insert(0, os.path.join(REPO, "python", "tests"))
    from codegen_util import linsimp_graph
    hla_opt = os.path.join(REPO, "build", "bin", "hla-opt")
    os.makedirs(outdir, exist_ok=True)
    record_build(outdir)
    jobs = []
    for (B, H, T) in SHAPES:
        for (m, W) in FEATURES_WINDOWS:
            src = os.path.join(outdir, name_of(B, H, T, m, W, "graph") + ".mlir")
            with open(src, "w") as f:
                f.write(linsimp_graph(B, T, H, H, D, D, m, W, dtype="bf16"))
            for variant, flags in VARIANTS.items():
                jobs.append((hla_opt, src, name_of(B, H, T, m, W, variant), flags))
            if before and T == 2048 and B == 1:
                jobs.append((before, src, name_of(B, H, T, m, W, BEFORE), ["--chunk-size=16"]))

    def compile_one(job):
        compiler, src, name, flags = job
        r = subprocess.run([compiler, src, "--hla-target=cuda", "--emit=shared", "-o",
                            os.path.join(outdir, name + ".so"), *flags],
                           capture_output=True, text=True)
        decided = [line for line in r.stderr.splitlines() if "hla.cuda_options" in line]
        with open(os.path.join(outdir, name + ".options"), "w") as f:
            f.write("\n".join(decided) + "\n")
        return name + (" ok" if r.returncode == 0 else " FAILED " + r.stderr[-600:])

    with ThreadPoolExecutor(2) as pool:
        for line in pool.map(compile_one, jobs):
            print(line, flush=True)


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def bf16_peak_tflops(torch):
    """The measured bf16 GEMM rate (8192^3, median of 20)."""
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    ms = median_ms(lambda: torch.matmul(a, b))
    return 2.0 * n ** 3 / (ms * 1e-3) / 1e12


def run(outdir):
    import torch
    import torch.nn.functional as F
    rf = _load(os.path.join(REPO, "python", "hla", "random_features.py"), "hla_rf")
    dev = "cuda"

    print("device", torch.cuda.get_device_name(), "torch", torch.__version__, flush=True)
    peak = bf16_peak_tflops(torch)
    print(f"bf16 GEMM peak {peak:.0f} TFLOP/s", flush=True)
    rows = []
    variants = list(VARIANTS) + [BEFORE]
    for (B, H, T) in SHAPES:
        q = torch.randn(B, T, H, D, device=dev, dtype=torch.bfloat16) * 0.5
        k = torch.randn(B, T, H, D, device=dev, dtype=torch.bfloat16) * 0.5
        rr = torch.randn(B, T, H, D, device=dev, dtype=torch.bfloat16) * 0.5
        v = torch.randn(B, T, H, D, device=dev, dtype=torch.bfloat16)
        u = torch.randn(B, T, H, D, device=dev, dtype=torch.bfloat16)
        qs, ks, vs = (t.transpose(1, 2).contiguous() for t in (q, k, v))
        sdpa_ms = median_ms(lambda: F.scaled_dot_product_attention(qs, ks, vs, is_causal=True))
        for (m, W) in FEATURES_WINDOWS:
            omega = torch.from_numpy(rf.random_features(m, D, 1)).to(torch.bfloat16).to(dev)
            r = {"B": B, "H": H, "T": T, "d": D, "m": m, "W": W, "sdpa_ms": sdpa_ms,
                 "gflop": flops(B, H, T, m, W) / 1e9}
            for variant in variants:
                path = os.path.join(outdir, name_of(B, H, T, m, W, variant) + ".so")
                if not os.path.exists(path):
                    continue
                o = torch.full_like(v, float("nan"))
                call = hla_call(path, (q, k, v, rr, u, omega), (o,))
                call(); torch.cuda.synchronize()
                err = reference_error("linsimp", (q, k, v, rr, u), o, omega=omega, window=W)
                finite = bool(torch.isfinite(o).all())
                r[f"{variant}_relerr"] = err
                why = refusal(err if finite else float("nan"))
                if why:
                    r[f"{variant}_refused"] = why
                    print(name_of(B, H, T, m, W, variant), why, flush=True)
                    continue
                r[f"{variant}_ms"] = median_ms(call)
                if variant != BEFORE and (r.get("hla_ms") is None
                                          or r[f"{variant}_ms"] < r["hla_ms"]):
                    r["hla_ms"], r["hla_variant"] = r[f"{variant}_ms"], variant
            if r.get("hla_ms"):
                r["hla_over_sdpa_time"] = r["hla_ms"] / sdpa_ms
                r["tflops"] = flops(B, H, T, m, W) / (r["hla_ms"] * 1e-3) / 1e12
                r["pct_peak"] = 100.0 * r["tflops"] / peak
            rows.append(r)
            print(json.dumps(r), flush=True)
        del q, k, v, rr, u, qs, ks, vs
        torch.cuda.empty_cache()
    with open(os.path.join(os.environ.get("OUT", outdir), "linsimp_bench.json"), "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                   "bf16_peak_tflops": peak, "variants": VARIANTS,
                   "provenance": provenance(outdir), "rows": rows}, f, indent=1)
    print(f"{'B':>2} {'H':>3} {'T':>6} {'m':>4} {'W':>3} {'hla ms':>9} {'variant':>8} "
          f"{'sdpa ms':>8} {'hla/sdpa':>9} {'TFLOP/s':>8} {'%peak':>6} {'before ms':>9}")
    for r in rows:
        print(f"{r['B']:>2} {r['H']:>3} {r['T']:>6} {r['m']:>4} {r['W']:>3} "
              f"{r.get('hla_ms', float('nan')):9.3f} {r.get('hla_variant', '-'):>8} "
              f"{r['sdpa_ms']:8.3f} {r.get('hla_over_sdpa_time', float('nan')):9.1f} "
              f"{r.get('tflops', float('nan')):8.2f} {r.get('pct_peak', float('nan')):6.2f} "
              f"{r.get(BEFORE + '_ms', float('nan')):9.2f}")


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4) or sys.argv[1] not in ("build", "run"):
        print(__doc__)
        sys.exit(2)
    if sys.argv[1] == "build":
        build(sys.argv[2], sys.argv[3] if len(sys.argv) == 4 else None)
    else:
        run(sys.argv[2])
