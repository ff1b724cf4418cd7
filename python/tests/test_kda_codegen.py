"""KDA (the gated delta rule) compiled for the CPU by hla-opt in its WY/UT
chunked form, against the float64 references of SEMANTICS.md §6: ragged
tails, length 1, chunk sizes 1/16/32/48/64 (one, two, three and four blocks
of the pair products), the three chunked forms, grouped
heads, state in and out, packed sequences, bf16."""

import numpy as np
import pytest

from hla import reference as ref

from .codegen_util import compile_graph, kda_graph, relative_error, run_exe, to_bf16


def make_inputs(rng, B, T, hq, hkv, dk, dv):
    q = rng.standard_normal((B, T, hq, dk)) * dk ** -0.5
    k = rng.standard_normal((B, T, hkv, dk))
    k /= np.linalg.norm(k, axis=-1, keepdims=True)  # L2-normalised keys
    v = rng.standard_normal((B, T, hkv, dv))
    g = -np.abs(rng.standard_normal((B, T, hkv, dk))) * 0.2  # log-decay <= 0
    beta = rng.uniform(0.1, 0.9, (B, T, hkv))
    return [x.astype(np.float32) for x in (q, k, v, g, beta)]


@pytest.mark.parametrize("T", [1, 15, 16, 17, 100])
@pytest.mark.parametrize("chunk", [1, 16, 32, 48, 64])
def test_lengths_and_chunks(tmp_path, T, chunk):
    rng = np.random.default_rng(100 * T + chunk)
    B, hq, hkv, dk, dv = 2, 2, 2, 8, 6
    q, k, v, g, beta = make_inputs(rng, B, T, hq, hkv, dk, dv)
    exe = compile_graph(kda_graph(B, T, hq, hkv, dk, dv), chunk=chunk)
    (out,) = run_exe(exe, [q, k, v, g, beta], tmp_path)
    want = ref.kda(q, k, v, g=g, beta=beta)
    assert relative_error(out, want) <= 1e-5


@pytest.mark.parametrize("form", ["phased", "fused", "segmented"])
def test_forms_grouped_heads_and_state(tmp_path, form):
    rng = np.random.default_rng(3)
    B, T, hq, hkv, dk, dv = 2, 70, 4, 2, 16, 8
    q, k, v, g, beta = make_inputs(rng, B, T, hq, hkv, dk, dv)
    s0 = (rng.standard_normal((B, hq, dk, dv)) * 0.3).astype(np.float32)
    extra = (f"--chunk-form={form}",) + (("--segments=3",) if form == "segmented" else ())
    exe = compile_graph(kda_graph(B, T, hq, hkv, dk, dv, state=True, scale=0.3), chunk=16,
                        extra=extra)
    out, final = run_exe(exe, [q, k, v, g, beta, s0], tmp_path)
    want, (want_final,) = ref.kda(q, k, v, g=g, beta=beta, scale=0.3, initial_state=(s0,),
                                  output_final_state=True)
    assert relative_error(out, want) <= 1e-5
    assert relative_error(final, want_final) <= 1e-5


@pytest.mark.parametrize("form", ["phased", "fused"])
def test_packed_sequences(tmp_path, form):
    rng = np.random.default_rng(4)
    T, hq, hkv, dk, dv = 90, 2, 1, 8, 8
    q, k, v, g, beta = make_inputs(rng, 1, T, hq, hkv, dk, dv)
    cu = np.array([0, 1, 1, 40, 90], np.int32)
    s0 = (rng.standard_normal((4, hq, dk, dv)) * 0.3).astype(np.float32)
    exe = compile_graph(kda_graph(1, T, hq, hkv, dk, dv, state=True, cu_seqlens=len(cu)),
                        chunk=16, extra=(f"--chunk-form={form}",))
    out, final = run_exe(exe, [q, k, v, g, beta, s0, cu], tmp_path)
    want, (want_final,) = ref.kda(q, k, v, g=g, beta=beta, initial_state=(s0,),
                                  output_final_state=True, cu_seqlens=cu)
    assert relative_error(out, want) <= 1e-5
    assert relative_error(final, want_final) <= 1e-5


@pytest.mark.parametrize("T,value_tile", [(1, 4), (70, 2), (70, 4)])
def test_value_tiles(tmp_path, T, value_tile):
    """The fused form with dv = 8 cut into value tiles (M, without value
    columns, recomputed per tile), grouped heads, state in and out."""
    rng = np.random.default_rng(5 + T + value_tile)
    B, hq, hkv, dk, dv = 2, 4, 2, 16, 8
    q, k, v, g, beta = make_inputs(rng, B, T, hq, hkv, dk, dv)
    s0 = (rng.standard_normal((B, hq, dk, dv)) * 0.3).astype(np.float32)
    exe = compile_graph(kda_graph(B, T, hq, hkv, dk, dv, state=True, scale=0.3), chunk=16,
                        extra=("--chunk-form=fused", f"--value-tile={value_tile}"))
    out, final = run_exe(exe, [q, k, v, g, beta, s0], tmp_path)
    want, (want_final,) = ref.kda(q, k, v, g=g, beta=beta, scale=0.3, initial_state=(s0,),
                                  output_final_state=True)
    assert relative_error(out, want) <= 1e-5
    assert relative_error(final, want_final) <= 1e-5


