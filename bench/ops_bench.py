#!/usr/bin/env python3
"""hla2, ahla and hla3 forward on the GPU at one shape (issue 4's target:
ahla and hla3 within 2x of hla2's time), plus the SASS instruction mix of
the hla2 kernel.

    ops_bench.py build OUTDIR      # here: compile the kernels and a cubin
    ops_bench.py run OUTDIR        # on the GPU machine: time them

B x H x T x d = 8 x 16 x 8192 x 64, bf16 inputs (q, k scaled by d^-1/2),
scale 1, each op's default options, chunk 32; median of 20 timed runs after
warm-up (CUDA events), fresh random inputs. Writes $OUT/ops_bench.json.
"""

import ctypes
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
B, H, T, D = 8, 16, 8192, 64
OPS = ["hla2", "ahla", "hla3"]
CHUNK = 32


def build(outdir):
    sys.path.insert(0, os.path.join(REPO, "python", "tests"))
    from codegen_util import attention_graph
    hla_opt = os.path.join(REPO, "build", "bin", "hla-opt")
    os.makedirs(outdir, exist_ok=True)
    shape = (B, T, H, D)
    for op in OPS:
        src = os.path.join(outdir, op + ".mlir")
        with open(src, "w") as f:
            f.write(attention_graph(op, shape, shape, shape, dict(scale=1.0), dtype="bf16"))
        for emit, out in (("shared", op + ".so"), ("cubin", op + ".cubin")):
            r = subprocess.run([hla_opt, src, "--hla-target=cuda", f"--emit={emit}", "-o",
                                os.path.join(outdir, out), f"--chunk-size={CHUNK}",
                                "--schedule=persistent"], capture_output=True, text=True)
            print(op, emit, "ok" if r.returncode == 0 else r.stderr[-400:], flush=True)


def sass_mix(cubin):
    """Counts of the instructions that matter in the kernel's SASS."""
    r = subprocess.run(["cuobjdump", "--dump-sass", cubin], capture_output=True, text=True)
    if r.returncode != 0:
        return {"error": r.stderr[-300:]}
    counts = {}
    for mnemonic in ["HGMMA", "HMMA", "LDL", "STL", "LDS", "STS", "LDG", "STG", "BAR", "FFMA"]:
        counts[mnemonic] = len(re.findall(r"\b" + mnemonic + r"\b[.\w]*", r.stdout))
    counts["instructions"] = len(re.findall(r"/\*[0-9a-f]{4}\*/", r.stdout))
    return counts


def run(outdir):
    import torch

    def bench(fn, warm=3, rep=20):
        for _ in range(warm):
            fn()
        torch.cuda.synchronize()
        ts = []
        for _ in range(rep):
            s = torch.cuda.Event(enable_timing=True)
            e = torch.cuda.Event(enable_timing=True)
            s.record(); fn(); e.record(); torch.cuda.synchronize()
            ts.append(s.elapsed_time(e))
        ts.sort()
        return ts[len(ts) // 2]

    result = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
              "shape": [B, H, T, D], "chunk": CHUNK, "ops": {}}
    for op in OPS:
        path = os.path.join(outdir, op + ".so")
        lib = ctypes.CDLL(path)
        lib.hla_cuda_set_stream.argtypes = [ctypes.c_void_p, ctypes.c_int]
        lib.hla_cuda_set_stream(ctypes.c_void_p(torch.cuda.current_stream().cuda_stream), 1)
        fn = lib.hla_main
        fn.argtypes = [ctypes.POINTER(ctypes.c_void_p)] * 2
        q = (torch.randn(B, T, H, D, device="cuda") * D ** -0.5).to(torch.bfloat16)
        k = (torch.randn(B, T, H, D, device="cuda") * D ** -0.5).to(torch.bfloat16)
        v = torch.randn(B, T, H, D, device="cuda").to(torch.bfloat16)
        o = torch.full_like(v, float("nan"))
        ins = (ctypes.c_void_p * 3)(q.data_ptr(), k.data_ptr(), v.data_ptr())
        outs = (ctypes.c_void_p * 1)(o.data_ptr())
        call = lambda: fn(ins, outs)  # noqa: E731
        call(); torch.cuda.synchronize()
        entry = {"ms": bench(call), "finite": bool(torch.isfinite(o).all())}
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
