#!/usr/bin/env python3
"""KDA (the gated delta rule) forward on the GPU: hla's kernel against the
PyTorch eager chunked form of the same op (the WY/UT form of SEMANTICS.md
§6, chunk 64, float32 inside, a Python loop over chunks for the state).

    kda_bench.py build OUTDIR      # here: compile the kernels (hla-opt)
    kda_bench.py run OUTDIR        # on the GPU machine: time and compare

bf16 inputs: q scaled by dk^-1/2, L2-normalised k, log-decays g <= 0,
beta in (0.1, 0.9); one process; median of 20 timed runs after warm-up with
CUDA events; fresh random inputs per shape. Each output is checked first
(the float64 chunked form over the whole length, hla.reference on a prefix);
a kernel over the bf16 tolerance is not timed. Writes $OUT/kda_bench.json
with the commit the kernels were built from.
"""

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from gpu_util import (hla_call, kda_inputs, median_ms, provenance, record_build,  # noqa: E402
                      reference_error, refusal)

SHAPES = [(4, 16, 4096, 64), (1, 16, 16384, 64)]
CHUNKS = [64, 32]


def name_of(B, H, T, d, chunk):
    return f"kda_bf16_B{B}_H{H}_T{T}_d{d}_c{chunk}"


def build(outdir):
    sys.path.insert(0, os.path.join(REPO, "python", "tests"))
    from codegen_util import kda_graph
    hla_opt = os.path.join(REPO, "build", "bin", "hla-opt")
    os.makedirs(outdir, exist_ok=True)
    record_build(outdir)
    for (B, H, T, d) in SHAPES:
        for chunk in CHUNKS:
            name = name_of(B, H, T, d, chunk)
            src = os.path.join(outdir, name + ".mlir")
            with open(src, "w") as f:
                f.write(kda_graph(B, T, H, H, d, d, dtype="bf16"))
            r = subprocess.run([hla_opt, src, "--hla-target=cuda", "--emit=shared", "-o",
                                os.path.join(outdir, name + ".so"), f"--chunk-size={chunk}"],
                               capture_output=True, text=True)
            print(name, "ok" if r.returncode == 0 else r.stderr[-600:], flush=True)


def run(outdir):
    import torch

    bench = median_ms

    def kda_chunked(q, k, v, g, beta, scale, C=64, dtype=torch.float32):
        """[B, H, T, d] inputs; the WY/UT chunked form in `dtype` (float32:
        the eager peer; float64: the full-length reference)."""
        B, H, T, dk = q.shape
        dv = v.shape[-1]
        N = T // C
        q, k, v, g = (x.to(dtype).view(B, H, N, C, -1) for x in (q, k, v, g))
        beta = beta.to(dtype).view(B, H, N, C)
        gam = g.cumsum(-2)
        diff = gam[..., :, None, :] - gam[..., None, :, :]          # [.., r, s, d]
        strict = torch.tril(torch.ones(C, C, dtype=torch.bool, device=q.device), -1)
        causal = torch.tril(torch.ones(C, C, dtype=torch.bool, device=q.device))
        decay_s = torch.where(strict[..., None], diff, -float("inf")).exp()
        decay_c = torch.where(causal[..., None], diff, -float("inf")).exp()
        akk = (k[..., :, None, :] * k[..., None, :, :] * decay_s).sum(-1) * beta[..., None]
        eye = torch.eye(C, device=q.device, dtype=dtype)
        tri = torch.linalg.solve_triangular(eye + akk, torch.diag_embed(beta), upper=False,
                                            unitriangular=True)
        eg = gam.exp()
        w = tri @ (eg * k)
        u = tri @ v
        aqk = (q[..., :, None, :] * k[..., None, :, :] * decay_c).sum(-1) * scale
        qg = eg * q * scale
        S = torch.zeros(B, H, dk, dv, device=q.device, dtype=dtype)
        o = torch.empty(B, H, N, C, dv, device=q.device, dtype=dtype)
        for n in range(N):
            delta = u[:, :, n] - w[:, :, n] @ S
            o[:, :, n] = qg[:, :, n] @ S + aqk[:, :, n] @ delta
            last = gam[:, :, n, -1]
            kt = (last[..., None, :] - gam[:, :, n]).exp() * k[:, :, n]
            S = last.exp()[..., None] * S + kt.transpose(-1, -2) @ delta
        return o.view(B, H, T, dv)

    print("device", torch.cuda.get_device_name(), "torch", torch.__version__, flush=True)
    rows = []
    for (B, H, T, d) in SHAPES:
        r = {"B": B, "H": H, "T": T, "d": d}
        q, k, v, g, beta = kda_inputs(B, T, H, d)
        scale = d ** -0.5
        th = [x.transpose(1, 2).contiguous() for x in (q, k, v, g, beta)]
        ref = kda_chunked(*th, scale, dtype=torch.float64).transpose(1, 2)
        for chunk in CHUNKS:
            path = os.path.join(outdir, name_of(B, H, T, d, chunk) + ".so")
            if not os.path.exists(path):
                continue
            o = torch.full_like(v, float("nan"))
            call = hla_call(path, (q, k, v, g, beta), (o,))
            call(); torch.cuda.synchronize()
            r[f"hla_c{chunk}_relerr"] = float((o.double() - ref).norm() / ref.norm())
            r[f"hla_c{chunk}_relerr_prefix"] = reference_error(
                "kda", (q, k, v, g, beta), o, scale=scale)
            why = refusal(max(r[f"hla_c{chunk}_relerr"], r[f"hla_c{chunk}_relerr_prefix"]))
            if why:
                r[f"hla_c{chunk}_refused"] = why
                print(name_of(B, H, T, d, chunk), why, flush=True)
                continue
            r[f"hla_c{chunk}_ms"] = bench(call)
            if r.get("hla_ms") is None or r[f"hla_c{chunk}_ms"] < r["hla_ms"]:
                r["hla_ms"], r["hla_chunk"] = r[f"hla_c{chunk}_ms"], chunk
        r["eager_ms"] = bench(lambda: kda_chunked(*th, scale))
        if r.get("hla_ms"):
            r["speedup_vs_eager"] = r["eager_ms"] / r["hla_ms"]
        rows.append(r)
        print(json.dumps(r), flush=True)
        del q, k, v, g, beta, th, ref
        torch.cuda.empty_cache()
    with open(os.path.join(os.environ.get("OUT", outdir), "kda_bench.json"), "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                   "provenance": provenance(outdir), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("build", "run"):
        print(__doc__)
        sys.exit(2)
    (build if sys.argv[1] == "build" else run)(sys.argv[2])
