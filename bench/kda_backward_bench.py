#!/usr/bin/env python3
"""KDA's derived backward (``--vjp``: the chunk's WY/UT form differentiated
in reverse) on the GPU: correctness, and forward+backward time beside FLA.

    kda_backward_bench.py build OUTDIR [HLA_OPT]   # here: compile, expected values
    kda_backward_bench.py run OUTDIR               # on the GPU
    kda_backward_bench.py check OUTDIR NAME        # one check case once (sanitizers)

`build` compiles, for CUDA, (1) check cases (f32 and bf16, ragged tails,
grouped heads) of KDA's backward to shared libraries, with inputs and the
expected gradients of q, k, v, g and beta from the CPU backward in f32
(itself checked against central differences of the float64 reference by
python/tests/test_kda_backward.py), and (2) bf16 forward and backward
libraries at issue 14's shapes. `run` checks (1) (relative error <= 1e-4
in f32, 1e-2 in bf16, the bf16 inputs rounded first so that only the
kernel's rounding counts) and times (2), after checking each forward
output against the float64 reference on a prefix, next to FLA's
`chunk_kda` forward+backward on the same inputs (peers.py, g and beta in
f32 as FLA takes them): median of 20 timed runs after 3 warm-ups, CUDA
events; the relative difference of every gradient from FLA's. Writes
$OUT/kda_backward_bench.json and prints a markdown table.
"""

import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from backward_bench import _round_bf16, compile_to  # noqa: E402
from gpu_util import record_build  # noqa: E402

NAMES = ("q", "k", "v", "g", "beta")
# Every pass on register tiles at 64-token chunks (the reverse program's
# tiles in blocks flattened; the gradients' pass, 1,376 fragment registers
# per thread, spills), as they are and with the sequential passes'
# state-free work hoisted into passes parallel over chunks (which the fused
# form of the persistent schedule takes).
TILES_64 = ["--parallel-gradients=on", "--chunk-size=64", "--cuda-generator=auto",
            "--cuda-allow-spills"]
HOISTED = ["--hoist-chunk-work=on", "--cuda-schedule=persistent"]
# The gradients' pass cut into stages of at most this many live bytes
# (hla-fission-chunk-passes).
FISSION = ["--fission-live-bytes=98304"]
# (dtype, B, T, H, d, dv, H_kv[, hla-opt flags])
CHECKS = [
    ("f32", 2, 100, 2, 16, 16, 2),
    ("bf16", 1, 130, 2, 64, 64, 2),
    ("bf16", 2, 70, 4, 64, 64, 2),
    ("bf16", 1, 1, 2, 64, 64, 2),
    ("bf16", 1, 130, 2, 64, 64, 2, ["--parallel-gradients=on"]),
    ("bf16", 1, 130, 2, 64, 64, 2, ["--parallel-gradients=off"]),
    ("bf16", 1, 130, 2, 64, 64, 2, TILES_64),
    ("bf16", 2, 70, 4, 64, 64, 2, TILES_64 + HOISTED),
    ("bf16", 1, 1, 2, 64, 64, 2, TILES_64 + HOISTED),
    ("bf16", 1, 130, 2, 64, 64, 2, TILES_64 + FISSION),
    ("bf16", 2, 70, 4, 64, 64, 2, TILES_64 + HOISTED + FISSION),
    ("bf16", 1, 1, 2, 64, 64, 2, TILES_64 + HOISTED + FISSION),
]
CHECK_TOL = {"f32": 1e-4, "bf16": 1e-2}
TIMED = [(8, 16, 2048, 64), (8, 16, 8192, 64), (1, 16, 65536, 64), (4, 16, 8192, 128)]
# Other forms of the backward, timed beside the search's choice on the same
# inputs: (label, hla-opt flags).
VARIANTS = [("parallel gradients", ["--parallel-gradients=on"]),
            ("two passes", ["--parallel-gradients=off"]),
            ("tiles 64, parallel gradients, hoisted", TILES_64 + HOISTED),
            ("tiles 64, hoisted, fission 64 KiB",
             TILES_64 + HOISTED + ["--fission-live-bytes=65536"]),
            ("tiles 64, hoisted, fission 96 KiB", TILES_64 + HOISTED + FISSION),
            ("tiles 64, hoisted, fission 128 KiB",
             TILES_64 + HOISTED + ["--fission-live-bytes=131072"]),
            ("tiles 64, fission 96 KiB", TILES_64 + FISSION)]


