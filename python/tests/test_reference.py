"""Tests of the float64 reference implementations (hla.reference) against SEMANTICS.md.

Every form of every operator (definition, serial recurrence, tree scan over
the segment monoid, chunked form, public batched API) is cross-checked on
fresh seeded random inputs; q and k are scaled by d^-1/2 so that sums stay
O(1), and normalized runs use positive q, k so the denominators stay away from
zero (the comparison then measures the forms, not the conditioning). Forms of
the same exact quantity must agree to 1e-12 relative (Frobenius norm). The
paper's printed decayed rules serve as negative controls.
"""

import math
import zlib

import numpy as np
import pytest

from hla import reference as R

D, DV = 6, 5
TS = (1, 5, 23, 64, 65)
CHUNKS = (1, 4, 5, 16, 64)
GAMMAS = (1.0, 0.9)
TOL = 1e-12


def _rng(*key):
    """A Generator seeded from the test's parameters (stable across runs)."""
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def _qkv(rng, T, *, positive=False, d=D, dv=DV):
    q = rng.standard_normal((T, d)) / math.sqrt(d)
    k = rng.standard_normal((T, d)) / math.sqrt(d)
    v = rng.standard_normal((T, dv))
    if positive:
        q, k = np.abs(q) + 0.1, np.abs(k) + 0.1
    return q, k, v


def _kda_inputs(rng, T, *, d=D, dv=DV, g_scale=0.3):
    q = rng.standard_normal((T, d)) / math.sqrt(d)
    k = rng.standard_normal((T, d))
    k /= np.linalg.norm(k, axis=1, keepdims=True)  # KDA's L2-normalised keys
    v = rng.standard_normal((T, dv))
    g = -g_scale * np.abs(rng.standard_normal((T, d)))
    beta = rng.uniform(0.05, 0.95, T)
    return q, k, v, g, beta


def _linsimp_inputs(rng, T, *, d=D, dv=DV, m=16):
    # Small-norm inputs (entries of std 0.5/sqrt(d)): exponents tau (q.r).k are
    # ~1e-2, the regime where the favor features are meaningful (see §5).
    q, k, r = (0.5 / math.sqrt(d) * rng.standard_normal((T, d)) for _ in range(3))
    v, u = rng.standard_normal((T, dv)), rng.standard_normal((T, dv))
    omega = R.linsimp_omega(m, d, seed=int(rng.integers(1 << 30)))
    return q, k, v, r, u, omega


# ---------------------------------------------------------------------------
# Per-head forms: definition vs serial vs scan vs chunked
# ---------------------------------------------------------------------------

# name -> (definition, serial, scan, chunked, extra options)
LINEAR_OPS = {
    "linear_attention": (R.linear_attention_definition, R.linear_attention_serial,
                         R.linear_attention_scan, None, {}),
    "hla2": (R.hla2_definition, R.hla2_serial, R.hla2_scan, R.hla2_chunked, {}),
    "hla2-ridge": (R.hla2_definition, R.hla2_serial, R.hla2_scan, R.hla2_chunked,
                   {"ridge": 0.3}),
    "hla2-unmasked": (R.hla2_definition, R.hla2_serial, R.hla2_scan, R.hla2_chunked,
                      {"masked": False}),
    "hla2-unmasked-ridge": (R.hla2_definition, R.hla2_serial, R.hla2_scan, R.hla2_chunked,
                            {"masked": False, "ridge": 0.3}),
    "ahla": (R.ahla_definition, R.ahla_serial, R.ahla_scan, R.ahla_chunked, {}),
    "hla3": (R.hla3_definition, R.hla3_serial, R.hla3_scan, R.hla3_chunked, {}),
}
CHUNKED_OPS = [n for n, f in LINEAR_OPS.items() if f[3] is not None]


def _base(name):
    return name.split("-")[0]


@pytest.mark.parametrize("normalize", [False, True])
@pytest.mark.parametrize("gamma", GAMMAS)
@pytest.mark.parametrize("T", TS)
@pytest.mark.parametrize("name", list(LINEAR_OPS))
def test_serial_and_scan_match_definition(name, T, gamma, normalize, agree):
    definition, serial, scan, _, extra = LINEAR_OPS[name]
    rng = _rng("forms", name, T, gamma, normalize)
    q, k, v = _qkv(rng, T, positive=normalize)
    kw = dict(extra, gamma=gamma, normalize=normalize)
    ref = definition(q, k, v, **kw)
    o_ser, st_ser = serial(q, k, v, **kw)
    o_scan, st_scan = scan(q, k, v, **kw)
    op = _base(name)
    agree(o_ser, ref, f"{op}: serial vs definition")
    agree(o_scan, ref, f"{op}: scan vs definition")
    # The scan carries the v -> 1 components as widened columns, the serial
    # form as explicit m/h/n/x recurrences: their states must coincide.
    agree(st_scan, st_ser, f"{op}: scan state vs serial state")

    # Same from a non-zero incoming state (as produced by an earlier prefix).
    q0, k0, v0 = _qkv(rng, 7, positive=normalize)
    _, st0 = serial(q0, k0, v0, **kw)
    o_ser, st_ser = serial(q, k, v, state=st0, **kw)
    o_scan, st_scan = scan(q, k, v, state=st0, **kw)
    agree(o_scan, o_ser, f"{op}: scan vs serial (with state)")
    agree(st_scan, st_ser, f"{op}: scan state vs serial state")


