"""LinSimp (favor) compiled for the CPU by hla-opt, against the float64
references of SEMANTICS.md §5: ragged tails, chunk sizes, the three chunked
forms, grouped heads, windows shorter and longer than a chunk, state in and
out, bf16 inputs, the stabilised and plain anchor features, and the
random_features op inside the graph."""

import numpy as np
import pytest

from hla import reference as ref
from hla.random_features import random_features

from .codegen_util import (compile_graph, linsimp_graph, relative_error, run_exe,
                           to_bf16)


def hoisted_or(form):
    """hla-opt's flags for a chunked form, "hoisted" the fused one with its
    output rows in a pass parallel over chunks (one offset per pass)."""
    if form == "hoisted":
        return ("--chunk-form=fused", "--hoist-chunk-work=on", "--linsimp-anchor-rows=8")
    return (f"--chunk-form={form}",)


def make_inputs(rng, B, T, hq, hkv, d, dv, std=0.5):
    # Small-norm q, k, r: the regime where favor features are accurate and
    # their exponents stay moderate (SEMANTICS.md §5).
    q = std * rng.standard_normal((B, T, hq, d))
    k = std * rng.standard_normal((B, T, hkv, d))
    r = std * rng.standard_normal((B, T, hkv, d))
    v = rng.standard_normal((B, T, hkv, dv))
    u = rng.standard_normal((B, T, hkv, dv))
    return [x.astype(np.float32) for x in (q, k, v, r, u)]


@pytest.mark.parametrize("T", [1, 7, 16, 17, 50])
@pytest.mark.parametrize("chunk", [8, 16])
@pytest.mark.parametrize("window", [1, 4, 20])
def test_lengths_chunks_windows(tmp_path, T, chunk, window):
    rng = np.random.default_rng(1000 * T + 10 * chunk + window)
    B, hq, hkv, d, dv, m = 2, 2, 1, 8, 4, 16
    q, k, v, r, u = make_inputs(rng, B, T, hq, hkv, d, dv)
    omega = random_features(m, d, seed=T).astype(np.float32)
    exe = compile_graph(linsimp_graph(B, T, hq, hkv, d, dv, m, window), chunk=chunk)
    (out,) = run_exe(exe, [q, k, v, r, u, omega], tmp_path)
    want = ref.linsimp(q, k, v, r, u, omega=omega, window=window)
    assert relative_error(out, want) <= 1e-5


@pytest.mark.parametrize("chunk,m,window", [(32, 16, 1), (32, 64, 16), (64, 256, 64),
                                            (64, 64, 16)])
def test_larger_chunks(tmp_path, chunk, m, window):
    """Chunks of 32 and 64 (one or two anchor offsets per 64-row pass), m
    from 16 to 256, W from 1 to 64, a ragged last chunk."""
    rng = np.random.default_rng(chunk + m + window)
    B, T, hq, hkv, d, dv = 1, 150, 2, 1, 8, 4
    q, k, v, r, u = make_inputs(rng, B, T, hq, hkv, d, dv)
    omega = random_features(m, d, seed=m).astype(np.float32)
    exe = compile_graph(linsimp_graph(B, T, hq, hkv, d, dv, m, window), chunk=chunk)
    (out,) = run_exe(exe, [q, k, v, r, u, omega], tmp_path)
    want = ref.linsimp(q, k, v, r, u, omega=omega, window=window)
    assert relative_error(out, want) <= 1e-5


def check_from_state(tmp_path, rng, B, T, hq, hkv, d, dv, m, window, chunk, extra, seed):
    """Compiles LinSimp with `extra`, runs it from the state a previous call
    of 9 tokens left (anchors of earlier tokens included) and checks the
    output and the final state against the float64 reference."""
    prev = make_inputs(rng, B, 9, hq, hkv, d, dv)
    omega = random_features(m, d, seed=seed).astype(np.float32)
    _, state = ref.linsimp(*prev, omega=omega, window=window, output_final_state=True)
    state = [s.astype(np.float32) for s in state]
    q, k, v, r, u = make_inputs(rng, B, T, hq, hkv, d, dv)
    exe = compile_graph(linsimp_graph(B, T, hq, hkv, d, dv, m, window, state=True),
                        chunk=chunk, extra=extra)
    outs = run_exe(exe, [q, k, v, r, u, omega, *state], tmp_path)
    want, final = ref.linsimp(q, k, v, r, u, omega=omega, window=window,
                              initial_state=tuple(state), output_final_state=True)
    assert relative_error(outs[0], want) <= 1e-5
    assert len(outs) == 6
    for got, w in zip(outs[1:], final):
        assert relative_error(got, w) <= 1e-5


