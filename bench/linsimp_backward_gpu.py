#!/usr/bin/env python3
"""LinSimp's derived backward (both kernels) on the GPU.

    linsimp_backward_gpu.py build OUTDIR [--only SUBSTR] [HLA-OPT FLAGS...]
                                           # here, where hla-opt and the CPU compiler are
    linsimp_backward_gpu.py run OUTDIR     # on the GPU machine (torch, the artefacts)

build: the backward of `hla.linsimp` compiled for CUDA with the search's
defaults for each case below (f32 with grouped heads, with state in and
out, with W = 1; bf16 at d = dv = 64, W = 16; the exact kernel in f32 and
bf16), and its gradients from the CPU backward on the same inputs (the CPU
backward is checked against central differences of the float64 reference
in python/tests/test_linsimp_gradients.py). bf16 cases give the CPU the
bf16-rounded inputs the GPU sees.
run: each case's gradients against the CPU's (relative Frobenius error of
dq, dk, dv, dr, du, dΩ and the state's), and the mean time of 5 calls after
one (each call synchronises).
"""

import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

# name, dtype, B, T, H, H_kv, d, dv, m, W, state
CASES = [
    ("f32-grouped-T37-W5", "f32", 2, 37, 4, 2, 16, 16, 32, 5, False),
    ("f32-state-T50-W9", "f32", 1, 50, 2, 2, 16, 8, 16, 9, True),
    ("f32-W1-T20", "f32", 1, 20, 2, 2, 8, 8, 16, 1, False),
    ("bf16-T256-W16-m64", "bf16", 1, 256, 2, 2, 64, 64, 64, 16, False),
    ("bf16-grouped-T512-W64-m128", "bf16", 2, 512, 4, 2, 64, 64, 128, 64, False),
    ("exact-f32-grouped-T37-W5", "f32", 2, 37, 4, 2, 16, 16, 8, 5, False),
    ("exact-bf16-T256-W16", "bf16", 1, 256, 2, 2, 64, 64, 8, 16, False),
]


def exact_kernel(text):
    return text.replace("{window", "{kernel = #hla.kernel<exact>, window")


def build(out, flags):
    only = None
    if flags[:1] == ["--only"]:
        only, flags = flags[1], flags[2:]
    sys.path.insert(0, os.path.join(REPO, "python"))
    sys.path.insert(0, os.path.join(REPO, "python", "tests"))
    import hla
    import torch
    from codegen_util import linsimp_graph
    hla_opt = os.path.join(REPO, "build", "bin", "hla-opt")
    os.makedirs(out, exist_ok=True)
    cases = []
    for index, (name, dtype, B, T, H, Hkv, d, dv, m, W, state) in enumerate(CASES):
        if only and only not in name:
            continue
        kernel = exact_kernel if name.startswith("exact") else (lambda t: t)
        rng = np.random.default_rng(index)

        def draw(*shape):
            return rng.standard_normal(shape).astype(np.float32)

        q, k, r = (draw(B, T, h, d) * 0.5 for h in (H, Hkv, Hkv))
        v, u, omega = draw(B, T, Hkv, dv), draw(B, T, Hkv, dv), draw(m, d)
        if dtype == "bf16":  # the values the device sees
            q, k, v, r, u, omega = (torch.from_numpy(x).bfloat16().float().numpy()
                                    for x in (q, k, v, r, u, omega))
        states, finals = [], []
        if state:
            states = [np.abs(draw(B, H, m, dv)) * 0.3, np.abs(draw(B, H, m)) * 0.3,
                      draw(B, H, W - 1, d) * 0.5, draw(B, H, W - 1, dv),
                      np.ones((B, H, W - 1), np.float32)]
            finals = [draw(*s.shape) for s in states]
        g = draw(B, T, H, dv)
        source = os.path.join(out, name + ".mlir")
        with open(source, "w") as f:
            f.write(kernel(linsimp_graph(B, T, H, Hkv, d, dv, m, W, state=state,
                                         dtype=dtype)))
        built = subprocess.run([hla_opt, source, "--hla-target=cuda", "--emit=shared",
                                "--vjp", "--entry=main", *flags, "-o",
                                os.path.join(out, name + ".so")],
                               capture_output=True, text=True)
        os.remove(source)
        if built.returncode:
            sys.exit(f"{name}: {built.stderr}")
        cpu = hla.compile(kernel(linsimp_graph(B, T, H, Hkv, d, dv, m, W, state=state)),
                          vjp=True, entry="main").main
        inputs = [q, k, v, r, u, omega, *states, g, *finals]
        grads = cpu(*inputs)
        np.savez(os.path.join(out, name + ".npz"),
                 **{f"i{i}": x for i, x in enumerate(inputs)},
                 **{f"d{i}": x for i, x in enumerate(grads)})
        cases.append(name)
        print("built", name, flush=True)
    with open(os.path.join(out, "cases.json"), "w") as f:
        json.dump(cases, f)


def run(out):
    import torch
    sys.path.insert(0, os.path.join(REPO, "test", "Integration", "CUDA"))
    from run_cases import TORCH_DTYPES, Library, relative_error
    with open(os.path.join(out, "cases.json")) as f:
        names = json.load(f)
    for name in names:
        lib = Library(os.path.join(out, name + ".so"))
        saved = np.load(os.path.join(out, name + ".npz"))
        inputs = [torch.from_numpy(saved[f"i{i}"]).to(TORCH_DTYPES[dtype]).cuda()
                  for i, (dtype, _) in enumerate(lib.inputs)]
        outputs = lib(*inputs)
        torch.cuda.synchronize()
        errors = [relative_error(o.float().cpu().numpy(), saved[f"d{i}"])
                  for i, o in enumerate(outputs)]
        start = time.perf_counter()
        for _ in range(5):
            lib(*inputs)
        torch.cuda.synchronize()
        ms = (time.perf_counter() - start) / 5 * 1e3
        print(name, "rel errs", " ".join(f"{e:.2e}" for e in errors), f"| {ms:.2f} ms/call",
              flush=True)


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] not in ("build", "run") or \
            (sys.argv[1] == "run" and len(sys.argv) != 3):
        sys.exit(__doc__)
    if sys.argv[1] == "build":
        build(sys.argv[2], sys.argv[3:])
    else:
        run(sys.argv[2])