@pytest.mark.parametrize("spread,beta_low", [(0.0, 1.0), (0.02, 0.98)])
def test_solve_of_alike_keys(tmp_path, spread, beta_low):
    """(I + L)^-1 with L near its worst: keys (nearly) equal, β near 1, no
    decay, 64-token chunks; the inverse built by doubling its blocks keeps
    f32's precision (its entries are the inverse's own at every level)."""
    rng = np.random.default_rng(int(spread * 100) + 7)
    B, T, h, dk, dv = 1, 150, 2, 32, 8
    k = rng.standard_normal((1, 1, h, dk)) + spread * rng.standard_normal((B, T, h, dk))
    k = k / np.linalg.norm(k, axis=-1, keepdims=True)
    q = rng.standard_normal((B, T, h, dk)) * dk ** -0.5
    v = rng.standard_normal((B, T, h, dv))
    g = np.zeros((B, T, h, dk))
    beta = rng.uniform(beta_low, 1.0, (B, T, h))
    q, k, v, g, beta = [x.astype(np.float32) for x in (q, k, v, g, beta)]
    exe = compile_graph(kda_graph(B, T, h, h, dk, dv), chunk=64)
    (out,) = run_exe(exe, [q, k, v, g, beta], tmp_path)
    want = ref.kda(*[x.astype(np.float64) for x in (q, k, v)], g=g.astype(np.float64),
                   beta=beta.astype(np.float64))
    assert relative_error(out, want) <= 1e-5


def test_long_sequence_strong_decay(tmp_path):
    """T = 4096 with strong per-channel decays (g down to −5 per token): the
    in-chunk decays e^{Γ_r − Γ_s} never overflow (no e^{−Γ} is formed)."""
    rng = np.random.default_rng(5)
    B, T, hq, hkv, dk, dv = 1, 4096, 1, 1, 16, 16
    q, k, v, g, beta = make_inputs(rng, B, T, hq, hkv, dk, dv)
    g = (g * 25.0).astype(np.float32)
    exe = compile_graph(kda_graph(B, T, hq, hkv, dk, dv), chunk=64)
    (out,) = run_exe(exe, [q, k, v, g, beta], tmp_path)
    assert np.all(np.isfinite(out))
    assert relative_error(out, ref.kda(q, k, v, g=g, beta=beta)) <= 1e-4


def test_bf16_inputs(tmp_path):
    rng = np.random.default_rng(6)
    B, T, hq, hkv, dk, dv = 1, 77, 2, 2, 16, 16
    xs = make_inputs(rng, B, T, hq, hkv, dk, dv)

    xs = [to_bf16(x) for x in xs]
    exe = compile_graph(kda_graph(B, T, hq, hkv, dk, dv, dtype="bf16"), chunk=16)
    (out,) = run_exe(exe, xs, tmp_path)
    q, k, v, g, beta = xs
    assert relative_error(out.astype(np.float64), ref.kda(q, k, v, g=g, beta=beta)) <= 1e-2


@pytest.mark.parametrize("T,chunk,value_tile", [(1, 16, 0), (17, 16, 0), (70, 16, 4), (100, 32, 0),
                                                (130, 64, 0)])
def test_hoisted_chunk_work(tmp_path, T, chunk, value_tile):
    """The fused form with the work its state does not reach (decays,
    pairs, solve, W, U) in a pass parallel over chunks ahead of the loop
    (--hoist-chunk-work=on): grouped heads, state in and out, ragged tails,
    value tiles."""
    rng = np.random.default_rng(11 + T + chunk)
    B, hq, hkv, dk, dv = 2, 4, 2, 16, 8
    q, k, v, g, beta = make_inputs(rng, B, T, hq, hkv, dk, dv)
    s0 = (rng.standard_normal((B, hq, dk, dv)) * 0.3).astype(np.float32)
    exe = compile_graph(kda_graph(B, T, hq, hkv, dk, dv, state=True, scale=0.3), chunk=chunk,
                        extra=("--chunk-form=fused", "--hoist-chunk-work=on",
                               f"--value-tile={value_tile}"))
    out, final = run_exe(exe, [q, k, v, g, beta, s0], tmp_path)
    want, (want_final,) = ref.kda(q, k, v, g=g, beta=beta, scale=0.3, initial_state=(s0,),
                                  output_final_state=True)
    assert relative_error(out, want) <= 1e-5
    assert relative_error(final, want_final) <= 1e-5
