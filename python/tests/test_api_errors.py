"""Bad input raises TypeError/ValueError naming the argument, before compiled
code runs (where it could read out of bounds or abort the process).

None of these cases compiles anything: the counter of hlaCompile calls must
not move (the cu_seqlens value checks run just before the call, after the
artefact is found, so they reuse the one shape compiled here; likewise kda's
log-decay check, for which one small kda is compiled).
"""

from __future__ import annotations

import numpy as np
import pytest

import hla

from .api_util import T, inputs, needs_artefacts, needs_cuda, needs_torch, torch

Q, K, V = inputs(20)


def call(fn=hla.hla2, q=None, k=None, v=None, **kwargs):
    return fn(Q if q is None else q, K if k is None else k, V if v is None else v, **kwargs)


CASES = [
    # (what, kwargs for call, exception, message fragment)
    ("q rank", dict(q=Q[0]), ValueError, "q must have rank 4"),
    ("k rank", dict(k=K[..., None]), ValueError, "k must have rank 4"),
    ("float64", dict(q=Q.astype(np.float64), k=K.astype(np.float64),
                     v=V.astype(np.float64)), TypeError, "cast to float32"),
    ("int dtype", dict(q=Q.astype(np.int32)), TypeError, "q has dtype i32"),
    ("mixed dtypes", dict(k=K.astype(np.float16)), TypeError, "mixed dtypes: k is float16"),
    ("batch mismatch", dict(k=np.concatenate([K, K])), ValueError, "k has [B, T]"),
    ("length mismatch", dict(v=V[:, :-1]), ValueError, "v has [B, T]"),
    ("feature mismatch", dict(k=K[..., :8]), ValueError, "k has feature size D = 8"),
    ("k/v heads differ", dict(v=V[:, :, :1]), ValueError, "k has 2 heads but v has 1"),
    ("heads not a multiple", dict(q=np.concatenate([Q, Q[:, :, :1]], axis=2)), ValueError,
     "multiple of k/v's heads"),
    ("decay zero", dict(decay=0.0), ValueError, "decay must be in (0, 1]"),
    ("decay above one", dict(decay=1.5), ValueError, "decay must be in (0, 1]"),
    ("decay nan", dict(decay=float("nan")), ValueError, "decay"),
    ("decay string", dict(decay="0.9"), TypeError, "decay must be a real number"),
    ("eps zero", dict(eps=0.0), ValueError, "eps must be finite and > 0"),
    ("eps negative", dict(eps=-1e-6, normalize=True), ValueError, "eps"),
    ("ridge negative", dict(ridge=-0.5), ValueError, "ridge must be finite and >= 0"),
    ("scale zero", dict(scale=0.0), ValueError, "scale must be finite and > 0"),
    ("scale inf", dict(scale=float("inf")), ValueError, "scale"),
    ("chunk size zero", dict(chunk_size=0), ValueError, "chunk_size"),
    ("chunk size float", dict(chunk_size=16.0), ValueError, "chunk_size"),
    ("unknown target", dict(target="tpu"), ValueError, "unknown target 'tpu'"),
    ("target cuda for cpu arrays", dict(target="cuda"), ValueError, "inputs are on cpu"),
    ("unknown keyword", dict(window=4), TypeError, "window"),
    ("cu_seqlens float", dict(cu_seqlens=np.array([0.0, T])), TypeError,
     "cu_seqlens must be int32 or int64"),
    ("cu_seqlens 2-D", dict(cu_seqlens=np.array([[0, T]])), ValueError, "cu_seqlens must be 1-D"),
    ("cu_seqlens one offset", dict(cu_seqlens=[0]), ValueError, "N >= 1"),
    ("cu_seqlens with B > 1", dict(q=np.concatenate([Q, Q]), k=np.concatenate([K, K]),
                                   v=np.concatenate([V, V]), cu_seqlens=[0, T]),
     ValueError, "needs B = 1"),
    ("cu_seqlens not from 0", dict(cu_seqlens=[1, T]), ValueError, "must start at 0"),
    ("cu_seqlens decreasing", dict(cu_seqlens=[0, 20, 10, T]), ValueError, "never decrease"),
    ("cu_seqlens short of T", dict(cu_seqlens=[0, T - 1]), ValueError, f"end at T = {T}"),
    ("cu_seqlens beyond T", dict(cu_seqlens=np.array([0, T + 5], np.int32)), ValueError,
     f"end at T = {T}"),
    ("initial_state not a tuple", dict(initial_state=np.zeros((1, 2, 16, 16), np.float32)),
     TypeError, "initial_state must be a tuple"),
    ("initial_state count", dict(initial_state=(np.zeros((1, 2, 16, 16), np.float32),)),
     ValueError, "must hold 3 arrays (S, C, G), got 1"),
    ("initial_state shape", dict(initial_state=(np.zeros((1, 2, 16, 16), np.float32),
                                                np.zeros((1, 2, 16, 8), np.float32),
                                                np.zeros((1, 2, 16, 16), np.float32))),
     ValueError, "initial_state[1] (C) must have shape [1, 2, 16, 16]"),
    ("initial_state per sequence", dict(cu_seqlens=[0, 5, T], initial_state=tuple(
        np.zeros((1, 2, 16, 16), np.float32) for _ in range(3))),
     ValueError, "initial_state[0] (S) must have shape [2, 2, 16, 16]"),
    ("initial_state int", dict(initial_state=tuple(
        np.zeros((1, 2, 16, 16), np.int32) for _ in range(3))), TypeError, "float array"),
]


