#!/usr/bin/env python3
"""The derived backward (``--vjp``) on the GPU: correctness and fwd+bwd time.

    backward_bench.py build OUTDIR [HLA_OPT]   # here: compile, expected values
    backward_bench.py run OUTDIR               # on the GPU

`build` compiles, for CUDA, (1) small f32 cases of every differentiable op
and option to shared libraries of their backward, with inputs and the
expected gradients from the CPU backward (itself checked against central
differences of the float64 references by python/tests/test_backward_codegen.py),
and (2) bf16 forward and backward libraries at issue 14's shapes. `run`
checks (1) (relative error <= 1e-4) and times (2), after checking each
forward output against the float64 reference on a prefix (an op whose
checks fail, or a kernel over the bf16 tolerance, is not timed), next to FLA's
`chunk_linear_attn` forward+backward (peers.py's `with_backward`, on the
same inputs): median of 20 timed runs after 3 warm-ups, CUDA events.
Writes $OUT/backward_bench.json and prints a markdown table.
"""

import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "python"))
from gpu_util import record_build  # noqa: E402

CHECKS = [
    ("linear_attention", {}),
    ("linear_attention", {"decay": 0.9}),
    ("hla2", {}),
    ("hla2", {"decay": 0.9, "normalize": True, "eps": 0.1}),
    ("ahla", {"decay": 0.9}),
    ("hla3", {}),
]
CHECK_SHAPE = (2, 100, 2, 16, 16)  # B, T, H, d, dv
TIMED = [  # issue 14's table, and the higher orders beside hla2
    ("linear_attention", 8, 16, 2048, 64),
    ("linear_attention", 8, 16, 8192, 64),
    ("linear_attention", 1, 16, 65536, 64),
    ("linear_attention", 4, 16, 8192, 128),
    ("hla2", 8, 16, 2048, 64),
    ("hla2", 8, 16, 8192, 64),
    ("ahla", 8, 16, 2048, 64),
    ("hla3", 8, 16, 2048, 64),
]


def _attrs(options):
    parts = []
    for key, value in sorted(options.items()):
        if isinstance(value, bool):
            parts.append(f"{key} = {'true' if value else 'false'}")
        else:
            parts.append(f"{key} = {float(value):.17e} : f64")
    return (" {" + ", ".join(parts) + "}") if parts else ""


def graph(op, B, T, H, d, dv, dtype, options=None):
    t = lambda w: f"tensor<{B}x{T}x{H}x{w}x{dtype}>"  # noqa: E731
    return (f"func.func @main(%q: {t(d)}, %k: {t(d)}, %v: {t(dv)}) -> {t(dv)} {{\n"
            f"  %o = hla.{op} %q, %k, %v{_attrs(options or {})} : "
            f"({t(d)}, {t(d)}, {t(dv)}) -> {t(dv)}\n"
            f"  return %o : {t(dv)}\n}}\n")


def compile_to(hla_opt, text, out, target, emit, vjp, chunk=None):
    src = out + ".mlir"
    with open(src, "w") as f:
        f.write(text)
    cmd = [hla_opt, src, f"--hla-target={target}", f"--emit={emit}", "-o", out]
    if vjp:
        cmd.append("--vjp")
    if chunk:
        cmd.append(f"--chunk-size={chunk}")
    r = subprocess.run(cmd, capture_output=True, text=True)
    print(os.path.basename(out), "ok" if r.returncode == 0 else r.stderr[-800:], flush=True)
    return r.returncode == 0


