"""Execution tests of the derived backward (``hla.prefix_vjp``) on the CPU.

Each case expands one attention op with ``hla-opt --hla-expand`` to get its
monoid, writes a graph computing the vector-Jacobian product of the op's
``segment -> scan -> readout`` chain under that monoid, compiles it with
``--hla-target=cpu --emit=exe`` and compares the gradients of q, k and v
with central differences of ``sum(g * reference(q, k, v))`` in float64, the
reference being ``hla.reference`` (independent of the compiler).

Tolerance: relative error <= 1e-4 (f32 against float64). Lengths include 1
and lengths that are not a multiple of the chunk. Normalized cases use
eps = 0.1: with a small eps, num / (den + eps) hardly depends on the scale of
q, so dq is a cancellation of two terms O(1/eps) apart and f32 cannot resolve
it (at T = 1, eps = 1e-6: relative error 5e-3 of a gradient that is ~1e-6).
"""

from __future__ import annotations

import os
import re
import subprocess

import numpy as np
import pytest

import hla.reference as ref

from .api_util import central_differences
from .codegen_util import (HLA_OPT, attention_graph, compile_graph, relative_error,
                           run_exe, tensor_type)

pytestmark = pytest.mark.skipif(
    not os.path.exists(HLA_OPT), reason="hla-opt is not built (run the README's build)"
)


def vjp_graph(op, qshape, kshape, vshape, options):
    """A func.func @main(q, k, v, g) -> (dq, dk, dv) under `op`'s monoid."""
    forward = attention_graph(op, qshape, kshape, vshape, options)
    expanded = subprocess.run([HLA_OPT, "--hla-expand"], input=forward,
                              capture_output=True, text=True, check=True).stdout
    aliases = [line for line in expanded.splitlines() if line.startswith("#")]
    monoid = re.search(r"hla\.readout (#[\w.]+)", expanded).group(1)
    definition = next(a for a in aliases if a.startswith(monoid + " "))
    names = re.search(r"inputs\(([^)]*)\)", definition).group(1)
    order = [n.split(":")[0].strip() for n in names.split(",")]
    shapes = {"q": qshape, "k": kshape, "v": vshape}
    types = [tensor_type(shapes[n]) for n in order]
    out = tensor_type((qshape[0], qshape[1], qshape[2], vshape[3]))
    operands = ", ".join(f"%{n}" for n in order)
    results = ", ".join(types)
    eps = float(options.get("eps", 1e-6))
    text = "\n".join(aliases) + "\n"
    text += (f"func.func @main({', '.join(f'%{n}: {t}' for n, t in zip(order, types))}, "
             f"%g: {out}) -> ({results}) {{\n"
             f"  %r:{len(order)} = hla.prefix_vjp {monoid} ({operands}) cotangent(%g) "
             f"{{eps = {eps:.17e} : f64}} : ({results}, {out}) -> ({results})\n"
             f"  return {', '.join(f'%r#{i}' for i in range(len(order)))} : {results}\n}}\n")
    return text, order


CASES = [
    ("linear_attention", {}),
    ("linear_attention", {"decay": 0.9}),
    ("linear_attention", {"normalize": True, "eps": 0.1}),
    ("hla2", {}),
    ("hla2", {"decay": 0.9, "ridge": 0.5}),
    ("hla2", {"masked": False}),
    ("hla2", {"normalize": True, "decay": 0.8, "eps": 0.1}),
    ("ahla", {}),
    ("ahla", {"decay": 0.9}),
    ("ahla", {"normalize": True, "eps": 0.1}),
    ("hla3", {}),
    ("hla3", {"decay": 0.9}),
]


def check_backward(tmp_path, op, options, T, chunk, hq=2, d=4, dv=3, seed=0, extra=()):
    rng = np.random.default_rng(seed)
    positive = bool(options.get("normalize"))

    def draw(shape, scale):
        x = rng.standard_normal(shape) * scale
        return (np.abs(x) if positive else x).astype(np.float32)

    q = draw((1, T, hq, d), d ** -0.5)
    k = draw((1, T, hq, d), d ** -0.5)
    v = rng.standard_normal((1, T, hq, dv)).astype(np.float32)
    g = rng.standard_normal((1, T, hq, dv)).astype(np.float32)
    graph, order = vjp_graph(op, q.shape, k.shape, v.shape, options)
    exe = compile_graph(graph, chunk=chunk, extra=extra)
    arrays = {"q": q, "k": k, "v": v}
    got = dict(zip(order, run_exe(exe, [arrays[n] for n in order] + [g], tmp_path)))
    want = dict(zip("qkv", central_differences(
        lambda *x: getattr(ref, op)(*x, **options), [q, k, v], g)))
    for name in "qkv":
        err = relative_error(got[name], want[name])
        assert err <= 1e-4, (f"d{name} of {op} {options} T={T} chunk={chunk} {extra}: "
                             f"relative error {err:.2e}")


