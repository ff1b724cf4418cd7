"""``torch.ops.hla.*``: the attention ops as torch custom operators.

torch.compile must treat a compiled attention op as one opaque call with a
known output shape, never trace into ctypes. So each op is registered as a
custom operator whose real kernel is ``functional.execute`` and whose fake
(meta) kernel only computes shapes:

* torch >= 2.4: ``torch.library.custom_op("hla::<op>", mutates_args=())``
  with ``register_fake`` and ``register_autograd``;
* older torch (1.13 is Debian 12's): ``torch.library.Library("hla", "DEF")``
  definitions, the kernel for the CPU and CUDA keys, the shape function for
  Meta, and an ``autograd.Function`` wrapper used by the functional API.

Schema of every op (the same on both paths)::

    hla::<op>(Tensor q, Tensor k, Tensor v, <op's other tensors>,
              Tensor[] initial_state, Tensor? cu_seqlens, <op's attributes>,
              bool output_final_state, int chunk_size
              [, Tensor? head_decay=None]) -> Tensor[]

with the attributes resolved (``scale`` a number, ``decay`` 1.0 for none,
``chunk_size`` 0 for the compiler's default) and the result ``[o, *state]``.
The ops with a decay end with ``head_decay``, the rates per query head (f32
[H_q], differentiable), or None (the default) for the ``decay`` attribute.

Backward: for the ops in ``functional.DIFFERENTIABLE`` on the CPU and
CUDA, the gradients of q, k, v and the initial state (from the output's
and the final state's cotangents) come from the backward the compiler
derives from the op's monoid (``functional.execute_backward``), grouped
K/V heads included (the compiler sums k's and v's gradients over each
group); packed sequences as a zero-padded batch. Everything else (other ops, the final state of packed
sequences) raises NotImplementedError saying so.
"""

from __future__ import annotations

import contextlib
import threading

import torch

from . import _tensors, functional

_ATTRIBUTE_TYPES = {"scale": "float", "masked": "bool", "normalize": "bool", "eps": "float",
                    "decay": "float", "ridge": "float", "window": "int", "kernel": "str"}

_lock = threading.Lock()
_registered = False
_uses_custom_op = False
_library = None  # the old path's torch.library.Library; ops live as long as it does


def _has_head_decay(op):
    return "decay" in functional.OP_ATTRIBUTES[op]


def schema(op):
    """The op's schema without its name, e.g. "(Tensor q, ...) -> Tensor[]"."""
    args = [f"Tensor {name}" for name in functional.operand_names(op)]
    args += ["Tensor[] initial_state", "Tensor? cu_seqlens"]
    args += [f"{_ATTRIBUTE_TYPES[a]} {a}" for a in functional.OP_ATTRIBUTES[op]]
    args += ["bool output_final_state", "int chunk_size"]
    if _has_head_decay(op):
        args.append("Tensor? head_decay=None")
    return "(" + ", ".join(args) + ") -> Tensor[]"


def _unpack(op, args):
    """Schema-ordered arguments -> (tensors, states, cu, head_decay, attrs,
    final, chunk)."""
    n = len(functional.operand_names(op))
    names = functional.OP_ATTRIBUTES[op]
    tensors = list(args[:n])
    states = list(args[n])
    cu = args[n + 1]
    rest = list(args[n + 2:])
    attrs = dict(zip(names, rest[:len(names)]))
    output_final_state = bool(rest[len(names)])
    chunk_size = int(rest[len(names) + 1]) or None
    tail = rest[len(names) + 2:]
    head_decay = tail[0] if tail else None
    return tensors, states, cu, head_decay, attrs, output_final_state, chunk_size


def _pack(op, tensors, states, cu, head_decay, attrs, output_final_state, chunk_size):
    rates = (head_decay,) if _has_head_decay(op) else ()
    return (*tensors, list(states), cu, *[attrs[a] for a in functional.OP_ATTRIBUTES[op]],
            bool(output_final_state), int(chunk_size or 0), *rates)


def _kernel(op):
    def kernel(*args):
        tensors, states, cu, head_decay, attrs, final, chunk = _unpack(op, args)
        target = tensors[0].device.type
        return functional.execute(op, tensors, states, cu, attrs, final, chunk, target,
                                  head_decay)

    kernel.__name__ = f"hla_{op}_kernel"
    return kernel