@needs_artefacts
@pytest.mark.parametrize("what,kwargs,exc,fragment", CASES, ids=[c[0] for c in CASES])
def test_bad_input(what, kwargs, exc, fragment):
    hla.hla2(Q, K, V)  # compiled once up front: the checks below must not compile
    before = hla.stats()["compiles"]
    with pytest.raises(exc) as info:
        call(**kwargs)
    assert fragment in str(info.value), str(info.value)
    assert str(info.value).startswith("hla.hla2:") or exc is TypeError
    assert hla.stats()["compiles"] == before


def test_not_an_array():
    with pytest.raises(TypeError, match="q must be a numpy array"):
        hla.hla2(object(), K, V)


def test_normalized_state_count_names_components():
    with pytest.raises(ValueError, match=r"5 arrays \(S, C, m, G, h\)"):
        hla.hla2(Q, K, V, normalize=True, initial_state=(Q,) * 3)


def test_other_ops_check_their_options():
    with pytest.raises(ValueError, match="hla.hla3: decay"):
        hla.hla3(Q, K, V, decay=2.0)
    with pytest.raises(ValueError, match="hla.ahla: eps"):
        hla.ahla(Q, K, V, eps=0)
    with pytest.raises(ValueError, match=r"hla.linear_attention: initial_state must hold 1"):
        hla.linear_attention(Q, K, V, initial_state=(Q, Q))
    with pytest.raises(TypeError):
        hla.ahla(Q, K, V, ridge=0.5)  # ridge is hla2's alone


def test_compile_errors():
    with pytest.raises(ValueError, match="unknown target"):
        hla.compile("func.func @f() { return }", target="gpu")
    with pytest.raises(TypeError, match="unknown option 'chunk'"):
        hla.compile("func.func @f() { return }", chunk=4)
    with pytest.raises(ValueError, match="scan_schedule"):
        hla.compile("func.func @f() { return }", scan_schedule="fast")
    with pytest.raises(ValueError, match="chunk_size"):
        hla.compile("func.func @f() { return }", chunk_size=-1)
    with pytest.raises(ValueError, match="vectorize"):
        hla.compile("func.func @f() { return }", vectorize="yes")
    with pytest.raises(ValueError, match="chunk_form"):
        hla.compile("func.func @f() { return }", chunk_form="tiled")
    with pytest.raises(ValueError, match="segments must be an integer >= 0"):
        hla.compile("func.func @f() { return }", segments=-2)
    # The CPU's scan and CUDA's kernel schedule are two options.
    with pytest.raises(ValueError, match="cuda_schedule must be one of"):
        hla.compile("func.func @f() { return }", target="cuda", cuda_schedule="blelloch")
    with pytest.raises(ValueError, match="scan_schedule must be one of"):
        hla.compile("func.func @f() { return }", scan_schedule="persistent")
    with pytest.raises(TypeError, match="unknown option 'schedule'"):
        hla.compile("func.func @f() { return }", schedule="auto")
    with pytest.raises(FileNotFoundError, match="no such file"):
        hla.compile("no/such/model.mlir")


