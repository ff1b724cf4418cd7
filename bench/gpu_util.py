"""What the GPU benchmarks share: timing as torch_anchors.py does it, and
calling an hla CUDA library on torch tensors (needs torch with CUDA)."""

import ctypes
import json
import os
import re
import subprocess
import time

SASS_MNEMONICS = ["HGMMA", "HMMA", "LDL", "STL", "LDS", "STS", "LDG", "STG", "BAR", "FFMA"]


def sass_mix(cubin):
    """Counts of the instructions that matter in a cubin's SASS (cuobjdump),
    and of all instructions."""
    r = subprocess.run(["cuobjdump", "--dump-sass", cubin], capture_output=True, text=True)
    if r.returncode != 0:
        return {"error": r.stderr[-300:]}
    counts = {m: len(re.findall(r"\b" + m + r"\b[.\w]*", r.stdout)) for m in SASS_MNEMONICS}
    counts["instructions"] = len(re.findall(r"/\*[0-9a-f]{4}\*/", r.stdout))
    return counts


def median_ms(fn, warm=3, rep=20):
    """Median of `rep` timed calls (CUDA events) after `warm` untimed ones."""
    import torch
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(rep):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record(); fn(); end.record(); torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def hla_call(path, inputs, outputs):
    """A no-argument callable running `hla_main` of the shared library at
    `path` on the device pointers of `inputs` and `outputs` (contiguous
    torch CUDA tensors, kept alive by the caller), on torch's current
    stream."""
    import torch
    lib = ctypes.CDLL(path)
    lib.hla_cuda_set_stream.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.hla_cuda_set_stream(ctypes.c_void_p(torch.cuda.current_stream().cuda_stream), 1)
    fn = lib.hla_main
    fn.argtypes = [ctypes.POINTER(ctypes.c_void_p)] * 2
    fn.restype = ctypes.c_int32
    lib.hla_last_error.restype = ctypes.c_char_p
    ins = (ctypes.c_void_p * len(inputs))(*[t.data_ptr() for t in inputs])
    outs = (ctypes.c_void_p * len(outputs))(*[t.data_ptr() for t in outputs])

    def call():
        # The entry returns a status (0: done); the message is the runtime's.
        if fn(ins, outs) != 0:
            raise RuntimeError(f"{path}: {lib.hla_last_error().decode()}")
    return call


# ---------------------------------------------------------------------------
# What a reported time stands on: the commit measured and a checked result
# ---------------------------------------------------------------------------

BF16_TOLERANCE = 1e-2  # relative Frobenius error of a bf16 kernel's output
REFERENCE = "float64 hla.reference (numpy) on sequence 0, tokens [0, n)"
REFERENCE_TOKENS = 160  # five 32-token chunks, two and a half 64-token ones


def _commit():
    """(commit, dirty) of the checkout this file is in, or (None, None)
    where git or the repository's history is absent (the GPU machine gets
    a copy of the working tree without .git)."""
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        head = subprocess.run(["git", "-C", repo, "rev-parse", "HEAD"],
                              capture_output=True, text=True, timeout=30)
        if head.returncode != 0:
            return None, None
        status = subprocess.run(["git", "-C", repo, "status", "--porcelain",
                                 "--untracked-files=no"],
                                capture_output=True, text=True, timeout=30)
        return head.stdout.strip(), bool(status.stdout.strip())
    except (OSError, subprocess.SubprocessError):
        return None, None


def record_build(outdir):
    """Called by a benchmark's `build`: writes OUTDIR/provenance.json, the
    commit the artefacts were compiled from (dirty: tracked files differ)."""
    commit, dirty = _commit()
    with open(os.path.join(outdir, "provenance.json"), "w") as f:
        json.dump({"commit": commit, "dirty": dirty,
                   "built": time.strftime("%Y-%m-%d %H:%M:%S %Z")}, f, indent=1)


def provenance(outdir):
    """Called by a benchmark's `run`: the build's record plus the date,
    device and torch of this run, for the results file."""
    import torch
    try:
        with open(os.path.join(outdir, "provenance.json")) as f:
            built = json.load(f)
    except (OSError, ValueError):
        built = {"commit": None, "note": "no provenance.json: built by an older script"}
    return {**built, "run": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            "device": torch.cuda.get_device_name(), "torch": torch.__version__,
            "reference": REFERENCE, "tolerance": BF16_TOLERANCE}