@pytest.mark.parametrize("normalize", [False, True])
@pytest.mark.parametrize("gamma", GAMMAS)
@pytest.mark.parametrize("chunk", CHUNKS)
@pytest.mark.parametrize("T", TS)
@pytest.mark.parametrize("name", CHUNKED_OPS)
def test_chunked_matches_definition(name, T, chunk, gamma, normalize, agree):
    definition, serial, _, chunked, extra = LINEAR_OPS[name]
    rng = _rng("chunked", name, T, chunk, gamma, normalize)
    q, k, v = _qkv(rng, T, positive=normalize)
    kw = dict(extra, gamma=gamma, normalize=normalize)
    op = _base(name)
    o, st = chunked(q, k, v, chunk=chunk, **kw)
    agree(o, definition(q, k, v, **kw), f"{op}: chunked vs definition")
    agree(st, serial(q, k, v, **kw)[1], f"{op}: chunked state vs serial state")

    q0, k0, v0 = _qkv(rng, 7, positive=normalize)
    _, st0 = serial(q0, k0, v0, **kw)
    o, st = chunked(q, k, v, chunk=chunk, state=st0, **kw)
    o_ser, st_ser = serial(q, k, v, state=st0, **kw)
    agree(o, o_ser, f"{op}: chunked vs serial (with state)")
    agree(st, st_ser, f"{op}: chunked state vs serial state")


def test_matrix_forms_of_the_page(agree):
    """γ = 1: the masked matrix products printed in SEMANTICS §2–§4."""
    rng = _rng("matrix")
    T = 23
    q, k, v = _qkv(rng, T)
    L = np.tril(np.ones((T, T)))
    W = L * (q @ k.T)
    agree(R.hla2_definition(q, k, v), ((W @ W.T) * L) @ v, "matrix form vs definition")
    agree(R.ahla_definition(q, k, v), ((W @ W) * L) @ v, "matrix form vs definition")
    agree(R.hla3_definition(q, k, v), (((W @ W.T) * L) @ W) @ v, "matrix form vs definition")
    # unmasked hla2: o_t = q_t^T S_t C_t with full prefix sums
    S = np.cumsum(np.einsum("ti,tj->tij", k, k), axis=0)
    C = np.cumsum(np.einsum("ti,tj->tij", q, v), axis=0)
    agree(R.hla2_definition(q, k, v, masked=False), np.einsum("ti,tij,tjk->tk", q, S, C),
          "matrix form vs definition")
    agree(R.linear_attention_definition(q, k, v), W @ v, "matrix form vs definition")


@pytest.mark.parametrize("strong", [False, True])
@pytest.mark.parametrize("T", TS)
def test_kda_serial_and_scan_match_definition(T, strong, agree):
    rng = _rng("kda-forms", T, strong)
    q, k, v, g, beta = _kda_inputs(rng, T, g_scale=8.0 if strong else 0.3)
    ref, st_ref = R.kda_definition(q, k, v, g, beta)
    o, st = R.kda_serial(q, k, v, g, beta)
    agree(o, ref, "kda: serial vs definition")
    agree(st, st_ref, "kda: serial state vs definition")
    o, st = R.kda_scan(q, k, v, g, beta)
    agree(o, ref, "kda: scan vs definition")
    agree(st, st_ref, "kda: scan state vs definition")

    S0 = (rng.standard_normal((D, DV)),)
    o_ser, st_ser = R.kda_serial(q, k, v, g, beta, state=S0)
    agree(R.kda_definition(q, k, v, g, beta, state=S0)[0], o_ser,
          "kda: definition vs serial (with state)")
    o, st = R.kda_scan(q, k, v, g, beta, state=S0)
    agree(o, o_ser, "kda: scan vs serial (with state)")
    agree(st, st_ser, "kda: scan state vs serial state")


@pytest.mark.parametrize("strong", [False, True])
@pytest.mark.parametrize("chunk", CHUNKS)
@pytest.mark.parametrize("T", TS)
def test_kda_chunked_matches_serial(T, chunk, strong, agree):
    # strong: g down to about -30 per token, so the in-chunk cumulative decay
    # reaches e^-1000; the chunked form must never form e^{-Gamma} alone.
    rng = _rng("kda-chunked", T, chunk, strong)
    q, k, v, g, beta = _kda_inputs(rng, T, g_scale=8.0 if strong else 0.3)
    S0 = (rng.standard_normal((D, DV)),)
    for state in (None, S0):
        with np.errstate(over="raise", invalid="raise"):
            o, st = R.kda_chunked(q, k, v, g, beta, chunk=chunk, state=state)
        o_ser, st_ser = R.kda_serial(q, k, v, g, beta, state=state)
        agree(o, o_ser, "kda: chunked vs serial")
        agree(st, st_ser, "kda: chunked state vs serial state")


