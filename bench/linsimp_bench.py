#!/usr/bin/env python3
"""One LinSimp layer (favor, W = 64, m = 256, d = 64, bf16) against causal
scaled_dot_product_attention at the same shape, on the GPU.

    linsimp_bench.py build OUTDIR      # here: compile the kernels (hla-opt)
    linsimp_bench.py run OUTDIR        # on the GPU machine: time and compare

The hla kernel is the attention op alone (q, k, v, r, u and Ω in, o out),
as SDPA is. One process; median of 20 timed runs after warm-up with CUDA
events; fresh random inputs (small-norm q, k, r, as LinSimp needs). The
first output rows of sequence 0 are checked against the float64 reference
first (gpu_util.reference_error); a kernel over the bf16 tolerance is not
timed. Writes $OUT/linsimp_bench.json (with the commit the kernels were
built from) and prints a table.
"""

import importlib.util
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from gpu_util import (hla_call, median_ms, provenance, record_build, reference_error,  # noqa: E402
                      refusal)

# (B, H, T): the seed model's heads (d_model 1024 = 16 x 64).
SHAPES = [(4, 16, 2048), (1, 16, 2048), (1, 16, 16384)]
D, M, W = 64, 256, 64
CHUNKS = [16]


def name_of(B, H, T, chunk):
    return f"linsimp_bf16_B{B}_H{H}_T{T}_c{chunk}"


def build(outdir):
    sys.path.insert(0, os.path.join(REPO, "python", "tests"))
    from codegen_util import linsimp_graph
    hla_opt = os.path.join(REPO, "build", "bin", "hla-opt")
    os.makedirs(outdir, exist_ok=True)
    record_build(outdir)
    for (B, H, T) in SHAPES:
        for chunk in CHUNKS:
            name = name_of(B, H, T, chunk)
            src = os.path.join(outdir, name + ".mlir")
            with open(src, "w") as f:
                f.write(linsimp_graph(B, T, H, H, D, D, M, W, dtype="bf16"))
            r = subprocess.run([hla_opt, src, "--hla-target=cuda", "--emit=shared", "-o",
                                os.path.join(outdir, name + ".so"), f"--chunk-size={chunk}"],
                               capture_output=True, text=True)
            print(name, "ok" if r.returncode == 0 else r.stderr[-600:], flush=True)


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(outdir):
    import torch
    import torch.nn.functional as F
    rf = _load(os.path.join(REPO, "python", "hla", "random_features.py"), "hla_rf")
    dev = "cuda"

    bench = median_ms

    print("device", torch.cuda.get_device_name(), "torch", torch.__version__, flush=True)
    omega = torch.from_numpy(rf.random_features(M, D, 1)).to(torch.bfloat16).to(dev)
    rows = []
    for (B, H, T) in SHAPES:
        r = {"B": B, "H": H, "T": T, "d": D, "m": M, "W": W}
        q = torch.randn(B, T, H, D, device=dev, dtype=torch.bfloat16) * 0.5
        k = torch.randn(B, T, H, D, device=dev, dtype=torch.bfloat16) * 0.5
        rr = torch.randn(B, T, H, D, device=dev, dtype=torch.bfloat16) * 0.5
        v = torch.randn(B, T, H, D, device=dev, dtype=torch.bfloat16)
        u = torch.randn(B, T, H, D, device=dev, dtype=torch.bfloat16)
        for chunk in CHUNKS:
            path = os.path.join(outdir, name_of(B, H, T, chunk) + ".so")
            if not os.path.exists(path):
                continue
            o = torch.full_like(v, float("nan"))
            call = hla_call(path, (q, k, v, rr, u, omega), (o,))
            call(); torch.cuda.synchronize()
            r[f"hla_c{chunk}_relerr"] = reference_error("linsimp", (q, k, v, rr, u), o,
                                                        omega=omega, window=W)
            r[f"hla_c{chunk}_finite"] = bool(torch.isfinite(o).all())
            why = refusal(r[f"hla_c{chunk}_relerr"] if r[f"hla_c{chunk}_finite"]
                          else float("nan"))
            if why:
                r[f"hla_c{chunk}_refused"] = why
                print(name_of(B, H, T, chunk), why, flush=True)
                continue
            r[f"hla_c{chunk}_ms"] = bench(call)
            if r.get("hla_ms") is None or r[f"hla_c{chunk}_ms"] < r["hla_ms"]:
                r["hla_ms"], r["hla_chunk"] = r[f"hla_c{chunk}_ms"], chunk
        qs, ks, vs = (t.transpose(1, 2).contiguous() for t in (q, k, v))
        r["sdpa_ms"] = bench(lambda: F.scaled_dot_product_attention(qs, ks, vs, is_causal=True))
        if r.get("hla_ms"):
            r["hla_over_sdpa"] = r["hla_ms"] / r["sdpa_ms"]
        rows.append(r)
        print(json.dumps(r), flush=True)
        del q, k, v, rr, u, qs, ks, vs
        torch.cuda.empty_cache()
    with open(os.path.join(os.environ.get("OUT", outdir), "linsimp_bench.json"), "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                   "provenance": provenance(outdir), "rows": rows}, f, indent=1)
    print(f"{'B':>2} {'H':>3} {'T':>6} {'hla ms':>8} {'sdpa ms':>8} {'hla/sdpa':>8} {'relerr':>8}")
    for r in rows:
        c = r.get("hla_chunk")
        print(f"{r['B']:>2} {r['H']:>3} {r['T']:>6} {r.get('hla_ms', float('nan')):8.3f} "
              f"{r['sdpa_ms']:8.3f} {r.get('hla_over_sdpa', float('nan')):8.2f} "
              f"{r.get(f'hla_c{c}_relerr', float('nan')):8.1e}")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("build", "run"):
        print(__doc__)
        sys.exit(2)
    (build if sys.argv[1] == "build" else run)(sys.argv[2])
