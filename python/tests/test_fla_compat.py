"""hla.fla: flash-linear-attention's entry points, tested against FLA's
documented behaviour (its docstrings and reference formulas), written out
here as float64 torch recurrences — not against hla's own reference."""

from __future__ import annotations

import numpy as np
import pytest

from .api_util import needs_artefacts, needs_torch, rel_err, torch

pytestmark = [needs_torch, needs_artefacts]

B, T, H, K, V = 2, 21, 2, 16, 8  # T: not a multiple of any chunk


def _rand(seed, *shape, scale=1.0, positive=False):
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(seed)) * scale
    return x.abs() if positive else x


def _qkv(seed, positive=False, b=B, h=H, hv=None):
    hv = h if hv is None else hv
    return (_rand(seed, b, T, h, K, scale=K ** -0.5, positive=positive),
            _rand(seed + 1, b, T, h, K, scale=K ** -0.5, positive=positive),
            _rand(seed + 2, b, T, hv, V))


def linear_attn_recurrence(q, k, v, scale, state=None, z=None, normalize=False,
                           reverse=False):
    """FLA's documented linear attention per sequence, float64: S_t = S_{t-1}
    + k_t v_t^T, o_t = (scale q_t)^T S_t, normalized by (scale q_t) . z_t +
    1e-10 with z_t = z_{t-1} + k_t. Returns (o, S, z); S [B, H, K, V], z
    [B, 1, H, K]."""
    q, k, v = (x.double() for x in (q, k, v))
    b, n, h, _ = q.shape
    S = torch.zeros(b, h, K, v.shape[-1], dtype=torch.float64) if state is None else state.double()
    Z = torch.zeros(b, h, K, dtype=torch.float64) if z is None else z.double()[:, 0]
    o = torch.empty(b, n, h, v.shape[-1], dtype=torch.float64)
    for t in (range(n - 1, -1, -1) if reverse else range(n)):
        S = S + k[:, t, :, :, None] * v[:, t, :, None, :]
        Z = Z + k[:, t]
        num = torch.einsum("bhk,bhkv->bhv", scale * q[:, t], S)
        if normalize:
            num = num / ((scale * q[:, t] * Z).sum(-1, keepdim=True) + 1e-10)
        o[:, t] = num
    return o, S, Z[:, None]


def kda_recurrence(q, k, v, g, beta, scale, state=None):
    """FLA's KDA per sequence, float64: S_t = Diag(exp g_t) S_{t-1};
    S_t += beta_t k_t (v_t - S_t^T k_t)^T; o_t = S_t^T (scale q_t)."""
    q, k, v, g, beta = (x.double() for x in (q, k, v, g, beta))
    b, n, h, _ = q.shape
    S = torch.zeros(b, h, K, v.shape[-1], dtype=torch.float64) if state is None else state.double()
    o = torch.empty(b, n, h, v.shape[-1], dtype=torch.float64)
    for t in range(n):
        S = S * g[:, t].exp()[..., None]
        err = v[:, t] - torch.einsum("bhkv,bhk->bhv", S, k[:, t])
        S = S + beta[:, t, :, None, None] * k[:, t, :, :, None] * err[:, :, None, :]
        o[:, t] = torch.einsum("bhkv,bhk->bhv", S, scale * q[:, t])
    return o, S


def _err(a, b):
    return rel_err(a.detach().double().numpy(), b.detach().double().numpy())


# ---------------------------------------------------------------------------
# Linear attention
# ---------------------------------------------------------------------------

def test_chunk_linear_attn_defaults():
    """normalize=True and scale = K^-1/2 by default; (o, None) without
    output_final_state; o in q's dtype and shape [B, T, H, V]."""
    from hla.fla import chunk_linear_attn
    q, k, v = _qkv(1, positive=True)
    o, final = chunk_linear_attn(q, k, v)
    assert final is None and o.shape == (B, T, H, V) and o.dtype == q.dtype
    want, _, _ = linear_attn_recurrence(q, k, v, K ** -0.5, normalize=True)
    assert _err(o, want) <= 1e-5