def _fake(op):
    def fake(*args):
        tensors, _, cu, _, attrs, final, _ = _unpack(op, args)
        q, v = tensors[0], tensors[2]
        outputs = [q.new_empty((q.shape[0], q.shape[1], q.shape[2], v.shape[3]))]
        if final:
            n = q.shape[0] if cu is None else cu.shape[0] - 1
            outputs += [q.new_empty(s, dtype=torch.float32)
                        for s in functional.state_shapes(op, tensors, attrs, n)]
        return outputs

    fake.__name__ = f"hla_{op}_fake"
    return fake


def _no_backward(op, why):
    return NotImplementedError(f"hla.{op}: backward is not implemented {why}")


# Packed sequences are differentiated as a padded batch whose length is
# rounded up to this multiple, so that batches whose longest sequence
# differs a little share one compiled backward.
PADDED_LENGTH_MULTIPLE = 64


def _padding_index(cu):
    """For packed offsets ``cu`` (N + 1): [N, L] positions into the tokens
    (L: the longest sequence, rounded up) and the mask of real ones."""
    bounds = [int(c) for c in cu.tolist()]
    longest = max([b - a for a, b in zip(bounds, bounds[1:])] + [1])
    L = -(-longest // PADDED_LENGTH_MULTIPLE) * PADDED_LENGTH_MULTIPLE
    steps = torch.arange(L, device=cu.device)
    starts = cu[:-1].to(torch.long).unsqueeze(1)
    valid = steps.unsqueeze(0) < (cu[1:] - cu[:-1]).to(torch.long).unsqueeze(1)
    index = torch.where(valid, starts + steps, torch.zeros_like(starts + steps))
    return index, valid


def _packed_input_gradients(op, operands, states, cu, attrs, chunk_size, grad,
                            head_decay=None):
    """(d(operands)..., *d(states)) of packed sequences (batch 1): each sequence
    becomes a row of a zero-padded batch (its initial state that row's).
    The pads come after a sequence's tokens and their output cotangent is
    zero, so by causality they change no real token's gradient nor the
    initial state's."""
    index, valid = _padding_index(cu)

    def pad(x):
        rows = x[0][index.reshape(-1)].reshape(index.shape + x.shape[2:])
        ones = (1,) * (x.dim() - 2)
        return rows * valid.reshape(valid.shape + ones).to(rows.dtype)

    # Every operand but linsimp's omega has a row per token.
    tokens = len(operands) - (1 if op == "linsimp" else 0)
    padded = _input_gradients(op, [pad(x) for x in operands[:tokens]] + list(operands[tokens:]),
                              states, None, attrs, chunk_size, [pad(grad)], head_decay)
    out = []
    for x, d in zip(operands[:tokens], padded):
        unpadded = torch.zeros_like(x)
        unpadded[0].index_put_((index[valid],), d[valid])
        out.append(unpadded)
    return (*out, *padded[tokens:])


def _check_derived(op, attrs):
    """Raises where the compiler derives no backward (known before running)."""
    why = functional.underived_backward(op, attrs)
    if why is not None:
        raise _no_backward(op, why)


def _output_cotangent(q, v, grad):
    """The output's cotangent; zeros where autograd passes none."""
    return grad if grad is not None else torch.zeros(
        q.shape[:3] + v.shape[3:], dtype=q.dtype, device=q.device)


def _final_cotangents(op, operands, states, cu, attrs, grads):
    """The final state's cotangents (zeros where autograd passes none), or
    [] when it passes none at all."""
    if all(g is None for g in grads):
        return []
    if states:
        shapes = [s.shape for s in states]
    else:
        n = operands[0].shape[0] if cu is None else cu.shape[0] - 1
        shapes = functional.state_shapes(op, operands, attrs, n)
    q = operands[0]
    return [g.float().contiguous() if g is not None
            else torch.zeros(shape, dtype=torch.float32, device=q.device)
            for g, shape in zip(grads, shapes)]


def _input_gradients(op, operands, states, cu, attrs, chunk_size, grads, head_decay=None):
    """(d(operands)..., *d(states)[, d(head_decay)]) of the output cotangent
    grads[0] and the final state's cotangents grads[1:]; raises where the
    backward is not derived."""
    _check_derived(op, attrs)
    q, v = operands[0], operands[2]
    target = {"cpu": "cpu", "cuda": "cuda"}.get(q.device.type)
    if target is None:
        raise _no_backward(op, f"on {q.device.type} (the derived backward runs on the CPU "
                               f"and on CUDA)")
    grad = _output_cotangent(q, v, grads[0])
    finals = _final_cotangents(op, operands, states, cu, attrs, grads[1:])
    if cu is not None:
        if finals and any(bool(f.any()) for f in finals):
            raise _no_backward(op, "through the final state of packed sequences yet")
        return _packed_input_gradients(op, operands, states, cu, attrs, chunk_size, grad,
                                       head_decay)
    return tuple(functional.execute_backward(
        op, [x.detach() for x in operands], grad.to(q.dtype).contiguous(), attrs,
        chunk_size, target, [s.detach().float() for s in states], finals,
        None if head_decay is None else head_decay.detach().float()))


def _vjp_schema(op):
    """hla::<op>_vjp: the derived backward as an opaque op, so that
    AOTAutograd traces a backward graph around it (torch.compile of a
    training step) instead of into ctypes."""
    args = [f"Tensor {name}" for name in functional.operand_names(op)]
    args += ["Tensor[] initial_state", "Tensor grad", "Tensor[] state_grads",
             "Tensor? cu_seqlens"]
    args += [f"{_ATTRIBUTE_TYPES[a]} {a}" for a in functional.OP_ATTRIBUTES[op]]
    args += ["int chunk_size"]
    if _has_head_decay(op):
        args.append("Tensor? head_decay=None")
    return "(" + ", ".join(args) + ") -> Tensor[]"


def _vjp_kernel(op):
    n = len(functional.operand_names(op))

    def kernel(*args):
        operands = list(args[:n])
        initial_state, grad, state_grads, cu, *rest = args[n:]
        names = functional.OP_ATTRIBUTES[op]
        attrs = dict(zip(names, rest[:len(names)]))
        chunk = int(rest[len(names)]) or None
        tail = rest[len(names) + 1:]
        head_decay = tail[0] if tail else None
        return list(_input_gradients(op, operands, list(initial_state), cu, attrs, chunk,
                                     [grad, *state_grads], head_decay))

    kernel.__name__ = f"hla_{op}_vjp"
    return kernel


def _vjp_fake(op):
    n = len(functional.operand_names(op))

    def fake(*args):
        operands, initial_state = args[:n], args[n]
        tail = args[n + 4 + len(functional.OP_ATTRIBUTES[op]) + 1:]
        head_decay = tail[0] if tail else None
        return [*[torch.empty_like(x) for x in operands],
                *[torch.empty_like(s) for s in initial_state],
                *([] if head_decay is None else [torch.empty_like(head_decay)])]

    fake.__name__ = f"hla_{op}_vjp_fake"
    return fake


def _setup_context(op):
    def setup_context(ctx, inputs, output):
        tensors, states, cu, head_decay, attrs, _, chunk = _unpack(op, inputs)
        ctx.save_for_backward(*tensors, *states, *([cu] if cu is not None else []),
                              *([head_decay] if head_decay is not None else []))
        ctx.hla = (len(tensors), len(states), cu is not None, head_decay is not None, attrs,
                   chunk)

    return setup_context


def _backward(op):
    def backward(ctx, *grads):
        flat = []
        for g in grads:  # Tensor[] outputs come as one list
            flat.extend(g if isinstance(g, (list, tuple)) else [g])
        n_tensors, n_states, has_cu, has_rates, attrs, chunk = ctx.hla
        saved = list(ctx.saved_tensors)
        head_decay = saved.pop() if has_rates else None
        cu = saved.pop() if has_cu else None
        _check_derived(op, attrs)
        tensors, states = saved[:n_tensors], saved[n_tensors:]
        q, v = tensors[0], tensors[2]
        finals = _final_cotangents(op, tensors, states, cu, attrs, flat[1:])
        rates = (head_decay,) if _has_head_decay(op) else ()
        d = getattr(torch.ops.hla, op + "_vjp")(
            *tensors, states, _output_cotangent(q, v, flat[0]), finals, cu,
            *[attrs[a] for a in functional.OP_ATTRIBUTES[op]], int(chunk or 0), *rates)
        # One entry per schema argument, the Tensor[] of states as a list:
        # (operands..., states, cu_seqlens, attributes..., output_final_state,
        # chunk_size[, head_decay]).
        n = len(functional.operand_names(op))
        d = list(d)
        rate_grad = [d.pop()] if has_rates else [None] * len(rates)
        return (*d[:n], list(d[n:]), None, *[None] * len(functional.OP_ATTRIBUTES[op]),
                None, None, *rate_grad)

    return backward


class _Differentiable(torch.autograd.Function):
    """Old torch: the op with the derived backward (or one that says why
    there is none)."""

    @staticmethod
    def forward(ctx, op, n_tensors, n_states, has_cu, has_rates, rest, *tensors):
        ctx.op = op
        operands = list(tensors[:n_tensors])
        states = list(tensors[n_tensors:n_tensors + n_states])
        extra = list(tensors[n_tensors + n_states:])
        cu = extra.pop(0) if has_cu else None
        head_decay = extra.pop(0) if has_rates else None
        attrs, final, chunk = rest
        ctx.save_for_backward(*operands, *states, *([cu] if cu is not None else []),
                              *([head_decay] if head_decay is not None else []))
        ctx.hla = (n_tensors, n_states, has_cu, has_rates, dict(attrs), chunk)
        ctx.set_materialize_grads(False)
        with _below_autograd():  # past our Autograd kernel
            outputs = getattr(torch.ops.hla, op)(
                *_pack(op, operands, states, cu, head_decay, dict(attrs), final, chunk))
        return tuple(outputs)

    @staticmethod
    def backward(ctx, *grads):
        n_tensors, n_states, has_cu, has_rates, attrs, chunk = ctx.hla
        saved = list(ctx.saved_tensors)
        head_decay = saved.pop() if has_rates else None
        cu = saved.pop() if has_cu else None
        operands, states = saved[:n_tensors], saved[n_tensors:]
        d = list(_input_gradients(ctx.op, operands, states, cu, attrs, chunk, list(grads),
                                  head_decay))
        rate_grad = [d.pop()] if has_rates else []
        return (None, None, None, None, None, None, *d, *[None] * int(has_cu), *rate_grad)


@contextlib.contextmanager
def _below_autograd():
    """Dispatch past the Autograd key (torch 1.13's guard is RAII-only)."""
    guard_type = torch._C._AutoDispatchBelowAutograd
    if hasattr(guard_type, "__enter__"):
        with guard_type():
            yield
    else:
        alive = [guard_type()]  # active while referenced
        try:
            yield
        finally:
            alive.clear()


def _autograd_kernel(op):
    """Old torch's Autograd key: outputs get the derived backward's grad_fn
    (or one that says why there is none), and meta tensors get through to
    Meta."""

    def kernel(*args):
        tensors, states, cu, head_decay, attrs, final, chunk = _unpack(op, args)
        rates = [head_decay] if head_decay is not None else []
        if torch.is_grad_enabled() and any(t.requires_grad for t in tensors + states + rates):
            rest = (tuple(sorted(attrs.items())), final, chunk)
            return list(_Differentiable.apply(op, len(tensors), len(states), cu is not None,
                                             head_decay is not None, rest, *tensors, *states,
                                             *([cu] if cu is not None else []), *rates))
        with _below_autograd():
            return getattr(torch.ops.hla, op)(*args)

    kernel.__name__ = f"hla_{op}_autograd"
    return kernel


def register():
    """Defines torch.ops.hla.<op> for every op, once per process."""
    global _registered, _uses_custom_op, _library
    with _lock:
        if _registered:
            return
        custom_op = getattr(torch.library, "custom_op", None)
        if custom_op is not None:
            for op in functional.OPS:
                if hasattr(torch.ops.hla, op):
                    continue  # another copy of this package registered it
                if op in functional.DIFFERENTIABLE:
                    vjp = custom_op(f"hla::{op}_vjp", _vjp_kernel(op), mutates_args=(),
                                    schema=_vjp_schema(op))
                    vjp.register_fake(_vjp_fake(op))
                opdef = custom_op(f"hla::{op}", _kernel(op), mutates_args=(), schema=schema(op))
                opdef.register_fake(_fake(op))
                opdef.register_autograd(_backward(op), setup_context=_setup_context(op))
            _uses_custom_op = True
        else:
            _library = torch.library.Library("hla", "DEF")
            for op in functional.OPS:
                _library.define(op + schema(op))
                _library.impl(op, _kernel(op), "CPU")
                _library.impl(op, _kernel(op), "CUDA")
                _library.impl(op, _fake(op), "Meta")
                _library.impl(op, _autograd_kernel(op), "Autograd")
        _tensors.remember_torch(torch)
        _registered = True


def run(op, tensors, states, cu, attrs, output_final_state, chunk_size, head_decay=None):
    """Calls torch.ops.hla.<op> on checked arguments; returns [o, *state]."""
    if not _registered:
        register()
    args = _pack(op, tensors, states, cu, head_decay, attrs, output_final_state, chunk_size)
    return list(getattr(torch.ops.hla, op)(*args))
