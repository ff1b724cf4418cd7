#!/usr/bin/env python3
"""Forward kernels built with and without extra hla-opt flags, timed side by
side in one process on the same inputs (an A/B of a code-generation choice).

    forward_variants.py build OUTDIR [--only=OP] [FLAGS ...]   # here: compile
    forward_variants.py run OUTDIR                             # on the GPU machine

`build` compiles each (op, shape) of CASES (those of OP with --only) twice,
bf16: as the search
chooses (no flags) and with FLAGS (default: --cuda-warpgroups=1, the block
of one warpgroup, whose contractions may read A from registers). `run`
checks every kernel against hla.reference's float64 op on a prefix (one
over the bf16 tolerance is not timed), records the relative difference
between the two variants' whole outputs, and times both alternately: the
better of two medians of 20 (CUDA events, 3 warm-ups each). Writes
$OUT/forward_variants.json and prints a markdown table.
"""

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from gpu_util import (hla_call, kda_inputs, median_ms, provenance, record_build,  # noqa: E402
                      reference_error, refusal, write_results)

# (op, B, H, T, d): issue 12's benchmark shapes.
CASES = [("linear_attention", 8, 16, 8192, 64), ("linear_attention", 4, 16, 8192, 128),
         ("hla2", 8, 16, 2048, 64), ("hla2", 8, 16, 8192, 64), ("hla2", 2, 16, 32768, 64),
         ("hla2", 8, 16, 2048, 128), ("hla2", 4, 16, 8192, 128), ("hla2", 1, 16, 65536, 64),
         ("ahla", 8, 16, 8192, 64), ("hla3", 8, 16, 8192, 64),
         ("kda", 4, 16, 4096, 64), ("kda", 8, 16, 8192, 64)]
DEFAULT_FLAGS = ["--cuda-warpgroups=1"]


def case_name(op, B, H, T, d):
    return f"{op}_B{B}_H{H}_T{T}_d{d}"


def build(outdir, flags, only=None):
    sys.path.insert(0, os.path.join(REPO, "python", "tests"))
    from codegen_util import attention_graph, kda_graph
    if only and only not in {case[0] for case in CASES}:
        raise SystemExit(f"forward_variants: no cases of op '{only}'")
    hla_opt = os.path.join(REPO, "build", "bin", "hla-opt")
    os.makedirs(outdir, exist_ok=True)
    record_build(outdir)
    status = {"flags": flags}
    for op, B, H, T, d in CASES:
        if only and op != only:
            continue
        name = case_name(op, B, H, T, d)
        src = os.path.join(outdir, name + ".mlir")
        shape = (B, T, H, d)
        with open(src, "w") as f:
            f.write(kda_graph(B, T, H, H, d, d, dtype="bf16") if op == "kda" else
                    attention_graph(op, shape, shape, shape, dict(scale=1.0), dtype="bf16"))
        for variant, extra in (("search", []), ("flags", flags)):
            r = subprocess.run([hla_opt, src, "--hla-target=cuda", "--emit=shared", "-o",
                                os.path.join(outdir, f"{name}.{variant}.so")] + extra,
                               capture_output=True, text=True)
            errors = [line for line in r.stderr.splitlines() if "error:" in line]
            status[f"{name}.{variant}"] = ("ok" if r.returncode == 0
                                           else (errors or ["failed"])[0][:400])
            print(name, variant, status[f"{name}.{variant}"], flush=True)
    with open(os.path.join(outdir, "build.json"), "w") as f:
        json.dump(status, f, indent=1)


def run(outdir):
    import torch
    with open(os.path.join(outdir, "build.json")) as f:
        status = json.load(f)
    results = {**provenance(outdir), "flags": status["flags"], "rows": []}
    print(f"flags: {' '.join(status['flags'])}\n")
    print("| kernel (bf16) | search ms | flags ms | speed-up | rel. error search / flags "
          "| search vs flags |")
    print("| --- | --- | --- | --- | --- | --- |")
    for op, B, H, T, d in CASES:
        name = case_name(op, B, H, T, d)
        if f"{name}.search" not in status:
            continue  # not asked for (--only)
        row = {"name": name}
        results["rows"].append(row)
        if any(status.get(f"{name}.{v}") != "ok" for v in ("search", "flags")):
            row["refused"] = "not built"
            print(f"| {name} | not built | | | | |", flush=True)
            continue
        if op == "kda":
            inputs = kda_inputs(B, T, H, d)
            attributes = {"scale": d ** -0.5}
        else:
            inputs = tuple((torch.randn(B, T, H, d, device="cuda") * s).to(torch.bfloat16)
                           for s in (d ** -0.5, d ** -0.5, 1.0))
            attributes = {"scale": 1.0}
        outputs, calls = {}, {}
        for variant in ("search", "flags"):
            o = torch.full((B, T, H, d), float("nan"), device="cuda", dtype=torch.bfloat16)
            calls[variant] = hla_call(os.path.join(outdir, f"{name}.{variant}.so"), inputs, (o,))
            calls[variant]()
            outputs[variant] = o
        torch.cuda.synchronize()
        why = None
        for variant in ("search", "flags"):
            finite = bool(torch.isfinite(outputs[variant]).all())
            error = reference_error(op, inputs, outputs[variant], **attributes) \
                if finite else float("nan")
            row[f"{variant}_rel_err"] = error
            why = why or refusal(error)
        a, b = outputs["search"].float(), outputs["flags"].float()
        row["search_vs_flags"] = float((a - b).norm() / a.norm())
        if why:
            row["refused"] = why
            print(f"| {name} | {why} | | | | |", flush=True)
            continue
        for variant in ("search", "flags", "search", "flags"):
            ms = median_ms(calls[variant])
            row[f"{variant}_ms"] = min(row.get(f"{variant}_ms", ms), ms)
        row["speedup"] = row["search_ms"] / row["flags_ms"]
        print(f"| {name} | {row['search_ms']:.3f} | {row['flags_ms']:.3f} | "
              f"{row['speedup']:.2f}× | {row['search_rel_err']:.1e} / "
              f"{row['flags_rel_err']:.1e} | {row['search_vs_flags']:.1e} |", flush=True)
    write_results(outdir, "forward_variants", results)


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "build":
        only = [a for a in sys.argv[3:] if a.startswith("--only=")]
        flags = [a for a in sys.argv[3:] if not a.startswith("--only=")]
        build(sys.argv[2], flags or DEFAULT_FLAGS,
              only[-1].split("=", 1)[1] if only else None)
    elif len(sys.argv) == 3 and sys.argv[1] == "run":
        run(sys.argv[2])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