@pytest.mark.parametrize("form", ["phased", "fused", "segmented"])
def test_forms_and_state(tmp_path, form):
    """Every chunked form, from a state a previous call left (anchors of
    earlier tokens included), giving the final state."""
    extra = (f"--chunk-form={form}",) + (("--segments=3",) if form == "segmented" else ())
    check_from_state(tmp_path, np.random.default_rng(7), B=1, T=45, hq=4, hkv=2, d=8, dv=6,
                     m=32, window=6, chunk=8, extra=extra, seed=11)


@pytest.mark.parametrize("T,chunk,window,rows,stable", [(1, 8, 4, 8, True), (17, 16, 4, 16, False),
                                                    (50, 8, 20, 8, True), (70, 16, 20, 32, True),
                                                    (150, 64, 64, 64, True)])
def test_hoisted_readout(tmp_path, T, chunk, window, rows, stable):
    """The fused form with its output rows (the anchor window) in a pass
    parallel over chunks after the loop, which keeps only M and a and
    stacks them per chunk (--hoist-chunk-work=on): grouped heads, state in
    and out, ragged tails, one and two offsets per pass, the stabilised and
    plain features."""
    extra = ("--chunk-form=fused", "--hoist-chunk-work=on", f"--linsimp-anchor-rows={rows}")
    extra += () if stable else ("--linsimp-stable-features=0",)
    check_from_state(tmp_path, np.random.default_rng(T + chunk + window), B=2, T=T, hq=4,
                     hkv=2, d=8, dv=4, m=16, window=window, chunk=chunk, extra=extra, seed=T)


@pytest.mark.parametrize("form", ["phased", "fused", "hoisted"])
def test_packed_sequences(tmp_path, form):
    """Packed sequences (one of them empty, one shorter than the window):
    every window stays inside its sequence, each sequence starts from its
    own state and anchors."""
    rng = np.random.default_rng(14)
    T, hq, hkv, d, dv, m, window = 60, 2, 1, 8, 4, 16, 6
    cu = np.array([0, 3, 3, 40, 60], np.int32)
    omega = random_features(m, d, seed=8).astype(np.float32)
    states = []
    for _ in range(4):
        prev = make_inputs(rng, 1, 5, hq, hkv, d, dv)
        _, st = ref.linsimp(*prev, omega=omega, window=window, output_final_state=True)
        states.append(st)
    state = [np.concatenate([s[i] for s in states]).astype(np.float32) for i in range(5)]
    q, k, v, r, u = make_inputs(rng, 1, T, hq, hkv, d, dv)
    exe = compile_graph(linsimp_graph(1, T, hq, hkv, d, dv, m, window, state=True,
                                      cu_seqlens=len(cu)),
                        chunk=8, extra=hoisted_or(form))
    outs = run_exe(exe, [q, k, v, r, u, omega, *state, cu], tmp_path)
    want, final = ref.linsimp(q, k, v, r, u, omega=omega, window=window,
                              initial_state=tuple(state), output_final_state=True,
                              cu_seqlens=cu)
    assert relative_error(outs[0], want) <= 1e-5
    for got, w in zip(outs[1:], final):
        assert relative_error(got, w) <= 1e-5