@needs_torch
class TestTorch:
    def test_mixed_libraries(self):
        with pytest.raises(TypeError, match="k is a torch.Tensor but q is a numpy array"):
            hla.hla2(Q, torch.from_numpy(K), V)
        with pytest.raises(TypeError, match="but q is a torch array"):
            hla.hla2(torch.from_numpy(Q), K, torch.from_numpy(V))

    def test_mixed_torch_dtypes(self):
        q, k, v = (torch.from_numpy(x) for x in (Q, K, V))
        with pytest.raises(TypeError, match="mixed dtypes: v is bfloat16 but q is float32"):
            hla.hla2(q, k, v.bfloat16())
        with pytest.raises(TypeError, match="q has dtype f64"):
            hla.hla2(q.double(), k.double(), v.double())

    @needs_artefacts
    def test_torch_cu_seqlens_values(self):
        """Checked inside the custom op's kernel, still before compiled code."""
        hla.hla2(*(torch.from_numpy(x) for x in (Q, K, V)))
        before = hla.stats()["compiles"]
        q, k, v = (torch.from_numpy(x) for x in (Q, K, V))
        with pytest.raises(ValueError, match="never decrease"):
            hla.hla2(q, k, v, cu_seqlens=torch.tensor([0, 30, 20, T], dtype=torch.int32))
        assert hla.stats()["compiles"] == before


@needs_cuda
class TestDevices:
    def test_device_mismatch(self):
        q, k, v = (torch.from_numpy(x) for x in (Q, K, V))
        with pytest.raises(ValueError, match="k is on cpu but q is on cuda:0"):
            hla.hla2(q.cuda(), k, v.cuda())
        with pytest.raises(ValueError, match="cu_seqlens is on cpu but q is on cuda:0"):
            hla.hla2(q.cuda(), k.cuda(), v.cuda(), cu_seqlens=torch.tensor([0, T]))
        with pytest.raises(ValueError, match="target='cpu' but the inputs are on cuda:0"):
            hla.hla2(q.cuda(), k.cuda(), v.cuda(), target="cpu")
        with pytest.raises(ValueError, match=r"initial_state\[0\] \(P\) is on cpu"):
            hla.linear_attention(q.cuda(), k.cuda(), v.cuda(),
                                 initial_state=(torch.zeros(1, 2, 16, 16),))


# ---------------------------------------------------------------------------
# Degenerate sizes and kda's log-decay domain (issue 15), for every op
# ---------------------------------------------------------------------------

ALL_OPS = ["linear_attention", "hla2", "ahla", "hla3", "linsimp", "kda"]


def op_call(op, b=1, t=5, hq=2, hkv=None, d=4, dv=4, g=None, lib="numpy", **options):
    """Calls ``op`` on random inputs of the given sizes (kda: g <= 0 unless
    given, beta in (0, 1); linsimp: small anchors, window 3)."""
    rng = np.random.default_rng(7)
    hkv = hq if hkv is None else hkv

    def draw(*shape, scale=0.3):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    args = [draw(b, t, hq, d), draw(b, t, hkv, d), draw(b, t, hkv, dv)]
    kwargs = dict(options)
    if op == "linsimp":
        args += [draw(b, t, hkv, d), draw(b, t, hkv, dv)]
        kwargs.update(omega=draw(8, d), window=3)
    if op == "kda":
        kwargs.update(g=-np.abs(draw(b, t, hkv, d)) if g is None else g,
                      beta=rng.uniform(0.1, 0.9, (b, t, hkv)).astype(np.float32))
    if lib == "torch":
        args = [torch.from_numpy(x) for x in args]
        kwargs = {k: torch.from_numpy(x) if isinstance(x, np.ndarray) else x
                  for k, x in kwargs.items()}
    return getattr(hla, op)(*args, **kwargs)


@pytest.mark.parametrize("op", ALL_OPS)
def test_zero_feature_size_is_a_clear_error(op):
    """D = 0 was a ZeroDivisionError (the default scale D**-0.5); Dv = 0 a
    compiler error. Both are ValueErrors naming the size, before compiling."""
    before = hla.stats()["compiles"]
    with pytest.raises(ValueError, match=rf"hla.{op}: q and k must have feature size D >= 1"):
        op_call(op, d=0)
    with pytest.raises(ValueError, match=rf"hla.{op}: q and k must have feature size D >= 1"):
        op_call(op, d=0, scale=1.0)
    with pytest.raises(ValueError, match=rf"hla.{op}: v must have feature size Dv >= 1"):
        op_call(op, dv=0)
    assert hla.stats()["compiles"] == before


@pytest.mark.parametrize("op", ALL_OPS)
def test_kv_without_heads_is_a_clear_error(op):
    with pytest.raises(ValueError, match=rf"hla.{op}: k and v have no heads \(H_kv = 0\)"):
        op_call(op, hq=2, hkv=0)


