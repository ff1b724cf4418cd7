#!/usr/bin/env python3
"""What causal isolation costs on the GPU: hla's default CUDA kernels built
with and without it (hla-opt --causal-isolation), timed in one process on
the same clean inputs (the common path: no chunk holds a non-finite value).

    isolation_bench.py build OUTDIR     # here: compile (hla-opt)
    isolation_bench.py run OUTDIR       # on the GPU machine: time, compare

bf16 forward, median of 20 timed runs after 3 warm-up runs (CUDA events),
fresh random inputs per shape. Each output is checked against the float64
reference on a prefix before it is timed (the run stops on one over the
bf16 tolerance), and both builds must give the same outputs. Prints a table last and writes $OUT/isolation_bench.json.
"""

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from gpu_util import (hla_call, median_ms, provenance, record_build, reference_error,  # noqa: E402
                      refusal)

# (op, B, H, T, d): the issue tables' shapes that compile quickly.
SHAPES = [("hla2", 8, 16, 8192, 64), ("linear_attention", 8, 16, 8192, 64),
          ("kda", 4, 16, 4096, 64)]


def name_of(op, B, H, T, d, isolation):
    return f"{op}_B{B}_H{H}_T{T}_d{d}_{'iso' if isolation else 'plain'}"


def build(outdir):
    sys.path.insert(0, os.path.join(REPO, "python", "tests"))
    from codegen_util import attention_graph, kda_graph
    hla_opt = os.path.join(REPO, "build", "bin", "hla-opt")
    os.makedirs(outdir, exist_ok=True)
    record_build(outdir)
    for op, B, H, T, d in SHAPES:
        shape = (B, T, H, d)
        graph = (kda_graph(B, T, H, H, d, d, dtype="bf16") if op == "kda" else
                 attention_graph(op, shape, shape, shape, dict(scale=1.0), dtype="bf16"))
        for isolation in (True, False):
            name = name_of(op, B, H, T, d, isolation)
            src = os.path.join(outdir, name + ".mlir")
            with open(src, "w") as f:
                f.write(graph)
            r = subprocess.run([hla_opt, src, "--hla-target=cuda", "--emit=shared", "-o",
                                os.path.join(outdir, name + ".so"),
                                f"--causal-isolation={'true' if isolation else 'false'}"],
                               capture_output=True, text=True)
            print(name, "ok" if r.returncode == 0 else r.stderr[-400:], flush=True)


def run(outdir):
    import torch
    rows = []
    for op, B, H, T, d in SHAPES:
        torch.manual_seed(T + d)
        dt = torch.bfloat16
        q = torch.randn(B, T, H, d, device="cuda", dtype=dt) * d ** -0.5
        k = torch.randn(B, T, H, d, device="cuda", dtype=dt)
        v = torch.randn(B, T, H, d, device="cuda", dtype=dt)
        inputs = [q, k * d ** -0.5, v]
        if op == "kda":
            k = torch.nn.functional.normalize(k.float(), dim=-1).to(dt)
            g = -(torch.rand(B, T, H, d, device="cuda") * 0.2).to(dt)
            beta = torch.rand(B, T, H, device="cuda").to(dt)
            inputs = [q, k, v, g, beta]
        times, outs = {}, {}
        for isolation in (True, False):
            out = torch.full((B, T, H, d), float("nan"), device="cuda", dtype=dt)
            fn = hla_call(os.path.join(outdir, name_of(op, B, H, T, d, isolation) + ".so"),
                          inputs, [out])
            fn()
            torch.cuda.synchronize()
            error = reference_error(op, inputs, out,
                                    **({"scale": d ** -0.5} if op == "kda" else {"scale": 1.0}))
            why = refusal(error)
            if why:
                raise SystemExit(f"isolation_bench: {name_of(op, B, H, T, d, isolation)}: {why}")
            times[isolation] = median_ms(fn)
            outs[isolation] = out.float()
        same = float((outs[True] - outs[False]).abs().max())
        finite = bool(torch.isfinite(outs[True]).all())
        rows.append(dict(op=op, shape=f"{B}x{H}x{T}x{d}", iso_ms=times[True],
                         plain_ms=times[False], ratio=times[True] / times[False],
                         max_abs_diff=same, finite=finite))
    print("device", torch.cuda.get_device_name(), "torch", torch.__version__)
    print("| op | B×H×T×d | isolation ms | plain ms | ratio | max |diff| | finite |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['op']} | {r['shape']} | {r['iso_ms']:.3f} | {r['plain_ms']:.3f} | "
              f"{r['ratio']:.3f} | {r['max_abs_diff']:.1e} | {r['finite']} |")
    out = os.environ.get("OUT", outdir)
    with open(os.path.join(out, "isolation_bench.json"), "w") as f:
        json.dump({"provenance": provenance(outdir), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    {"build": build, "run": run}[sys.argv[1]](sys.argv[2])