def test_short_sequence_keeps_initial_anchors(tmp_path):
    """T < W−1: the final anchors are partly the initial ones, validity included."""
    rng = np.random.default_rng(8)
    B, T, hq, hkv, d, dv, m, window = 2, 3, 2, 2, 4, 4, 8, 8
    omega = random_features(m, d, seed=2).astype(np.float32)
    prev = make_inputs(rng, B, 2, hq, hkv, d, dv)
    _, state = ref.linsimp(*prev, omega=omega, window=window, output_final_state=True)
    state = [s.astype(np.float32) for s in state]
    q, k, v, r, u = make_inputs(rng, B, T, hq, hkv, d, dv)
    exe = compile_graph(linsimp_graph(B, T, hq, hkv, d, dv, m, window, state=True), chunk=4)
    outs = run_exe(exe, [q, k, v, r, u, omega, *state], tmp_path)
    want, final = ref.linsimp(q, k, v, r, u, omega=omega, window=window,
                              initial_state=tuple(state), output_final_state=True)
    assert relative_error(outs[0], want) <= 1e-5
    np.testing.assert_array_equal(outs[5], final[4])  # validity: 0 0 1 1 1 1 1
    for got, w in zip(outs[1:5], final):
        assert relative_error(got, w) <= 1e-5


def test_random_features_op_in_the_graph(tmp_path):
    """Ω generated by the compiler from a seed equals hla.random_features."""
    rng = np.random.default_rng(9)
    B, T, hq, hkv, d, dv, m, window = 1, 40, 2, 2, 8, 8, 64, 5
    q, k, v, r, u = make_inputs(rng, B, T, hq, hkv, d, dv)
    exe = compile_graph(linsimp_graph(B, T, hq, hkv, d, dv, m, window, seed=123), chunk=16)
    (out,) = run_exe(exe, [q, k, v, r, u], tmp_path)
    want = ref.linsimp(q, k, v, r, u, omega=random_features(m, d, seed=123).astype(np.float32),
                       window=window)
    assert relative_error(out, want) <= 1e-5


def test_stabilised_equals_plain(tmp_path):
    """The running-max shift of the anchor features cancels: with inputs
    whose features neither overflow nor underflow, both forms agree."""
    rng = np.random.default_rng(10)
    B, T, hq, hkv, d, dv, m, window = 1, 37, 2, 1, 8, 4, 16, 7
    q, k, v, r, u = make_inputs(rng, B, T, hq, hkv, d, dv)
    omega = random_features(m, d, seed=4).astype(np.float32)
    graph = linsimp_graph(B, T, hq, hkv, d, dv, m, window)
    stable = run_exe(compile_graph(graph, chunk=8), [q, k, v, r, u, omega], tmp_path)[0]
    plain = run_exe(compile_graph(graph, chunk=8, extra=("--linsimp-stable-features=0",)),
                    [q, k, v, r, u, omega], tmp_path)[0]
    assert relative_error(stable, plain) <= 1e-6
    assert relative_error(stable, ref.linsimp(q, k, v, r, u, omega=omega,
                                              window=window)) <= 1e-5


@pytest.mark.parametrize("rows", [1, 16, 24, 64])
@pytest.mark.parametrize("stable", [True, False])
def test_anchor_rows(tmp_path, rows, stable):
    """Passes over the anchor window stacking G = 1, 2, 3 and 6 offsets
    (chunk 8, W = 12, anchor rows 1 / 16 / 24 / 64), with and without the
    running-max shift, against the float64 reference; a ragged last chunk
    and a window longer than the chunk."""
    rng = np.random.default_rng(20 + rows)
    B, T, hq, hkv, d, dv, m, window = 2, 29, 2, 1, 8, 4, 16, 12
    q, k, v, r, u = make_inputs(rng, B, T, hq, hkv, d, dv)
    omega = random_features(m, d, seed=7).astype(np.float32)
    extra = (f"--linsimp-anchor-rows={rows}",) + (
        () if stable else ("--linsimp-stable-features=0",))
    exe = compile_graph(linsimp_graph(B, T, hq, hkv, d, dv, m, window), chunk=8,
                        extra=extra)
    (out,) = run_exe(exe, [q, k, v, r, u, omega], tmp_path)
    want = ref.linsimp(q, k, v, r, u, omega=omega, window=window)
    assert relative_error(out, want) <= 1e-5


