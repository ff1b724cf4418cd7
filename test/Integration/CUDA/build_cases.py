#!/usr/bin/env python3
"""Compiles every case of cases.py for --hla-target=cuda into OUTDIR.

    build_cases.py OUTDIR [--hla-opt PATH] [--only SUBSTRING]

Writes OUTDIR/<case>.so (shared library, C ABI hla_main over device
pointers), OUTDIR/<case>.so.ptxas.log, OUTDIR/manifest.json, and one
executable OUTDIR/hla2-exe for the command-line path. Runs where hla-opt
and the CUDA toolkit are; needs no GPU.
"""

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(REPO, "python", "tests"))
sys.path.insert(0, HERE)

from codegen_util import attention_graph, kda_graph, linsimp_graph  # noqa: E402
from cases import all_cases  # noqa: E402


def state_shapes(c):
    """The initial/final state shapes of an op (docs/HLA.md, State layouts)."""
    n = len(c["cu_seqlens"]) - 1 if c["cu_seqlens"] else c["B"]
    h, d, dv = c["hq"], c["d"], c["dv"]
    norm = c["options"].get("normalize", False)
    op = c["op"]
    if op == "linsimp":
        w1 = c["window"] - 1
        return [(n, h, c["m"], dv), (n, h, c["m"]), (n, h, w1, d), (n, h, w1, dv),
                (n, h, w1)]
    if op == "kda":
        return [(n, h, d, dv)]
    if op == "linear_attention":
        shapes = [(n, h, d, dv)] + ([(n, h, d)] if norm else [])
    elif op == "hla2":
        masked = c["options"].get("masked", True)
        shapes = [(n, h, d, d), (n, h, d, dv)] + ([(n, h, d)] if norm else [])
        if masked:
            shapes += [(n, h, d, dv)] + ([(n, h, d)] if norm else [])
    elif op == "ahla":
        shapes = [(n, h, d, dv)] + ([(n, h, d)] if norm else [])
        shapes += [(n, h, d, dv)] + ([(n, h, d)] if norm else [])
    elif op == "hla3":
        shapes = [(n, h, d, d), (n, h, d, dv)] + ([(n, h, d)] if norm else [])
        shapes += [(n, h, d, dv)] + ([(n, h, d)] if norm else [])
    else:
        raise ValueError(op)
    return shapes


def graph_of(c):
    dtype = c["dtype"]
    if c["op"] == "kda":
        return kda_graph(c["B"], c["T"], c["hq"], c["hkv"], c["d"], c["dv"],
                         state=c["state"], dtype=dtype, scale=c["options"].get("scale"),
                         cu_seqlens=len(c["cu_seqlens"]) if c["cu_seqlens"] else None)
    if c["op"] == "linsimp":
        text = linsimp_graph(c["B"], c["T"], c["hq"], c["hkv"], c["d"], c["dv"], c["m"],
                             c["window"], state=c["state"], dtype=dtype,
                             cu_seqlens=len(c["cu_seqlens"]) if c["cu_seqlens"] else None)
        if c["options"].get("kernel") == "exact":
            text = text.replace("{window", "{kernel = #hla.kernel<exact>, window")
        return text
    q = (c["B"], c["T"], c["hq"], c["d"])
    k = (c["B"], c["T"], c["hkv"], c["d"])
    v = (c["B"], c["T"], c["hkv"], c["dv"])
    shapes = state_shapes(c) if c["state"] else None
    return attention_graph(c["op"], q, k, v, c["options"], dtype=dtype,
                           state_shapes=shapes, final_state=c["state"],
                           cu_seqlens=len(c["cu_seqlens"]) if c["cu_seqlens"] else None,
                           head_decay=c.get("head_decay", False))


def compile_case(hla_opt, outdir, c, emit="shared", suffix=".so"):
    src = os.path.join(outdir, c["name"] + ".mlir")
    with open(src, "w") as f:
        f.write(graph_of(c))
    out = os.path.join(outdir, c["name"] + suffix)
    cmd = [hla_opt, src, "--hla-target=cuda", f"--emit={emit}", "-o", out,
           f"--cuda-schedule={c['schedule']}",
           f"--segments={c['segments']}", f"--cuda-mma={c.get('mma', 'auto')}"]
    # chunk 0: the target's default, which lets the artefact choose
    # register tiles and their chunk size.
    if c["chunk"]:
        cmd.append(f"--chunk-size={c['chunk']}")
    if c.get("value_tile"):
        cmd.append(f"--value-tile={c['value_tile']}")
    cmd.append(f"--cuda-generator={c.get('generator', 'auto')}")
    cmd += c.get("flags", [])
    start = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    return c["name"], r.returncode, r.stderr, time.time() - start


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--hla-opt", default=os.path.join(REPO, "build", "bin", "hla-opt"))
    ap.add_argument("--only", default="")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    os.makedirs(args.outdir, exist_ok=True)
    cases = [c for c in all_cases() if args.only in c["name"]]
    for c in cases:
        c["state_shapes"] = state_shapes(c) if c["state"] else []
    failures = 0
    with ThreadPoolExecutor(args.jobs) as pool:
        jobs = [pool.submit(compile_case, args.hla_opt, args.outdir, c) for c in cases]
        # The executable's case is an hla2 one (run_cases.py checks it
        # against hla2's reference), whatever --only selected.
        exe_case = dict(next(c for c in all_cases() if c["name"].startswith("hla2-options")))
        exe_case["state_shapes"] = []
        exe_case["name"] = "hla2-exe"
        jobs.append(pool.submit(compile_case, args.hla_opt, args.outdir, exe_case, "exe", ""))
        for j in jobs:
            name, rc, err, secs = j.result()
            status = "ok" if rc == 0 else "FAILED"
            print(f"{status:6s} {name:32s} {secs:5.1f}s", flush=True)
            if rc:
                failures += 1
                print(err[-3000:], flush=True)
    exe_case["exe"] = True
    with open(os.path.join(args.outdir, "manifest.json"), "w") as f:
        json.dump({"cases": cases, "exe": exe_case}, f, indent=1)
    print(f"{len(cases) + 1 - failures} compiled, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