@pytest.mark.parametrize("window", [1, 4, 64])
@pytest.mark.parametrize("T", TS)
def test_linsimp_forms_agree(T, window, agree):
    rng = _rng("linsimp-forms", T, window)
    q, k, v, r, u, omega = _linsimp_inputs(rng, T)
    tau = 0.8
    ref = R.linsimp_definition(q, k, v, r, u, omega, window=window, tau=tau)
    o_ser, st_ser = R.linsimp_serial(q, k, v, r, u, omega, window=window, tau=tau)
    agree(o_ser, ref, "linsimp: serial vs definition")
    o, st = R.linsimp_scan(q, k, v, r, u, omega, window=window, tau=tau)
    agree(o, ref, "linsimp: scan vs definition")
    agree(st, st_ser, "linsimp: scan state vs serial state")
    for chunk in CHUNKS:
        o, st = R.linsimp_chunked(q, k, v, r, u, omega, window=window, tau=tau, chunk=chunk)
        agree(o, ref, "linsimp: chunked vs definition")
        agree(st, st_ser, "linsimp: chunked state vs serial state")

    # From a state left by a 9-token prefix (anchors partly padding when W > 10).
    pre = _linsimp_inputs(rng, 9)[:5]
    _, st0 = R.linsimp_serial(*pre, omega, window=window, tau=tau)
    o_ser, st_ser = R.linsimp_serial(q, k, v, r, u, omega, window=window, tau=tau, state=st0)
    o, st = R.linsimp_scan(q, k, v, r, u, omega, window=window, tau=tau, state=st0)
    agree(o, o_ser, "linsimp: scan vs serial (with state)")
    agree(st, st_ser, "linsimp: scan state vs serial state")
    o, st = R.linsimp_chunked(q, k, v, r, u, omega, window=window, tau=tau, chunk=5, state=st0)
    agree(o, o_ser, "linsimp: chunked vs serial (with state)")
    agree(st, st_ser, "linsimp: chunked state vs serial state")


def _linsimp_naive(q, k, v, r, u, omega, window, tau, kernel):
    """Scalar triple loop over (i, c, j), straight from §5, no stabiliser."""
    T, dv = len(q), v.shape[1]
    o = np.zeros((T, dv))
    m = omega.shape[0]

    def phi(z):
        return np.exp(omega @ z - z @ z / 2) / math.sqrt(m)

    for i in range(T):
        num, den = np.zeros(dv), 0.0
        for c in range(max(0, i - window + 1), i + 1):
            for j in range(i + 1):
                if kernel == "exact":
                    e = math.exp(tau * np.dot(q[i] * r[c], k[j]))
                else:
                    e = phi(math.sqrt(tau) * q[i] * r[c]) @ phi(math.sqrt(tau) * k[j])
                num += e * u[c] * v[j]
                den += e
        o[i] = num / den
    return o


@pytest.mark.parametrize("kernel", ["favor", "exact"])
def test_linsimp_definition_is_the_triple_sum(kernel, agree):
    rng = _rng("linsimp-naive", kernel)
    q, k, v, r, u, omega = _linsimp_inputs(rng, 11)
    for window in (1, 3, 20):
        o = R.linsimp_definition(q, k, v, r, u, omega, window=window, tau=0.7, kernel=kernel)
        agree(o, _linsimp_naive(q, k, v, r, u, omega, window, 0.7, kernel),
              f"linsimp {kernel}: definition vs triple loop")


def test_linsimp_favor_approximates_exact():
    """Accuracy sanity check of §5: entries of std 0.5, error ~0.7/sqrt(m)."""
    rng = _rng("linsimp-approx")
    d, T = 16, 32
    q, k, r = (0.5 * rng.standard_normal((T, d)) for _ in range(3))
    v, u = rng.standard_normal((T, 8)), rng.standard_normal((T, 8))
    omega = R.linsimp_omega(4096, d, seed=3)
    exact = R.linsimp_definition(q, k, v, r, u, omega, window=8, tau=d ** -0.5, kernel="exact")
    favor = R.linsimp_definition(q, k, v, r, u, omega, window=8, tau=d ** -0.5)
    err = np.linalg.norm(favor - exact) / np.linalg.norm(exact)
    assert err < 4 * 0.7 / math.sqrt(4096), err


def test_linsimp_omega_is_orthogonal_and_seeded():
    d, m = 6, 20
    om = R.linsimp_omega(m, d, seed=5)
    assert om.shape == (m, d)
    np.testing.assert_array_equal(om, R.linsimp_omega(m, d, seed=5))
    assert not np.array_equal(om, R.linsimp_omega(m, d, seed=6))
    unit = om / np.linalg.norm(om, axis=1, keepdims=True)
    for s in range(0, m, d):  # rows of one block are orthonormal directions
        blk = unit[s:s + d]
        np.testing.assert_allclose(blk @ blk.T, np.eye(len(blk)), atol=1e-12)


def test_linsimp_anchor_state_layout():
    """Anchors are the last W-1 tokens, oldest first; padding in front is invalid."""
    rng = _rng("anchors")
    q, k, v, r, u, omega = _linsimp_inputs(rng, 3)
    _, (M, a, ar, au, av) = R.linsimp_serial(q, k, v, r, u, omega, window=6, tau=0.5)
    np.testing.assert_array_equal(av, [0, 0, 1, 1, 1])
    np.testing.assert_array_equal(ar[:2], 0.0)
    np.testing.assert_array_equal(ar[2:], r)
    np.testing.assert_array_equal(au[2:], u)


