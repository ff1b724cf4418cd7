"""Helpers of the code-generation tests: write a model graph, compile it with
hla-opt (cached per session), run the executable on .npy inputs."""

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HLA_OPT = os.environ.get("HLA_OPT", os.path.join(REPO, "build", "bin", "hla-opt"))
_CACHE = tempfile.mkdtemp(prefix="hla-test-exes-")

_MLIR_DTYPES = {"f32": "f32", "f16": "f16", "bf16": "bf16"}

# The option sets every target's execution tests run each op with.
OPTION_CASES = {
    "linear_attention": [
        dict(scale=1.0),
        dict(decay=0.9),
        dict(normalize=True),
        dict(decay=0.8, normalize=True, eps=1e-3, scale=0.7),
    ],
    "hla2": [
        dict(scale=1.0),
        dict(masked=False),
        dict(decay=0.9),
        dict(ridge=0.5),
        dict(normalize=True),
        dict(masked=False, decay=0.85, ridge=0.25),
        dict(decay=0.9, normalize=True, ridge=0.5, scale=0.6),
    ],
    "ahla": [
        dict(scale=1.0),
        dict(decay=0.9),
        dict(normalize=True),
        dict(decay=0.85, normalize=True, scale=0.6),
    ],
    "hla3": [
        dict(scale=1.0),
        dict(decay=0.9),
        dict(normalize=True),
        dict(decay=0.85, normalize=True, scale=0.6),
    ],
}



def tensor_type(shape, dtype="f32"):
    return "tensor<" + "x".join(str(s) for s in shape) + ("x" if shape else "") + dtype + ">"


def _attr(key, value):
    if isinstance(value, bool):
        return f"{key} = {'true' if value else 'false'}"
    return f"{key} = {float(value)!r} : f64"


def attention_graph(op, qshape, kshape, vshape, options, dtype="f32",
                    state_shapes=None, final_state=False, cu_seqlens=None,
                    head_decay=False):
    """A func.func @main applying hla.<op> to its arguments; ``head_decay``:
    the op's decay rates are a last argument, [H_q] f32."""
    state_shapes = list(state_shapes or [])
    out_shape = (qshape[0], qshape[1], qshape[2], vshape[3])
    args = [("q", tensor_type(qshape, dtype)), ("k", tensor_type(kshape, dtype)),
            ("v", tensor_type(vshape, dtype))]
    args += [(f"s{i}", tensor_type(s)) for i, s in enumerate(state_shapes)]
    if cu_seqlens:
        args.append(("cu", tensor_type((cu_seqlens,), "i32")))
    if head_decay:
        args.append(("g", tensor_type((qshape[2],), "f32")))
    results = [tensor_type(out_shape, dtype)]
    if final_state:
        results += [tensor_type(s) for s in state_shapes]
    operands = "%q, %k, %v"
    if state_shapes:
        operands += " initial_state(" + ", ".join(f"%s{i}" for i in range(len(state_shapes))) + ")"
    if cu_seqlens:
        operands += " cu_seqlens(%cu)"
    if head_decay:
        operands += " head_decay(%g)"
    attrs = ", ".join(_attr(k, v) for k, v in sorted(options.items()))
    attrs = " {" + attrs + "}" if attrs else ""
    arg_list = ", ".join(f"%{n}: {t}" for n, t in args)
    in_types = ", ".join(t for _, t in args)
    res_list = ", ".join(results)
    names = ", ".join(f"%r#{i}" for i in range(len(results))) if len(results) > 1 else "%r"
    lhs = f"%r:{len(results)}" if len(results) > 1 else "%r"
    return (
        f"func.func @main({arg_list}) -> ({res_list}) {{\n"
        f"  {lhs} = hla.{op} {operands}{attrs} : ({in_types}) -> ({res_list})\n"
        f"  return {names} : {res_list}\n"
        f"}}\n"
    )


def linsimp_graph(B, T, hq, hkv, d, dv, m, window, *, seed=None, state=False,
                  dtype="f32", scale=None, cu_seqlens=None):
    """@main(q, k, v, r, u[, omega][, M, a, ar, au, av]) -> (o[, states])."""
    t = lambda shape: tensor_type(shape, dtype)  # noqa: E731
    f32 = lambda shape: tensor_type(shape, "f32")  # noqa: E731
    ins = [t((B, T, hq, d)), t((B, T, hkv, d)), t((B, T, hkv, dv)),
           t((B, T, hkv, d)), t((B, T, hkv, dv))]
    om = t((m, d))
    n = (cu_seqlens - 1) if cu_seqlens else B
    states = [f32((n, hq, m, dv)), f32((n, hq, m)), f32((n, hq, window - 1, d)),
              f32((n, hq, window - 1, dv)), f32((n, hq, window - 1))]
    args = [f"%a{i}: {ty}" for i, ty in enumerate(ins)]
    names = [f"%a{i}" for i in range(5)]
    body = []
    if seed is None:
        args.append(f"%om: {om}")
    else:
        body.append(f"  %om = hla.random_features {{seed = {seed} : i64}} : {om}")
    operand_types = ins + [om]
    state_text = ""
    results = [t((B, T, hq, dv))]
    if state:
        args += [f"%s{i}: {ty}" for i, ty in enumerate(states)]
        state_text = " initial_state(" + ", ".join(f"%s{i}" for i in range(5)) + ")"
        operand_types += states
        results += states
    if cu_seqlens:
        args.append(f"%cu: tensor<{cu_seqlens}xi32>")
        state_text += " cu_seqlens(%cu)"
        operand_types.append(f"tensor<{cu_seqlens}xi32>")
    attrs = [f"window = {window} : i64"]
    if scale is not None:
        attrs.append(f"scale = {scale!r} : f64")
    res = ", ".join(f"%o#{i}" for i in range(len(results))) if state else "%o"
    lhs = f"%o:{len(results)}" if state else "%o"
    body.append(f"  {lhs} = hla.linsimp {', '.join(names)}, %om{state_text} "
                f"{{{', '.join(attrs)}}} : ({', '.join(operand_types)}) -> "
                f"({', '.join(results)})")
    body.append(f"  return {res} : {', '.join(results)}")
    return (f"func.func @main({', '.join(args)}) -> ({', '.join(results)}) {{\n"
            + "\n".join(body) + "\n}\n")


