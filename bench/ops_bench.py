#!/usr/bin/env python3
"""hla2, ahla and hla3 forward on the GPU at one shape (issue 4's target:
ahla and hla3 within 2x of hla2's time), plus the SASS instruction mix of
the hla2 kernel.

    ops_bench.py build OUTDIR      # here: compile the kernels and a cubin
    ops_bench.py run OUTDIR        # on the GPU machine: time them

B x H x T x d = 8 x 16 x 8192 x 64, bf16 inputs (q, k scaled by d^-1/2),
scale 1, each op's default options, chunk 32; median of 20 timed runs after
warm-up (CUDA events), fresh random inputs. Each output is checked against
hla.reference's float64 op on a prefix first; the run stops rather than
report a kernel over the bf16 tolerance (the ratios need all three). Writes
$OUT/ops_bench.json with the commit the kernels were built from.
"""

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from gpu_util import (hla_call, median_ms, provenance, record_build, reference_error,  # noqa: E402
                      refusal, sass_mix)
B, H, T, D = 8, 16, 8192, 64
OPS = ["hla2", "ahla", "hla3"]
CHUNK = 32


def build(outdir):
    sys.path.insert(0, os.path.join(REPO, "python", "tests"))
    from codegen_util import attention_graph
    hla_opt = os.path.join(REPO, "build", "bin", "hla-opt")
    os.makedirs(outdir, exist_ok=True)
    record_build(outdir)
    shape = (B, T, H, D)
    for op in OPS:
        src = os.path.join(outdir, op + ".mlir")
        with open(src, "w") as f:
            f.write(attention_graph(op, shape, shape, shape, dict(scale=1.0), dtype="bf16"))
        for emit, out in (("shared", op + ".so"), ("cubin", op + ".cubin")):
            r = subprocess.run([hla_opt, src, "--hla-target=cuda", f"--emit={emit}", "-o",
                                os.path.join(outdir, out), f"--chunk-size={CHUNK}",
                                "--cuda-schedule=persistent"], capture_output=True, text=True)
            print(op, emit, "ok" if r.returncode == 0 else r.stderr[-400:], flush=True)


def run(outdir):
    import torch

    bench = median_ms

    result = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
              "provenance": provenance(outdir),
              "shape": [B, H, T, D], "chunk": CHUNK, "ops": {}}
    for op in OPS:
        path = os.path.join(outdir, op + ".so")
        q = (torch.randn(B, T, H, D, device="cuda") * D ** -0.5).to(torch.bfloat16)
        k = (torch.randn(B, T, H, D, device="cuda") * D ** -0.5).to(torch.bfloat16)
        v = torch.randn(B, T, H, D, device="cuda").to(torch.bfloat16)
        o = torch.full_like(v, float("nan"))
        call = hla_call(path, (q, k, v), (o,))
        call(); torch.cuda.synchronize()
        entry = {"finite": bool(torch.isfinite(o).all()),
                 "rel_err": reference_error(op, (q, k, v), o, scale=1.0)}
        why = refusal(entry["rel_err"] if entry["finite"] else float("nan"))
        if why:
            raise SystemExit(f"ops_bench: {op}: {why}")
        entry["ms"] = bench(call)
        entry["sass"] = sass_mix(os.path.join(outdir, op + ".cubin"))
        result["ops"][op] = entry
        print(op, json.dumps(entry), flush=True)
    base = result["ops"]["hla2"]["ms"]
    for op in OPS:
        result["ops"][op]["over_hla2"] = result["ops"][op]["ms"] / base
    with open(os.path.join(os.environ.get("OUT", outdir), "ops_bench.json"), "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps({op: round(e["over_hla2"], 2) for op, e in result["ops"].items()}))


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("build", "run"):
        print(__doc__)
        sys.exit(2)
    (build if sys.argv[1] == "build" else run)(sys.argv[2])