# ---------------------------------------------------------------------------
# Segment monoids: associativity, identity, negative controls
# ---------------------------------------------------------------------------


def _token_maker(name, rng, gamma, normalize):
    """Return (make_token(), identity) for one monoid; v widened by 1 when normalizing."""
    dva = DV + int(normalize)

    def qkv():
        q, k, v = _qkv(rng, 1)
        v = np.append(v[0], 1.0) if normalize else v[0]
        return q[0], k[0], v

    def kda_tok():
        _, k, v, g, beta = _kda_inputs(rng, 1)
        return R.kda_token(k[0], g[0], beta[0], v[0])

    def linsimp_tok(omega=R.linsimp_omega(12, D, seed=1)):
        _, k, v = qkv()
        return R.linsimp_token(k, v, omega, 0.8)

    masked = name == "hla2"
    makers = {
        "linear_attention": (lambda: R.linear_attention_token(*qkv()[1:], gamma),
                             R.linear_attention_identity(D, dva)),
        "hla2": (lambda: R.hla2_token(*qkv(), gamma, masked=masked),
                 R.hla2_identity(D, dva, masked=masked)),
        "ahla": (lambda: R.ahla_token(*qkv(), gamma), R.ahla_identity(D, dva)),
        "hla3": (lambda: R.hla3_token(*qkv(), gamma), R.hla3_identity(D, dva)),
        "kda": (kda_tok, R.kda_identity(D, DV)),
        "linsimp": (linsimp_tok, R.linsimp_identity(12, DV)),
    }
    makers["hla2-unmasked"] = makers["hla2"]
    return makers[name]


COMBINES = {
    "linear_attention": R.linear_attention_combine,
    "hla2": R.hla2_combine,
    "hla2-unmasked": R.hla2_combine,
    "ahla": R.ahla_combine,
    "hla3": R.hla3_combine,
    "kda": R.kda_combine,
    "linsimp": R.linsimp_combine,
}


def _segment(make, identity, combine, n):
    seg = identity
    for _ in range(n):
        seg = combine(seg, make())
    return seg


def _agree_segments(agree, a, b, what, tol=TOL):
    assert a.keys() == b.keys()
    for key in a:
        agree(np.asarray(a[key]), np.asarray(b[key]), what, tol=tol)


# kda and linsimp have no decay / normalize option of their own.
MONOID_CASES = [(n, g, nz) for n in COMBINES for g in GAMMAS for nz in (False, True)
                if n not in ("kda", "linsimp") or (g == 1.0 and not nz)]


@pytest.mark.parametrize("name,gamma,normalize", MONOID_CASES)
def test_combine_is_associative_with_identity(name, gamma, normalize, agree):
    rng = _rng("monoid", name, gamma, normalize)
    make, identity = _token_maker(name, rng, gamma, normalize)
    combine = COMBINES[name]
    A, B, C = (_segment(make, identity, combine, n) for n in (3, 4, 5))
    _agree_segments(agree, combine(combine(A, B), C), combine(A, combine(B, C)),
                    f"{name}: associativity")
    for X in (A, B, C):
        _agree_segments(agree, combine(identity, X), X, f"{name}: identity", tol=1e-15)
        _agree_segments(agree, combine(X, identity), X, f"{name}: identity", tol=1e-15)


@pytest.mark.parametrize("normalize", [False, True])
@pytest.mark.parametrize("gamma", GAMMAS)
def test_hla3_token_and_fold_reproduce_serial_state(gamma, normalize, agree):
    """Folding token segments left to right gives the serial (S, P, X) state,
    and a lone token holds the documented values."""
    rng = _rng("hla3-fold", gamma, normalize)
    q, k, v = _qkv(rng, 9, positive=normalize)
    va = np.concatenate([v, np.ones((9, 1))], axis=1) if normalize else v
    seg = R.hla3_identity(D, va.shape[1])
    for t in range(9):
        seg = R.hla3_combine(seg, R.hla3_token(q[t], k[t], va[t], gamma))
    _, st = R.hla3_serial(q, k, v, gamma=gamma, normalize=normalize)
    S, P, X = st[0], st[1], st[3] if normalize else st[2]
    agree(seg["S"], S, "hla3: fold vs serial")
    agree(seg["P"][:, :DV], P, "hla3: fold vs serial")
    agree(seg["X"][:, :DV], X, "hla3: fold vs serial")
    if normalize:
        agree(seg["P"][:, -1], st[2], "hla3: fold vs serial")
        agree(seg["X"][:, -1], st[4], "hla3: fold vs serial")
    agree(seg["Q2"], sum(gamma ** (t + 1) * np.outer(q[t], q[t]) for t in range(9)),
          "hla3: fold vs serial")
    tok = R.hla3_token(q[0], k[0], v[0], gamma)
    qk = q[0] @ k[0]
    agree(tok["X"], np.outer(k[0], k[0]) @ np.outer(q[0], q[0]) @ np.outer(k[0], v[0]),
          "hla3: token values")
    agree(tok["X"], qk * qk * np.outer(k[0], v[0]), "hla3: token values")
    agree(tok["R"], np.outer(q[0], q[0]) @ np.outer(k[0], v[0]), "hla3: token values")
    agree(tok["U"], np.outer(k[0], k[0]) @ np.outer(q[0], q[0]), "hla3: token values")
    agree(tok["Q2"], gamma * np.outer(q[0], q[0]), "hla3: token values")


