"""The functional API on numpy arrays against the float64 references.

Every op with default options, with its full option set on grouped heads,
state carried across two halves of a sequence, packed sequences, float16,
strided inputs; linsimp (favor and exact kernels) and kda
with the compiler's reason, and the IR they build verifies with hla-opt.
Tolerance: relative Frobenius error <= 1e-5 for float32 (SEMANTICS.md).
"""

from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest

import hla
from hla import functional

from .api_util import (HLA_OPT, OPS, D, T, inputs, needs_artefacts, needs_compiler, reference,
                       rel_err)

pytestmark = needs_artefacts

# Each op's full option set (all non-default), as in test_cpu_codegen.
FULL_OPTIONS = {
    "linear_attention": dict(decay=0.9, normalize=True, eps=1e-3, scale=0.7),
    "hla2": dict(decay=0.9, normalize=True, ridge=0.5, scale=0.6, eps=1e-4),
    "ahla": dict(decay=0.85, normalize=True, scale=0.6),
    "hla3": dict(decay=0.85, normalize=True, scale=0.6),
}


@pytest.mark.parametrize("op", OPS)
def test_default_options(op):
    q, k, v = inputs(1)
    o = getattr(hla, op)(q, k, v)
    assert isinstance(o, np.ndarray) and o.dtype == np.float32 and o.shape == (1, T, 2, D)
    assert rel_err(o, reference(op, q, k, v)) <= 1e-5


@pytest.mark.parametrize("op", OPS)
def test_full_options_grouped_heads(op):
    """All options at once, 4 query heads reading 2 kv heads, Dv != D."""
    options = FULL_OPTIONS[op]
    q, k, v = inputs(2, hq=4, hkv=2, dv=8, positive=True)
    o, state = getattr(hla, op)(q, k, v, output_final_state=True, **options)
    want, want_state = reference(op, q, k, v, output_final_state=True, **options)
    assert o.shape == (1, T, 4, 8)
    assert rel_err(o, want) <= 1e-5
    assert len(state) == len(want_state)
    for got, ref in zip(state, want_state):
        assert got.dtype == np.float32
        assert rel_err(got, ref) <= 1e-5


def test_unmasked_hla2():
    q, k, v = inputs(3)
    o, state = hla.hla2(q, k, v, masked=False, decay=0.95, output_final_state=True)
    want, want_state = reference("hla2", q, k, v, masked=False, decay=0.95,
                                 output_final_state=True)
    assert rel_err(o, want) <= 1e-5
    assert len(state) == 2  # (S, C): unmasked carries no G
    for got, ref in zip(state, want_state):
        assert rel_err(got, ref) <= 1e-5


@pytest.mark.parametrize("op", OPS)
def test_state_round_trip(op):
    """Two halves, the second starting from the first's final state, give
    the outputs and final state of one run over the whole sequence."""
    q, k, v = inputs(4, t=64, hq=2, hkv=1)
    options = dict(decay=0.9)
    fn = getattr(hla, op)
    _, zeros = reference(op, q[:, :1], k[:, :1], v[:, :1], output_final_state=True)
    zeros = tuple(np.zeros(s.shape, np.float32) for s in zeros)
    # All three runs take an initial state, so both halves share one compile.
    o1, s1 = fn(q[:, :32], k[:, :32], v[:, :32], initial_state=zeros,
                output_final_state=True, **options)
    o2, s2 = fn(q[:, 32:], k[:, 32:], v[:, 32:], initial_state=s1,
                output_final_state=True, **options)
    whole, s_whole = fn(q, k, v, initial_state=zeros, output_final_state=True, **options)
    assert rel_err(np.concatenate([o1, o2], axis=1), whole) <= 1e-5
    for a, b in zip(s2, s_whole):
        assert rel_err(a, b) <= 1e-5
    assert rel_err(whole, reference(op, q, k, v, **options)) <= 1e-5


@pytest.mark.parametrize("op", OPS)
def test_packed_sequences(op):
    """cu_seqlens with an empty sequence, per-sequence initial states."""
    q, k, v = inputs(5, t=T, hq=2, hkv=1)
    cu = np.array([0, 1, 1, 20, T], np.int32)
    _, like = reference(op, q[:, :1], k[:, :1], v[:, :1], output_final_state=True)
    rng = np.random.default_rng(6)
    state = tuple((rng.standard_normal((4,) + s.shape[1:]) * 0.2).astype(np.float32)
                  for s in like)
    o, final = getattr(hla, op)(q, k, v, cu_seqlens=cu, initial_state=state,
                                output_final_state=True, decay=0.93)
    want, want_final = reference(op, q, k, v, cu_seqlens=cu, initial_state=state,
                                 output_final_state=True, decay=0.93)
    assert rel_err(o, want) <= 1e-5
    for got, ref in zip(final, want_final):
        assert got.shape[0] == 4
        assert rel_err(got, ref) <= 1e-5


