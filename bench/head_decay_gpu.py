#!/usr/bin/env python3
"""A decay rate per query head (`head_decay`) on the GPU.

    head_decay_gpu.py build OUTDIR   # here, where hla-opt and the CPU compiler are
    head_decay_gpu.py run OUTDIR     # on the GPU machine (torch, the artefacts)

build: for each decayed op, the derived backward with `head_decay` compiled
for CUDA (f32 at d = 16, bf16 at d = 64 with the rates' products split into
bf16-exact parts, the default, and without; B×T×H(kv)×d = 2×200×4(2)×d) and
its gradients from the CPU backward on the same inputs (the CPU backward is
checked against central differences of the float64 reference in
python/tests/test_head_decay.py); and the forward at 8×16×2048×64 bf16
with the decay as the attribute and as a per-head tensor (all heads 0.95).
run: each backward's gradients against the CPU's (relative Frobenius
error of dq, dk, dv, d(rates)), then the two forwards timed in one process
on the same fresh inputs, interleaved: 3 warm-ups, median of 20 calls
(CUDA events around the call, which synchronises before and after).
"""

import json
import os
import statistics
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
OPS = ["linear_attention", "hla2", "ahla", "hla3"]


def build(out):
    sys.path.insert(0, os.path.join(REPO, "python"))
    sys.path.insert(0, os.path.join(REPO, "python", "tests"))
    import hla
    import torch
    from codegen_util import attention_graph
    hla_opt = os.path.join(REPO, "build", "bin", "hla-opt")
    os.makedirs(out, exist_ok=True)

    def compile_cuda(name, text, *flags):
        src = os.path.join(out, name + ".mlir")
        with open(src, "w") as f:
            f.write(text)
        r = subprocess.run([hla_opt, src, "--hla-target=cuda", "--emit=shared", "-o",
                            os.path.join(out, name + ".so"), *flags],
                           capture_output=True, text=True)
        os.remove(src)
        chosen = [line.split("remark: ")[-1] for line in r.stderr.splitlines()
                  if "hla.chunking" in line]
        print(name, "compiled" if r.returncode == 0 else "FAILED", *chosen, flush=True)
        if r.returncode:
            print(r.stderr[-2000:])
            sys.exit(1)

    cases = []
    for op in OPS:
        for dtype, d in [("f32", 16), ("bf16", 64)]:
            name = f"{op}-vjp-{dtype}"
            rng = np.random.default_rng(len(cases))
            B, T, H, Hkv = 2, 200, 4, 2
            q = (rng.standard_normal((B, T, H, d)) * d ** -0.5).astype(np.float32)
            k = (rng.standard_normal((B, T, Hkv, d)) * d ** -0.5).astype(np.float32)
            v = rng.standard_normal((B, T, Hkv, d)).astype(np.float32)
            if dtype == "bf16":  # the values the device sees
                q, k, v = (torch.from_numpy(x).bfloat16().float().numpy() for x in (q, k, v))
            rates = rng.uniform(0.6, 0.99, H).astype(np.float32)
            g = rng.standard_normal((B, T, H, d)).astype(np.float32)
            compile_cuda(name, attention_graph(op, q.shape, k.shape, v.shape, {}, dtype=dtype,
                                               head_decay=True), "--vjp", "--entry=main")
            cpu = hla.compile(attention_graph(op, q.shape, k.shape, v.shape, {},
                                              head_decay=True), vjp=True, entry="main").main
            grads = cpu(q, k, v, rates, g)
            np.savez(os.path.join(out, name + ".npz"), q=q, k=k, v=v, rates=rates, g=g,
                     **{f"d{i}": x for i, x in enumerate(grads)})
            cases.append(dict(name=name, dtype=dtype))
            if dtype == "bf16":  # the same without the rates' products split
                unsplit = name + "-unsplit"
                compile_cuda(unsplit, attention_graph(op, q.shape, k.shape, v.shape, {},
                                                      dtype=dtype, head_decay=True),
                             "--vjp", "--entry=main", "--bf16-products=off")
                cases.append(dict(name=unsplit, dtype=dtype, data=name))
    shape = (8, 2048, 16, 64)
    for op in ["linear_attention", "hla2"]:
        compile_cuda(f"{op}-fwd-attr", attention_graph(op, shape, shape, shape,
                                                       {"decay": 0.95}, dtype="bf16"))
        compile_cuda(f"{op}-fwd-heads", attention_graph(op, shape, shape, shape, {},
                                                        dtype="bf16", head_decay=True))
    with open(os.path.join(out, "cases.json"), "w") as f:
        json.dump(cases, f)


def run(out):
    import torch
    sys.path.insert(0, os.path.join(REPO, "test", "Integration", "CUDA"))
    from run_cases import Library, relative_error
    print(torch.cuda.get_device_name(), "torch", torch.__version__, flush=True)
    with open(os.path.join(out, "cases.json")) as f:
        cases = json.load(f)
    for c in cases:
        lib = Library(os.path.join(out, c["name"] + ".so"))
        z = np.load(os.path.join(out, c.get("data", c["name"]) + ".npz"))
        dt = torch.bfloat16 if c["dtype"] == "bf16" else torch.float32
        ins = [torch.from_numpy(z[n]).to(dt).cuda() for n in ("q", "k", "v")]
        ins += [torch.from_numpy(z["rates"]).cuda(), torch.from_numpy(z["g"]).to(dt).cuda()]
        errors = [relative_error(o.float().cpu().numpy(), z[f"d{i}"])
                  for i, o in enumerate(lib(*ins))]
        print(c["name"], "dq dk dv drates vs the CPU backward:",
              " ".join(f"{e:.2e}" for e in errors), flush=True)
    shape = (8, 2048, 16, 64)
    for op in ["linear_attention", "hla2"]:
        libs = {v: Library(os.path.join(out, f"{op}-fwd-{v}.so")) for v in ("attr", "heads")}
        times = {v: [] for v in libs}
        for rep in range(23):
            q, k, v = (torch.randn(shape, device="cuda").mul(64 ** -0.5).bfloat16()
                       for _ in range(3))
            rates = torch.full((16,), 0.95, device="cuda")
            outs = {}
            for name, lib in libs.items():
                args = [q, k, v] + ([rates] if name == "heads" else [])
                start, end = torch.cuda.Event(True), torch.cuda.Event(True)
                start.record()
                outs[name] = lib(*args)[0].float()
                end.record()
                torch.cuda.synchronize()
                if rep >= 3:
                    times[name].append(start.elapsed_time(end))
        apart = float((outs["attr"] - outs["heads"]).norm() / outs["attr"].norm())
        print(op, "8x16x2048x64 bf16 forward, median ms:",
              {k: round(statistics.median(t), 4) for k, t in times.items()},
              f"(outputs {apart:.1e} apart)", flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("build", "run"):
        sys.exit(__doc__)
    (build if sys.argv[1] == "build" else run)(sys.argv[2])