def _paper_hla2_combine(a, b):
    """The paper's printed decayed rule: G decayed by rho_B instead of rho_B^2."""
    out = R.hla2_combine(a, b)
    rb = b["rho"]
    out["G"] = rb * a["G"] + b["G"] + b["S"] @ (rb * a["C"])
    return out


def _paper_ahla_combine(a, b):
    """The paper's printed decayed rule: R attenuated as rho_B R_A + R_B."""
    out = R.ahla_combine(a, b)
    out["R"] = b["rho"] * a["R"] + b["R"]
    return out


def test_paper_decayed_hla2_rules_are_wrong(agree, disagree):
    gamma, T = 0.9, 11
    rng = _rng("paper-hla2")
    q, k, v = _qkv(rng, T)
    ref = R.hla2_definition(q, k, v, gamma=gamma)
    # printed combine: not associative, and its scan misses the definition
    make, identity = _token_maker("hla2", rng, gamma, False)
    A, B, C = (_segment(make, identity, _paper_hla2_combine, n) for n in (3, 4, 5))
    disagree(_paper_hla2_combine(_paper_hla2_combine(A, B), C)["G"],
             _paper_hla2_combine(A, _paper_hla2_combine(B, C))["G"],
             "hla2 paper combine: associativity")
    disagree(R.hla2_scan(q, k, v, gamma=gamma, combine=_paper_hla2_combine)[0], ref,
             "hla2 paper combine: scan vs definition")
    # printed serial rule G_t = gamma G_{t-1} + k k^T C_{t-1}
    S, Cm, G = np.zeros((D, D)), np.zeros((D, DV)), np.zeros((D, DV))
    o = np.empty((T, DV))
    for t in range(T):
        G = gamma * G + np.outer(k[t], k[t] @ Cm)
        S = gamma * S + np.outer(k[t], k[t])
        Cm = gamma * Cm + np.outer(q[t], v[t])
        o[t] = q[t] @ S @ Cm - q[t] @ G
    disagree(o, ref, "hla2 paper serial: vs definition")
    # ...while for gamma = 1 the printed and corrected rules coincide
    ref1 = R.hla2_definition(q, k, v)
    agree(R.hla2_scan(q, k, v, combine=_paper_hla2_combine)[0], ref1,
          "hla2 paper combine at gamma=1")


def test_paper_decayed_ahla_rule_is_wrong(agree, disagree):
    rng = _rng("paper-ahla")
    q, k, v = _qkv(rng, 11)
    disagree(R.ahla_scan(q, k, v, gamma=0.9, combine=_paper_ahla_combine)[0],
             R.ahla_definition(q, k, v, gamma=0.9), "ahla paper R rule: scan vs definition")
    agree(R.ahla_scan(q, k, v, combine=_paper_ahla_combine)[0], R.ahla_definition(q, k, v),
          "ahla paper R rule at gamma=1")


def test_blelloch_scan_is_exclusive_and_ordered():
    """On a non-commutative monoid (string concatenation) for every length."""
    for n in range(0, 20):
        items = [chr(ord("a") + i) for i in range(n)]
        out = R.blelloch_exclusive_scan(items, lambda a, b: a + b, "")
        assert out == ["".join(items[:t]) for t in range(n)]


# ---------------------------------------------------------------------------
# Public API: batch, heads, scale, grouped heads, state in/out, cu_seqlens
# ---------------------------------------------------------------------------

# (op, options) for the batched API; "linsimp-exact" is linsimp(kernel="exact").
CONFIGS = [
    ("linear_attention", {}),
    ("linear_attention", {"decay": 0.9, "normalize": True}),
    ("hla2", {}),
    ("hla2", {"decay": 0.9, "ridge": 0.2, "normalize": True}),
    ("hla2", {"masked": False, "decay": 0.9}),
    ("hla2", {"masked": False, "normalize": True, "ridge": 0.1}),
    ("ahla", {"decay": 0.9}),
    ("ahla", {"normalize": True}),
    ("hla3", {}),
    ("hla3", {"decay": 0.9, "normalize": True, "eps": 1e-3}),
    ("kda", {}),
    ("linsimp", {"window": 8}),
    ("linsimp", {"window": 1}),
    ("linsimp-exact", {"window": 8}),
]
STATEFUL = [c for c in CONFIGS if c[0] != "linsimp-exact"]


def _ids(configs):
    return [f"{op}-{'-'.join(f'{k}={v}' for k, v in kw.items()) or 'default'}"
            for op, kw in configs]


