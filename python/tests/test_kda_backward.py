"""KDA's derived backward (the chunk's WY/UT form differentiated in reverse,
docs/TRAINING.md) through torch autograd on the CPU: the gradients of q, k,
v, g, beta and the initial state against central differences of the float64
reference (``hla.reference.kda``), at lengths that are not multiples of the
chunk, length 1, chunks with and without the pair blocks (> 16 tokens),
grouped heads, the final state in the loss, packed sequences.

Tolerance: relative error <= 1e-4 (f32 against float64; measured 5e-8 to
1e-6).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import hla

from .api_util import central_differences, needs_artefacts, rel_err


def _inputs(seed, t, hq, hkv, d=4, dv=3, b=1):
    rng = np.random.default_rng(seed)

    def f32(x):
        return torch.from_numpy(np.asarray(x, dtype=np.float32))

    q = f32(rng.standard_normal((b, t, hq, d)))
    k = f32(rng.standard_normal((b, t, hkv, d)) * 0.5)
    v = f32(rng.standard_normal((b, t, hkv, dv)))
    g = f32(-rng.uniform(0.01, 0.5, (b, t, hkv, d)))
    beta = f32(rng.uniform(0.1, 0.9, (b, t, hkv)))
    return q, k, v, g, beta, rng


def _graph_with_state(names, arrays, grad):
    """MLIR text of hla.kda (scale 0.5) over f32 `arrays` named `names`,
    the last the initial state, returning `grad`'s shape."""
    def ty(x):
        return "tensor<" + "x".join(str(n) for n in x.shape) + "xf32>"

    args = ", ".join(f"%{n}: {ty(a)}" for n, a in zip(names, arrays))
    return (f"func.func @main({args}) -> {ty(grad)} {{\n"
            f"  %o = hla.kda %q, %k, %v, %g, %beta initial_state(%s0) {{scale = 0.5 : f64}} : "
            f"({', '.join(ty(a) for a in arrays)}) -> {ty(grad)}\n"
            f"  return %o : {ty(grad)}\n}}\n")


@needs_artefacts
@pytest.mark.parametrize("t,chunk,hq,hkv,with_state,scale", [
    (1, 4, 2, 2, False, 0.5),
    (11, 4, 2, 1, True, 1.0),  # scale 1: the monoid without its parameter
    (37, 16, 2, 2, True, 0.5),
    (70, 32, 1, 1, False, 0.5),
])
def test_kda_gradients(t, chunk, hq, hkv, with_state, scale):
    q, k, v, g, beta, rng = _inputs(100 + t, t, hq, hkv)
    d, dv = q.shape[3], v.shape[3]
    grad = torch.from_numpy(rng.standard_normal((1, t, hq, dv))).float()
    operands = [q, k, v, g, beta]
    if with_state:
        s0 = torch.from_numpy(rng.standard_normal((1, hq, d, dv)) * 0.3).float()
        wfinal = torch.from_numpy(rng.standard_normal((1, hq, d, dv))).float()
        operands.append(s0)
    leaves = [x.clone().requires_grad_(True) for x in operands]
    state = (leaves[5],) if with_state else None
    o, (final,) = hla.kda(*leaves[:3], g=leaves[3], beta=leaves[4], scale=scale,
                          initial_state=state, output_final_state=True, chunk_size=chunk)
    loss = (o * grad).sum()
    if with_state:
        loss = loss + (final * wfinal).sum()
    loss.backward()

    def flat(q, k, v, g, beta, *s0):
        o, (final,) = hla.reference.kda(q, k, v, g=g, beta=beta, scale=scale,
                                        initial_state=tuple(s0) or None,
                                        output_final_state=True)
        parts = [np.ravel(o)] + ([np.ravel(final)] if s0 else [])
        return np.concatenate(parts)

    weight = [grad.numpy().ravel()] + ([wfinal.numpy().ravel()] if with_state else [])
    want = central_differences(flat, [x.numpy() for x in operands], np.concatenate(weight))
    for name, a, b in zip(("q", "k", "v", "g", "beta", "s0"), leaves, want):
        if np.linalg.norm(b) == 0:  # T = 1: g only decays the zero state
            assert np.abs(a.grad.numpy()).max() == 0, name
            continue
        assert rel_err(a.grad.numpy(), b) <= 1e-4, f"d{name}: {rel_err(a.grad.numpy(), b):.2e}"


