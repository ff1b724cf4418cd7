"""Float64 NumPy reference implementations of the hla attention operators.

Everything here implements ``SEMANTICS.md`` (the normative page, which corrects
the paper where its printed formulas disagree with its own definitions). The
functions are written for clarity and exactness, not speed: they are what the
compiled kernels and the C++ algebra are tested against.

Conventions
-----------
Public operators (``linear_attention``, ``hla2``, ``ahla``, ``hla3``,
``linsimp``, ``kda``):

* Inputs are arrays laid out ``[B, T, H, D]`` (batch, tokens, heads, features)
  and are cast to float64. The output is ``[B, T, H_q, Dv]`` float64.
* ``scale`` (default ``d**-0.5``, ``d = q.shape[-1]``) multiplies ``q`` before
  anything else, so second-order ops scale by ``scale**2`` and third-order ops
  by ``scale**3``. ``linsimp`` is the exception: there ``tau = scale`` enters as
  written in SEMANTICS §5 (``tau**0.5`` on both sides of the feature map).
* Grouped heads: ``q`` has ``H_q`` heads, ``k, v`` (and ``r, u`` for linsimp,
  ``g, beta`` for kda) have ``H_kv`` heads with ``H_q % H_kv == 0``; query head
  ``h`` reads kv head ``h // (H_q // H_kv)`` (consecutive grouping, as in
  flash-attn GQA).
* ``decay`` gamma in (0, 1] (None means 1), or a sequence of ``H_q`` rates,
  one per query head (the ops' ``head_decay`` tensor); ``normalize`` divides by "the same
  weighted sum with every v_j replaced by 1" plus ``eps``.
* State in/out: states are tuples of float64 arrays ``[B, H_q, ...]`` (one per
  *query* head, also for grouped heads), ``[N, H_q, ...]`` with ``cu_seqlens``.
  They are exactly what the serial recurrence holds after the last token, with
  ``q`` already multiplied by ``scale``. The tuple layout of every op is listed
  in its docstring. ``output_final_state=True`` returns ``(o, final_state)``.
* ``cu_seqlens`` (int array ``[N+1]``, requires ``B == 1``) packs N
  independent sequences along T; each one starts from zero or from
  ``initial_state[i]``.
* Invalid arguments raise ``ValueError`` whose message names the argument.

Per-head helpers (2-D inputs ``[T, D]``, all float64):

* ``<op>_definition``: the definition of SEMANTICS.md evaluated directly (index
  sums / masked matrix products), O(T^2) or O(T^3); for small T only.
* ``<op>_serial``: the serial recurrence of SEMANTICS.md; the public functions
  use it. Returns ``(o, state)``.
* ``<op>_token``, ``<op>_identity``, ``<op>_combine``: the segment monoid. A
  segment is a ``dict`` of arrays plus ``"rho"`` (gamma**length) where the op
  decays; ``combine(A, B)`` means "A, then B".
* ``<op>_scan``: token segments -> exclusive Blelloch tree scan
  (``blelloch_exclusive_scan``) -> local inclusion of the token -> readout.
  The tree brackets products unlike a left fold, so agreement with
  ``<op>_serial`` exercises associativity of the combine rule.
* ``<op>_chunked``: the chunk-parallel form (intra-chunk masked matrix
  products, chunk summaries carried between chunks); any chunk size >= 1, the
  last chunk may be ragged.

Unlike the public functions, the helpers take ``q`` *already multiplied by
scale* (they implement the page's ``scale = 1`` formulas), the decay as
``gamma`` and the incoming state as ``state`` (per-head tuple, same layout as
the public one, or None for zeros). The linsimp helpers take ``tau`` instead.

Normalisation in the definition, scan and chunked forms: every op except
linsimp and kda is linear in v, and the denominator is the numerator with v
replaced by 1. Those forms therefore append a column of ones to V; each
value-carrying state component (C, G, P, E, R, X, ...) then carries its
"v -> 1" twin (m, h, m, n, Rm, x, ...) as its last column, and the combine rules
for the normalized states are *literally* the unnormalized rules applied to
the widened components. The serial forms instead run the explicit m/h/n/x
recurrences of the page, so comparing the two checks the v -> 1 reading.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

__all__ = [
    # public operators
    "linear_attention",
    "hla2",
    "ahla",
    "hla3",
    "linsimp",
    "kda",
    # shared helpers
    "blelloch_exclusive_scan",
    "linsimp_features",
    "linsimp_omega",
    # per-head forms and segment monoids
    "linear_attention_definition",
    "linear_attention_serial",
    "linear_attention_scan",
    "linear_attention_token",
    "linear_attention_identity",
    "linear_attention_combine",
    "hla2_definition",
    "hla2_serial",
    "hla2_scan",
    "hla2_chunked",
    "hla2_token",
    "hla2_identity",
    "hla2_combine",
    "ahla_definition",
    "ahla_serial",
    "ahla_scan",
    "ahla_chunked",
    "ahla_token",
    "ahla_identity",
    "ahla_combine",
    "hla3_definition",
    "hla3_serial",
    "hla3_scan",
    "hla3_chunked",
    "hla3_token",
    "hla3_identity",
    "hla3_combine",
    "linsimp_definition",
    "linsimp_serial",
    "linsimp_scan",
    "linsimp_chunked",
    "linsimp_token",
    "linsimp_identity",
    "linsimp_combine",
    "kda_definition",
    "kda_serial",
    "kda_scan",
    "kda_chunked",
    "kda_token",
    "kda_identity",
    "kda_combine",
]

# ---------------------------------------------------------------------------
# Shared pieces
# ---------------------------------------------------------------------------


def _f64(x):
    return np.asarray(x, dtype=np.float64)


def _decay_matrix(gamma, n):
    """``D[a, b] = gamma**(a - b)`` for ``a >= b``, else 0 (causal, incl. diagonal)."""
    idx = np.arange(n)
    diff = idx[:, None] - idx[None, :]
    # Clamp the exponent before powering so gamma**negative never appears.
    return np.where(diff >= 0, float(gamma) ** np.maximum(diff, 0), 0.0)


def _with_ones(v, normalize):
    """Append a ones column to ``v`` when normalizing (see module docstring)."""
    v = _f64(v)
    if not normalize:
        return v
    return np.concatenate([v, np.ones((v.shape[0], 1))], axis=1)


def _finish(num, normalize, eps):
    """Split a widened numerator into ``num / (den + eps)`` when normalizing."""
    if not normalize:
        return num
    return num[:, :-1] / (num[:, -1:] + eps)


def _unpack_state(state, n_plain, n_valued, normalize):
    """Split a per-head state tuple into plain and value-carrying components.

    A state tuple lists ``n_plain`` components that do not depend on v (S, ...)
    followed by ``n_valued`` components that do (C, G, P, E, X, ...), each of
    the latter immediately followed by its ``v -> 1`` vector when normalizing.
    The value-carrying components are returned widened by that vector as the
    last column, which is how the scan and chunked forms carry them.
    """
    parts = [np.array(x, dtype=np.float64, copy=True) for x in state]
    plain = parts[:n_plain]
    rest = parts[n_plain:]
    if normalize:
        valued = [np.concatenate([rest[2 * i], rest[2 * i + 1][:, None]], axis=1)
                  for i in range(n_valued)]
    else:
        valued = rest[:n_valued]
    return plain, valued


def _pack_state(plain, valued, normalize):
    """Inverse of ``_unpack_state``."""
    out = [np.array(x, copy=True) for x in plain]
    for x in valued:
        out += [x[:, :-1].copy(), x[:, -1].copy()] if normalize else [x.copy()]
    return tuple(out)


def _check_chunk(chunk):
    if not isinstance(chunk, numbers.Integral) or isinstance(chunk, bool) or chunk < 1:
        raise ValueError(f"chunk must be an integer >= 1, got {chunk!r}")
    return int(chunk)


def blelloch_exclusive_scan(items, combine, identity):
    """Exclusive scan of ``items`` under an associative ``combine``.

    Returns ``out`` with ``out[t] = items[0] o ... o items[t-1]`` and
    ``out[0] = identity``, where ``combine(A, B)`` is "A, then B". This is the
    work-efficient Blelloch tree: an up-sweep builds the sums of aligned
    power-of-two blocks, a down-sweep pushes block prefixes back down (left
    child inherits the parent's prefix, right child gets prefix o left-sum).
    The list is padded to a power of two with ``identity``. The bracketing is
    that of a balanced tree, not of a left fold, so a non-associative rule
    gives different answers from the serial recurrence.
    """
    n = len(items)
    if n == 0:
        return []
    size = 1
    while size < n:
        size *= 2
    tree = list(items) + [identity] * (size - n)
    step = 1
    while step < size:  # up-sweep
        for i in range(2 * step - 1, size, 2 * step):
            tree[i] = combine(tree[i - step], tree[i])
        step *= 2
    tree[size - 1] = identity
    step = size // 2
    while step >= 1:  # down-sweep
        for i in range(2 * step - 1, size, 2 * step):
            left = tree[i - step]
            tree[i - step] = tree[i]
            tree[i] = combine(tree[i], left)
        step //= 2
    return tree[:n]


def _scan_inclusive(tokens, init, combine, identity):
    """Inclusive states ``I_t = init o P_t o T_t`` with ``P_t`` the exclusive tree scan.

    ``init`` is the incoming state viewed as a segment (a summary of everything
    before token 0); the identity when there is none.
    """
    prefix = blelloch_exclusive_scan(tokens, combine, identity)
    return [combine(combine(init, p), tok) for p, tok in zip(prefix, tokens)]


# ---------------------------------------------------------------------------
# §1 linear_attention
# ---------------------------------------------------------------------------


def linear_attention_definition(q, k, v, *, gamma=1.0, normalize=False, eps=1e-6):
    """``o_t = sum_{j<=t} gamma^(t-j) (q_t.k_j) v_j`` as a masked matrix product."""
    q, k = _f64(q), _f64(k)
    w = _decay_matrix(gamma, len(q)) * (q @ k.T)
    return _finish(w @ _with_ones(v, normalize), normalize, eps)


def linear_attention_serial(q, k, v, *, gamma=1.0, normalize=False, eps=1e-6, state=None):
    """Serial recurrence ``P_t = gamma P + k v^T``, ``m_t = gamma m + k``, ``o = q^T P``.

    State: ``(P[d,dv],)``, with normalize ``(P, m[d])``.
    """
    q, k, v = _f64(q), _f64(k), _f64(v)
    T, d = q.shape
    dv = v.shape[1]
    P, m = np.zeros((d, dv)), np.zeros(d)
    if state is not None:
        P = np.array(state[0], dtype=np.float64)
        if normalize:
            m = np.array(state[1], dtype=np.float64)
    o = np.empty((T, dv))
    for t in range(T):
        P = gamma * P + np.outer(k[t], v[t])
        if normalize:
            m = gamma * m + k[t]
            o[t] = (q[t] @ P) / (q[t] @ m + eps)
        else:
            o[t] = q[t] @ P
    return o, ((P, m) if normalize else (P,))


def linear_attention_token(k, v, gamma=1.0):
    """Single-token segment ``(P = k v^T, rho = gamma)``."""
    return {"P": np.outer(k, v), "rho": float(gamma)}


def linear_attention_identity(d, dv):
    """Empty segment: ``P = 0``, ``rho = 1``."""
    return {"P": np.zeros((d, dv)), "rho": 1.0}


def linear_attention_combine(a, b):
    """A then B: ``P = rho_B P_A + P_B``, ``rho = rho_A rho_B``.

    Normalized (v -> 1): ``m = rho_B m_A + m_B`` (the widened last column).
    """
    return {"P": b["rho"] * a["P"] + b["P"], "rho": a["rho"] * b["rho"]}


def linear_attention_scan(q, k, v, *, gamma=1.0, normalize=False, eps=1e-6, state=None):
    """Tree scan over token segments, then readout ``q_t^T P_t``."""
    q, k = _f64(q), _f64(k)
    va = _with_ones(v, normalize)
    T, d = q.shape
    dva = va.shape[1]
    init = linear_attention_identity(d, dva)
    if state is not None:
        init["P"] = _unpack_state(state, 0, 1, normalize)[1][0]
    tokens = [linear_attention_token(k[t], va[t], gamma) for t in range(T)]
    incl = _scan_inclusive(tokens, init, linear_attention_combine,
                           linear_attention_identity(d, dva))
    num = np.array([q[t] @ s["P"] for t, s in enumerate(incl)]).reshape(T, dva)
    last = incl[-1] if incl else init
    return _finish(num, normalize, eps), _pack_state([], [last["P"]], normalize)


# ---------------------------------------------------------------------------
# §2 hla2 — second-order symmetric HLA
# ---------------------------------------------------------------------------


def hla2_definition(q, k, v, *, gamma=1.0, masked=True, normalize=False, eps=1e-6,
                    ridge=0.0):
    """Index-sum form of §2.

    masked:   ``o_t = sum_{j<=t} sum_{i<=j} gamma^((t-i)+(t-j)) (q_t.k_i)(q_j.k_i) v_j``
    unmasked: the same with ``i <= t`` instead of ``i <= j``.
    ridge:    ``+ lambda sum_{j<=t} gamma^(t-j) (q_t.q_j) v_j``.
    The weight tensor over (t, j, i) is built explicitly, O(T^3).
    """
    q, k = _f64(q), _f64(k)
    T = len(q)
    qk = q @ k.T  # qk[a, b] = q_a . k_b
    idx = np.arange(T)
    t, j, i = idx[:, None, None], idx[None, :, None], idx[None, None, :]
    allowed = (j <= t) & (i <= (j if masked else t))
    expo = np.where(allowed, (t - i) + (t - j), 0)
    w = np.where(allowed, float(gamma) ** expo, 0.0)
    coef = np.einsum("tji,ti,ji->tj", w, qk, qk)
    if ridge:
        coef = coef + ridge * _decay_matrix(gamma, T) * (q @ q.T)
    return _finish(coef @ _with_ones(v, normalize), normalize, eps)


def hla2_serial(q, k, v, *, gamma=1.0, masked=True, normalize=False, eps=1e-6, ridge=0.0,
                state=None):
    """Serial recurrence of §2 (with the corrected gamma^2 decay of G and h).

    State: masked ``(S, C, G)``, normalized ``(S, C, m, G, h)``;
    unmasked ``(S, C)``, normalized ``(S, C, m)``.
    """
    q, k, v = _f64(q), _f64(k), _f64(v)
    T, d = q.shape
    dv = v.shape[1]
    S, C, G = np.zeros((d, d)), np.zeros((d, dv)), np.zeros((d, dv))
    m, h = np.zeros(d), np.zeros(d)
    if state is not None:
        st = [np.array(x, dtype=np.float64) for x in state]
        S, C, rest = st[0], st[1], st[2:]
        if normalize:
            m, rest = rest[0], rest[1:]
        if masked:
            G = rest[0]
            if normalize:
                h = rest[1]
    g2 = gamma * gamma
    o = np.empty((T, dv))
    for t in range(T):
        qt, kt, vt = q[t], k[t], v[t]
        if masked:
            # G, h read C_{t-1}, m_{t-1}: update them before C and m. S and C
            # each decay by gamma, so their product (and G, h) by gamma^2.
            G = g2 * G + gamma * np.outer(kt, kt @ C)
            if normalize:
                h = g2 * h + gamma * kt * (kt @ m)
        S = gamma * S + np.outer(kt, kt)
        C = gamma * C + np.outer(qt, vt)
        qS = qt @ S + ridge * qt  # q^T (S + lambda I)
        num = qS @ C - (qt @ G if masked else 0.0)
        if normalize:
            m = gamma * m + qt
            den = qS @ m - (qt @ h if masked else 0.0) + eps
            o[t] = num / den
        else:
            o[t] = num
    out = [S, C] + ([m] if normalize else [])
    if masked:
        out += [G] + ([h] if normalize else [])
    return o, tuple(out)


def hla2_token(q, k, v, gamma=1.0, *, masked=True):
    """Single-token segment ``(S = k k^T, C = q v^T, G = 0, rho = gamma)``.

    Unmasked segments carry no G. Normalized: widen v by a 1, which gives
    ``m = q`` and ``h = 0`` as last columns.
    """
    seg = {"S": np.outer(k, k), "C": np.outer(q, v), "rho": float(gamma)}
    if masked:
        seg["G"] = np.zeros((len(k), len(v)))
    return seg


def hla2_identity(d, dv, *, masked=True):
    """Empty segment: all zero, ``rho = 1``."""
    seg = {"S": np.zeros((d, d)), "C": np.zeros((d, dv)), "rho": 1.0}
    if masked:
        seg["G"] = np.zeros((d, dv))
    return seg


def hla2_combine(a, b):
    """A then B (§2, corrected)::

        S = rho_B S_A + S_B        C = rho_B C_A + C_B
        G = rho_B^2 G_A + G_B + S_B (rho_B C_A)        rho = rho_A rho_B

    Normalized (v -> 1, the widened last columns): ``m = rho_B m_A + m_B``,
    ``h = rho_B^2 h_A + h_B + S_B (rho_B m_A)``.
    """
    rb = b["rho"]
    out = {"S": rb * a["S"] + b["S"], "C": rb * a["C"] + b["C"], "rho": a["rho"] * rb}
    if "G" in a:
        out["G"] = rb * rb * a["G"] + b["G"] + b["S"] @ (rb * a["C"])
    return out


def hla2_scan(q, k, v, *, gamma=1.0, masked=True, normalize=False, eps=1e-6, ridge=0.0,
              state=None, combine=None):
    """Tree scan of §2 token segments, readout ``q^T((S + lambda I) C - G)``.

    ``combine`` may replace ``hla2_combine`` (used by the tests to show that
    the paper's printed decayed rule is wrong).
    """
    combine = hla2_combine if combine is None else combine
    q, k = _f64(q), _f64(k)
    va = _with_ones(v, normalize)
    T, d = q.shape
    dva = va.shape[1]
    init = hla2_identity(d, dva, masked=masked)
    if state is not None:
        (S0,), valued = _unpack_state(state, 1, 2 if masked else 1, normalize)
        init["S"], init["C"] = S0, valued[0]
        if masked:
            init["G"] = valued[1]
    tokens = [hla2_token(q[t], k[t], va[t], gamma, masked=masked) for t in range(T)]
    incl = _scan_inclusive(tokens, init, combine, hla2_identity(d, dva, masked=masked))
    num = np.empty((T, dva))
    for t, s in enumerate(incl):
        num[t] = (q[t] @ s["S"] + ridge * q[t]) @ s["C"]
        if masked:
            num[t] -= q[t] @ s["G"]
    last = incl[-1] if incl else init
    valued = [last["C"]] + ([last["G"]] if masked else [])
    return _finish(num, normalize, eps), _pack_state([last["S"]], valued, normalize)


def hla2_chunked(q, k, v, *, chunk, gamma=1.0, masked=True, normalize=False, eps=1e-6,
                 ridge=0.0, state=None):
    """Chunked form of §2 (decayed form; gamma = 1 gives the undecayed one).

    Per chunk of c tokens with local index a, carried ``S0, C0, G0``;
    ``D[a,b] = gamma^(a-b)`` (a >= b), ``rho_a = gamma^(a+1)``,
    ``e_b = gamma^(c-1-b)``, ``rho_c = gamma^c``, ``L``/``L-`` the (strictly)
    lower-triangular masks::

        masked:   O = diag(rho^2) Q (S0 C0 - G0) + diag(rho) ((Q S0 Q^T) . D) V
                      + ((W_D X^T) . D) V,     W_D = D . (Q K^T), X = L . (Q K^T)
        unmasked: Y = diag(rho) Q S0 + W_D K   (row t: q_t^T S_t)
                  O = diag(rho) Y C0 + ((Y Q^T) . D) V
        ridge:    O += lambda (diag(rho) Q C0 + ((Q Q^T) . D) V)

    Chunk summaries ``S_B = K^T diag(e) K``, ``C_B = Q^T diag(e) V``,
    ``G_B = K^T diag(e) ((L- . (K Q^T)) diag(e) V)`` and the carry
    ``G0 <- rho_c^2 G0 + G_B + S_B (rho_c C0)``, ``S0 <- rho_c S0 + S_B``,
    ``C0 <- rho_c C0 + C_B``.
    """
    chunk = _check_chunk(chunk)
    q, k = _f64(q), _f64(k)
    va = _with_ones(v, normalize)
    T, d = q.shape
    dva = va.shape[1]
    S0, C0, G0 = np.zeros((d, d)), np.zeros((d, dva)), np.zeros((d, dva))
    if state is not None:
        (S0,), valued = _unpack_state(state, 1, 2 if masked else 1, normalize)
        C0 = valued[0]
        if masked:
            G0 = valued[1]
    num = np.empty((T, dva))
    for s in range(0, T, chunk):
        Q, K, V = q[s:s + chunk], k[s:s + chunk], va[s:s + chunk]
        c = len(Q)
        D = _decay_matrix(gamma, c)
        L = np.tril(np.ones((c, c)))
        rho = float(gamma) ** np.arange(1, c + 1)
        e = float(gamma) ** np.arange(c - 1, -1, -1)
        rc = float(gamma) ** c
        QK = Q @ K.T
        WD = D * QK
        if masked:
            X = L * QK
            O = ((rho ** 2)[:, None] * (Q @ (S0 @ C0 - G0))
                 + rho[:, None] * (((Q @ S0 @ Q.T) * D) @ V)
                 + ((WD @ X.T) * D) @ V)
        else:
            Y = rho[:, None] * (Q @ S0) + WD @ K
            O = rho[:, None] * (Y @ C0) + ((Y @ Q.T) * D) @ V
        if ridge:
            O = O + ridge * (rho[:, None] * (Q @ C0) + ((Q @ Q.T) * D) @ V)
        num[s:s + c] = O
        SB = K.T @ (e[:, None] * K)
        CB = Q.T @ (e[:, None] * V)
        if masked:
            Lm = np.tril(np.ones((c, c)), -1)
            GB = K.T @ (e[:, None] * ((Lm * (K @ Q.T)) @ (e[:, None] * V)))
            G0 = rc * rc * G0 + GB + SB @ (rc * C0)
        S0 = rc * S0 + SB
        C0 = rc * C0 + CB
    valued = [C0] + ([G0] if masked else [])
    return _finish(num, normalize, eps), _pack_state([S0], valued, normalize)


# ---------------------------------------------------------------------------
# §3 ahla — asymmetric second-order HLA
# ---------------------------------------------------------------------------


def ahla_definition(q, k, v, *, gamma=1.0, normalize=False, eps=1e-6):
    """Index-sum form ``o_t = sum_{j<=i<=t} gamma^(t-j) (q_t.k_i)(q_i.k_j) v_j``."""
    q, k = _f64(q), _f64(k)
    T = len(q)
    qk = q @ k.T
    idx = np.arange(T)
    t, i, j = idx[:, None, None], idx[None, :, None], idx[None, None, :]
    allowed = (j <= i) & (i <= t)
    w = np.where(allowed, float(gamma) ** np.where(allowed, t - j, 0), 0.0)
    coef = np.einsum("tij,ti,ij->tj", w, qk, qk)
    return _finish(coef @ _with_ones(v, normalize), normalize, eps)


def ahla_serial(q, k, v, *, gamma=1.0, normalize=False, eps=1e-6, state=None):
    """Serial recurrence of §3: ``E_t = gamma E + k_t (q_t^T P_t)``, ``o = q^T E``.

    State: ``(P, E)``, normalized ``(P, m, E, n)``.
    """
    q, k, v = _f64(q), _f64(k), _f64(v)
    T, d = q.shape
    dv = v.shape[1]
    P, E, m, n = np.zeros((d, dv)), np.zeros((d, dv)), np.zeros(d), np.zeros(d)
    if state is not None:
        st = [np.array(x, dtype=np.float64) for x in state]
        if normalize:
            P, m, E, n = st
        else:
            P, E = st
    o = np.empty((T, dv))
    for t in range(T):
        qt, kt = q[t], k[t]
        P = gamma * P + np.outer(kt, v[t])
        E = gamma * E + np.outer(kt, qt @ P)  # reads the inclusive P_t
        if normalize:
            m = gamma * m + kt
            n = gamma * n + kt * (qt @ m)
            o[t] = (qt @ E) / (qt @ n + eps)
        else:
            o[t] = qt @ E
    return o, ((P, m, E, n) if normalize else (P, E))


def ahla_token(q, k, v, gamma=1.0):
    """Single-token segment ``(R = k q^T, P = k v^T, E = (q.k) k v^T, rho = gamma)``.

    Normalized (widened v): ``m = k``, ``n = (q.k) k`` as last columns.
    """
    return {"R": np.outer(k, q), "P": np.outer(k, v), "E": (q @ k) * np.outer(k, v),
            "rho": float(gamma)}


def ahla_identity(d, dv):
    """Empty segment: all zero, ``rho = 1``."""
    return {"R": np.zeros((d, d)), "P": np.zeros((d, dv)), "E": np.zeros((d, dv)), "rho": 1.0}


def ahla_combine(a, b):
    """A then B (§3, corrected: R is the plain, undecayed sum)::

        R = R_A + R_B      P = rho_B P_A + P_B
        E = rho_B E_A + E_B + R_B (rho_B P_A)      rho = rho_A rho_B

    Normalized: ``m`` like P, ``n = rho_B n_A + n_B + R_B (rho_B m_A)``.
    """
    rb = b["rho"]
    return {"R": a["R"] + b["R"], "P": rb * a["P"] + b["P"],
            "E": rb * a["E"] + b["E"] + b["R"] @ (rb * a["P"]), "rho": a["rho"] * rb}


def _ahla_init(state, d, dva, normalize):
    init = ahla_identity(d, dva)
    if state is not None:
        init["P"], init["E"] = _unpack_state(state, 0, 2, normalize)[1]
    return init


def ahla_scan(q, k, v, *, gamma=1.0, normalize=False, eps=1e-6, state=None, combine=None):
    """Tree scan of §3 token segments, readout ``q^T E``.

    ``combine`` may replace ``ahla_combine`` (used by the tests to show that
    the paper's printed decayed rule is wrong).
    """
    combine = ahla_combine if combine is None else combine
    q, k = _f64(q), _f64(k)
    va = _with_ones(v, normalize)
    T, d = q.shape
    dva = va.shape[1]
    init = _ahla_init(state, d, dva, normalize)
    tokens = [ahla_token(q[t], k[t], va[t], gamma) for t in range(T)]
    incl = _scan_inclusive(tokens, init, combine, ahla_identity(d, dva))
    num = np.array([q[t] @ s["E"] for t, s in enumerate(incl)]).reshape(T, dva)
    last = incl[-1] if incl else init
    return _finish(num, normalize, eps), _pack_state([], [last["P"], last["E"]], normalize)


def ahla_chunked(q, k, v, *, chunk, gamma=1.0, normalize=False, eps=1e-6, state=None):
    """Chunked form of §3 (A = L . (Q K^T) undecayed; D, rho, e, rho_c as in §2)::

        O  = diag(rho) (Q E0 + A Q P0) + ((A A) . D) V
        E0 <- rho_c E0 + (K^T Q)(rho_c P0) + K^T (A diag(e) V)
        P0 <- rho_c P0 + K^T diag(e) V
    """
    chunk = _check_chunk(chunk)
    q, k = _f64(q), _f64(k)
    va = _with_ones(v, normalize)
    T, d = q.shape
    dva = va.shape[1]
    P0, E0 = np.zeros((d, dva)), np.zeros((d, dva))
    if state is not None:
        P0, E0 = _unpack_state(state, 0, 2, normalize)[1]
    num = np.empty((T, dva))
    for s in range(0, T, chunk):
        Q, K, V = q[s:s + chunk], k[s:s + chunk], va[s:s + chunk]
        c = len(Q)
        D = _decay_matrix(gamma, c)
        A = np.tril(Q @ K.T)
        rho = float(gamma) ** np.arange(1, c + 1)
        e = float(gamma) ** np.arange(c - 1, -1, -1)
        rc = float(gamma) ** c
        num[s:s + c] = rho[:, None] * (Q @ E0 + A @ Q @ P0) + ((A @ A) * D) @ V
        E0 = rc * E0 + (K.T @ Q) @ (rc * P0) + K.T @ (A @ (e[:, None] * V))
        P0 = rc * P0 + K.T @ (e[:, None] * V)
    return _finish(num, normalize, eps), _pack_state([], [P0, E0], normalize)


# ---------------------------------------------------------------------------
# §4 hla3 — third-order HLA
# ---------------------------------------------------------------------------


def hla3_definition(q, k, v, *, gamma=1.0, normalize=False, eps=1e-6):
    """Index-sum form of §4 (with the decay of the §4 recurrence)::

        o_t = sum_{u<=t} sum_{i<=u} sum_{j<=u}
                  gamma^((t-u)+(u-i)+(u-j)) (q_t.k_i)(q_u.k_i)(q_u.k_j) v_j

    For fixed (t, u) the summand factorises into an i-part and a j-part, so it
    is evaluated as ``sum_{u<=t} gamma^(t-u) a[t,u] b[u]`` with
    ``a[t,u] = sum_{i<=u} gamma^(u-i) (q_t.k_i)(q_u.k_i)`` and
    ``b[u] = sum_{j<=u} gamma^(u-j) (q_u.k_j) v_j``; O(T^3).
    """
    q, k = _f64(q), _f64(k)
    T = len(q)
    D = _decay_matrix(gamma, T)
    qk = q @ k.T
    a = np.einsum("ui,ti,ui->tu", D, qk, qk)
    b = (D * qk) @ _with_ones(v, normalize)
    return _finish((D * a) @ b, normalize, eps)


def hla3_serial(q, k, v, *, gamma=1.0, normalize=False, eps=1e-6, state=None):
    """Streaming recurrence of §4::

        S_t = gamma S + k k^T    P_t = gamma P + k v^T
        X_t = gamma X_{t-1} + (S_t q_t)(q_t^T P_t)        o_t = q_t^T X_t

    normalized: ``m = gamma m + k``, ``x = gamma x + (S_t q_t)(q_t^T m_t)``.
    State: ``(S, P, X)``, normalized ``(S, P, m, X, x)``.
    """
    q, k, v = _f64(q), _f64(k), _f64(v)
    T, d = q.shape
    dv = v.shape[1]
    S, P, X = np.zeros((d, d)), np.zeros((d, dv)), np.zeros((d, dv))
    m, x = np.zeros(d), np.zeros(d)
    if state is not None:
        st = [np.array(z, dtype=np.float64) for z in state]
        if normalize:
            S, P, m, X, x = st
        else:
            S, P, X = st
    o = np.empty((T, dv))
    for t in range(T):
        qt, kt = q[t], k[t]
        S = gamma * S + np.outer(kt, kt)
        P = gamma * P + np.outer(kt, v[t])
        Sq = S @ qt
        X = gamma * X + np.outer(Sq, qt @ P)
        if normalize:
            m = gamma * m + kt
            x = gamma * x + Sq * (qt @ m)
            o[t] = (qt @ X) / (qt @ x + eps)
        else:
            o[t] = qt @ X
    return o, ((S, P, m, X, x) if normalize else (S, P, X))


def hla3_token(q, k, v, gamma=1.0):
    """Single-token segment of the decayed third-order monoid::

        S = k k^T    P = k v^T    Q2 = gamma q q^T    R = q q^T k v^T
        U = k k^T q q^T    X = k k^T q q^T k v^T = (q.k)^2 k v^T    rho = gamma

    (Q2 weighs token u by gamma^(u - a), a the index just before the segment,
    so a lone token has weight gamma; for gamma = 1 these are the §4 values.)
    Normalized (widened v): ``m = k``, ``Rm = (q.k) q``, ``x = (q.k)^2 k``.
    """
    qk = q @ k
    kv = np.outer(k, v)
    return {"S": np.outer(k, k), "P": kv, "Q2": float(gamma) * np.outer(q, q),
            "R": np.outer(q, qk * v), "U": np.outer(k, qk * q), "X": qk * qk * kv,
            "rho": float(gamma)}


def hla3_identity(d, dv):
    """Empty segment: all zero, ``rho = 1``."""
    z = np.zeros
    return {"S": z((d, d)), "P": z((d, dv)), "Q2": z((d, d)), "R": z((d, dv)),
            "U": z((d, d)), "X": z((d, dv)), "rho": 1.0}


def hla3_combine(a, b):
    """A then B, the decayed third-order rule (derived from the §4 recurrence).

    For a segment covering indices (a, b] with ``rho = gamma^(b-a)`` and, for u
    in it, ``S_loc(u) = sum_{a<i<=u} gamma^(u-i) k_i k_i^T`` (likewise
    ``P_loc``), the components are ``Q2 = sum_u gamma^(u-a) q_u q_u^T``,
    ``R = sum_u q_u q_u^T P_loc(u)``, ``U = sum_u S_loc(u) q_u q_u^T``,
    ``X = sum_u gamma^(b-u) S_loc(u) q_u q_u^T P_loc(u)``. Expanding
    ``S_u = gamma^(u-a) S_A + S_loc(u)`` and the same for P gives::

        S  = rho_B S_A + S_B            P = rho_B P_A + P_B
        Q2 = Q2_A + rho_A Q2_B
        R  = R_A + R_B + Q2_B P_A       U = U_A + U_B + S_A Q2_B
        X  = rho_B X_A + X_B + rho_B (S_A Q2_B P_A + S_A R_B + U_B P_A)
        rho = rho_A rho_B

    Normalized (widened v; P -> m, R -> Rm, X -> x, S, Q2, U shared):
    ``m = rho_B m_A + m_B``, ``Rm = Rm_A + Rm_B + Q2_B m_A``,
    ``x = rho_B x_A + x_B + rho_B (S_A Q2_B m_A + S_A Rm_B + U_B m_A)``.
    """
    ra, rb = a["rho"], b["rho"]
    SQ = a["S"] @ b["Q2"]
    return {
        "S": rb * a["S"] + b["S"],
        "P": rb * a["P"] + b["P"],
        "Q2": a["Q2"] + ra * b["Q2"],
        "R": a["R"] + b["R"] + b["Q2"] @ a["P"],
        "U": a["U"] + b["U"] + SQ,
        "X": rb * a["X"] + b["X"] + rb * (SQ @ a["P"] + a["S"] @ b["R"] + b["U"] @ a["P"]),
        "rho": ra * rb,
    }


def hla3_scan(q, k, v, *, gamma=1.0, normalize=False, eps=1e-6, state=None):
    """Tree scan of the third-order segments, readout ``q^T X``."""
    q, k = _f64(q), _f64(k)
    va = _with_ones(v, normalize)
    T, d = q.shape
    dva = va.shape[1]
    init = hla3_identity(d, dva)
    if state is not None:
        # The incoming state as a segment: only S, P, X matter downstream
        # (Q2, R, U of the left operand feed only Q2, R, U of the result).
        (init["S"],), (init["P"], init["X"]) = _unpack_state(state, 1, 2, normalize)
    tokens = [hla3_token(q[t], k[t], va[t], gamma) for t in range(T)]
    incl = _scan_inclusive(tokens, init, hla3_combine, hla3_identity(d, dva))
    num = np.array([q[t] @ s["X"] for t, s in enumerate(incl)]).reshape(T, dva)
    last = incl[-1] if incl else init
    return _finish(num, normalize, eps), _pack_state([last["S"]], [last["P"], last["X"]],
                                                     normalize)


def hla3_chunked(q, k, v, *, chunk, gamma=1.0, normalize=False, eps=1e-6, state=None):
    """Chunked form of §4, extended to decay (gamma = 1 is the page's form).

    Carried ``S0, P0, X0``; ``D, rho, e, rho_c`` as in §2, ``W_D = D . (Q K^T)``
    and ``A = L . (Q K^T)``::

        Y  = diag(rho) Q P0 + W_D V                     (row u: q_u^T P_u)
        Z  = L . (diag(rho) Q S0 Q^T + W_D A^T)         (Z[t,u] = gamma^(t-u) q_t^T S_u q_u)
        O  = diag(rho) Q X0 + Z Y
        X0 <- rho_c X0 + (S0 Q^T diag(rho) + K^T W_D^T) diag(e) Y
        S0 <- rho_c S0 + K^T diag(e) K;   P0 <- rho_c P0 + K^T diag(e) V

    (the rows of ``diag(rho) Q S0^T + W_D K`` are ``(S_u q_u)^T``).
    """
    chunk = _check_chunk(chunk)
    q, k = _f64(q), _f64(k)
    va = _with_ones(v, normalize)
    T, d = q.shape
    dva = va.shape[1]
    S0, P0, X0 = np.zeros((d, d)), np.zeros((d, dva)), np.zeros((d, dva))
    if state is not None:
        (S0,), (P0, X0) = _unpack_state(state, 1, 2, normalize)
    num = np.empty((T, dva))
    for s in range(0, T, chunk):
        Q, K, V = q[s:s + chunk], k[s:s + chunk], va[s:s + chunk]
        c = len(Q)
        D = _decay_matrix(gamma, c)
        L = np.tril(np.ones((c, c)))
        rho = float(gamma) ** np.arange(1, c + 1)
        e = float(gamma) ** np.arange(c - 1, -1, -1)
        rc = float(gamma) ** c
        QK = Q @ K.T
        WD, A = D * QK, L * QK
        Y = rho[:, None] * (Q @ P0) + WD @ V
        Z = L * (rho[:, None] * (Q @ S0 @ Q.T) + WD @ A.T)
        num[s:s + c] = rho[:, None] * (Q @ X0) + Z @ Y
        X0 = rc * X0 + (S0 @ Q.T * rho[None, :] + K.T @ WD.T) @ (e[:, None] * Y)
        S0 = rc * S0 + K.T @ (e[:, None] * K)
        P0 = rc * P0 + K.T @ (e[:, None] * V)
    return _finish(num, normalize, eps), _pack_state([S0], [P0, X0], normalize)


# ---------------------------------------------------------------------------
# §5 linsimp — linearized 2-simplicial attention
# ---------------------------------------------------------------------------


def linsimp_features(z, omega):
    """Positive random features ``phi(z) = m^(-1/2) exp(Omega z - |z|^2 / 2)`` (row-wise)."""
    z, omega = _f64(z), _f64(omega)
    sq = 0.5 * np.sum(z * z, axis=-1, keepdims=True)
    return np.exp(z @ omega.T - sq) / math.sqrt(omega.shape[0])


def linsimp_omega(m, d, seed=0):
    """Seeded orthogonal random feature matrix ``Omega [m, d]`` (§5): the
    matrix of ``hla.random_features`` (docs/RandomFeatures.md), identical to
    what the compiler's ``hla.random_features {seed}`` op becomes.

    ``ceil(m/d)`` blocks of d orthonormal rows (the Q of a seeded Gaussian
    d x d matrix with positive diagonal of R: the sign fix), the first m
    rows, each scaled by the norm of an independent Gaussian d-vector.
    """
    from .random_features import random_features
    return random_features(m, d, seed)


def _linsimp_readout(qi, R, U, valid, M, a, omega, sq):
    """favor output of one query over its window rows (R, U, valid)::

        o = sum_c u_c . (M^T phi(x_c)) / sum_c phi(x_c) . a,   x_c = sqrt(tau) (q . r_c)
    """
    F = linsimp_features(sq * (qi[None, :] * R), omega) * valid[:, None]
    return np.sum(U * (F @ M), axis=0) / np.sum(F @ a)


def _linsimp_empty_state(d, dv, m, window):
    w1 = window - 1
    return (np.zeros((m, dv)), np.zeros(m), np.zeros((w1, d)), np.zeros((w1, dv)), np.zeros(w1))


def linsimp_definition(q, k, v, r, u, omega, *, window=64, tau, kernel="favor"):
    """Direct double sum of §5 over ``j <= i`` and ``c in C_i = [max(0, i-W+1), i]``.

    favor: ``e_ijc = phi(x_ic) . phi(y_j)``; exact: ``e_ijc = exp(tau (q_i . r_c) . k_j)``
    (shifted by one max per query, which cancels); then
    ``o_i = sum_c u_c . (sum_j e_ijc v_j) / sum_{c,j} e_ijc`` (joint normalisation).
    """
    q, k, v, r, u, omega = map(_f64, (q, k, v, r, u, omega))
    T = len(q)
    sq = math.sqrt(tau)
    phi_k = linsimp_features(sq * k, omega) if kernel == "favor" else None
    o = np.empty((T, v.shape[1]))
    for i in range(T):
        c = np.arange(max(0, i - window + 1), i + 1)
        if kernel == "favor":
            e = linsimp_features(sq * (q[i][None, :] * r[c]), omega) @ phi_k[:i + 1].T
        else:
            s = tau * ((q[i][None, :] * r[c]) @ k[:i + 1].T)
            e = np.exp(s - s.max())
        o[i] = np.sum(u[c] * (e @ v[:i + 1]), axis=0) / e.sum()
    return o


def linsimp_serial(q, k, v, r, u, omega, *, window=64, tau, state=None):
    """Streaming favor recurrence of §5.

    ``M += phi(y_t) v_t^T``, ``a += phi(y_t)``; the window of token t is the
    ring of the last W-1 anchors plus token t itself. State
    ``(M[m,dv], a[m], anchor_r[W-1,d], anchor_u[W-1,dv], anchor_valid[W-1])``,
    anchors oldest first; invalid (padding) rows are masked out.
    """
    q, k, v, r, u, omega = map(_f64, (q, k, v, r, u, omega))
    T, d = q.shape
    dv = v.shape[1]
    if state is None:
        state = _linsimp_empty_state(d, dv, omega.shape[0], window)
    M, a, ar, au, av = (np.array(x, dtype=np.float64) for x in state)
    sq = math.sqrt(tau)
    o = np.empty((T, dv))
    for t in range(T):
        phi_y = linsimp_features(sq * k[t][None, :], omega)[0]
        M = M + np.outer(phi_y, v[t])
        a = a + phi_y
        R = np.concatenate([ar, r[t][None, :]], axis=0)
        U = np.concatenate([au, u[t][None, :]], axis=0)
        valid = np.concatenate([av, [1.0]])
        o[t] = _linsimp_readout(q[t], R, U, valid, M, a, omega, sq)
        ar, au, av = R[1:], U[1:], valid[1:]  # drop the oldest anchor
    return o, (M, a, ar, au, av)


def linsimp_token(k, v, omega, tau):
    """Single-token (M, a) segment: ``(phi(y) v^T, phi(y))``, ``y = sqrt(tau) k``."""
    phi_y = linsimp_features(math.sqrt(tau) * _f64(k)[None, :], omega)[0]
    return {"M": np.outer(phi_y, v), "a": phi_y}


def linsimp_identity(m, dv):
    """Empty (M, a) segment: zeros."""
    return {"M": np.zeros((m, dv)), "a": np.zeros(m)}


def linsimp_combine(a, b):
    """(M, a) is a plain prefix sum (no decay): ``M = M_A + M_B``, ``a = a_A + a_B``."""
    return {"M": a["M"] + b["M"], "a": a["a"] + b["a"]}


def _linsimp_extended(state, r, u):
    """Anchor rows preceding the sequence followed by the sequence's own rows.

    Row ``t + c`` (c in [0, W)) of the result is the c-th row of token t's
    window, so window t is ``ext[t : t + W]`` and the last W-1 rows are the
    anchors handed to the next call.
    """
    _, _, ar, au, av = state
    ext_r = np.concatenate([_f64(ar), r], axis=0)
    ext_u = np.concatenate([_f64(au), u], axis=0)
    ext_v = np.concatenate([_f64(av), np.ones(len(r))])
    return ext_r, ext_u, ext_v


def linsimp_scan(q, k, v, r, u, omega, *, window=64, tau, state=None):
    """Tree scan of the (M, a) prefix sums, then the windowed favor readout."""
    q, k, v, r, u, omega = map(_f64, (q, k, v, r, u, omega))
    T, d = q.shape
    m, dv = omega.shape[0], v.shape[1]
    if state is None:
        state = _linsimp_empty_state(d, dv, m, window)
    init = {"M": _f64(state[0]), "a": _f64(state[1])}
    tokens = [linsimp_token(k[t], v[t], omega, tau) for t in range(T)]
    incl = _scan_inclusive(tokens, init, linsimp_combine, linsimp_identity(m, dv))
    ext_r, ext_u, ext_v = _linsimp_extended(state, r, u)
    sq = math.sqrt(tau)
    o = np.empty((T, dv))
    for t, s in enumerate(incl):
        w = slice(t, t + window)
        o[t] = _linsimp_readout(q[t], ext_r[w], ext_u[w], ext_v[w], s["M"], s["a"], omega, sq)
    last = incl[-1] if incl else init
    n = len(ext_v)
    tail = slice(n - (window - 1), n)
    return o, (last["M"].copy(), last["a"].copy(), ext_r[tail].copy(), ext_u[tail].copy(),
               ext_v[tail].copy())


def linsimp_chunked(q, k, v, r, u, omega, *, window=64, tau, chunk, state=None):
    """Chunked favor form of §5: carried ``M, a``; pair features with a halo.

    Within a chunk, ``F[i, c] = phi(x_ic)`` over token i's window (including up
    to W-1 tokens before the chunk), ``Phi_K`` the key features of the chunk::

        num_i = sum_c u_c . (F[i,c] M_prev + sum_{j<=i in chunk} (F[i,c].Phi_K[j]) v_j)
        den_i = sum_c (F[i,c] . a_prev + sum_{j<=i in chunk} F[i,c].Phi_K[j])
    """
    chunk = _check_chunk(chunk)
    q, k, v, r, u, omega = map(_f64, (q, k, v, r, u, omega))
    T, d = q.shape
    m, dv = omega.shape[0], v.shape[1]
    if state is None:
        state = _linsimp_empty_state(d, dv, m, window)
    M, a = _f64(state[0]).copy(), _f64(state[1]).copy()
    ext_r, ext_u, ext_v = _linsimp_extended(state, r, u)
    sq = math.sqrt(tau)
    o = np.empty((T, dv))
    for s in range(0, T, chunk):
        Q, K, V = q[s:s + chunk], k[s:s + chunk], v[s:s + chunk]
        c = len(Q)
        win = (s + np.arange(c))[:, None] + np.arange(window)[None, :]  # [c, W]
        Rw, Uw, Vw = ext_r[win], ext_u[win], ext_v[win]
        F = linsimp_features(sq * (Q[:, None, :] * Rw), omega) * Vw[:, :, None]  # [c, W, m]
        PhiK = linsimp_features(sq * K, omega)  # [c, m]
        A = np.einsum("icm,jm->icj", F, PhiK) * np.tril(np.ones((c, c)))[:, None, :]
        inner = F @ M + A @ V  # [c, W, dv]
        num = np.sum(Uw * inner, axis=1)
        den = np.sum(F @ a, axis=1) + np.sum(A, axis=(1, 2))
        o[s:s + c] = num / den[:, None]
        M = M + PhiK.T @ V
        a = a + PhiK.sum(axis=0)
    n = len(ext_v)
    tail = slice(n - (window - 1), n)
    return o, (M, a, ext_r[tail].copy(), ext_u[tail].copy(), ext_v[tail].copy())


# ---------------------------------------------------------------------------
# §6 kda — Kimi Delta Attention (gated delta rule)
# ---------------------------------------------------------------------------


def kda_token(k, g, beta, v):
    """Token as the affine map ``S -> M S + B``: ``M = (I - beta k k^T) Diag(exp g)``,
    ``B = beta k v^T``."""
    k = _f64(k)
    M = (np.eye(len(k)) - beta * np.outer(k, k)) * np.exp(_f64(g))[None, :]
    return {"M": M, "B": beta * np.outer(k, v)}


def kda_identity(dk, dv):
    """Identity map ``(I, 0)``."""
    return {"M": np.eye(dk), "B": np.zeros((dk, dv))}


def kda_combine(a, b):
    """A then B, composition of affine maps: ``(M_B M_A, M_B B_A + B_B)``."""
    return {"M": b["M"] @ a["M"], "B": b["M"] @ a["B"] + b["B"]}


def kda_definition(q, k, v, g, beta, *, state=None):
    """``o_t = S_t^T q_t`` with ``S_t`` from the explicit product of affine maps::

        S_t = (M_t ... M_0) S_init + sum_{s<=t} (M_t ... M_{s+1}) B_s

    (q already multiplied by scale); O(T^2) matrix products.
    """
    q, k, v, g, beta = map(_f64, (q, k, v, g, beta))
    T, dk = q.shape
    dv = v.shape[1]
    S_init = np.zeros((dk, dv)) if state is None else _f64(state[0])
    maps = [kda_token(k[t], g[t], beta[t], v[t]) for t in range(T)]
    o = np.empty((T, dv))
    S = S_init.copy()
    for t in range(T):
        # Accumulate from the newest map backwards: prod = M_t ... M_{s+1}.
        prod = np.eye(dk)
        S = maps[t]["B"].copy()
        for s in range(t - 1, -1, -1):
            prod = prod @ maps[s + 1]["M"]
            S += prod @ maps[s]["B"]
        S += prod @ maps[0]["M"] @ S_init
        o[t] = S.T @ q[t]
    return o, (S,)


def kda_serial(q, k, v, g, beta, *, state=None):
    """``S_t = (I - beta_t k_t k_t^T) Diag(exp g_t) S_{t-1} + beta_t k_t v_t^T``,
    ``o_t = S_t^T q_t`` (q pre-scaled). State ``(S[dk,dv],)``."""
    q, k, v, g, beta = map(_f64, (q, k, v, g, beta))
    T, dk = q.shape
    dv = v.shape[1]
    S = np.zeros((dk, dv)) if state is None else np.array(state[0], dtype=np.float64)
    o = np.empty((T, dv))
    for t in range(T):
        S = np.exp(g[t])[:, None] * S
        S = S - beta[t] * np.outer(k[t], k[t] @ S) + beta[t] * np.outer(k[t], v[t])
        o[t] = S.T @ q[t]
    return o, (S,)


def kda_scan(q, k, v, g, beta, *, state=None):
    """Tree scan of the affine token maps; the incoming state is the segment
    ``(I, S_init)``, so the B part of every inclusive segment is ``S_t``."""
    q, k, v, g, beta = map(_f64, (q, k, v, g, beta))
    T, dk = q.shape
    dv = v.shape[1]
    init = kda_identity(dk, dv)
    if state is not None:
        init["B"] = _f64(state[0]).copy()
    tokens = [kda_token(k[t], g[t], beta[t], v[t]) for t in range(T)]
    incl = _scan_inclusive(tokens, init, kda_combine, kda_identity(dk, dv))
    o = np.array([s["B"].T @ q[t] for t, s in enumerate(incl)]).reshape(T, dv)
    last = incl[-1] if incl else init
    return o, (last["B"].copy(),)


def kda_chunked(q, k, v, g, beta, *, chunk, state=None):
    """WY/UT chunked form of §6 (q pre-scaled, so ``A_qk`` carries no scale).

    Per chunk, ``Gam`` the inclusive cumsum of g::

        L_kk[r,s] = beta_r sum_d k_rd k_sd e^(Gam_rd - Gam_sd)  (s < r)
        T = (I + L_kk)^-1 diag(beta);  W = T (e^Gam . K);  U = T V
        delta = U - W S;   A_qk[r,s] = sum_d q_rd k_sd e^(Gam_rd - Gam_sd)  (s <= r)
        O = (e^Gam . Q) S + A_qk delta
        S <- Diag(e^Gam_last) S + K~^T delta,   K~_s = e^(Gam_last - Gam_s) . k_s

    ``e^(Gam_r - Gam_s)`` is only formed for s <= r (it is <= 1 there), never
    ``e^(-Gam_s)`` alone, which overflows.
    """
    chunk = _check_chunk(chunk)
    q, k, v, g, beta = map(_f64, (q, k, v, g, beta))
    T, dk = q.shape
    dv = v.shape[1]
    S = np.zeros((dk, dv)) if state is None else np.array(state[0], dtype=np.float64)
    o = np.empty((T, dv))
    for s0 in range(0, T, chunk):
        Q, K, V = q[s0:s0 + chunk], k[s0:s0 + chunk], v[s0:s0 + chunk]
        G, b = g[s0:s0 + chunk], beta[s0:s0 + chunk]
        c = len(Q)
        Gam = np.cumsum(G, axis=0)
        diff = Gam[:, None, :] - Gam[None, :, :]  # [r, s, d]
        lower = np.tril(np.ones((c, c), dtype=bool))
        decay = np.exp(np.where(lower[:, :, None], diff, -np.inf))  # 0 above the diagonal
        Lkk = b[:, None] * np.einsum("rd,sd,rsd->rs", K, K, decay) * np.tril(np.ones((c, c)), -1)
        Tm = np.linalg.solve(np.eye(c) + Lkk, np.diag(b))
        W = Tm @ (np.exp(Gam) * K)
        U = Tm @ V
        delta = U - W @ S
        Aqk = np.einsum("rd,sd,rsd->rs", Q, K, decay)
        o[s0:s0 + c] = (np.exp(Gam) * Q) @ S + Aqk @ delta
        Kt = np.exp(Gam[-1][None, :] - Gam) * K
        S = np.exp(Gam[-1])[:, None] * S + Kt.T @ delta
    return o, (S,)


# ---------------------------------------------------------------------------
# Public operators: validation and the batch / head / sequence driver
# ---------------------------------------------------------------------------


def _as_rank4(op, name, x):
    x = _f64(x)
    if x.ndim != 4:
        raise ValueError(f"{op}: {name} must have rank 4 [B, T, H, D], got shape {x.shape}")
    return x


def _check_qkv(op, q, k, v):
    """Cast and check q [B,T,H_q,d], k [B,T,H_kv,d], v [B,T,H_kv,dv]."""
    q, k, v = (_as_rank4(op, n, x) for n, x in (("q", q), ("k", k), ("v", v)))
    B, T, Hq, d = q.shape
    for name, x in (("k", k), ("v", v)):
        if x.shape[:2] != (B, T):
            raise ValueError(f"{op}: {name} has batch/length {x.shape[:2]}, q has {(B, T)}")
    if k.shape[2] != v.shape[2]:
        raise ValueError(f"{op}: k has {k.shape[2]} heads but v has {v.shape[2]}")
    Hkv = k.shape[2]
    if Hkv < 1 or Hq % Hkv != 0:
        raise ValueError(f"{op}: q heads H_q={Hq} must be a positive multiple of the k/v "
                         f"heads H_kv={Hkv}")
    if k.shape[3] != d:
        raise ValueError(f"{op}: k feature size {k.shape[3]} differs from q's {d}")
    if d < 1:
        raise ValueError(f"{op}: q feature size must be >= 1")
    return q, k, v, (B, T, Hq, Hkv, d, v.shape[3])


def _check_kv_like(op, name, x, B, T, Hkv, last):
    """A per-kv-head operand with shape [B, T, H_kv] + last."""
    x = _f64(x)
    want = (B, T, Hkv) + tuple(last)
    if x.shape != want:
        raise ValueError(f"{op}: {name} must have shape {want}, got {x.shape}")
    return x


def _to_float(op, name, value):
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{op}: {name} must be a real number, got {value!r}") from None


def _check_scale(op, scale, d):
    if scale is None:
        return d ** -0.5
    s = _to_float(op, "scale", scale)
    if not (math.isfinite(s) and s > 0):
        raise ValueError(f"{op}: scale must be finite and > 0, got {scale!r}")
    return s


def _check_decay(op, decay, heads):
    """The decay rate of each of the ``heads`` query heads: ``decay`` is one
    number for all of them, or one per head."""
    if decay is None:
        return [1.0] * heads
    if np.ndim(decay) == 0:
        rates = [decay] * heads
    else:
        rates = list(np.asarray(decay, dtype=np.float64).reshape(-1))
        if np.ndim(decay) != 1 or len(rates) != heads:
            raise ValueError(f"{op}: a per-head decay needs {heads} rates (one per query "
                             f"head), got shape {np.shape(decay)}")
    gammas = []
    for rate in rates:
        gamma = _to_float(op, "decay", rate)
        if not 0.0 < gamma <= 1.0:  # also rejects NaN
            raise ValueError(f"{op}: decay must be in (0, 1], got {rate!r}")
        gammas.append(gamma)
    return gammas


def _check_eps(op, eps):
    e = _to_float(op, "eps", eps)
    if not (math.isfinite(e) and e > 0):
        raise ValueError(f"{op}: eps must be finite and > 0, got {eps!r}")
    return e


def _sequences(op, cu_seqlens, B, T):
    """(batch row, start, end) of every independent sequence."""
    if cu_seqlens is None:
        return [(b, 0, T) for b in range(B)]
    cu = np.asarray(cu_seqlens)
    if cu.ndim != 1 or cu.size < 2 or not np.issubdtype(cu.dtype, np.integer):
        raise ValueError(f"{op}: cu_seqlens must be a 1-D integer array [N+1], got "
                         f"dtype {cu.dtype}, shape {cu.shape}")
    if B != 1:
        raise ValueError(f"{op}: cu_seqlens requires batch size 1, got B={B}")
    if cu[0] != 0 or cu[-1] != T or np.any(np.diff(cu) < 0):
        raise ValueError(f"{op}: cu_seqlens must rise from 0 to T={T} without decreasing, "
                         f"got {cu.tolist()}")
    return [(0, int(cu[i]), int(cu[i + 1])) for i in range(cu.size - 1)]


def _check_state(op, initial_state, N, Hq, shapes):
    if initial_state is None:
        return None
    if not isinstance(initial_state, (tuple, list)) or len(initial_state) != len(shapes):
        raise ValueError(f"{op}: initial_state must be a tuple of {len(shapes)} arrays")
    out = []
    for i, (x, s) in enumerate(zip(initial_state, shapes)):
        x = _f64(x)
        want = (N, Hq) + tuple(s)
        if x.shape != want:
            raise ValueError(f"{op}: initial_state[{i}] must have shape {want}, got {x.shape}")
        out.append(x)
    return out


def _per_head(make):
    """Marks ``make(h)``, returning query head h's per-head function, for
    ``_run``."""
    make.per_head = True
    return make


def _run(op, fn, q_arrays, kv_arrays, shapes, dv, initial_state, output_final_state,
         cu_seqlens):
    """Apply the per-head function ``fn`` to every (sequence, query head).

    ``q_arrays`` are [B, T, H_q, ...], ``kv_arrays`` [B, T, H_kv, ...]; query head
    h reads kv head ``h // (H_q // H_kv)``. ``fn(*slices, state)`` returns
    ``(o [len, dv], state_tuple)`` with per-head state shapes ``shapes``;
    ``fn`` marked ``_per_head`` is instead ``fn(h)`` returning that function.
    """
    B, T, Hq = q_arrays[0].shape[:3]
    group = Hq // kv_arrays[0].shape[2]
    fn_of_head = fn if getattr(fn, "per_head", False) else (lambda h: fn)
    seqs = _sequences(op, cu_seqlens, B, T)
    init = _check_state(op, initial_state, len(seqs), Hq, shapes)
    o = np.zeros((B, T, Hq, dv))
    finals = [np.zeros((len(seqs), Hq) + tuple(s)) for s in shapes]
    for n, (b, s, e) in enumerate(seqs):
        for h in range(Hq):
            args = ([x[b, s:e, h] for x in q_arrays]
                    + [x[b, s:e, h // group] for x in kv_arrays])
            st = None if init is None else tuple(x[n, h] for x in init)
            oh, sh = fn_of_head(h)(*args, st)
            o[b, s:e, h] = oh
            for f, x in zip(finals, sh):
                f[n, h] = x
    return (o, tuple(finals)) if output_final_state else o


def linear_attention(q, k, v, *, scale=None, normalize=False, eps=1e-6, decay=None,
                     initial_state=None, output_final_state=False, cu_seqlens=None):
    """First-order linear attention (SEMANTICS §1).

    ``o_t = sum_{j<=t} gamma^(t-j) (q_t.k_j) v_j`` with ``q <- scale q``.
    State: ``(P[B,H_q,d,dv],)``; with normalize ``(P, m[B,H_q,d])``.
    """
    op = "linear_attention"
    q, k, v, (B, T, Hq, Hkv, d, dv) = _check_qkv(op, q, k, v)
    scale, gammas, eps = (_check_scale(op, scale, d), _check_decay(op, decay, Hq),
                          _check_eps(op, eps))
    normalize = bool(normalize)
    shapes = [(d, dv)] + ([(d,)] if normalize else [])

    @_per_head
    def fn(h):
        return lambda qh, kh, vh, st: linear_attention_serial(
            qh, kh, vh, gamma=gammas[h], normalize=normalize, eps=eps, state=st)

    return _run(op, fn, [q * scale], [k, v], shapes, dv, initial_state, output_final_state,
                cu_seqlens)


def hla2(q, k, v, *, scale=None, masked=True, normalize=False, eps=1e-6, decay=None,
         ridge=0.0, initial_state=None, output_final_state=False, cu_seqlens=None):
    """Second-order symmetric HLA (SEMANTICS §2), ``q <- scale q``.

    State: masked ``(S[d,d], C[d,dv], G[d,dv])``, normalized
    ``(S, C, m[d], G, h[d])``; unmasked ``(S, C)``, normalized ``(S, C, m)``;
    each with leading ``[B, H_q]``.
    """
    op = "hla2"
    q, k, v, (B, T, Hq, Hkv, d, dv) = _check_qkv(op, q, k, v)
    scale, gammas, eps = (_check_scale(op, scale, d), _check_decay(op, decay, Hq),
                          _check_eps(op, eps))
    lam = _to_float(op, "ridge", ridge)
    if not (math.isfinite(lam) and lam >= 0):
        raise ValueError(f"{op}: ridge must be finite and >= 0, got {ridge!r}")
    masked, normalize = bool(masked), bool(normalize)
    shapes = [(d, d), (d, dv)] + ([(d,)] if normalize else [])
    if masked:
        shapes += [(d, dv)] + ([(d,)] if normalize else [])

    @_per_head
    def fn(h):
        return lambda qh, kh, vh, st: hla2_serial(
            qh, kh, vh, gamma=gammas[h], masked=masked, normalize=normalize, eps=eps,
            ridge=lam, state=st)

    return _run(op, fn, [q * scale], [k, v], shapes, dv, initial_state, output_final_state,
                cu_seqlens)


def ahla(q, k, v, *, scale=None, normalize=False, eps=1e-6, decay=None, initial_state=None,
         output_final_state=False, cu_seqlens=None):
    """Asymmetric second-order HLA (SEMANTICS §3), ``q <- scale q``.

    State: ``(P[d,dv], E[d,dv])``; normalized ``(P, m[d], E, n[d])``.
    """
    op = "ahla"
    q, k, v, (B, T, Hq, Hkv, d, dv) = _check_qkv(op, q, k, v)
    scale, gammas, eps = (_check_scale(op, scale, d), _check_decay(op, decay, Hq),
                          _check_eps(op, eps))
    normalize = bool(normalize)
    shapes = ([(d, dv), (d,), (d, dv), (d,)] if normalize else [(d, dv), (d, dv)])

    @_per_head
    def fn(h):
        return lambda qh, kh, vh, st: ahla_serial(qh, kh, vh, gamma=gammas[h],
                                                  normalize=normalize, eps=eps, state=st)

    return _run(op, fn, [q * scale], [k, v], shapes, dv, initial_state, output_final_state,
                cu_seqlens)


def hla3(q, k, v, *, scale=None, normalize=False, eps=1e-6, decay=None, initial_state=None,
         output_final_state=False, cu_seqlens=None):
    """Third-order HLA (SEMANTICS §4, the causal masked operator), ``q <- scale q``.

    State: ``(S[d,d], P[d,dv], X[d,dv])``; normalized ``(S, P, m[d], X, x[d])``.
    """
    op = "hla3"
    q, k, v, (B, T, Hq, Hkv, d, dv) = _check_qkv(op, q, k, v)
    scale, gammas, eps = (_check_scale(op, scale, d), _check_decay(op, decay, Hq),
                          _check_eps(op, eps))
    normalize = bool(normalize)
    shapes = ([(d, d), (d, dv), (d,), (d, dv), (d,)] if normalize
              else [(d, d), (d, dv), (d, dv)])

    @_per_head
    def fn(h):
        return lambda qh, kh, vh, st: hla3_serial(qh, kh, vh, gamma=gammas[h],
                                                  normalize=normalize, eps=eps, state=st)

    return _run(op, fn, [q * scale], [k, v], shapes, dv, initial_state, output_final_state,
                cu_seqlens)


def linsimp(q, k, v, r, u, *, omega, window=64, kernel="favor", scale=None,
            initial_state=None, output_final_state=False, cu_seqlens=None):
    """Linearized 2-simplicial attention (SEMANTICS §5); ``tau = scale``.

    ``r`` [B,T,H_kv,d] and ``u`` [B,T,H_kv,dv] are the anchor keys/values,
    ``omega`` [m, d] the random feature matrix (see ``linsimp_omega``). q is
    not pre-multiplied: tau enters as ``tau**0.5`` on the query/anchor and key
    sides of the feature map (favor) or as ``exp(tau ...)`` (exact).

    The favor kernel only approximates the exact one when the inputs have
    small norm (entries of std ~0.5 give an error ~0.7/sqrt(m); std 1 gives
    ~100% at any m).

    favor state: ``(M[m,dv], a[m], anchor_r[W-1,d], anchor_u[W-1,dv],
    anchor_valid[W-1])``: the last W-1 tokens' (r, u), oldest first, with
    ``anchor_valid`` 1.0 for real anchors and 0.0 for the zero padding left at
    the front of a sequence shorter than W-1. Initial anchors precede token 0
    in the window. The exact kernel is stateless.
    """
    op = "linsimp"
    q, k, v, (B, T, Hq, Hkv, d, dv) = _check_qkv(op, q, k, v)
    r = _check_kv_like(op, "r", r, B, T, Hkv, (d,))
    u = _check_kv_like(op, "u", u, B, T, Hkv, (dv,))
    omega = _f64(omega)
    if omega.ndim != 2 or omega.shape[1] != d or omega.shape[0] < 1:
        raise ValueError(f"{op}: omega must have shape [m, d={d}] with m >= 1, got {omega.shape}")
    if not isinstance(window, numbers.Integral) or isinstance(window, bool) or window < 1:
        raise ValueError(f"{op}: window must be an integer >= 1, got {window!r}")
    window = int(window)
    if kernel not in ("favor", "exact"):
        raise ValueError(f"{op}: kernel must be 'favor' or 'exact', got {kernel!r}")
    tau = _check_scale(op, scale, d)
    m = omega.shape[0]
    if kernel == "exact":
        if initial_state is not None or output_final_state:
            raise ValueError(f"{op}: kernel='exact' is stateless; initial_state and "
                             f"output_final_state are only supported with kernel='favor'")

        def fn(qh, kh, vh, rh, uh, st):
            o = linsimp_definition(qh, kh, vh, rh, uh, omega, window=window, tau=tau,
                                   kernel="exact")
            return o, ()

        return _run(op, fn, [q], [k, v, r, u], [], dv, None, False, cu_seqlens)

    shapes = [(m, dv), (m,), (window - 1, d), (window - 1, dv), (window - 1,)]
    if initial_state is not None and len(initial_state) == 5:
        valid = _f64(initial_state[4])
        if not np.all((valid == 0.0) | (valid == 1.0)):
            raise ValueError(f"{op}: initial_state[4] (anchor_valid) must hold only 0.0 and 1.0")

    def fn(qh, kh, vh, rh, uh, st):
        return linsimp_serial(qh, kh, vh, rh, uh, omega, window=window, tau=tau, state=st)

    return _run(op, fn, [q], [k, v, r, u], shapes, dv, initial_state, output_final_state,
                cu_seqlens)


def kda(q, k, v, *, g, beta, scale=None, initial_state=None, output_final_state=False,
        cu_seqlens=None):
    """Kimi Delta Attention (SEMANTICS §6)::

        S_t = (I - beta_t k_t k_t^T) Diag(exp g_t) S_{t-1} + beta_t k_t v_t^T
        o_t = S_t^T (scale q_t)

    ``g`` [B,T,H_kv,dk] is the log-decay (<= 0), ``beta`` [B,T,H_kv] in [0, 1]
    (the page's open interval (0, 1) plus its harmless end points).
    State: ``(S[B,H_q,dk,dv],)``.
    """
    op = "kda"
    q, k, v, (B, T, Hq, Hkv, dk, dv) = _check_qkv(op, q, k, v)
    g = _check_kv_like(op, "g", g, B, T, Hkv, (dk,))
    beta = _check_kv_like(op, "beta", beta, B, T, Hkv, ())
    if np.any(~(g <= 0.0)):
        raise ValueError(f"{op}: g is a log-decay and must be <= 0 everywhere")
    if np.any(~((beta >= 0.0) & (beta <= 1.0))):
        raise ValueError(f"{op}: beta must lie in [0, 1]")
    scale = _check_scale(op, scale, dk)

    def fn(qh, kh, vh, gh, bh, st):
        return kda_serial(qh, kh, vh, gh, bh, state=st)

    return _run(op, fn, [q * scale], [k, v, g, beta], [(dk, dv)], dv, initial_state,
                output_final_state, cu_seqlens)
