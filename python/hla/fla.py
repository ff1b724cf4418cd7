"""flash-linear-attention's entry points over hla's compiled ops.

An FLA user swaps an import::

    from fla.ops.linear_attn import chunk_linear_attn   # before
    from hla.fla import chunk_linear_attn               # after

and keeps the call: the same names, positional order, keywords, defaults
and return values as FLA's documented functions — tensors ``[B, T, H, K]``,
``scale=None`` meaning ``K ** -0.5``, ``(o, final_state)`` with
``final_state`` None unless ``output_final_state``, ``initial_state`` as
FLA's tensors, ``cu_seqlens`` with batch 1. What FLA computes in fused
kernels (the KDA gate, the β sigmoid, q/k L2 normalisation) is computed
here with torch before hla's op, so autograd sees it. Gradients flow where
hla derives the backward (linear attention without states or packed
sequences; see docs/TRAINING.md); KDA is forward-only for now.

Options that change only how FLA schedules its kernels (``disable_recompute``,
``cu_seqlens_cpu``, ``chunk_size`` 32 or 64) are accepted and have no
effect on the result; options hla cannot honour raise NotImplementedError.
"""

from __future__ import annotations

from . import functional

__all__ = ["chunk_linear_attn", "fused_chunk_linear_attn", "fused_recurrent_linear_attn",
           "chunk_kda", "fused_recurrent_kda"]

# FLA's denominator: <scale q_t, z_t> + 1e-10 (fla/ops/linear_attn/utils.py).
_NORMALIZE_EPS = 1e-10
# FLA's L2 normalisation: x / sqrt(sum(x^2) + 1e-6) (fla/modules/l2norm.py).
_L2NORM_EPS = 1e-6


def _torch():
    import torch
    return torch


def _check_varlen(name, q, initial_state, cu_seqlens):
    """FLA's rules for packed sequences, with its messages."""
    if cu_seqlens is None:
        return
    if q.shape[0] != 1:
        raise ValueError(f"hla.fla.{name}: The batch size is expected to be 1 rather than "
                         f"{q.shape[0]} when using `cu_seqlens`. Please flatten "
                         f"variable-length inputs before processing.")
    if initial_state is not None and initial_state.shape[0] != len(cu_seqlens) - 1:
        raise ValueError(f"hla.fla.{name}: The number of initial states is expected to be "
                         f"equal to the number of input sequences, i.e., {len(cu_seqlens) - 1} "
                         f"rather than {initial_state.shape[0]}.")


def _reverse_time(x, cu_seqlens):
    """x with each sequence's tokens in reverse order (dim 1)."""
    torch = _torch()
    if cu_seqlens is None:
        return x.flip(1)
    bounds = [int(c) for c in cu_seqlens.tolist()]
    functional.check_cu_seqlens_values("linear_attention", bounds, x.shape[1])
    index = torch.cat([torch.arange(e - 1, s - 1, -1) for s, e in zip(bounds, bounds[1:])]
                      + [torch.arange(0)]).to(x.device)
    return x.index_select(1, index)


def _linear_attn(name, q, k, v, scale, initial_state, output_final_state, normalize,
                 cu_seqlens, reverse=False):
    torch = _torch()
    if normalize and isinstance(initial_state, tuple):
        kv_init, z_init = initial_state
    else:
        kv_init, z_init = initial_state, None
    _check_varlen(name, q, kv_init, cu_seqlens)
    if scale is None:
        scale = q.shape[-1] ** -0.5
    state = None
    if kv_init is not None:
        state = (kv_init,)
        if normalize:
            # FLA's z_state is [N, 1, H, K]; hla's normaliser state m is [N, H, K].
            z = (torch.zeros(kv_init.shape[:3], dtype=torch.float32, device=kv_init.device)
                 if z_init is None else z_init.reshape(kv_init.shape[:3]))
            state = (kv_init, z)
    elif z_init is not None:
        raise ValueError(f"hla.fla.{name}: a z_state without a kv_state; pass "
                         f"initial_state=(kv_state, z_state)")
    if reverse:
        q, k, v = (_reverse_time(x, cu_seqlens) for x in (q, k, v))
    result = functional.linear_attention(
        q, k, v, scale=float(scale), normalize=bool(normalize), eps=_NORMALIZE_EPS,
        initial_state=state, output_final_state=bool(output_final_state),
        cu_seqlens=cu_seqlens)
    o, final = result if output_final_state else (result, None)
    if reverse:
        o = _reverse_time(o, cu_seqlens)
    if final is not None:
        final = (final[0], final[1].unsqueeze(1)) if normalize else final[0]
    return o, final