def test_chunk_linear_attn_states_chain():
    """normalize=False: initial_state [N, H, K, V] in, final state out;
    two calls chained through the state equal one call."""
    from hla.fla import chunk_linear_attn
    q, k, v = _qkv(2)
    h0 = _rand(5, B, H, K, V)
    o, ht = chunk_linear_attn(q, k, v, scale=0.5, initial_state=h0, output_final_state=True,
                              normalize=False)
    want, S, _ = linear_attn_recurrence(q, k, v, 0.5, state=h0)
    assert ht.shape == (B, H, K, V) and ht.dtype == torch.float32
    assert _err(o, want) <= 1e-5 and _err(ht, S) <= 1e-5
    o1, h1 = chunk_linear_attn(q[:, :9], k[:, :9], v[:, :9], scale=0.5, initial_state=h0,
                               output_final_state=True, normalize=False)
    o2, h2 = chunk_linear_attn(q[:, 9:], k[:, 9:], v[:, 9:], scale=0.5, initial_state=h1,
                               output_final_state=True, normalize=False)
    assert _err(torch.cat([o1, o2], 1), want) <= 1e-5 and _err(h2, S) <= 1e-5


def test_chunk_linear_attn_normalized_state_tuple():
    """normalize=True: initial_state (kv_state, z_state [N, 1, H, K]), the
    final state a tuple of the same shapes."""
    from hla.fla import fused_chunk_linear_attn
    q, k, v = _qkv(3, positive=True)
    h0 = _rand(6, B, H, K, V) * 0.1
    z0 = _rand(7, B, 1, H, K, positive=True)
    o, (ht, zt) = fused_chunk_linear_attn(q, k, v, initial_state=(h0, z0),
                                          output_final_state=True)
    want, S, Z = linear_attn_recurrence(q, k, v, K ** -0.5, state=h0, z=z0, normalize=True)
    assert ht.shape == (B, H, K, V) and zt.shape == (B, 1, H, K)
    assert _err(o, want) <= 1e-5 and _err(ht, S) <= 1e-5 and _err(zt, Z) <= 1e-5


def test_fused_recurrent_linear_attn_reverse_and_varlen():
    """reverse=True scans each packed sequence from its end; normalize is
    off by default here."""
    from hla.fla import fused_recurrent_linear_attn
    q, k, v = _qkv(4, b=1)
    cu = torch.tensor([0, 5, 5, 17, T], dtype=torch.long)
    o, ht = fused_recurrent_linear_attn(q, k, v, output_final_state=True, reverse=True,
                                        cu_seqlens=cu)
    assert ht.shape == (4, H, K, V)
    for n, (s, e) in enumerate(zip(cu.tolist(), cu.tolist()[1:])):
        if s == e:
            assert float(ht[n].abs().max()) == 0.0
            continue
        want, S, _ = linear_attn_recurrence(q[:, s:e], k[:, s:e], v[:, s:e], K ** -0.5,
                                            reverse=True)
        assert _err(o[:, s:e], want) <= 1e-5 and _err(ht[n], S[0]) <= 1e-5


def test_linear_attn_rules():
    from hla.fla import chunk_linear_attn
    q, k, v = _qkv(8)
    cu = torch.tensor([0, 4, T], dtype=torch.long)
    with pytest.raises(ValueError, match="batch size is expected to be 1 rather than 2"):
        chunk_linear_attn(q, k, v, cu_seqlens=cu)
    with pytest.raises(ValueError, match="number of initial states"):
        chunk_linear_attn(q[:1], k[:1], v[:1], cu_seqlens=cu, normalize=False,
                          initial_state=torch.zeros(3, H, K, V))