def graph(B, T, H, d, dv, dtype, kv_heads=None):
    hkv = kv_heads or H
    t = lambda w, h=hkv: f"tensor<{B}x{T}x{h}x{w}x{dtype}>"  # noqa: E731
    beta = f"tensor<{B}x{T}x{hkv}x{dtype}>"
    types = [t(d, H), t(d), t(dv), t(d), beta]
    args = ", ".join(f"%{n}: {ty}" for n, ty in zip(NAMES, types))
    out = t(dv, H)
    return (f"func.func @main({args}) -> {out} {{\n"
            f"  %o = hla.kda %q, %k, %v, %g, %beta {{scale = {d ** -0.5:.17e} : f64}} : "
            f"({', '.join(types)}) -> {out}\n"
            f"  return %o : {out}\n}}\n")


def _inputs(rng, B, T, H, d, dv, hkv):
    q = rng.standard_normal((B, T, H, d)) * d ** -0.5
    k = rng.standard_normal((B, T, hkv, d))
    k = k / np.linalg.norm(k, axis=-1, keepdims=True)
    v = rng.standard_normal((B, T, hkv, dv))
    g = -rng.uniform(0.0, 0.2, (B, T, hkv, d))
    beta = rng.uniform(0.1, 0.9, (B, T, hkv))
    return [x.astype(np.float32) for x in (q, k, v, g, beta)]


def build(outdir, hla_opt):
    os.makedirs(outdir, exist_ok=True)
    record_build(outdir)
    rng = np.random.default_rng(0)
    cases = []
    for i, (dtype, B, T, H, d, dv, hkv, *flags) in enumerate(CHECKS):
        flags = flags[0] if flags else []
        name = f"check{i}"
        base = os.path.join(outdir, name)
        ins = _inputs(rng, B, T, H, d, dv, hkv)
        do = rng.standard_normal((B, T, H, dv)).astype(np.float32)
        if dtype == "bf16":
            ins, do = [_round_bf16(x) for x in ins], _round_bf16(do)
        cpu = base + "_cpu"
        if not (compile_to(hla_opt, graph(B, T, H, d, dv, "f32", hkv), cpu, "cpu", "exe",
                           True, chunk=32)
                and compile_to(hla_opt, graph(B, T, H, d, dv, dtype, hkv), base + ".so",
                               "cuda", "shared", True, extra=flags)):
            continue
        paths = []
        for n, a in zip(NAMES + ("do",), ins + [do]):
            paths.append(f"{base}_{n}.npy")
            np.save(paths[-1], a)
        r = subprocess.run([cpu, *paths, "-o", base + "_want"], capture_output=True,
                           text=True)
        if r.returncode != 0:
            print(name, "cpu run failed", r.stderr[-400:])
            continue
        os.remove(cpu)
        cases.append({"name": name, "dtype": dtype, "shape": [B, T, H, d, dv, hkv],
                      "flags": flags})
    timed = []
    for B, H, T, d in TIMED:
        name = f"kda_B{B}_H{H}_T{T}_d{d}"
        text = graph(B, T, H, d, d, "bf16")
        base = os.path.join(outdir, name)
        if (compile_to(hla_opt, text, base + "_fwd.so", "cuda", "shared", False)
                and compile_to(hla_opt, text, base + "_bwd.so", "cuda", "shared", True)):
            timed.append({"name": name, "B": B, "H": H, "T": T, "d": d, "variants": []})
            for i, (label, flags) in enumerate(VARIANTS):
                so = f"{base}_bwd_v{i}.so"
                if compile_to(hla_opt, text, so, "cuda", "shared", True, extra=flags):
                    timed[-1]["variants"].append({"label": label,
                                                  "so": os.path.basename(so)})
    with open(os.path.join(outdir, "cases.json"), "w") as f:
        json.dump({"checks": cases, "timed": timed}, f, indent=1)


def check(outdir, c):
    """Runs check case `c` once; its gradients' relative errors against the
    CPU backward's."""
    import torch
    from gpu_util import hla_call
    base = os.path.join(outdir, c["name"])
    dtype = torch.bfloat16 if c["dtype"] == "bf16" else torch.float32
    ins = [torch.from_numpy(np.load(f"{base}_{n}.npy")).cuda().to(dtype)
           for n in NAMES + ("do",)]
    want = [np.load(os.path.join(base + "_want", f"out{i}.npy")) for i in range(5)]
    outs = [torch.empty_like(ins[i]) for i in range(5)]
    hla_call(base + ".so", ins, outs)()
    torch.cuda.synchronize()
    errs = []
    for o, w in zip(outs, want):
        scale = np.linalg.norm(w)
        diff = np.linalg.norm(o.float().cpu().numpy() - w)
        errs.append(float(diff / scale) if scale > 0 else float(diff))
    ok = all(e <= CHECK_TOL[c["dtype"]] for e in errs)
    print(c["name"], c["dtype"], c["shape"], c.get("flags"), ["%.1e" % e for e in errs],
          "ok" if ok else "FAIL", flush=True)
    return {**c, "rel_err": errs, "ok": ok}