def kda_graph(B, T, hq, hkv, dk, dv, *, state=False, dtype="f32", scale=None,
              cu_seqlens=None):
    """@main(q, k, v, g, beta[, S0][, cu_seqlens]) -> (o[, S])."""
    t = lambda shape: tensor_type(shape, dtype)  # noqa: E731
    n = (cu_seqlens - 1) if cu_seqlens else B
    ins = [t((B, T, hq, dk)), t((B, T, hkv, dk)), t((B, T, hkv, dv)),
           t((B, T, hkv, dk)), t((B, T, hkv))]
    results = [t((B, T, hq, dv))]
    states = [tensor_type((n, hq, dk, dv), "f32")]
    args = [f"%a{i}: {ty}" for i, ty in enumerate(ins)]
    operands = ", ".join(f"%a{i}" for i in range(5))
    types = list(ins)
    tail = ""
    if state:
        args.append(f"%s0: {states[0]}")
        tail += " initial_state(%s0)"
        types += states
        results += states
    if cu_seqlens:
        args.append(f"%cu: tensor<{cu_seqlens}xi32>")
        tail += " cu_seqlens(%cu)"
        types.append(f"tensor<{cu_seqlens}xi32>")
    attrs = f" {{scale = {scale!r} : f64}}" if scale is not None else ""
    lhs = f"%o:{len(results)}" if len(results) > 1 else "%o"
    res = ", ".join(f"%o#{i}" for i in range(len(results))) if len(results) > 1 else "%o"
    return (f"func.func @main({', '.join(args)}) -> ({', '.join(results)}) {{\n"
            f"  {lhs} = hla.kda {operands}{tail}{attrs} : ({', '.join(types)}) -> "
            f"({', '.join(results)})\n"
            f"  return {res} : {', '.join(results)}\n}}\n")


def compile_graph(graph, chunk=64, schedule="auto", emit="exe", extra=()):
    """Compiles `graph` (MLIR text) and returns the artefact's path."""
    key = hashlib.sha256(
        (graph + f"|{chunk}|{schedule}|{emit}|{' '.join(extra)}").encode()).hexdigest()[:16]
    out = os.path.join(_CACHE, key + (".so" if emit == "shared" else ""))
    if os.path.exists(out):
        return out
    src = os.path.join(_CACHE, key + ".mlir")
    with open(src, "w") as f:
        f.write(graph)
    cmd = [HLA_OPT, src, "--hla-target=cpu", f"--emit={emit}", "-o", out,
           f"--chunk-size={chunk}", f"--scan-schedule={schedule}", *extra]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"hla-opt failed: {' '.join(cmd)}\n{result.stderr}")
    return out


def run_exe(exe, inputs, workdir, extra=()):
    """Runs `exe` on the arrays `inputs`; returns its outputs."""
    workdir = str(workdir)
    paths = []
    for i, a in enumerate(inputs):
        path = os.path.join(workdir, f"in{i}.npy")
        np.save(path, a)
        paths.append(path)
    outdir = os.path.join(workdir, "out")
    result = subprocess.run([exe, *paths, "-o", outdir, *extra], capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{exe} failed ({result.returncode}): {result.stderr}")
    outs = []
    j = 0
    while os.path.exists(os.path.join(outdir, f"out{j}.npy")):
        outs.append(np.load(os.path.join(outdir, f"out{j}.npy")))
        os.remove(os.path.join(outdir, f"out{j}.npy"))
        j += 1
    return outs


def to_bf16(x):
    """`x` rounded to bfloat16 (to nearest even) the way the runtime rounds
    bf16 inputs, kept as float32 (numpy has no bfloat16; bf16 arguments
    travel as float32 .npy files)."""
    bits = np.asarray(x).astype(np.float32).view(np.uint32)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.view(np.float32)


def relative_error(got, want):
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    assert got.shape == want.shape, (got.shape, want.shape)
    if not np.all(np.isfinite(got)):
        return float("inf")
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-300))