def test_chunk_linear_attn_gradients():
    """Autograd through hla's derived backward against autograd of the
    float64 recurrence, normalized (FLA's default) and not."""
    from hla.fla import chunk_linear_attn
    for normalize in (False, True):
        q, k, v = _qkv(9, positive=normalize)
        leaves = [x.clone().requires_grad_(True) for x in (q, k, v)]
        exact = [x.double().requires_grad_(True) for x in (q, k, v)]
        grad = _rand(10, B, T, H, V)
        o, _ = chunk_linear_attn(*leaves, normalize=normalize)
        (o * grad).sum().backward()
        want, _, _ = linear_attn_recurrence(*exact, K ** -0.5, normalize=normalize)
        (want * grad.double()).sum().backward()
        for name, a, b in zip("qkv", leaves, exact):
            assert _err(a.grad, b.grad) <= 1e-4, (normalize, name, _err(a.grad, b.grad))


# ---------------------------------------------------------------------------
# KDA
# ---------------------------------------------------------------------------

def _kda_inputs(seed, hv=H):
    q, k, v = _qkv(seed, hv=hv)
    g = -_rand(seed + 3, B, T, hv, K, positive=True) * 0.1
    beta = torch.rand(B, T, hv, generator=torch.Generator().manual_seed(seed + 4))
    return q, k, v, g, beta


def test_chunk_kda_plain():
    from hla.fla import chunk_kda
    q, k, v, g, beta = _kda_inputs(20)
    h0 = _rand(25, B, H, K, V) * 0.1
    o, ht = chunk_kda(q, k, v, g, beta, initial_state=h0, output_final_state=True)
    want, S = kda_recurrence(q, k, v, g, beta, K ** -0.5, state=h0)
    assert o.shape == (B, T, H, V) and ht.shape == (B, H, K, V)
    assert _err(o, want) <= 1e-5 and _err(ht, S) <= 1e-5
    o, none = chunk_kda(q, k, v, g, beta, scale=0.3)
    assert none is None and _err(o, kda_recurrence(q, k, v, g, beta, 0.3)[0]) <= 1e-5


def test_chunk_kda_in_kernel_options_and_gva():
    """Grouped values (HV = 2H: value head i reads q/k head i // 2), the
    gate from A_log and dt_bias, beta logits, q/k L2 normalisation, a V-first
    state."""
    from hla.fla import chunk_kda
    HV = 2 * H
    q, k, v, graw, blogit = _kda_inputs(30, hv=HV)
    blogit = blogit * 4 - 2
    A_log = _rand(35, HV) * 0.5
    dt_bias = _rand(36, HV * K) * 0.5
    h0 = _rand(37, B, HV, V, K) * 0.1  # V-first
    o, ht = chunk_kda(q, k, v, graw, blogit, A_log=A_log, dt_bias=dt_bias,
                      use_gate_in_kernel=True, use_beta_sigmoid_in_kernel=True,
                      use_qk_l2norm_in_kernel=True, initial_state=h0, output_final_state=True,
                      state_v_first=True)
    qn, kn = (x / (x.double().pow(2).sum(-1, keepdim=True) + 1e-6).sqrt() for x in (q, k))
    qn, kn = (x.repeat_interleave(2, dim=2) for x in (qn, kn))
    g = -A_log.double().exp()[:, None] * torch.nn.functional.softplus(
        graw.double() + dt_bias.double().view(HV, K))
    want, S = kda_recurrence(qn, kn, v, g, torch.sigmoid(blogit.double()), K ** -0.5,
                             state=h0.transpose(-1, -2))
    assert o.shape == (B, T, HV, V) and ht.shape == (B, HV, V, K)
    assert _err(o, want) <= 1e-5 and _err(ht, S.transpose(-1, -2)) <= 1e-5