def _make(op, rng, B, T, Hq, Hkv, positive):
    """Random [B, T, H, D] inputs for one op."""
    def heads(H, width, s=1.0):
        return s * rng.standard_normal((B, T, H, width))

    if op.startswith("linsimp"):
        s = 0.5 / math.sqrt(D)
        return {"q": heads(Hq, D, s), "k": heads(Hkv, D, s), "v": heads(Hkv, DV),
                "r": heads(Hkv, D, s), "u": heads(Hkv, DV),
                "omega": R.linsimp_omega(16, D, seed=int(rng.integers(1 << 30)))}
    x = {"q": heads(Hq, D, D ** -0.5), "k": heads(Hkv, D, D ** -0.5), "v": heads(Hkv, DV)}
    if positive:
        x["q"], x["k"] = np.abs(x["q"]) + 0.1, np.abs(x["k"]) + 0.1
    if op == "kda":
        x["k"] /= np.linalg.norm(x["k"], axis=-1, keepdims=True)
        x["g"] = -0.3 * np.abs(heads(Hkv, D))
        x["beta"] = rng.uniform(0.05, 0.95, (B, T, Hkv))
    return x


def _call(op, x, **kw):
    if op.startswith("linsimp"):
        if op == "linsimp-exact":
            kw["kernel"] = "exact"
        return R.linsimp(x["q"], x["k"], x["v"], x["r"], x["u"], omega=x["omega"], **kw)
    if op == "kda":
        return R.kda(x["q"], x["k"], x["v"], g=x["g"], beta=x["beta"], **kw)
    return getattr(R, op)(x["q"], x["k"], x["v"], **kw)


KV_KEYS = ("k", "v", "r", "u", "g", "beta")


def _slice_t(x, s, e):
    """Tokens s:e of every per-token input (omega is not per token)."""
    return {key: (val if key == "omega" else val[:, s:e]) for key, val in x.items()}