@pytest.mark.parametrize("op", ALL_OPS)
@pytest.mark.parametrize("lib", ["numpy", pytest.param("torch", marks=needs_torch)])
@pytest.mark.parametrize("sizes", [dict(b=0), dict(hq=0), dict(hq=0, hkv=0), dict(hq=0, hkv=1)],
                         ids=["B=0", "H=0", "H_q=H_kv=0", "H_q=0,H_kv=1"])
def test_empty_batch_or_heads_give_empty_results_without_compiling(op, lib, sizes):
    """B = 0 failed inside the compiler; an empty batch (or no query heads)
    now gives outputs and states of the right, empty shapes, compiling
    nothing."""
    before = hla.stats()["compiles"]
    o, state = op_call(op, lib=lib, output_final_state=True, **sizes)
    b, hq = sizes.get("b", 1), sizes.get("hq", 2)
    assert tuple(o.shape) == (b, 5, hq, 4)
    assert type(o).__module__.split(".")[0] == lib
    d, m = 4, 8
    want = {"linear_attention": [(d, d)], "hla2": [(d, d)] * 3, "ahla": [(d, d)] * 2,
            "hla3": [(d, d)] * 3, "kda": [(d, d)],
            "linsimp": [(m, d), (m,), (2, d), (2, d), (2,)]}[op]
    assert [tuple(s.shape) for s in state] == [(b, hq) + w for w in want]
    assert all(str(s.dtype).endswith("float32") for s in state)
    assert hla.stats()["compiles"] == before


@needs_artefacts
@pytest.mark.parametrize("lib", ["numpy", pytest.param("torch", marks=needs_torch)])
def test_kda_rejects_a_positive_log_decay(lib):
    """g > 0 (documented g <= 0) gave non-finite outputs; now a ValueError,
    before compiled code runs. -inf (decay to zero) is in the domain, and NaN
    is not checked (non-finite values are not rejected in general)."""
    op_call("kda")  # compiled up front
    before = hla.stats()["compiles"]
    rng = np.random.default_rng(3)
    g = -np.abs(rng.standard_normal((1, 5, 2, 4))).astype(np.float32)
    for bad, shown in ((0.25, "0.25"), (float("inf"), "inf")):
        g_bad = g.copy()
        g_bad[0, 3, 1, 2] = bad
        if lib == "torch":
            g_bad = torch.from_numpy(g_bad)
        with pytest.raises(ValueError, match=rf"hla.kda: g is a log-decay and must be <= 0 "
                                             rf"everywhere, got an entry {shown}"):
            op_call("kda", g=g_bad, lib=lib)
    assert hla.stats()["compiles"] == before
    g_edge = g.copy()
    g_edge[0, 1, 0, 0] = 0.0
    g_edge[0, 2, 1, 3] = -0.0
    o = op_call("kda", g=torch.from_numpy(g_edge) if lib == "torch" else g_edge, lib=lib)
    assert np.isfinite(np.asarray(o)).all()
    for special in (-np.inf, np.nan):  # accepted (the result is another matter)
        g_special = g.copy()
        g_special[0, 2, 1, 1] = special
        op_call("kda", g=torch.from_numpy(g_special) if lib == "torch" else g_special, lib=lib)
    assert hla.stats()["compiles"] == before


@needs_artefacts
@pytest.mark.parametrize("t, chunk_size, at", [(5, None, [(0, 0, 0)]), (23, 8, [(9, 1, 2)]),
                                               (23, 4, [(3, 0, 1), (4, 1, 1), (17, 0, 3)]),
                                               (1, None, [(0, 1, 0)])])
def test_kda_log_decay_of_minus_infinity(t, chunk_size, at):
    """g = -inf (a decay to exactly zero) is in the domain: the compiled kda
    agrees with the float64 reference. The chunked form once gave NaN from
    -inf - -inf in its cumulative log-decays."""
    rng = np.random.default_rng(4 + t)
    b, h, d = 1, 2, 4
    q, k, v = [(rng.standard_normal((b, t, h, d)) * 0.3).astype(np.float32) for _ in range(3)]
    g = -np.abs(rng.standard_normal((b, t, h, d))).astype(np.float32)
    for token, head, channel in at:
        g[0, token, head, channel] = -np.inf
    beta = rng.uniform(0.1, 0.9, (b, t, h)).astype(np.float32)
    o = hla.kda(q, k, v, g=g, beta=beta, chunk_size=chunk_size)
    expected = hla.reference.kda(q, k, v, g=g, beta=beta)
    assert np.isfinite(o).all()
    np.testing.assert_allclose(o, expected, rtol=0, atol=2e-6)