def test_chunk_kda_gradients():
    """Autograd through hla's derived KDA backward against autograd of the
    float64 recurrence, with FLA's in-kernel options (gate from A_log and
    dt_bias, beta logits, q/k L2 normalisation), grouped values, a V-first
    initial state and the final state in the loss: every leaf's gradient."""
    from hla.fla import chunk_kda
    HV = 2 * H
    q, k, v, graw, blogit = _kda_inputs(50, hv=HV)
    blogit = blogit * 4 - 2
    A_log = _rand(55, HV) * 0.5
    dt_bias = _rand(56, HV * K) * 0.5
    h0 = _rand(57, B, HV, V, K) * 0.1
    grad, wfinal = _rand(58, B, T, HV, V), _rand(59, B, HV, V, K)
    leaves = [x.clone().requires_grad_(True) for x in (q, k, v, graw, blogit, A_log, dt_bias, h0)]
    exact = [x.double().requires_grad_(True) for x in (q, k, v, graw, blogit, A_log, dt_bias, h0)]
    o, ht = chunk_kda(*leaves[:5], A_log=leaves[5], dt_bias=leaves[6], use_gate_in_kernel=True,
                      use_beta_sigmoid_in_kernel=True, use_qk_l2norm_in_kernel=True,
                      initial_state=leaves[7], output_final_state=True, state_v_first=True)
    ((o * grad).sum() + (ht * wfinal).sum()).backward()
    xq, xk, xv, xg, xb, xa, xd, xh = exact
    qn, kn = (x / (x.pow(2).sum(-1, keepdim=True) + 1e-6).sqrt() for x in (xq, xk))
    qn, kn = (x.repeat_interleave(2, dim=2) for x in (qn, kn))
    g = -xa.exp()[:, None] * torch.nn.functional.softplus(xg + xd.view(HV, K))
    want, S = kda_recurrence(qn, kn, xv, g, torch.sigmoid(xb), K ** -0.5,
                             state=xh.transpose(-1, -2))
    ((want * grad.double()).sum() + (S.transpose(-1, -2) * wfinal.double()).sum()).backward()
    for name, a, b in zip(("q", "k", "v", "g", "beta", "A_log", "dt_bias", "h0"), leaves, exact):
        assert _err(a.grad, b.grad) <= 1e-4, (name, _err(a.grad, b.grad))


def test_fused_recurrent_kda_lower_bound_gate():
    from hla.fla import fused_recurrent_kda
    q, k, v, graw, beta = _kda_inputs(40)
    dt_bias = _rand(41, H * K) * 0.5
    o, _ = fused_recurrent_kda(q, k, v, graw, beta, dt_bias=dt_bias, use_gate_in_kernel=True,
                               lower_bound=-2.0)
    g = -2.0 * torch.sigmoid(graw.double() + dt_bias.double().view(H, K))
    assert _err(o, kda_recurrence(q, k, v, g, beta, K ** -0.5)[0]) <= 1e-5


def test_kda_rules():
    from hla.fla import chunk_kda
    q, k, v, g, beta = _kda_inputs(50)
    with pytest.raises(ValueError, match="`A_log` must be provided"):
        chunk_kda(q, k, v, g, beta, use_gate_in_kernel=True)
    with pytest.raises(ValueError, match="requires `use_beta_sigmoid_in_kernel=True`"):
        chunk_kda(q, k, v, g, beta, allow_neg_eigval=True)
    with pytest.raises(ValueError, match="safe range"):
        chunk_kda(q, k, v, g, beta, use_gate_in_kernel=True, safe_gate=True, lower_bound=-7.0)
    with pytest.raises(ValueError, match="chunk_size"):
        chunk_kda(q, k, v, g, beta, chunk_size=16)
    with pytest.raises(ValueError, match="float32"):
        chunk_kda(q, k, v, g, beta, initial_state=torch.zeros(B, H, K, V, dtype=torch.float64))
    with pytest.raises(ValueError, match="evenly divisible"):
        chunk_kda(q, k, v[:, :, :1].repeat(1, 1, 3, 1), g, beta)
    with pytest.raises(NotImplementedError, match="return_intermediate_states"):
        chunk_kda(q, k, v, g, beta, return_intermediate_states=True)
    with pytest.raises(TypeError, match="unexpected keyword"):
        chunk_kda(q, k, v, g, beta, no_such_option=1)


def test_module_exports():
    import hla.fla
    assert sorted(hla.fla.__all__) == sorted([
        "chunk_linear_attn", "fused_chunk_linear_attn", "fused_recurrent_linear_attn",
        "chunk_kda", "fused_recurrent_kda"])
    assert np.isclose(hla.fla._NORMALIZE_EPS, 1e-10)