def test_packed_sequences_list_and_int64():
    q, k, v = inputs(5, t=T, hq=2, hkv=1)
    want = reference("hla2", q, k, v, cu_seqlens=np.array([0, 10, T]))
    for cu in ([0, 10, T], np.array([0, 10, T], np.int64)):
        assert rel_err(hla.hla2(q, k, v, cu_seqlens=cu), want) <= 1e-5


@pytest.mark.parametrize("op", ["linear_attention", "hla2"])
def test_float16(op):
    q, k, v = inputs(7, dtype=np.float16)
    o = getattr(hla, op)(q, k, v)
    assert o.dtype == np.float16
    assert rel_err(o, reference(op, q, k, v)) <= 2e-3


def test_strided_inputs_are_copied_once():
    """[B, H, T, D] tensors transposed to [B, T, H, D] (a strided view)."""
    q, k, v = inputs(8)
    bhtd = [np.ascontiguousarray(x.transpose(0, 2, 1, 3)) for x in (q, k, v)]
    views = [x.transpose(0, 2, 1, 3) for x in bhtd]
    assert not views[0].flags.c_contiguous
    before = hla.stats()["contiguous_copies"]
    o = hla.hla2(*views)
    assert hla.stats()["contiguous_copies"] == before + 3
    assert rel_err(o, reference("hla2", q, k, v)) <= 1e-5
    before = hla.stats()["contiguous_copies"]
    hla.hla2(q, k, v)
    assert hla.stats()["contiguous_copies"] == before  # dense: passed by pointer


def test_read_only_inputs():
    """numpy < 2 cannot export read-only arrays through DLPack."""
    q, k, v = inputs(9)
    for x in (q, k, v):
        x.flags.writeable = False
    assert rel_err(hla.hla2(q, k, v), reference("hla2", q, k, v)) <= 1e-5


def test_chunk_size_option():
    q, k, v = inputs(10)
    o = hla.linear_attention(q, k, v, chunk_size=8)
    assert rel_err(o, reference("linear_attention", q, k, v)) <= 1e-5


def test_sequence_length_one():
    q, k, v = inputs(11, t=1)
    assert rel_err(hla.hla2(q, k, v), reference("hla2", q, k, v)) <= 1e-5


# ---------------------------------------------------------------------------
# linsimp (favor) and kda
# ---------------------------------------------------------------------------

def _linsimp_args(dtype=np.float32):
    rng = np.random.default_rng(12)
    q, k, v = inputs(12, dtype=dtype)
    r = (rng.standard_normal(q.shape) * 0.5).astype(dtype)
    u = rng.standard_normal(v.shape).astype(dtype)
    omega = hla.reference.linsimp_omega(32, D, seed=0)
    return q, k, v, r, u, omega


def _kda_args():
    rng = np.random.default_rng(13)
    q, k, v = inputs(13)
    g = -np.abs(rng.standard_normal(k.shape)).astype(np.float32) * 0.1
    beta = rng.uniform(0.1, 0.9, k.shape[:3]).astype(np.float32)
    return q, k, v, g, beta


@needs_compiler
def test_linsimp_favor():
    q, k, v, r, u, omega = _linsimp_args()
    o, state = hla.linsimp(q, k, v, r, u, omega=omega, window=8, output_final_state=True)
    want, final = hla.reference.linsimp(q, k, v, r, u, omega=omega, window=8,
                                        output_final_state=True)
    assert rel_err(o, want) <= 1e-5
    assert len(state) == 5
    for got, w in zip(state, final):
        assert rel_err(got, w) <= 1e-5
    # Continuing from the state equals one call over both halves.
    o2 = hla.linsimp(q, k, v, r, u, omega=omega, window=8, initial_state=state)
    both = [np.concatenate([x, x], axis=1) for x in (q, k, v, r, u)]
    whole = hla.reference.linsimp(*both, omega=omega, window=8)
    assert rel_err(o2, whole[:, q.shape[1]:]) <= 1e-5