def chunk_linear_attn(q, k, v, scale=None, initial_state=None, output_final_state=False,
                      normalize=True, cu_seqlens=None):
    """FLA's ``fla.ops.linear_attn.chunk_linear_attn``: ``o_t = sum_{j<=t}
    (scale q_t . k_j) v_j``, divided by ``scale q_t . sum_{j<=t} k_j + 1e-10``
    when ``normalize`` (the default). ``initial_state``: ``[N, H, K, V]``, or
    with ``normalize`` a tuple ``(kv_state, z_state [N, 1, H, K])``; the
    final state mirrors it."""
    return _linear_attn("chunk_linear_attn", q, k, v, scale, initial_state,
                        output_final_state, normalize, cu_seqlens)


def fused_chunk_linear_attn(q, k, v, scale=None, initial_state=None, output_final_state=False,
                            normalize=True, cu_seqlens=None):
    """FLA's ``fused_chunk_linear_attn``: the same function as
    ``chunk_linear_attn`` (FLA's two differ in kernel schedule only)."""
    return _linear_attn("fused_chunk_linear_attn", q, k, v, scale, initial_state,
                        output_final_state, normalize, cu_seqlens)


def fused_recurrent_linear_attn(q, k, v, scale=None, initial_state=None,
                                output_final_state=False, reverse=False, normalize=False,
                                cu_seqlens=None):
    """FLA's ``fused_recurrent_linear_attn`` (``normalize`` off by default);
    ``reverse`` scans each sequence from its last token to its first."""
    return _linear_attn("fused_recurrent_linear_attn", q, k, v, scale, initial_state,
                        output_final_state, normalize, cu_seqlens, reverse=bool(reverse))


def _kda_gate(g, A_log, dt_bias, lower_bound):
    """FLA's in-kernel KDA gate (fla/ops/kda/gate.py), in float32."""
    torch = _torch()
    HV = g.shape[2]
    x = g.float()
    if dt_bias is not None:
        x = x + dt_bias.float().view(HV, -1)
    if lower_bound is not None:
        if A_log is not None:
            x = A_log.float().exp().view(HV, 1) * x
        return lower_bound * torch.sigmoid(x)
    return -A_log.float().exp().view(HV, 1) * torch.nn.functional.softplus(x)


def _l2norm(x):
    torch = _torch()
    return x * torch.rsqrt((x.float() * x.float()).sum(-1, keepdim=True) + _L2NORM_EPS).to(x.dtype)


