#!/usr/bin/env python3
"""hla's CUDA kernels against the peers at issue 12's shapes, in one process.

    peers_bench.py build OUTDIR [--rows SUBSTRING] [NAME=HLA_OPT[,FLAG...] ...]   # here
    peers_bench.py run OUTDIR                                   # on the GPU
    peers_bench.py profile OUTDIR NAME OP B H T D  # 3 calls of one (for ncu)

`build` compiles every (op, shape) of issue 12's table with each given
variant, a compiler and its flags (default: `current=build/bin/hla-opt`, the
default options; `--rows` keeps the rows whose artefact name, e.g.
`hla2_B8_H16_T2048_d128`, contains the substring), bf16, to a shared library and a cubin (variant names:
letters and digits only). A variant whose compile fails for a row (a flag
that does not apply) leaves that row out for it. `run` times each artefact and, on the same
fresh random inputs, the peer: FLA's `chunk_linear_attn` (scale 1,
unnormalised) for linear_attention and FLA's `chunk_kda` (scale d^-1/2) for
kda, through `../shared/bench/peers.py` (on the GPU machine: copy it and
`../shared/peers/fla` into an ignored folder, e.g. `.device/peers/`, and set
FLA_PARENT to it). hla2, ahla and hla3 have no peer in
FLA: their rows give the issue's targets. Median of 20 timed runs after 3
warm-ups (CUDA events). Each output is first checked against the float64
reference (gpu_util.reference_error; a kernel over the bf16 tolerance is
not timed and its row says why) and compared with the peer's (relative
Frobenius difference). The results carry the commit the artefacts were
built from (OUTDIR/provenance.json, written by `build`). Each row also gives the SASS mix of the artefact's
kernels (HGMMA, HMMA, BAR, LDS, STS, LDL, STL). Writes
$OUT/peers_bench.json and prints a markdown table.
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

# (op, B, H, T, d, issue 12's target in ms or None where the peer sets it)
ROWS = [
    ("linear_attention", 8, 16, 8192, 64, None),
    ("linear_attention", 1, 16, 65536, 64, None),
    ("linear_attention", 4, 16, 8192, 128, None),
    ("kda", 4, 16, 4096, 64, None),
    ("kda", 1, 16, 16384, 64, None),
    ("kda", 8, 16, 8192, 64, None),
    ("hla2", 8, 16, 2048, 64, 0.15),
    ("hla2", 8, 16, 8192, 64, 0.50),
    ("hla2", 2, 16, 32768, 64, 0.60),
    ("hla2", 8, 16, 2048, 128, 0.50),
    ("hla2", 4, 16, 8192, 128, 0.90),
    ("hla2", 1, 16, 65536, 64, 0.70),
    ("ahla", 8, 16, 8192, 64, None),
    ("hla3", 8, 16, 8192, 64, None),
    ("hla3", 8, 16, 2048, 128, None),
]


def name_of(compiler, op, B, H, T, d):
    return f"{compiler}_{op}_B{B}_H{H}_T{T}_d{d}"


def attributes(op, d):
    """The op's attributes as `graph` compiles them (hla.reference's keywords)."""
    return {"scale": d ** -0.5 if op == "kda" else 1.0}


def graph(op, B, H, T, d):
    sys.path.insert(0, os.path.join(REPO, "python", "tests"))
    from codegen_util import attention_graph, kda_graph
    if op == "kda":
        return kda_graph(B, T, H, H, d, d, dtype="bf16", scale=d ** -0.5)
    shape = (B, T, H, d)
    return attention_graph(op, shape, shape, shape, dict(scale=1.0), dtype="bf16")


def build(outdir, compilers, rows=""):
    os.makedirs(outdir, exist_ok=True)
    record_build(outdir)
    for compiler, hla_opt in compilers.items():
        for (op, B, H, T, d, _) in ROWS:
            name = name_of(compiler, op, B, H, T, d)
            if rows not in name.split("_", 1)[1]:
                continue
            src = os.path.join(outdir, name + ".mlir")
            with open(src, "w") as f:
                f.write(graph(op, B, H, T, d))
            compiler_path, *flags = hla_opt.split(",")
            for emit, out in (("shared", name + ".so"), ("cubin", name + ".cubin")):
                r = subprocess.run([compiler_path, src, "--hla-target=cuda", f"--emit={emit}",
                                    "-o", os.path.join(outdir, out), *flags],
                                   capture_output=True, text=True)
                print(name, emit, "ok" if r.returncode == 0 else r.stderr[-600:], flush=True)


def inputs(op, B, H, T, d):
    import torch
    dev = "cuda"
    q = (torch.randn(B, T, H, d, device=dev) * d ** -0.5).to(torch.bfloat16)
    k = torch.randn(B, T, H, d, device=dev)
    if op == "kda":
        k = torch.nn.functional.normalize(k, dim=-1)
    else:
        k = k * d ** -0.5
    k = k.to(torch.bfloat16)
    v = torch.randn(B, T, H, d, device=dev).to(torch.bfloat16)
    if op != "kda":
        return [q, k, v]
    g = (-torch.rand(B, T, H, d, device=dev) * 0.2).to(torch.bfloat16)
    beta = (torch.rand(B, T, H, device=dev) * 0.8 + 0.1).to(torch.bfloat16)
    return [q, k, v, g, beta]


def peer(op, ins, d):
    # peers.py: ../shared/bench here, or next to the fla/ copy ($FLA_PARENT).
    for place in (os.path.join(REPO, "..", "shared", "bench"), os.environ.get("FLA_PARENT")):
        if place and os.path.exists(os.path.join(place, "peers.py")):
            sys.path.insert(0, place)
    import peers
    if op == "linear_attention":
        return peers.linear_attention(*ins, scale=1.0)
    if op == "kda":
        return peers.kda(*ins, scale=d ** -0.5)
    return None


def run(outdir):
    import torch
    compilers = sorted({f.split("_", 1)[0] for f in os.listdir(outdir) if f.endswith(".so")})
    device = torch.cuda.get_device_name()
    rows = []
    for (op, B, H, T, d, target) in ROWS:
        # Rows no variant was built for (build --rows) are left out.
        if not any(os.path.exists(os.path.join(outdir, name_of(c, op, B, H, T, d) + ".so"))
                   for c in compilers):
            continue
        ins = inputs(op, B, H, T, d)
        row = {"op": op, "B": B, "H": H, "T": T, "d": d, "target_ms": target}
        fn = peer(op, ins, d)
        want = None
        if fn is not None:
            want = fn().float()
            row["peer_ms"] = median_ms(fn)
        for compiler in compilers:
            name = name_of(compiler, op, B, H, T, d)
            path = os.path.join(outdir, name + ".so")
            if not os.path.exists(path):
                row[compiler] = {"error": "not built"}
                continue
            o = torch.full_like(ins[2], float("nan"))
            call = hla_call(path, ins, (o,))
            call()
            torch.cuda.synchronize()
            entry = {"finite": bool(torch.isfinite(o).all()),
                     "rel_err": reference_error(op, ins, o, **attributes(op, d))}
            why = refusal(entry["rel_err"] if entry["finite"] else float("nan"))
            if why:
                entry["refused"] = why
                row[compiler] = entry
                print(name, why, flush=True)
                continue
            entry["ms"] = median_ms(call)
            if want is not None:
                entry["diff_vs_peer"] = float((o.float() - want).norm() / want.norm())
                entry["speed_vs_peer"] = row["peer_ms"] / entry["ms"]
            entry["sass"] = sass_mix(os.path.join(outdir, name + ".cubin"))
            row[compiler] = entry
            del o
        rows.append(row)
        print(json.dumps(row), flush=True)
        del ins, want
        torch.cuda.empty_cache()
    result = {"device": device, "torch": torch.__version__,
              "provenance": provenance(outdir), "rows": rows}
    with open(os.path.join(os.environ.get("OUT", outdir), "peers_bench.json"), "w") as f:
        json.dump(result, f, indent=1)
    print(f"\n{device}, torch {torch.__version__}")
    head = "| op | B×H×T×d | peer ms | target ms |"
    for c in compilers:
        head += f" {c} ms | {c} ÷ peer speed | {c} HGMMA/BAR/LDS/STS/LDL |"
    print(head)
    print("|" + " --- |" * (4 + 3 * len(compilers)))
    for r in rows:
        line = (f"| {r['op']} | {r['B']}×{r['H']}×{r['T']}×{r['d']} | "
                f"{r.get('peer_ms', float('nan')):.3f} | {r['target_ms'] or '–'} |")
        for c in compilers:
            e = r.get(c, {})
            s = e.get("sass", {})
            mix = "/".join(str(s.get(m, "?")) for m in ["HGMMA", "BAR", "LDS", "STS", "LDL"])
            speed = e.get("speed_vs_peer")
            if "refused" in e:
                line += f" {e['refused']} | – | {mix} |"
                continue
            line += (f" {e.get('ms', float('nan')):.3f} | "
                     f"{f'{speed:.2f}×' if speed else '–'} | {mix} |")
        print(line)


def profile(outdir, compiler, op, B, H, T, d):
    """Calls one artefact three times on fresh inputs: a target for
    `ncu --launch-skip 2 --launch-count 1`."""
    import torch
    ins = inputs(op, B, H, T, d)
    o = torch.empty_like(ins[2])
    path = os.path.join(outdir, name_of(compiler, op, B, H, T, d) + ".so")
    call = hla_call(path, ins, (o,))
    for _ in range(3):
        call()
    torch.cuda.synchronize()


if __name__ == "__main__":
    if len(sys.argv) == 9 and sys.argv[1] == "profile":
        profile(sys.argv[2], sys.argv[3], sys.argv[4], *map(int, sys.argv[5:]))
        sys.exit(0)
    if len(sys.argv) < 3 or sys.argv[1] not in ("build", "run"):
        print(__doc__)
        sys.exit(2)
    if sys.argv[1] == "build":
        args = sys.argv[3:]
        rows = ""
        if args[:1] == ["--rows"] and len(args) > 1:
            rows, args = args[1], args[2:]
        given = dict(a.split("=", 1) for a in args)
        build(sys.argv[2], given or {"current": os.path.join(REPO, "build", "bin", "hla-opt")},
              rows)
    else:
        run(sys.argv[2])