def _reference_module():
    """hla/reference.py, loaded by path: the GPU machine has no compiler for
    the hla package to find, and the reference needs only numpy."""
    import importlib.util
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "python", "hla", "reference.py")
    spec = importlib.util.spec_from_file_location("hla_reference_for_bench", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def reference_error(op, inputs, output, tokens=REFERENCE_TOKENS, **attributes):
    """Relative Frobenius error of `output` ([B, T, H, dv] torch) on sequence
    0's first `tokens` tokens against hla.reference's float64 `op` on the same
    inputs (exact for a causal op: those rows depend on those tokens only).
    `inputs` are the op's tensors in the op's order (kda: q, k, v, g, beta;
    linsimp: q, k, v, r, u); `attributes` its keywords (scale, decay, omega
    as a torch tensor, ...)."""
    import numpy as np
    ref = _reference_module()
    n = min(tokens, output.shape[1])
    xs = [x[:1, :n].double().cpu().numpy() for x in inputs]
    kw = {k: (v.double().cpu().numpy() if hasattr(v, "cpu") else v)
          for k, v in attributes.items()}
    if op == "kda":
        want = ref.kda(*xs[:3], g=xs[3], beta=xs[4], **kw)
    else:
        want = getattr(ref, op)(*xs, **kw)
    got = output[:1, :n].double().cpu().numpy()
    return float(np.linalg.norm(got - want) / np.linalg.norm(want))


def refusal(error, tolerance=BF16_TOLERANCE):
    """None where a kernel's result may be timed; else why its time is not
    reported (an error over tolerance, or not finite)."""
    if not error <= tolerance:  # NaN included
        return f"refused: relative error {error:.2e} > tolerance {tolerance:.0e}"
    return None


def backward_refusal(failed_checks, forward_error, grads):
    """None where a backward may be timed; else why not: its gradient
    checks failed (`failed_checks`: a description, or empty), its forward
    output is over the bf16 tolerance, or a gradient is not finite."""
    import torch
    if failed_checks:
        return "refused: gradient checks failed: " + failed_checks
    return refusal(forward_error) or (
        None if all(bool(torch.isfinite(g).all()) for g in grads)
        else "refused: non-finite gradients")


def kda_inputs(B, T, H, d):
    """KDA's benchmark inputs on the GPU, bf16 [B, T, H, ...]: q scaled by
    d^-1/2, L2-normalised keys, log-decays in [-0.2, 0], beta in [0.1, 0.9]
    (as FLA's own tests draw them)."""
    import torch
    dev = "cuda"
    q = (torch.randn(B, T, H, d, device=dev) * d ** -0.5).to(torch.bfloat16)
    k = torch.nn.functional.normalize(torch.randn(B, T, H, d, device=dev), dim=-1)
    v = torch.randn(B, T, H, d, device=dev).to(torch.bfloat16)
    g = (-torch.rand(B, T, H, d, device=dev) * 0.2).to(torch.bfloat16)
    beta = (torch.rand(B, T, H, device=dev) * 0.8 + 0.1).to(torch.bfloat16)
    return q, k.to(torch.bfloat16), v, g, beta


def time_variants(outdir, variants, inputs, reference):
    """Times each variant's backward (its shared library `so` under `outdir`)
    on `inputs`, recording in it the relative difference of each of its
    gradients from `reference` (the search's choice's) and its median ms."""
    import torch
    for variant in variants:
        mine = [torch.empty_like(g) for g in reference]
        call = hla_call(os.path.join(outdir, variant["so"]), inputs, mine)
        call()
        torch.cuda.synchronize()
        variant["vs_bwd"] = [float((a.float() - b.float()).norm() / b.float().norm())
                             for a, b in zip(mine, reference)]
        variant["ms"] = median_ms(call)


def write_results(outdir, name, results):
    """`results` as $OUT/<name>.json (OUT defaults to `outdir`); prints the
    device's name."""
    out = os.environ.get("OUT", outdir)
    with open(os.path.join(out, name + ".json"), "w") as f:
        json.dump(results, f, indent=1)
    print(f"\n{results['device']}\n")


def time_forward_backward(results, row, why, fwd, bwd):
    """Where `why` (a refusal) is set, appends `row` refused with it and
    returns False; else times `fwd` and `bwd` into it (hla_fwd_ms,
    hla_bwd_ms, hla_fwdbwd_ms) and returns True."""
    if why:
        row["refused"] = why
        results["timed"].append(row)
        print(row["name"], why, flush=True)
        return False
    row["hla_fwd_ms"] = median_ms(fwd)
    row["hla_bwd_ms"] = median_ms(bwd)
    row["hla_fwdbwd_ms"] = row["hla_fwd_ms"] + row["hla_bwd_ms"]
    return True