def _expected(op, x, kw):
    """Per-head definitions, with consecutive head grouping spelled out."""
    B, T, Hq, d = x["q"].shape
    group = Hq // x["k"].shape[2]
    scale = kw.get("scale") or d ** -0.5
    opts = {key: val for key, val in kw.items() if key in ("normalize", "eps", "masked", "ridge")}
    opts["gamma"] = kw.get("decay") or 1.0
    out = np.empty((B, T, Hq, DV))
    for b in range(B):
        for h in range(Hq):
            hv = {key: x[key][b, :, h // group] for key in KV_KEYS if key in x}
            qh = x["q"][b, :, h]
            if op.startswith("linsimp"):
                out[b, :, h] = R.linsimp_definition(
                    qh, hv["k"], hv["v"], hv["r"], hv["u"], x["omega"], window=kw["window"],
                    tau=scale, kernel="exact" if op == "linsimp-exact" else "favor")
            elif op == "kda":
                out[b, :, h] = R.kda_definition(scale * qh, hv["k"], hv["v"], hv["g"],
                                                hv["beta"])[0]
            else:
                definition = getattr(R, f"{op}_definition")
                out[b, :, h] = definition(scale * qh, hv["k"], hv["v"], **opts)
    return out


@pytest.mark.parametrize("scale", [None, 0.7])
@pytest.mark.parametrize("T", [1, 23])
@pytest.mark.parametrize("op,kw", CONFIGS, ids=_ids(CONFIGS))
def test_public_matches_definition(op, kw, T, scale, agree):
    rng = _rng("public", op, tuple(kw.items()), T, scale)
    x = _make(op, rng, B=2, T=T, Hq=4, Hkv=2, positive=kw.get("normalize", False))
    kw = dict(kw, scale=scale)
    o = _call(op, x, **kw)
    assert o.shape == (2, T, 4, DV) and o.dtype == np.float64
    agree(o, _expected(op, x, kw), f"{op.split('-')[0]}: public vs definition")


@pytest.mark.parametrize("op,kw", CONFIGS, ids=_ids(CONFIGS))
def test_grouped_heads_equal_repeated_kv(op, kw, agree):
    rng = _rng("grouped", op, tuple(kw.items()))
    x = _make(op, rng, B=2, T=13, Hq=6, Hkv=2, positive=kw.get("normalize", False))
    rep = {key: (np.repeat(val, 3, axis=2) if key in KV_KEYS else val) for key, val in x.items()}
    stateful = op != "linsimp-exact"
    got = _call(op, x, output_final_state=stateful, **kw)
    want = _call(op, rep, output_final_state=stateful, **kw)
    if stateful:
        agree(got[0], want[0], "grouped heads vs repeated kv")
        agree(got[1], want[1], "grouped heads vs repeated kv")
    else:
        agree(got, want, "grouped heads vs repeated kv")


def _split_points(op, kw):
    if op == "linsimp" and kw["window"] > 1:
        return (0, 3, 12, 23)  # W-1 = 7: before and after the anchor ring fills
    return (0, 1, 9, 23)


@pytest.mark.parametrize("op,kw", STATEFUL, ids=_ids(STATEFUL))
def test_state_continuation(op, kw, agree):
    """Running T1 + T2 tokens equals T1 tokens, then T2 from the final state."""
    rng = _rng("continue", op, tuple(kw.items()))
    T = 23
    x = _make(op, rng, B=2, T=T, Hq=4, Hkv=2, positive=kw.get("normalize", False))
    o_full, st_full = _call(op, x, output_final_state=True, **kw)
    for t1 in _split_points(op, kw):
        o1, st1 = _call(op, _slice_t(x, 0, t1), output_final_state=True, **kw)
        o2, st2 = _call(op, _slice_t(x, t1, T), initial_state=st1, output_final_state=True,
                        **kw)
        agree(np.concatenate([o1, o2], axis=1), o_full, "continuation: outputs")
        agree(st2, st_full, "continuation: final state")
    # A three-way split through an intermediate state that is itself an input.
    _, st_a = _call(op, _slice_t(x, 0, 4), output_final_state=True, **kw)
    _, st_b = _call(op, _slice_t(x, 4, 10), initial_state=st_a, output_final_state=True, **kw)
    o_c, st_c = _call(op, _slice_t(x, 10, T), initial_state=st_b, output_final_state=True, **kw)
    agree(o_c, o_full[:, 10:], "continuation: outputs")
    agree(st_c, st_full, "continuation: final state")


@pytest.mark.parametrize("with_state", [False, True])
@pytest.mark.parametrize("op,kw", CONFIGS, ids=_ids(CONFIGS))
def test_cu_seqlens_equals_separate_runs(op, kw, with_state, agree):
    stateful = op != "linsimp-exact"
    # The exact kernel is stateless (its initial_state rejection is among the
    # bad arguments), so both of its runs check plain packing.
    with_state = with_state and stateful
    rng = _rng("cu", op, tuple(kw.items()), with_state)
    cu = np.array([0, 5, 5, 17, 23])  # includes an empty sequence
    x = _make(op, rng, B=1, T=23, Hq=4, Hkv=2, positive=kw.get("normalize", False))
    init = None
    if with_state:
        # One state per sequence, produced by the op itself on other tokens.
        pre = _make(op, rng, B=4, T=6, Hq=4, Hkv=2, positive=kw.get("normalize", False))
        pre["omega"] = x.get("omega")
        _, init = _call(op, {k_: v_ for k_, v_ in pre.items() if v_ is not None},
                        output_final_state=True, **kw)
    got = _call(op, x, cu_seqlens=cu, initial_state=init, output_final_state=stateful, **kw)
    o_got = got[0] if stateful else got
    for i in range(len(cu) - 1):
        s, e = cu[i], cu[i + 1]
        st_i = None if init is None else tuple(c[i:i + 1] for c in init)
        want = _call(op, _slice_t(x, s, e), initial_state=st_i, output_final_state=stateful,
                     **kw)
        if stateful:
            agree(o_got[:, s:e], want[0], "cu_seqlens vs separate runs")
            agree(tuple(c[i:i + 1] for c in got[1]), want[1], "cu_seqlens vs separate runs")
        else:
            agree(o_got[:, s:e], want, "cu_seqlens vs separate runs")


def test_state_layouts():
    """The documented state tuple shapes, per query head."""
    rng = _rng("layouts")
    B, T, Hq, Hkv, W, m = 2, 5, 4, 2, 8, 16
    cases = [
        ("linear_attention", {}, [(D, DV)]),
        ("linear_attention", {"normalize": True}, [(D, DV), (D,)]),
        ("hla2", {}, [(D, D), (D, DV), (D, DV)]),
        ("hla2", {"normalize": True}, [(D, D), (D, DV), (D,), (D, DV), (D,)]),
        ("hla2", {"masked": False}, [(D, D), (D, DV)]),
        ("hla2", {"masked": False, "normalize": True}, [(D, D), (D, DV), (D,)]),
        ("ahla", {}, [(D, DV), (D, DV)]),
        ("ahla", {"normalize": True}, [(D, DV), (D,), (D, DV), (D,)]),
        ("hla3", {}, [(D, D), (D, DV), (D, DV)]),
        ("hla3", {"normalize": True}, [(D, D), (D, DV), (D,), (D, DV), (D,)]),
        ("kda", {}, [(D, DV)]),
        ("linsimp", {"window": W}, [(m, DV), (m,), (W - 1, D), (W - 1, DV), (W - 1,)]),
    ]
    for op, kw, shapes in cases:
        x = _make(op, rng, B, T, Hq, Hkv, positive=kw.get("normalize", False))
        _, st = _call(op, x, output_final_state=True, **kw)
        assert [s.shape for s in st] == [(B, Hq) + s for s in shapes], (op, kw)
        assert all(s.dtype == np.float64 for s in st)


# ---------------------------------------------------------------------------
# Argument validation
# ---------------------------------------------------------------------------


def _bad_cases():
    rng = _rng("bad")
    x = _make("hla2", rng, B=2, T=5, Hq=4, Hkv=2, positive=False)
    q, k, v = x["q"], x["k"], x["v"]
    xl = _make("linsimp", rng, B=1, T=5, Hq=4, Hkv=2, positive=False)
    xk = _make("kda", rng, B=1, T=5, Hq=4, Hkv=2, positive=False)
    st = R.hla2(q, k, v, output_final_state=True)[1]

    def ls(**kw):
        return lambda: R.linsimp(xl["q"], xl["k"], xl["v"], kw.pop("r", xl["r"]),
                                 kw.pop("u", xl["u"]), omega=kw.pop("omega", xl["omega"]), **kw)

    def kd(**kw):
        return lambda: R.kda(xk["q"], xk["k"], xk["v"], g=kw.pop("g", xk["g"]),
                             beta=kw.pop("beta", xk["beta"]), **kw)

    return [
        ("decay=0", lambda: R.hla2(q, k, v, decay=0.0), "decay"),
        ("decay>1", lambda: R.linear_attention(q, k, v, decay=1.5), "decay"),
        ("decay<0", lambda: R.ahla(q, k, v, decay=-0.1), "decay"),
        ("decay=nan", lambda: R.hla3(q, k, v, decay=float("nan")), "decay"),
        ("decay=str", lambda: R.hla3(q, k, v, decay="fast"), "decay"),
        ("eps=0", lambda: R.hla2(q, k, v, normalize=True, eps=0.0), "eps"),
        ("eps<0", lambda: R.ahla(q, k, v, eps=-1e-6), "eps"),
        ("scale=0", lambda: R.hla2(q, k, v, scale=0.0), "scale"),
        ("scale<0", lambda: R.linear_attention(q, k, v, scale=-1.0), "scale"),
        ("scale=inf", lambda: R.hla3(q, k, v, scale=float("inf")), "scale"),
        ("ridge<0", lambda: R.hla2(q, k, v, ridge=-0.1), "ridge"),
        ("q rank 3", lambda: R.hla2(q[0], k, v), "q must have rank 4"),
        ("k rank 5", lambda: R.ahla(q, k[..., None], v), "k must have rank 4"),
        ("k batch", lambda: R.hla2(q, k[:1], v), "k has batch/length"),
        ("v length", lambda: R.hla3(q, k, v[:, :3]), "v has batch/length"),
        ("k/v heads", lambda: R.hla2(q, k, v[:, :, :1]), "k has 2 heads but v has 1"),
        ("H_q % H_kv", lambda: R.hla2(q[:, :, :3], k, v), "H_q=3"),
        ("k features", lambda: R.linear_attention(q, k[..., :4], v), "k feature size"),
        ("cu_seqlens B", lambda: R.hla2(q, k, v, cu_seqlens=np.array([0, 5])), "cu_seqlens"),
        ("cu_seqlens end", lambda: R.hla2(q[:1], k[:1], v[:1], cu_seqlens=np.array([0, 4])),
         "cu_seqlens"),
        ("cu_seqlens order",
         lambda: R.hla2(q[:1], k[:1], v[:1], cu_seqlens=np.array([0, 4, 2, 5])), "cu_seqlens"),
        ("cu_seqlens float",
         lambda: R.hla2(q[:1], k[:1], v[:1], cu_seqlens=np.array([0.0, 5.0])), "cu_seqlens"),
        ("cu_seqlens 2-D",
         lambda: R.hla2(q[:1], k[:1], v[:1], cu_seqlens=np.array([[0, 5]])), "cu_seqlens"),
        ("state arity", lambda: R.hla2(q, k, v, initial_state=st[:2]), "initial_state"),
        ("state shape",
         lambda: R.hla2(q, k, v, initial_state=(st[0][:1],) + st[1:]), "initial_state\\[0\\]"),
        ("state vs normalize", lambda: R.hla2(q, k, v, normalize=True, initial_state=st),
         "initial_state"),
        ("window=0", ls(window=0), "window"),
        ("window float", ls(window=2.5), "window"),
        ("kernel", ls(kernel="softmax"), "kernel"),
        ("omega shape", ls(omega=xl["omega"][:, :3]), "omega"),
        ("r shape", ls(r=xl["r"][..., :3]), "r must have shape"),
        ("u heads", ls(u=xl["u"][:, :, :1]), "u must have shape"),
        ("exact + state", ls(kernel="exact", output_final_state=True), "initial_state"),
        ("exact + initial", ls(kernel="exact", initial_state=()), "initial_state"),
        ("anchor_valid",
         ls(window=3, initial_state=(np.zeros((1, 4, 16, DV)), np.zeros((1, 4, 16)),
                                     np.zeros((1, 4, 2, D)), np.zeros((1, 4, 2, DV)),
                                     np.full((1, 4, 2), 0.5))), "anchor_valid"),
        ("g > 0", kd(g=np.abs(xk["g"]) + 0.1), "g is a log-decay"),
        ("g shape", kd(g=xk["g"][..., :3]), "g must have shape"),
        ("beta range", kd(beta=xk["beta"] + 1.0), "beta must lie"),
        ("beta shape", kd(beta=xk["beta"][..., None]), "beta must have shape"),
        ("chunk=0", lambda: R.hla2_chunked(q[0, :, 0], k[0, :, 0], v[0, :, 0], chunk=0),
         "chunk"),
    ]


@pytest.mark.parametrize("case", _bad_cases(), ids=lambda c: c[0])
def test_bad_arguments_raise_value_error(case):
    _, fn, match = case
    with pytest.raises(ValueError, match=match):
        fn()