def build(outdir, hla_opt):
    os.makedirs(outdir, exist_ok=True)
    record_build(outdir)
    rng = np.random.default_rng(0)
    B, T, H, d, dv = CHECK_SHAPE
    cases = []
    for i, (op, options) in enumerate(CHECKS):
        positive = bool(options.get("normalize"))
        draw = lambda s, sc: (np.abs(rng.standard_normal(s)) if positive  # noqa: E731
                              else rng.standard_normal(s)) * sc
        q = draw((B, T, H, d), d ** -0.5).astype(np.float32)
        k = draw((B, T, H, d), d ** -0.5).astype(np.float32)
        v = rng.standard_normal((B, T, H, dv)).astype(np.float32)
        g = rng.standard_normal((B, T, H, dv)).astype(np.float32)
        name = f"check{i}"
        text = graph(op, B, T, H, d, dv, "f32", options)
        base = os.path.join(outdir, name)
        cpu = base + "_cpu"
        if not (compile_to(hla_opt, text, cpu, "cpu", "exe", True, chunk=32)
                and compile_to(hla_opt, text, base + ".so", "cuda", "shared", True)):
            continue
        for n, a in zip(("q", "k", "v", "g"), (q, k, v, g)):
            np.save(f"{base}_{n}.npy", a)
        r = subprocess.run([cpu, *[f"{base}_{n}.npy" for n in "qkvg"], "-o", base + "_want"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print(name, "cpu run failed", r.stderr[-400:])
            continue
        os.remove(cpu)
        cases.append({"name": name, "op": op, "options": options})
    timed = []
    for op, B, H, T, d in TIMED:
        name = f"{op}_B{B}_H{H}_T{T}_d{d}"
        text = graph(op, B, T, H, d, d, "bf16")
        base = os.path.join(outdir, name)
        if (compile_to(hla_opt, text, base + "_fwd.so", "cuda", "shared", False)
                and compile_to(hla_opt, text, base + "_bwd.so", "cuda", "shared", True)):
            timed.append({"name": name, "op": op, "B": B, "H": H, "T": T, "d": d})
    with open(os.path.join(outdir, "cases.json"), "w") as f:
        json.dump({"checks": cases, "timed": timed}, f, indent=1)


def run(outdir):
    import torch
    from gpu_util import hla_call, median_ms, provenance, reference_error, refusal
    with open(os.path.join(outdir, "cases.json")) as f:
        cases = json.load(f)
    results = {"device": torch.cuda.get_device_name(), "provenance": provenance(outdir),
               "checks": [], "timed": []}
    for c in cases["checks"]:
        base = os.path.join(outdir, c["name"])
        ins = [torch.from_numpy(np.load(f"{base}_{n}.npy")).cuda() for n in "qkvg"]
        want = [np.load(os.path.join(base + "_want", f"out{i}.npy")) for i in range(3)]
        outs = [torch.empty_like(ins[i]) for i in range(3)]
        hla_call(base + ".so", ins, outs)()
        torch.cuda.synchronize()
        errs = [float(np.linalg.norm(o.cpu().numpy() - w) / np.linalg.norm(w))
                for o, w in zip(outs, want)]
        results["checks"].append({**c, "rel_err": errs, "ok": max(errs) <= 1e-4})
        print(c["name"], c["op"], c["options"], ["%.1e" % e for e in errs], flush=True)
    peers = None
    for place in (os.path.join(REPO, "..", "shared", "bench"), os.environ.get("FLA_PARENT")):
        if place and os.path.exists(os.path.join(place, "peers.py")):
            sys.path.insert(0, place)
            import peers as peers_module
            peers = peers_module
            break
    try:  # issue 14's anchor: PyTorch autograd of the eager chunked HLA2
        import torch_anchors
    except ImportError:
        torch_anchors = None
    for c in cases["timed"]:
        B, H, T, d = c["B"], c["H"], c["T"], c["d"]
        base = os.path.join(outdir, c["name"])

        def fresh():
            q = torch.randn(B, T, H, d, device="cuda", dtype=torch.bfloat16) * d ** -0.5
            k = torch.randn(B, T, H, d, device="cuda", dtype=torch.bfloat16) * d ** -0.5
            v = torch.randn(B, T, H, d, device="cuda", dtype=torch.bfloat16)
            return q, k, v
        q, k, v = fresh()
        do = torch.randn_like(v)
        o = torch.empty_like(v)
        grads = [torch.empty_like(x) for x in (q, k, v)]
        fwd = hla_call(base + "_fwd.so", [q, k, v], [o])
        bwd = hla_call(base + "_bwd.so", [q, k, v, do], grads)
        row = dict(c)
        # Times only for an op whose gradients were checked and whose
        # forward output here agrees with the float64 reference.
        fwd()
        bwd()
        torch.cuda.synchronize()
        row["fwd_rel_err"] = reference_error(c["op"], (q, k, v), o)
        failed = [x["name"] for x in results["checks"] if x["op"] == c["op"] and not x["ok"]]
        why = ("refused: gradient checks failed: " + ", ".join(failed) if failed else
               refusal(row["fwd_rel_err"]) or
               (None if all(bool(torch.isfinite(g).all()) for g in grads)
                else "refused: non-finite gradients"))
        if why:
            row["refused"] = why
            results["timed"].append(row)
            print(c["name"], why, flush=True)
            continue
        row["hla_fwd_ms"] = median_ms(fwd)
        row["hla_bwd_ms"] = median_ms(bwd)
        row["hla_fwdbwd_ms"] = row["hla_fwd_ms"] + row["hla_bwd_ms"]
        if peers is not None and c["op"] == "linear_attention":
            qs, ks, vs = (x.detach().clone().requires_grad_(True) for x in (q, k, v))
            row["fla_fwdbwd_ms"] = peers.median_ms(
                peers.with_backward(peers.linear_attention(qs, ks, vs, scale=d ** -0.5), do))
            # The same gradients? (FLA in bf16 against hla in bf16.)
            qs.grad = ks.grad = vs.grad = None
            peers.linear_attention(qs, ks, vs, scale=d ** -0.5)().backward(do)
            torch.cuda.synchronize()
            row["grad_diff_vs_fla"] = [
                float((a.float() - b.grad.float()).norm() / b.grad.float().norm())
                for a, b in zip(grads, (qs, ks, vs))]
        if torch_anchors is not None and c["op"] == "hla2":
            # The anchor's layout is [B, H, T, d] and its output f32.
            qa, ka, va = (x.transpose(1, 2).detach().clone().requires_grad_(True)
                          for x in (q, k, v))
            do_a = do.transpose(1, 2).float()

            def eager():
                torch_anchors.hla2_chunked(qa, ka, va).backward(do_a)
            row["torch_eager_fwdbwd_ms"] = median_ms(eager)
        results["timed"].append(row)
        print(json.dumps(row), flush=True)
    out = os.environ.get("OUT", outdir)
    with open(os.path.join(out, "backward_bench.json"), "w") as f:
        json.dump(results, f, indent=1)
    print(f"\n{results['device']}\n")
    print("| op, B×H×T×d | hla fwd ms | hla bwd ms | hla fwd+bwd | peer fwd+bwd | "
          "hla ÷ peer speed |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in results["timed"]:
        if "refused" in r:
            print(f"| {r['op']} {r['B']}×{r['H']}×{r['T']}×{r['d']} | {r['refused']} |||||")
            continue
        peer = r.get("fla_fwdbwd_ms") or r.get("torch_eager_fwdbwd_ms")
        name = "FLA " if "fla_fwdbwd_ms" in r else "torch eager " if peer else ""
        ratio = f"{peer / r['hla_fwdbwd_ms']:.2f}×" if peer else "—"
        print(f"| {r['op']} {r['B']}×{r['H']}×{r['T']}×{r['d']} | {r['hla_fwd_ms']:.3f} | "
              f"{r['hla_bwd_ms']:.3f} | {r['hla_fwdbwd_ms']:.3f} | "
              f"{name}{'—' if peer is None else round(peer, 3)} | {ratio} |")


if __name__ == "__main__":
    if sys.argv[1] == "build":
        build(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else
              os.path.join(REPO, "build", "bin", "hla-opt"))
    else:
        run(sys.argv[2])