@pytest.mark.parametrize("op,options", CASES,
                         ids=[f"{op}-{'-'.join(map(str, o.items())) or 'plain'}"
                              for op, o in CASES])
@pytest.mark.parametrize("T,chunk", [(1, 4), (13, 4)])
def test_backward_matches_central_differences(tmp_path, op, options, T, chunk):
    check_backward(tmp_path, op, options, T, chunk)


@pytest.mark.parametrize("op", ["linear_attention", "hla2"])
def test_backward_chunk_sizes_agree(tmp_path, op):
    # One chunk, several chunks ending exactly, and a ragged last chunk.
    for T, chunk in [(8, 8), (16, 8), (11, 2)]:
        check_backward(tmp_path, op, {"decay": 0.95}, T, chunk, seed=T + chunk)


@pytest.mark.parametrize("op,options", CASES,
                         ids=[f"{op}-{'-'.join(map(str, o.items())) or 'plain'}"
                              for op, o in CASES])
@pytest.mark.parametrize("T,chunk", [(1, 4), (13, 4), (16, 8)])
def test_parallel_gradients(tmp_path, op, options, T, chunk):
    # The tokens' gradients in a pass parallel over chunks, from the state
    # and λ saved per chunk (what CUDA's register tiles run).
    check_backward(tmp_path, op, options, T, chunk, extra=("--parallel-gradients=on",))


# The ops whose backward keeps value columns apart (every live component
# has them; no normalizer).
VALUE_TILE_CASES = [("linear_attention", {}), ("linear_attention", {"decay": 0.9}),
                    ("ahla", {}), ("ahla", {"decay": 0.9})]


@pytest.mark.parametrize("op,options,T,chunk,tile", [
    (op, o, T, chunk, tile) for op, o in VALUE_TILE_CASES
    for T, chunk, tile in ([(1, 4, 2), (13, 4, 2), (13, 4, 3), (16, 8, 2)]
                           if op == "linear_attention" else [(13, 4, 2)])])
@pytest.mark.parametrize("parallel", ["on", "off"])
def test_value_tiles(tmp_path, op, options, T, chunk, tile, parallel):
    # The passes over chunks per (batch entry, head, value tile): pass 1
    # always, pass 2 with parallel gradients.
    check_backward(tmp_path, op, options, T, chunk, dv=6, seed=T + tile,
                   extra=(f"--value-tile={tile}", f"--parallel-gradients={parallel}"))


@pytest.mark.parametrize("op,options", CASES,
                         ids=[f"{op}-{'-'.join(map(str, o.items())) or 'plain'}"
                              for op, o in CASES])
def test_split_gradients(tmp_path, op, options):
    # The parallel gradients' pass split into one pass per input.
    check_backward(tmp_path, op, options, 13, 4,
                   extra=("--parallel-gradients=on", "--split-gradients=true"))


@pytest.mark.parametrize("op,options,T,segments", [
    (op, o, 21, 3) for op, o in CASES] + [
    (op, o, T, segments) for op, o in (("linear_attention", {"decay": 0.9}), ("hla2", {}))
    for T, segments in ((1, 2), (13, 2), (33, 9))])
@pytest.mark.parametrize("parallel", ["on", "off"])
def test_runs(tmp_path, op, options, T, segments, parallel):
    # The passes over chunks in runs per sequence (the segmented form): the
    # states entering each run from the runs' totals, the λ leaving it from
    # the runs after it. Every op and option in 3 runs of 2 chunks (the
    # last ragged); lengths 1 (one run), 13 and 33 (9 runs of one chunk).
    check_backward(tmp_path, op, options, T, 4, seed=T + segments,
                   extra=("--chunk-form=segmented", f"--segments={segments}",
                          f"--parallel-gradients={parallel}"))