def test_stabilised_survives_large_exponents(tmp_path):
    """Queries and anchors scaled up until the plain features overflow
    float32: the stabilised form still matches the float64 reference."""
    rng = np.random.default_rng(12)
    B, T, hq, hkv, d, dv, m, window = 1, 24, 1, 1, 4, 4, 8, 4
    q, k, v, r, u = make_inputs(rng, B, T, hq, hkv, d, dv, std=0.3)
    # Exponents Ωx − ‖x‖²/2 around −150: below float32's range, inside
    # float64's (where the reference evaluates them).
    q *= 10.0
    r *= 10.0
    omega = random_features(m, d, seed=5).astype(np.float32)
    graph = linsimp_graph(B, T, hq, hkv, d, dv, m, window, scale=1.0)
    want = ref.linsimp(q, k, v, r, u, omega=omega, window=window, scale=1.0)
    assert np.all(np.isfinite(want))
    stable = run_exe(compile_graph(graph, chunk=8), [q, k, v, r, u, omega], tmp_path)[0]
    assert relative_error(stable, want) <= 1e-4
    plain = run_exe(compile_graph(graph, chunk=8, extra=("--linsimp-stable-features=0",)),
                    [q, k, v, r, u, omega], tmp_path)[0]
    assert not np.all(np.isfinite(plain)) or relative_error(plain, want) > 1e-4


def test_bf16_inputs(tmp_path):
    rng = np.random.default_rng(13)
    B, T, hq, hkv, d, dv, m, window = 1, 33, 2, 2, 16, 8, 32, 8
    xs = make_inputs(rng, B, T, hq, hkv, d, dv)

    xs = [to_bf16(x) for x in xs]
    omega = to_bf16(random_features(m, d, seed=6))
    exe = compile_graph(linsimp_graph(B, T, hq, hkv, d, dv, m, window, dtype="bf16"), chunk=16)
    (out,) = run_exe(exe, [*xs, omega], tmp_path)
    want = ref.linsimp(*xs, omega=omega, window=window)
    assert relative_error(out.astype(np.float64), want) <= 1e-2


def exact_graph(*args, **kwargs):
    return linsimp_graph(*args, **kwargs).replace("{window", "{kernel = #hla.kernel<exact>, window")


@pytest.mark.parametrize("T,chunk,window", [(1, 8, 4), (17, 8, 4), (40, 16, 20), (33, 8, 1)])
def test_exact_kernel(tmp_path, T, chunk, window):
    """kernel = exact: one softmax per query over all its (key, anchor)
    pairs, quadratic in T; entries of std 1 (no small-norm need here)."""
    rng = np.random.default_rng(3 * T + window)
    B, hq, hkv, d, dv, m = 2, 2, 1, 8, 4, 16
    q, k, v, r, u = make_inputs(rng, B, T, hq, hkv, d, dv, std=1.0)
    omega = random_features(m, d, seed=1).astype(np.float32)
    exe = compile_graph(exact_graph(B, T, hq, hkv, d, dv, m, window), chunk=chunk)
    (out,) = run_exe(exe, [q, k, v, r, u, omega], tmp_path)
    want = ref.linsimp(q, k, v, r, u, omega=omega, window=window, kernel="exact")
    assert relative_error(out, want) <= 1e-5


def test_favor_error_against_exact_falls_with_m(tmp_path):
    """Small-norm inputs (std 0.5): the compiled favor kernel's error
    against the compiled exact kernel falls as the number of features m
    grows (≈0.7/√m, SEMANTICS.md §5)."""
    rng = np.random.default_rng(21)
    B, T, hq, hkv, d, dv, window = 1, 48, 2, 2, 16, 8, 8
    q, k, v, r, u = make_inputs(rng, B, T, hq, hkv, d, dv, std=0.5)
    errors = []
    for m in [16, 64, 256, 1024]:
        omega = random_features(m, d, seed=2).astype(np.float32)
        favor = run_exe(compile_graph(linsimp_graph(B, T, hq, hkv, d, dv, m, window), chunk=16),
                        [q, k, v, r, u, omega], tmp_path)[0]
        exact = run_exe(compile_graph(exact_graph(B, T, hq, hkv, d, dv, m, window), chunk=16),
                        [q, k, v, r, u, omega], tmp_path)[0]
        errors.append(relative_error(favor, exact))
    assert errors[-1] < errors[0] / 3, errors
    assert errors[-1] < 4 * 0.7 / np.sqrt(1024), errors