@needs_artefacts
def test_kda_gradients_packed():
    """cu_seqlens (an empty sequence, one of one token, lengths that are not
    multiples of the chunk), grouped heads: beta, of rank 3, is padded and
    unpadded like the others."""
    q, k, v, g, beta, rng = _inputs(120, 23, 2, 1)
    cu = torch.tensor([0, 0, 1, 9, 23], dtype=torch.int32)
    grad = torch.from_numpy(rng.standard_normal((1, 23, 2, 3))).float()
    leaves = [x.clone().requires_grad_(True) for x in (q, k, v, g, beta)]
    o = hla.kda(*leaves[:3], g=leaves[3], beta=leaves[4], cu_seqlens=cu, chunk_size=4)
    (o * grad).sum().backward()
    want = central_differences(
        lambda q, k, v, g, beta: hla.reference.kda(q, k, v, g=g, beta=beta,
                                                   cu_seqlens=cu.numpy()),
        [x.numpy() for x in (q, k, v, g, beta)], grad.numpy())
    for name, a, b in zip(("q", "k", "v", "g", "beta"), leaves, want):
        assert rel_err(a.grad.numpy(), b) <= 1e-4, f"d{name}: {rel_err(a.grad.numpy(), b):.2e}"


@needs_artefacts
@pytest.mark.parametrize("t,chunk", [(1, 8), (29, 8), (64, 16)])
def test_kda_parallel_gradients(tmp_path, t, chunk):
    """--parallel-gradients=on: pass 2 carries λ alone and saves it per
    chunk; a pass parallel over (sequence, head, chunk) gives the tokens'
    gradients. Against central differences (grouped heads, an initial state
    with its gradient)."""
    from .codegen_util import compile_graph, run_exe
    q, k, v, g, beta, rng = _inputs(130 + t, t, 2, 1)
    s0 = (rng.standard_normal((1, 2, 4, 3)) * 0.3).astype(np.float32)
    grad = rng.standard_normal((1, t, 2, 3)).astype(np.float32)

    names = ("q", "k", "v", "g", "beta", "s0")
    arrays = [x.numpy() for x in (q, k, v, g, beta)] + [s0]
    graph = _graph_with_state(names, arrays, grad)
    exe = compile_graph(graph, chunk=chunk, extra=("--vjp", "--parallel-gradients=on"))
    got = run_exe(exe, arrays + [grad], tmp_path)

    def fn(q, k, v, g, beta, s0):
        return hla.reference.kda(q, k, v, g=g, beta=beta, scale=0.5, initial_state=(s0,))

    want = central_differences(fn, arrays, grad)
    for name, a, b in zip(names, got, want):
        assert rel_err(a, b) <= 1e-4, f"d{name}: {rel_err(a, b):.2e}"


@needs_artefacts
@pytest.mark.parametrize("t,chunk,live_bytes", [
    (1, 16, 1024),
    (37, 16, 1024),   # a ragged tail
    (70, 32, 2048),
    (70, 32, 8192),
])
def test_kda_fission(tmp_path, t, chunk, live_bytes):
    """--fission-live-bytes: the parallel gradients' pass cut into stages
    whose live tiles fit the budget, tiles between them through stacks
    (hla-fission-chunk-passes). The gradients equal the uncut pass's and
    central differences (grouped heads, an initial state)."""
    from .codegen_util import compile_graph, run_exe
    q, k, v, g, beta, rng = _inputs(300 + t, t, 2, 1, d=8, dv=8)
    s0 = (rng.standard_normal((1, 2, 8, 8)) * 0.3).astype(np.float32)
    grad = rng.standard_normal((1, t, 2, 8)).astype(np.float32)

    names = ("q", "k", "v", "g", "beta", "s0")
    arrays = [x.numpy() for x in (q, k, v, g, beta)] + [s0]
    graph = _graph_with_state(names, arrays, grad)
    whole = run_exe(compile_graph(graph, chunk=chunk, extra=("--vjp", "--parallel-gradients=on")),
                    arrays + [grad], tmp_path)
    cut = run_exe(compile_graph(graph, chunk=chunk,
                                extra=("--vjp", "--parallel-gradients=on",
                                       f"--fission-live-bytes={live_bytes}")),
                  arrays + [grad], tmp_path)

    def fn(q, k, v, g, beta, s0):
        return hla.reference.kda(q, k, v, g=g, beta=beta, scale=0.5, initial_state=(s0,))

    want = central_differences(fn, arrays, grad)
    for name, a, w, b in zip(names, cut, whole, want):
        assert rel_err(a, w) <= 1e-6, f"d{name} vs the uncut pass: {rel_err(a, w):.2e}"
        assert rel_err(a, b) <= 1e-4, f"d{name}: {rel_err(a, b):.2e}"
