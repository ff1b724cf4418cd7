"""Execution tests of the CPU code generator against the float64 references.

Every case writes a small model graph around one attention op, compiles it
with ``hla-opt --hla-target=cpu --emit=exe``, runs the executable on fresh
random ``.npy`` inputs and compares its outputs (and final states) with
``hla.reference``. Compiled executables are cached per graph and options for
the session, so the matrix below costs about one compile per distinct shape.

Tolerances (f32 inputs): relative error <= 1e-5 for T <= 1000; sequential and
Blelloch schedules agree to 1e-6; at T = 65536 the error against the float64
serial recurrence stays <= 1e-3. Normalized variants use positive q and k so
that their denominators do not cross zero (the ratio is ill-conditioned
there and any float32 implementation loses accuracy).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import hla.reference as ref

from .codegen_util import (to_bf16, HLA_OPT, OPTION_CASES, attention_graph, compile_graph,
                           relative_error, run_exe)

pytestmark = pytest.mark.skipif(
    not os.path.exists(HLA_OPT), reason="hla-opt is not built (run the README's build)"
)

OPS = ["linear_attention", "hla2", "ahla", "hla3"]


def make_inputs(rng, op, T, hq, hkv, d, dv, positive=False, dtype=np.float32):
    def draw(shape, scale):
        x = rng.standard_normal(shape) * scale
        return np.abs(x) if positive else x

    q = draw((1, T, hq, d), d ** -0.5).astype(dtype)
    k = draw((1, T, hkv, d), d ** -0.5).astype(dtype)
    v = rng.standard_normal((1, T, hkv, dv)).astype(dtype)
    return q, k, v


def check_op(tmp_path, rng, op, T, options=None, chunk=64, schedule="auto",
             hq=2, hkv=2, d=8, dv=6, positive=False, tol=1e-5, form=None):
    options = dict(options or {})
    q, k, v = make_inputs(rng, op, T, hq, hkv, d, dv, positive=positive)
    graph = attention_graph(op, q.shape, k.shape, v.shape, options)
    exe = compile_graph(graph, chunk=chunk, schedule=schedule,
                        extra=(f"--chunk-form={form}",) if form else ())
    (out,) = run_exe(exe, [q, k, v], tmp_path)
    expected = getattr(ref, op)(q, k, v, **options)
    err = relative_error(out, expected)
    assert err <= tol, f"{op} {options} T={T} chunk={chunk}: relative error {err:.2e}"
    return out


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("T", [1, 63, 64, 65, 200, 1000])
@pytest.mark.parametrize("chunk", [16, 64])
@pytest.mark.parametrize("form", [None, "fused"])
def test_lengths_and_chunks(tmp_path, op, T, chunk, form):
    """The default (phased) form and the fused one."""
    rng = np.random.default_rng(T * 31 + chunk)
    check_op(tmp_path, rng, op, T, chunk=chunk, form=form)


@pytest.mark.parametrize(
    "op,options",
    [(op, opts) for op in OPS for opts in OPTION_CASES[op]],
    ids=lambda x: x if isinstance(x, str) else ",".join(f"{k}={v}" for k, v in x.items()),
)
@pytest.mark.parametrize("T", [65, 200])
def test_options(tmp_path, op, options, T):
    rng = np.random.default_rng(len(str(options)) * 7 + T)
    check_op(tmp_path, rng, op, T, options, chunk=16,
             positive=bool(options.get("normalize")))


@pytest.mark.parametrize("op", OPS)
def test_grouped_heads(tmp_path, op):
    rng = np.random.default_rng(5)
    check_op(tmp_path, rng, op, 100, dict(decay=0.95), chunk=16, hq=4, hkv=2)


@pytest.mark.parametrize("op", OPS)
def test_schedules_agree(tmp_path, op):
    """Sequential and Blelloch scans over 63 chunks give the same numbers."""
    rng = np.random.default_rng(11)
    q, k, v = make_inputs(rng, op, 1000, 2, 2, 8, 6)
    graph = attention_graph(op, q.shape, k.shape, v.shape, dict(decay=0.97))
    outs = []
    for schedule in ["sequential", "blelloch"]:
        exe = compile_graph(graph, chunk=16, schedule=schedule,
                            extra=("--chunk-form=phased",))
        outs.append(run_exe(exe, [q, k, v], tmp_path)[0])
    assert relative_error(outs[1], outs[0]) <= 1e-6
    expected = getattr(ref, op)(q, k, v, decay=0.97)
    assert relative_error(outs[0], expected) <= 1e-5


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("schedule", ["sequential", "blelloch"])
def test_state_in_and_out(tmp_path, op, schedule):
    rng = np.random.default_rng(21)
    T, hq, hkv, d, dv = 90, 4, 2, 8, 6
    q, k, v = make_inputs(rng, op, T, hq, hkv, d, dv)
    options = dict(decay=0.9)
    # A state that a previous segment of 40 tokens would leave.
    q0, k0, v0 = make_inputs(rng, op, 40, hq, hkv, d, dv)
    _, state = getattr(ref, op)(q0, k0, v0, output_final_state=True, **options)
    state = tuple(s.astype(np.float32) for s in state)
    graph = attention_graph(op, q.shape, k.shape, v.shape, options,
                            state_shapes=[s.shape for s in state], final_state=True)
    exe = compile_graph(graph, chunk=16, schedule=schedule,
                        extra=("--chunk-form=phased",))
    outs = run_exe(exe, [q, k, v, *state], tmp_path)
    expected, final = getattr(ref, op)(q, k, v, initial_state=state,
                                       output_final_state=True, **options)
    assert relative_error(outs[0], expected) <= 1e-5
    for got, want in zip(outs[1:], final):
        assert relative_error(got, want) <= 1e-5


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("form", ["phased", "fused", "fused --value-tile=2"])
def test_packed_sequences(tmp_path, op, form):
    """Packed sequences (an empty one among them), also with value tiles."""
    rng = np.random.default_rng(33)
    T, hq, hkv, d, dv = 150, 2, 1, 8, 6
    q, k, v = make_inputs(rng, op, T, hq, hkv, d, dv)
    cu = np.array([0, 1, 1, 70, 150], np.int32)  # includes an empty sequence
    options = dict(decay=0.93)
    n = len(cu) - 1
    _, like = getattr(ref, op)(q[:, :1], k[:, :1], v[:, :1], output_final_state=True,
                                **options)
    state = tuple((rng.standard_normal((n,) + s.shape[1:]) * 0.2).astype(np.float32)
                  for s in like)
    graph = attention_graph(op, q.shape, k.shape, v.shape, options,
                            state_shapes=[s.shape for s in state], final_state=True,
                            cu_seqlens=len(cu))
    exe = compile_graph(graph, chunk=16, extra=tuple(f"--chunk-form={form}".split()))
    outs = run_exe(exe, [q, k, v, *state, cu], tmp_path)
    expected, final = getattr(ref, op)(q, k, v, initial_state=state,
                                       output_final_state=True, cu_seqlens=cu, **options)
    assert relative_error(outs[0], expected) <= 1e-5
    for got, want in zip(outs[1:], final):
        assert relative_error(got, want) <= 1e-5


@pytest.mark.parametrize("dtype,tol", [("f16", 2e-3), ("bf16", 1e-2)])
@pytest.mark.parametrize("op", ["hla2", "hla3"])
def test_half_precision_inputs(tmp_path, op, dtype, tol):
    """f16/bf16 activations: f32 accumulation inside, output in the input type.
    bf16 arrays travel as float32 .npy files (numpy has no bfloat16)."""
    rng = np.random.default_rng(2)
    q, k, v = make_inputs(rng, op, 130, 2, 2, 8, 6)
    if dtype == "f16":
        q, k, v = (x.astype(np.float16) for x in (q, k, v))
        expect_in = [x.astype(np.float64) for x in (q, k, v)]
    else:
        # Round to bf16 the way the runtime does, so the reference sees the
        # same inputs.
        q, k, v = (to_bf16(x) for x in (q, k, v))
        expect_in = [x.astype(np.float64) for x in (q, k, v)]
    graph = attention_graph(op, q.shape, k.shape, v.shape, {}, dtype=dtype)
    exe = compile_graph(graph, chunk=32)
    (out,) = run_exe(exe, [q, k, v], tmp_path)
    expected = getattr(ref, op)(*expect_in)
    assert relative_error(out.astype(np.float64), expected) <= tol


@pytest.mark.parametrize("op", OPS)
def test_long_sequence(tmp_path, op):
    """T = 65536, one head, d = 32: error against the float64 serial
    recurrence (what the references run) stays below 1e-3."""
    rng = np.random.default_rng(99)
    T = 65536
    q, k, v = make_inputs(rng, op, T, 1, 1, 32, 32)
    graph = attention_graph(op, q.shape, k.shape, v.shape, {})
    exe = compile_graph(graph, chunk=64)
    (out,) = run_exe(exe, [q, k, v], tmp_path)
    expected = getattr(ref, op)(q, k, v)
    assert relative_error(out, expected) <= 1e-3


def form_case(rng, op, T):
    """Inputs, a graph with both states, and the reference of the form
    tests: decay, normalisation, grouped heads (4 query heads on 2), the
    initial state a 30-token prefix leaves."""
    hq, hkv, d, dv = 4, 2, 8, 6
    q, k, v = make_inputs(rng, op, T, hq, hkv, d, dv, positive=True)
    options = dict(decay=0.95, normalize=True)
    q0, k0, v0 = make_inputs(rng, op, 30, hq, hkv, d, dv, positive=True)
    _, state = getattr(ref, op)(q0, k0, v0, output_final_state=True, **options)
    state = tuple(s.astype(np.float32) for s in state)
    graph = attention_graph(op, q.shape, k.shape, v.shape, options,
                            state_shapes=[s.shape for s in state], final_state=True)
    expected, final = getattr(ref, op)(q, k, v, initial_state=state,
                                       output_final_state=True, **options)
    return graph, [q, k, v, *state], expected, final


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("T", [1, 65, 200])
def test_fused_form(tmp_path, op, T):
    """hla-chunk's fused form (one carried chunk loop per sequence and head,
    the GPU's persistent schedule) agrees with the phased form and the
    reference, with decay, normalisation, grouped heads and both states."""
    graph, inputs, expected, final = form_case(np.random.default_rng(41 + T), op, T)
    fused = run_exe(compile_graph(graph, chunk=16, extra=("--chunk-form=fused",)),
                    inputs, tmp_path)
    phased = run_exe(compile_graph(graph, chunk=16, extra=("--chunk-form=phased",)),
                     inputs, tmp_path)
    assert relative_error(fused[0], expected) <= 1e-5
    assert relative_error(fused[0], phased[0]) <= 1e-6
    for got, want in zip(fused[1:], final):
        assert relative_error(got, want) <= 1e-5


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("T,segments", [(1, 3), (65, 2), (200, 3), (200, 13)])
def test_segmented_form(tmp_path, op, T, segments):
    """hla-chunk's segmented form (runs of chunks summarised, the summaries
    of the runs before each one combined into its initial state, then each
    run read out) agrees with the fused form and the reference — including
    more segments asked for than there are chunks, and state in/out."""
    graph, inputs, expected, final = form_case(np.random.default_rng(57 + T + segments),
                                               op, T)
    segmented = run_exe(
        compile_graph(graph, chunk=16,
                      extra=("--chunk-form=segmented", f"--segments={segments}")),
        inputs, tmp_path)
    fused = run_exe(compile_graph(graph, chunk=16, extra=("--chunk-form=fused",)),
                    inputs, tmp_path)
    assert relative_error(segmented[0], expected) <= 1e-5
    assert relative_error(segmented[0], fused[0]) <= 1e-5
    for got, want in zip(segmented[1:], final):
        assert relative_error(got, want) <= 1e-5


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("T,value_tile", [(1, 2), (65, 3), (200, 2)])
def test_value_tiles(tmp_path, op, T, value_tile):
    """The fused form with the value dimension cut into tiles (one loop per
    sequence, head and tile of dv = 6 columns; the components without value
    columns recomputed per tile) agrees with the reference, with decay,
    normalisation, grouped heads and both states."""
    graph, inputs, expected, final = form_case(
        np.random.default_rng(71 + T + value_tile), op, T)
    tiled = run_exe(
        compile_graph(graph, chunk=16,
                      extra=("--chunk-form=fused", f"--value-tile={value_tile}")),
        inputs, tmp_path)
    assert relative_error(tiled[0], expected) <= 1e-5
    for got, want in zip(tiled[1:], final):
        assert relative_error(got, want) <= 1e-5