def _kda(name, q, k, v, g, beta, *, A_log, dt_bias, scale, initial_state, output_final_state,
         use_qk_l2norm_in_kernel, use_gate_in_kernel, use_beta_sigmoid_in_kernel,
         allow_neg_eigval, lower_bound, state_v_first, cu_seqlens):
    torch = _torch()
    _check_varlen(name, q, initial_state, cu_seqlens)
    if use_gate_in_kernel and A_log is None and lower_bound is None:
        raise ValueError(f"hla.fla.{name}: `A_log` must be provided when "
                         f"`use_gate_in_kernel=True` and `lower_bound` is not set.")
    if allow_neg_eigval and not use_beta_sigmoid_in_kernel:
        raise ValueError(f"hla.fla.{name}: `allow_neg_eigval=True` requires "
                         f"`use_beta_sigmoid_in_kernel=True`.")
    if initial_state is not None and initial_state.dtype != torch.float32:
        raise ValueError(f"hla.fla.{name}: initial_state must be in float32, got "
                         f"{initial_state.dtype}")
    if q.shape != k.shape:
        raise ValueError(f"hla.fla.{name}: q and k must have the same shape, got "
                         f"q={list(q.shape)} vs k={list(k.shape)}")
    B, T, H, K = q.shape
    HV = v.shape[2]
    if HV % H != 0:
        raise ValueError(f"hla.fla.{name}: For GVA, num_v_heads (HV={HV}) must be evenly "
                         f"divisible by num_qk_heads (H={H})")
    if tuple(g.shape) != (B, T, HV, K) or tuple(beta.shape) != (B, T, HV):
        raise ValueError(f"hla.fla.{name}: g must be [B, T, HV, K] = {[B, T, HV, K]} and beta "
                         f"[B, T, HV] = {[B, T, HV]}, got {list(g.shape)} and "
                         f"{list(beta.shape)}")
    if use_qk_l2norm_in_kernel:
        q, k = _l2norm(q), _l2norm(k)
    if use_gate_in_kernel:  # lower_bound means nothing without the gate
        g = _kda_gate(g, A_log, dt_bias, lower_bound)
    if use_beta_sigmoid_in_kernel:
        beta = torch.sigmoid(beta.float()) * (2.0 if allow_neg_eigval else 1.0)
    # FLA's grouped values: value head i reads query/key head i // (HV / H).
    if HV != H:
        q, k = (x.repeat_interleave(HV // H, dim=2) for x in (q, k))
    g, beta = g.to(q.dtype), beta.to(q.dtype)
    state = None
    if initial_state is not None:
        state = (initial_state.transpose(-1, -2) if state_v_first else initial_state,)
    result = functional.kda(q, k, v, g=g, beta=beta, scale=None if scale is None else
                            float(scale), initial_state=state,
                            output_final_state=bool(output_final_state), cu_seqlens=cu_seqlens)
    o, final = result if output_final_state else (result, None)
    if final is not None:
        final = final[0].transpose(-1, -2) if state_v_first else final[0]
    return o, final


def chunk_kda(q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False,
              use_qk_l2norm_in_kernel=False, use_gate_in_kernel=False,
              use_beta_sigmoid_in_kernel=False, allow_neg_eigval=False, safe_gate=False,
              lower_bound=None, disable_recompute=False, return_intermediate_states=False,
              state_v_first=False, cu_seqlens=None, cu_seqlens_cpu=None, cp_context=None,
              **kwargs):
    """FLA's ``fla.ops.kda.chunk_kda`` (Kimi Delta Attention): q, k
    ``[B, T, H, K]``, v ``[B, T, HV, V]``, g ``[B, T, HV, K]`` (log decay, or
    the gate's raw input with ``use_gate_in_kernel`` and ``A_log``,
    ``dt_bias`` keywords), beta ``[B, T, HV]``; returns ``(o [B, T, HV, V],
    final_state [N, HV, K, V] or None)``."""
    if return_intermediate_states:
        raise NotImplementedError("hla.fla.chunk_kda: return_intermediate_states is not "
                                  "supported (hla keeps no per-chunk states for callers)")
    if cp_context is not None:
        raise NotImplementedError("hla.fla.chunk_kda: cp_context (context parallelism) is "
                                  "not supported")
    if "transpose_state_layout" in kwargs:
        state_v_first = state_v_first or bool(kwargs.pop("transpose_state_layout"))
    chunk_size = kwargs.pop("chunk_size", 64)
    if chunk_size not in (32, 64):
        raise ValueError(f"hla.fla.chunk_kda: `chunk_size` must be either 32 or 64 for KDA, "
                         f"got {chunk_size}.")
    A_log, dt_bias = kwargs.pop("A_log", None), kwargs.pop("dt_bias", None)
    if kwargs:
        raise TypeError(f"hla.fla.chunk_kda: unexpected keyword arguments {sorted(kwargs)}")
    if safe_gate and use_gate_in_kernel:
        if lower_bound is None:
            raise ValueError("hla.fla.chunk_kda: `lower_bound` must be specified when "
                             "`safe_gate=True` and `use_gate_in_kernel=True`.")
        if not (-5 <= lower_bound < 0):
            raise ValueError(f"hla.fla.chunk_kda: `lower_bound` must be in the safe range "
                             f"[-5, 0), got {lower_bound}.")
    return _kda("chunk_kda", q, k, v, g, beta, A_log=A_log, dt_bias=dt_bias, scale=scale,
                initial_state=initial_state, output_final_state=output_final_state,
                use_qk_l2norm_in_kernel=use_qk_l2norm_in_kernel,
                use_gate_in_kernel=use_gate_in_kernel,
                use_beta_sigmoid_in_kernel=use_beta_sigmoid_in_kernel,
                allow_neg_eigval=allow_neg_eigval,
                lower_bound=lower_bound,
                state_v_first=state_v_first, cu_seqlens=cu_seqlens)


def fused_recurrent_kda(q, k, v, g, beta, A_log=None, dt_bias=None, scale=None,
                        initial_state=None, output_final_state=False,
                        use_qk_l2norm_in_kernel=False, use_gate_in_kernel=False,
                        use_beta_sigmoid_in_kernel=False, allow_neg_eigval=False,
                        lower_bound=None, state_v_first=False, cu_seqlens=None, **kwargs):
    """FLA's ``fla.ops.kda.fused_recurrent_kda``: ``chunk_kda``'s function
    with ``A_log`` and ``dt_bias`` as parameters."""
    if "transpose_state_layout" in kwargs:
        state_v_first = state_v_first or bool(kwargs.pop("transpose_state_layout"))
    if kwargs:
        raise TypeError(f"hla.fla.fused_recurrent_kda: unexpected keyword arguments "
                        f"{sorted(kwargs)}")
    return _kda("fused_recurrent_kda", q, k, v, g, beta, A_log=A_log, dt_bias=dt_bias,
                scale=scale, initial_state=initial_state,
                output_final_state=output_final_state,
                use_qk_l2norm_in_kernel=use_qk_l2norm_in_kernel,
                use_gate_in_kernel=use_gate_in_kernel,
                use_beta_sigmoid_in_kernel=use_beta_sigmoid_in_kernel,
                allow_neg_eigval=allow_neg_eigval,
                lower_bound=lower_bound,
                state_v_first=state_v_first, cu_seqlens=cu_seqlens)
