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
              bool output_final_state, int chunk_size) -> Tensor[]

with the attributes resolved (``scale`` a number, ``decay`` 1.0 for none,
``chunk_size`` 0 for the compiler's default) and the result ``[o, *state]``.
Backward raises NotImplementedError: training support is a later issue.
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


def schema(op):
    """The op's schema without its name, e.g. "(Tensor q, ...) -> Tensor[]"."""
    args = [f"Tensor {name}" for name in functional.operand_names(op)]
    args += ["Tensor[] initial_state", "Tensor? cu_seqlens"]
    args += [f"{_ATTRIBUTE_TYPES[a]} {a}" for a in functional.OP_ATTRIBUTES[op]]
    args += ["bool output_final_state", "int chunk_size"]
    return "(" + ", ".join(args) + ") -> Tensor[]"


def _unpack(op, args):
    """Schema-ordered arguments -> (tensors, states, cu, attrs, final, chunk)."""
    n = len(functional.operand_names(op))
    names = functional.OP_ATTRIBUTES[op]
    tensors = list(args[:n])
    states = list(args[n])
    cu = args[n + 1]
    attrs = dict(zip(names, args[n + 2:n + 2 + len(names)]))
    output_final_state = bool(args[n + 2 + len(names)])
    chunk_size = int(args[n + 3 + len(names)]) or None
    return tensors, states, cu, attrs, output_final_state, chunk_size


def _pack(op, tensors, states, cu, attrs, output_final_state, chunk_size):
    return (*tensors, list(states), cu, *[attrs[a] for a in functional.OP_ATTRIBUTES[op]],
            bool(output_final_state), int(chunk_size or 0))


def _kernel(op):
    def kernel(*args):
        tensors, states, cu, attrs, final, chunk = _unpack(op, args)
        target = tensors[0].device.type
        return functional.execute(op, tensors, states, cu, attrs, final, chunk, target)

    kernel.__name__ = f"hla_{op}_kernel"
    return kernel


def _fake(op):
    def fake(*args):
        tensors, _, cu, attrs, final, _ = _unpack(op, args)
        q, v = tensors[0], tensors[2]
        outputs = [q.new_empty((q.shape[0], q.shape[1], q.shape[2], v.shape[3]))]
        if final:
            n = q.shape[0] if cu is None else cu.shape[0] - 1
            outputs += [q.new_empty(s, dtype=torch.float32)
                        for s in functional.state_shapes(op, tensors, attrs, n)]
        return outputs

    fake.__name__ = f"hla_{op}_fake"
    return fake


def _no_backward(op):
    return NotImplementedError(f"hla.{op}: backward is not implemented; the compiled ops are "
                               f"inference-only for now (training support is a later issue)")


def _backward(op):
    def backward(ctx, *grads):
        raise _no_backward(op)

    return backward


class _InferenceOnly(torch.autograd.Function):
    """Old torch: gives outputs a grad_fn whose backward says why it cannot."""

    @staticmethod
    def forward(ctx, op, n_tensors, n_states, has_cu, rest, *tensors):
        ctx.op = op
        operands = list(tensors[:n_tensors])
        states = list(tensors[n_tensors:n_tensors + n_states])
        cu = tensors[-1] if has_cu else None
        attrs, final, chunk = rest
        with _below_autograd():  # past our Autograd kernel
            outputs = getattr(torch.ops.hla, op)(
                *_pack(op, operands, states, cu, dict(attrs), final, chunk))
        return tuple(outputs)

    @staticmethod
    def backward(ctx, *grads):
        raise _no_backward(ctx.op)


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
    """Old torch's Autograd key: outputs get a grad_fn that refuses backward
    (rather than silently none), and meta tensors get through to Meta."""

    def kernel(*args):
        tensors, states, cu, attrs, final, chunk = _unpack(op, args)
        if torch.is_grad_enabled() and any(t.requires_grad for t in tensors + states):
            rest = (tuple(sorted(attrs.items())), final, chunk)
            return list(_InferenceOnly.apply(op, len(tensors), len(states), cu is not None,
                                             rest, *tensors, *states,
                                             *([cu] if cu is not None else [])))
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
                opdef = custom_op(f"hla::{op}", _kernel(op), mutates_args=(), schema=schema(op))
                opdef.register_fake(_fake(op))
                opdef.register_autograd(_backward(op))
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


def run(op, tensors, states, cu, attrs, output_final_state, chunk_size):
    """Calls torch.ops.hla.<op> on checked arguments; returns [o, *state]."""
    if not _registered:
        register()
    args = _pack(op, tensors, states, cu, attrs, output_final_state, chunk_size)
    return list(getattr(torch.ops.hla, op)(*args))
