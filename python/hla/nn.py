"""torch modules over the compiled ops. Importing this module imports torch.

``HLAttention`` is a drop-in attention sublayer: q/k/v projections, the
attention op on ``[B, T, H, D]``, the output projection.
"""

from __future__ import annotations

try:
    import torch
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError("hla.nn needs PyTorch (import torch failed); the functional API "
                      "(hla.hla2, ...) works with numpy alone") from e

from . import _torch_ops, functional

_torch_ops.register()

# Ops whose inputs are just q, k, v: linsimp (anchors, features) and kda
# (gates) need projections of their own and are not offered here yet.
MODULE_OPS = ("linear_attention", "hla2", "ahla", "hla3")
_CALL_OPTIONS = ("chunk_size",)


class HLAttention(torch.nn.Module):
    """Attention sublayer ``x [B, T, d_model] -> [B, T, d_model]``.

    Args:
        d_model: model width.
        n_heads: query heads.
        n_kv_heads: key/value heads (grouped heads; must divide n_heads);
            default n_heads.
        head_dim: features per head; default d_model // n_heads.
        op: "linear_attention", "hla2", "ahla" or "hla3".
        bias: whether the projections have biases.
        learn_decay: the decay rate of each query head is a parameter,
            ``sigmoid(decay_logit)`` (``decay_logit`` [n_heads]), trained
            through the compiler's derived backward; it starts at the
            ``decay`` option (a number or one rate per head; default 0.95).
        **op_options: the op's options, e.g. decay=0.95 (a number, or one
            rate per query head), normalize=True, scale=..., masked=False /
            ridge=... (hla2), chunk_size=...

    ``forward(x, *, initial_state=None, output_final_state=False,
    cu_seqlens=None)`` returns y, or (y, final_state) with the op's state
    layout (docs/HLA.md).
    """

    def __init__(self, d_model, n_heads, n_kv_heads=None, head_dim=None, op="hla2",
                 bias=False, learn_decay=False, **op_options):
        super().__init__()
        if op not in MODULE_OPS:
            raise ValueError(f"HLAttention: op must be one of {MODULE_OPS}, got {op!r}")
        n_kv_heads = n_heads if n_kv_heads is None else n_kv_heads
        for name, value in (("d_model", d_model), ("n_heads", n_heads),
                            ("n_kv_heads", n_kv_heads)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"HLAttention: {name} must be a positive integer, got {value!r}")
        if n_heads % n_kv_heads != 0:
            raise ValueError(f"HLAttention: n_heads = {n_heads} must be a multiple of "
                             f"n_kv_heads = {n_kv_heads}")
        if head_dim is None:
            if d_model % n_heads != 0:
                raise ValueError(f"HLAttention: d_model = {d_model} is not divisible by "
                                 f"n_heads = {n_heads}; pass head_dim")
            head_dim = d_model // n_heads
        if isinstance(head_dim, bool) or not isinstance(head_dim, int) or head_dim < 1:
            raise ValueError(f"HLAttention: head_dim must be a positive integer, got {head_dim!r}")
        allowed = set(functional.OP_ATTRIBUTES[op]) | set(_CALL_OPTIONS)
        unknown = sorted(set(op_options) - allowed)
        if unknown:
            raise TypeError(f"HLAttention: unknown option(s) {unknown} for op {op!r} "
                            f"(known: {sorted(allowed)})")
        self.d_model, self.n_heads, self.n_kv_heads = d_model, n_heads, n_kv_heads
        self.head_dim, self.op, self.op_options = head_dim, op, dict(op_options)
        self._attend = getattr(functional, op)
        self.q_proj = torch.nn.Linear(d_model, n_heads * head_dim, bias=bias)
        self.k_proj = torch.nn.Linear(d_model, n_kv_heads * head_dim, bias=bias)
        self.v_proj = torch.nn.Linear(d_model, n_kv_heads * head_dim, bias=bias)
        self.o_proj = torch.nn.Linear(n_heads * head_dim, d_model, bias=bias)
        self.learn_decay = bool(learn_decay)
        if self.learn_decay:
            start = self.op_options.pop("decay", None)
            start = torch.full((n_heads,), 0.95) if start is None else \
                torch.as_tensor(start, dtype=torch.float32).expand(n_heads).clone()
            if not bool(((start > 0) & (start < 1)).all()):
                raise ValueError(f"HLAttention: a learned decay starts strictly between 0 "
                                 f"and 1, got {start.tolist()}")
            self.decay_logit = torch.nn.Parameter(torch.log(start) - torch.log1p(-start))

    def extra_repr(self):
        options = "".join(f", {k}={v!r}" for k, v in sorted(self.op_options.items()))
        learned = ", learn_decay=True" if self.learn_decay else ""
        return (f"d_model={self.d_model}, n_heads={self.n_heads}, n_kv_heads={self.n_kv_heads}, "
                f"head_dim={self.head_dim}, op={self.op!r}{learned}{options}")

    def forward(self, x, *, initial_state=None, output_final_state=False, cu_seqlens=None):
        if x.dim() != 3 or x.shape[-1] != self.d_model:
            raise ValueError(f"HLAttention: x must be [B, T, d_model = {self.d_model}], got "
                             f"{list(x.shape)}")
        B, T = x.shape[0], x.shape[1]
        q = self.q_proj(x).view(B, T, self.n_heads, self.head_dim)
        k = self.k_proj(x).view(B, T, self.n_kv_heads, self.head_dim)
        v = self.v_proj(x).view(B, T, self.n_kv_heads, self.head_dim)
        options = dict(self.op_options)
        if self.learn_decay:
            options["decay"] = torch.sigmoid(self.decay_logit)
        result = self._attend(q, k, v, initial_state=initial_state,
                              output_final_state=output_final_state, cu_seqlens=cu_seqlens,
                              **options)
        o, state = result if output_final_state else (result, None)
        y = self.o_proj(o.reshape(B, T, self.n_heads * self.head_dim))
        return (y, state) if output_final_state else y