def run(outdir):
    import torch
    from gpu_util import (backward_refusal, hla_call, kda_inputs, provenance,
                          reference_error, time_forward_backward, time_variants,
                          write_results)
    with open(os.path.join(outdir, "cases.json")) as f:
        cases = json.load(f)
    results = {"device": torch.cuda.get_device_name(), "provenance": provenance(outdir),
               "checks": [check(outdir, c) for c in cases["checks"]], "timed": []}
    peers = None
    for place in (os.path.join(REPO, "..", "shared", "bench"), os.environ.get("FLA_PARENT")):
        if place and os.path.exists(os.path.join(place, "peers.py")):
            sys.path.insert(0, place)
            import peers as peers_module
            peers = peers_module
            break
    checks_ok = all(c["ok"] for c in results["checks"])
    for c in cases["timed"]:
        B, H, T, d = c["B"], c["H"], c["T"], c["d"]
        base = os.path.join(outdir, c["name"])
        q, k, v, g, beta = kda_inputs(B, T, H, d)
        do = torch.randn_like(v)
        ins = [q, k, v, g, beta]
        o = torch.empty_like(v)
        grads = [torch.empty_like(x) for x in ins]
        fwd = hla_call(base + "_fwd.so", ins, [o])
        bwd = hla_call(base + "_bwd.so", ins + [do], grads)
        fwd()
        bwd()
        torch.cuda.synchronize()
        row = dict(c)
        row["fwd_rel_err"] = reference_error("kda", ins, o, scale=d ** -0.5)
        why = backward_refusal("" if checks_ok else "see checks", row["fwd_rel_err"], grads)
        if not time_forward_backward(results, row, why, fwd, bwd):
            continue
        time_variants(outdir, row["variants"], ins + [do], grads)
        if peers is not None:
            leaves = [x.detach().clone().requires_grad_(True) for x in ins]
            call = peers.kda(*leaves, scale=d ** -0.5)
            row["fla_fwdbwd_ms"] = peers.median_ms(peers.with_backward(call, do))
            for x in leaves:
                x.grad = None
            call().backward(do)
            torch.cuda.synchronize()
            row["grad_diff_vs_fla"] = [
                float((a.float() - b.grad.float()).norm() / b.grad.float().norm())
                for a, b in zip(grads, leaves)]
        results["timed"].append(row)
        print(json.dumps(row), flush=True)
        del q, k, v, g, beta, do, o, grads, ins
        torch.cuda.empty_cache()
    write_results(outdir, "kda_backward_bench", results)
    print("| kda, B×H×T×d | hla fwd ms | hla bwd ms | hla fwd+bwd | FLA fwd+bwd | "
          "hla ÷ FLA speed | grads vs FLA (q k v g β) | other forms' bwd ms |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in results["timed"]:
        if "refused" in r:
            print(f"| {r['B']}×{r['H']}×{r['T']}×{r['d']} | {r['refused']} ||||||")
            continue
        peer = r.get("fla_fwdbwd_ms")
        ratio = f"{peer / r['hla_fwdbwd_ms']:.2f}×" if peer else "—"
        diffs = " ".join(f"{x:.1e}" for x in r.get("grad_diff_vs_fla", []))
        others = "; ".join(f"{v['label']} {v['ms']:.3f}" for v in r["variants"]
                           if "ms" in v) or "—"
        print(f"| {r['B']}×{r['H']}×{r['T']}×{r['d']} | {r['hla_fwd_ms']:.3f} | "
              f"{r['hla_bwd_ms']:.3f} | {r['hla_fwdbwd_ms']:.3f} | "
              f"{'—' if peer is None else round(peer, 3)} | {ratio} | {diffs} | {others} |")


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "build":
        build(sys.argv[2], sys.argv[3] if len(sys.argv) > 3
              else os.path.join(REPO, "build", "bin", "hla-opt"))
    elif len(sys.argv) == 3 and sys.argv[1] == "run":
        run(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "check":
        with open(os.path.join(sys.argv[2], "cases.json")) as f:
            cases = {c["name"]: c for c in json.load(f)["checks"]}
        check(sys.argv[2], cases[sys.argv[3]])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