@needs_compiler
def test_linsimp_packed():
    q, k, v, r, u, omega = _linsimp_args()
    cu = np.array([0, 5, q.shape[1]], np.int32)
    got = hla.linsimp(q[:1], k[:1], v[:1], r[:1], u[:1], omega=omega, window=8, cu_seqlens=cu)
    want = hla.reference.linsimp(q[:1], k[:1], v[:1], r[:1], u[:1], omega=omega, window=8,
                                 cu_seqlens=cu)
    assert rel_err(got, want) <= 1e-5


@needs_compiler
def test_linsimp_exact():
    q, k, v, r, u, omega = _linsimp_args()
    got = hla.linsimp(q, k, v, r, u, omega=omega, window=8, kernel="exact")
    want = hla.reference.linsimp(q, k, v, r, u, omega=omega, window=8, kernel="exact")
    assert rel_err(got, want) <= 1e-5


@needs_compiler
def test_kda():
    q, k, v, g, beta = _kda_args()
    o, state = hla.kda(q, k, v, g=g, beta=beta, output_final_state=True)
    want, final = hla.reference.kda(q, k, v, g=g, beta=beta, output_final_state=True)
    assert rel_err(o, want) <= 1e-5
    assert rel_err(state[0], final[0]) <= 1e-5


def _verify_with_hla_opt(text):
    result = subprocess.run([HLA_OPT, "-o", os.devnull], input=text, capture_output=True,
                            text=True)
    assert result.returncode == 0, f"hla-opt rejected:\n{text}\n{result.stderr}"


@pytest.mark.skipif(not os.path.exists(HLA_OPT), reason="hla-opt is not built")
@pytest.mark.parametrize("variant", ["plain", "state_packed", "exact", "bf16"])
def test_linsimp_ir_verifies(variant):
    """The op the functional API writes is one the dialect accepts."""
    q, k, v, r, u, omega = _linsimp_args()
    shapes = [q.shape, k.shape, v.shape, r.shape, u.shape, omega.shape]
    attrs = {"scale": 0.25, "window": 8, "kernel": "favor"}
    dtype, states, finals, cu = "f32", [], [], None
    if variant == "state_packed":
        n = 3
        states = [tuple(s) for s in functional.state_shapes(
            "linsimp", [q, k, v, r, u, omega], attrs, n)]
        finals, cu = states, (n + 1, "i64")
    elif variant == "exact":
        attrs["kernel"] = "exact"
    elif variant == "bf16":
        dtype = "bf16"
    text = functional.build_ir("linsimp", shapes, [dtype] * 6, attrs, states, finals, cu)
    _verify_with_hla_opt(text)


@pytest.mark.skipif(not os.path.exists(HLA_OPT), reason="hla-opt is not built")
@pytest.mark.parametrize("variant", ["plain", "state_packed", "grouped"])
def test_kda_ir_verifies(variant):
    q, k, v, g, beta = _kda_args()
    if variant == "grouped":
        q = np.concatenate([q, q], axis=2)
    arrays = [q, k, v, g, beta]
    attrs = {"scale": 0.25}
    states, finals, cu = [], [], None
    if variant == "state_packed":
        states = [tuple(s) for s in functional.state_shapes("kda", arrays, attrs, 2)]
        finals, cu = states, (3, "i32")
    text = functional.build_ir("kda", [x.shape for x in arrays], ["f32"] * 5, attrs,
                               states, finals, cu)
    _verify_with_hla_opt(text)


def test_linsimp_and_kda_check_arguments_first():
    """Bad arguments fail as ValueError before the compiler is asked."""
    q, k, v, r, u, omega = _linsimp_args()
    with pytest.raises(ValueError, match="window"):
        hla.linsimp(q, k, v, r, u, omega=omega, window=0)
    with pytest.raises(ValueError, match="kernel"):
        hla.linsimp(q, k, v, r, u, omega=omega, kernel="softmax")
    with pytest.raises(ValueError, match="omega"):
        hla.linsimp(q, k, v, r, u, omega=omega[:, :4])
    with pytest.raises(ValueError, match="r must have shape"):
        hla.linsimp(q, k, v, r[:, :, :1], u, omega=omega)
    with pytest.raises(ValueError, match="exact"):
        hla.linsimp(q, k, v, r, u, omega=omega, kernel="exact", output_final_state=True)
    q, k, v, g, beta = _kda_args()
    with pytest.raises(ValueError, match="beta must have rank 3"):
        hla.kda(q, k, v, g=g, beta=g)
    with pytest.raises(ValueError, match="g must have shape"):
        hla.kda(q, k, v, g=g[..., :4], beta=beta)
    with pytest.raises(TypeError, match="mixed dtypes"):
        hla.kda(q, k, v, g=g.astype(np.float16), beta=beta)
