"""The functional API: ``hla.hla2(q, k, v, ...)`` and friends.

Each call checks its arguments (so that nothing invalid reaches compiled
code, where a bad size would read out of bounds and a bad ``cu_seqlens``
would abort the process), builds the op's IR for the exact shapes, dtypes and
options (``hla.ir``), compiles it through the cache (``hla.compiler``) and
runs it on the caller's buffers.

Conventions follow flash-attn / flash-linear-attention: ``[B, T, H, D]``
tensors; K/V may have fewer heads than Q (``H_q % H_kv == 0``, query head h
reads kv head ``h // (H_q // H_kv)``); ``scale`` defaults to ``D**-0.5``;
``output_final_state=True`` returns ``(o, final_state)``; ``cu_seqlens``
packs sequences along T with B = 1. What each op computes is SEMANTICS.md;
state layouts are docs/HLA.md "State layouts".

numpy in -> numpy out; torch in -> torch out on the same device (through
the custom ops of ``hla._torch_ops``, so ``torch.compile`` sees one opaque op).
Outputs have the inputs' dtype (f32, f16 or bf16); states are f32.
"""

from __future__ import annotations

import contextlib
import math
import numbers
import sys

import numpy as np

from . import _tensors, compiler, ir

FLOAT_DTYPES = ("f32", "f16", "bf16")
_DTYPE_WORDS = {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}

# Tensor operands of each op after q, k, v (checked together), in op order:
# (name, trailing dims) of a per-kv-head operand [B, T, H_kv, *trailing],
# where "d" is q's feature size and "dv" v's. linsimp's omega [m, D] follows.
_EXTRA_OPERANDS = {
    "linear_attention": (),
    "hla2": (),
    "ahla": (),
    "hla3": (),
    "linsimp": (("r", ("d",)), ("u", ("dv",))),
    "kda": (("g", ("d",)), ("beta", ())),
}

# Attributes each op takes, in the order of its torch schema.
OP_ATTRIBUTES = {
    "linear_attention": ("scale", "normalize", "eps", "decay"),
    "hla2": ("scale", "masked", "normalize", "eps", "decay", "ridge"),
    "ahla": ("scale", "normalize", "eps", "decay"),
    "hla3": ("scale", "normalize", "eps", "decay"),
    "linsimp": ("scale", "window", "kernel"),
    "kda": ("scale",),
}
OPS = tuple(OP_ATTRIBUTES)
# Ops the CPU pipeline does not lower yet: a compile failure is "not
# implemented", quoting the compiler, rather than a compiler error.
NOT_YET_LOWERED = ("linsimp", "kda")
# Ops whose backward the compiler derives (hla-derive-vjp), on the CPU.
DIFFERENTIABLE = ("linear_attention", "hla2", "ahla", "hla3", "kda", "linsimp")


def underived_backward(op, attrs):
    """Why the compiler derives no backward for ``op`` with ``attrs``, or
    None when it does."""
    if op not in DIFFERENTIABLE:
        return f"yet (the compiler derives it for {', '.join(DIFFERENTIABLE)})"
    return None


def operand_names(op):
    """Tensor operands of ``op`` in op (and torch schema) order."""
    names = ["q", "k", "v"] + [name for name, _ in _EXTRA_OPERANDS[op]]
    return names + (["omega"] if op == "linsimp" else [])


def state_components(op, d, dv, attrs, m=None):
    """[(name, per-head shape)] of the state tuple (docs/HLA.md "State layouts")."""
    normalize = attrs.get("normalize", False)
    vec = [("m", (d,))] if normalize else []
    if op == "linear_attention":
        return [("P", (d, dv))] + vec
    if op == "hla2":
        parts = [("S", (d, d)), ("C", (d, dv))] + vec
        if attrs.get("masked", True):
            parts += [("G", (d, dv))] + ([("h", (d,))] if normalize else [])
        return parts
    if op == "ahla":
        return [("P", (d, dv))] + vec + [("E", (d, dv))] + ([("n", (d,))] if normalize else [])
    if op == "hla3":
        return [("S", (d, d)), ("P", (d, dv))] + vec + [("X", (d, dv))] + (
            [("x", (d,))] if normalize else [])
    if op == "kda":
        return [("S", (d, dv))]
    if op == "linsimp":
        if attrs.get("kernel", "favor") == "exact":
            return []
        halo = attrs["window"] - 1
        return [("M", (m, dv)), ("a", (m,)), ("anchor_r", (halo, d)),
                ("anchor_u", (halo, dv)), ("anchor_valid", (halo,))]
    raise ValueError(f"unknown op {op!r}")


def state_shapes(op, inputs, attrs, num_sequences):
    """Full state shapes ``[N, H_q, ...]`` for the given operand arrays."""
    q, v = inputs[0], inputs[2]
    m = inputs[-1].shape[0] if op == "linsimp" else None
    lead = (num_sequences, q.shape[2])
    return [lead + tuple(shape)
            for _, shape in state_components(op, q.shape[3], v.shape[3], attrs, m)]


# ---------------------------------------------------------------------------
# Argument checks
# ---------------------------------------------------------------------------

def _real(op, name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"hla.{op}: {name} must be a real number, got {value!r}")
    return float(value)


def _check_options(op, d, options):
    """Resolves and checks the op's options; returns the attribute dict."""
    attrs = {}
    scale = options.get("scale")
    if scale is None:
        scale = d ** -0.5
    scale = _real(op, "scale", scale)
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"hla.{op}: scale must be finite and > 0, got {scale!r}")
    attrs["scale"] = scale
    wanted = OP_ATTRIBUTES[op]
    if "masked" in wanted:
        attrs["masked"] = bool(options["masked"])
    if "normalize" in wanted:
        attrs["normalize"] = bool(options["normalize"])
    if "eps" in wanted:
        eps = _real(op, "eps", options["eps"])
        if not (math.isfinite(eps) and eps > 0):
            raise ValueError(f"hla.{op}: eps must be finite and > 0, got {eps!r}")
        attrs["eps"] = eps
    if "decay" in wanted:
        decay = options["decay"]
        decay = 1.0 if decay is None else _real(op, "decay", decay)
        if not 0.0 < decay <= 1.0:  # also rejects NaN
            raise ValueError(f"hla.{op}: decay must be in (0, 1], got {decay!r}")
        attrs["decay"] = decay
    if "ridge" in wanted:
        ridge = _real(op, "ridge", options["ridge"])
        if not (math.isfinite(ridge) and ridge >= 0):
            raise ValueError(f"hla.{op}: ridge must be finite and >= 0, got {ridge!r}")
        attrs["ridge"] = ridge
    if "window" in wanted:
        window = options["window"]
        if isinstance(window, bool) or not isinstance(window, numbers.Integral) or window < 1:
            raise ValueError(f"hla.{op}: window must be an integer >= 1, got {window!r}")
        attrs["window"] = int(window)
    if "kernel" in wanted:
        kernel = options["kernel"]
        if kernel not in ("favor", "exact"):
            raise ValueError(f"hla.{op}: kernel must be 'favor' or 'exact', got {kernel!r}")
        attrs["kernel"] = kernel
    return attrs


def _check_chunk_size(op, chunk_size):
    if chunk_size is None:
        return None
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, numbers.Integral) \
            or chunk_size < 1:
        raise ValueError(f"hla.{op}: chunk_size must be an integer >= 1, got {chunk_size!r}")
    return int(chunk_size)


def _target_for(op, device, target):
    kind = device.split(":")[0]
    if target is None:
        if kind not in ("cpu", "cuda"):
            raise ValueError(f"hla.{op}: inputs are on {device}; hla runs on cpu and cuda")
        return kind
    if target not in compiler.TARGETS:
        raise ValueError(f"hla.{op}: unknown target {target!r} (known: "
                         f"{', '.join(compiler.TARGETS)})")
    if target != kind:
        raise ValueError(f"hla.{op}: target={target!r} but the inputs are on {device}; "
                         f"move them or drop target")
    return target


def _shape(x):
    return tuple(int(s) for s in x.shape)


def _check_operands(op, named):
    """Library, device, dtype and shape checks of the tensor operands.

    ``named``: [(name, value)] in op order. Returns (library, device, dtype,
    arrays in the same order).
    """
    q = _tensors.as_array(named[0][1], f"hla.{op}: q")
    lib = _tensors.library_of(q)
    device, dtype = lib.device(q), lib.dtype_name(q)
    if dtype not in FLOAT_DTYPES:
        hint = " (cast to float32)" if dtype == "f64" else ""
        raise TypeError(f"hla.{op}: q has dtype {dtype}; supported are float32, float16 and "
                        f"bfloat16{hint}")
    arrays = [q]
    for name, value in named[1:]:
        x = _tensors.as_array(value, f"hla.{op}: {name}")
        if _tensors.library_of(x) is not lib:
            raise TypeError(f"hla.{op}: {name} is a {type(x).__module__}.{type(x).__name__} "
                            f"but q is a {lib.name} array; pass one kind")
        if lib.device(x) != device:
            raise ValueError(f"hla.{op}: {name} is on {lib.device(x)} but q is on {device}")
        x_dtype = lib.dtype_name(x)
        if name == "omega":
            # The feature matrix is a fixed per-layer constant: take it in any
            # float type and give the op the activations' type it requires.
            if x_dtype not in FLOAT_DTYPES + ("f64",):
                raise TypeError(f"hla.{op}: omega must be a float array, got {x_dtype}")
            if x_dtype != dtype:
                x = lib.cast(x, dtype)
        elif x_dtype != dtype:
            word = _DTYPE_WORDS.get(x_dtype, x_dtype)
            raise TypeError(f"hla.{op}: mixed dtypes: {name} is {word} but q is "
                            f"{_DTYPE_WORDS[dtype]}")
        arrays.append(x)
    for (name, _), x in zip(named, arrays):
        rank = {"beta": 3, "omega": 2}.get(name, 4)
        if len(x.shape) != rank:
            layout = {"beta": "[B, T, H]", "omega": "[m, D]"}.get(name, "[B, T, H, D]")
            raise ValueError(f"hla.{op}: {name} must have rank {rank} {layout}, got shape "
                             f"{list(_shape(x))}")
    q, k, v = arrays[:3]
    B, T, Hq, d = _shape(q)
    for name, x in (("k", k), ("v", v)):
        if _shape(x)[:2] != (B, T):
            raise ValueError(f"hla.{op}: {name} has [B, T] = {list(_shape(x)[:2])} but q has "
                             f"{[B, T]}")
    Hkv = _shape(k)[2]
    if _shape(v)[2] != Hkv:
        raise ValueError(f"hla.{op}: k has {Hkv} heads but v has {_shape(v)[2]}")
    # H_q = 0 is an empty result (whatever H_kv); otherwise k/v need heads.
    if Hq > 0 and Hkv < 1:
        raise ValueError(f"hla.{op}: k and v have no heads (H_kv = 0) but q has H_q = {Hq}")
    if Hq > 0 and Hq % Hkv != 0:
        raise ValueError(f"hla.{op}: q's heads H_q = {Hq} must be a multiple of k/v's heads "
                         f"H_kv = {Hkv} (grouped heads)")
    if _shape(k)[3] != d:
        raise ValueError(f"hla.{op}: k has feature size D = {_shape(k)[3]} but q has {d}")
    if d < 1:
        raise ValueError(f"hla.{op}: q and k must have feature size D >= 1, got D = {d}")
    dv = _shape(v)[3]
    if dv < 1:
        raise ValueError(f"hla.{op}: v must have feature size Dv >= 1, got Dv = {dv}")
    dims = {"d": d, "dv": dv}
    for (name, trailing), x in zip(_EXTRA_OPERANDS[op], arrays[3:]):
        want = (B, T, Hkv) + tuple(dims[t] for t in trailing)
        if _shape(x) != want:
            raise ValueError(f"hla.{op}: {name} must have shape {list(want)}, got "
                             f"{list(_shape(x))}")
    if op == "linsimp":
        omega = arrays[-1]
        if _shape(omega)[1] != d or _shape(omega)[0] < 1:
            raise ValueError(f"hla.{op}: omega must have shape [m, D = {d}] with m >= 1, got "
                             f"{list(_shape(omega))}")
    return lib, device, dtype, arrays


def _check_cu_seqlens(op, lib, device, cu_seqlens, B):
    """Type and shape of cu_seqlens (its values are checked at the call)."""
    if cu_seqlens is None:
        return None
    if isinstance(cu_seqlens, (list, tuple)):
        cu = lib.as_index_array(cu_seqlens, device)
    else:
        cu = _tensors.as_array(cu_seqlens, f"hla.{op}: cu_seqlens")
        if _tensors.library_of(cu) is not lib:
            if lib is _tensors.TorchArrays:
                # An index vector from numpy for torch inputs is harmless to move.
                cu = _tensors.torch_module().as_tensor(cu, device=device)
            else:
                raise TypeError(f"hla.{op}: cu_seqlens is a {type(cu).__name__} but q is a "
                                f"{lib.name} array")
    cu_dtype = lib.dtype_name(cu)
    if cu_dtype not in ("i32", "i64"):
        raise TypeError(f"hla.{op}: cu_seqlens must be int32 or int64, got {cu_dtype}")
    if len(cu.shape) != 1 or cu.shape[0] < 2:
        raise ValueError(f"hla.{op}: cu_seqlens must be 1-D [N + 1] with N >= 1 sequences, "
                         f"got shape {list(_shape(cu))}")
    if lib.device(cu) != device:
        raise ValueError(f"hla.{op}: cu_seqlens is on {lib.device(cu)} but q is on {device}")
    if B != 1:
        raise ValueError(f"hla.{op}: cu_seqlens packs sequences along T and needs B = 1, "
                         f"got B = {B}")
    return cu


def _check_head_decay(op, lib, device, decay, heads):
    """``decay`` given per query head (a sequence or array of ``heads``
    rates, the op's ``head_decay`` tensor): as an f32 array of the inputs'
    library and device (torch: differentiable), its values checked; None
    when ``decay`` is a number or None (the attribute)."""
    per_head = (isinstance(decay, (list, tuple)) or _tensors.library_of(decay) is not None
                or hasattr(decay, "__dlpack__"))
    if not per_head:
        return None  # a number, or something _check_options refuses
    if isinstance(decay, (list, tuple)):
        if lib is _tensors.TorchArrays:
            rates = _tensors.torch_module().as_tensor(decay, device=device)
        else:
            rates = np.asarray(decay, dtype=np.float32)
    else:
        rates = _tensors.as_array(decay, f"hla.{op}: decay")
        if _tensors.library_of(rates) is not lib:
            if lib is _tensors.TorchArrays:
                rates = _tensors.torch_module().as_tensor(rates, device=device)
            else:
                raise TypeError(f"hla.{op}: decay is a {type(decay).__name__} but q is a "
                                f"{lib.name} array")
    if lib.device(rates) != device:
        raise ValueError(f"hla.{op}: decay is on {lib.device(rates)} but q is on {device}")
    if lib.dtype_name(rates) not in FLOAT_DTYPES + ("f64",):
        raise TypeError(f"hla.{op}: per-head decay rates must be floats, got "
                        f"{lib.dtype_name(rates)}")
    if _shape(rates) != (heads,):
        raise ValueError(f"hla.{op}: a per-head decay needs {heads} rates (one per query "
                         f"head), got shape {list(_shape(rates))}")
    if lib.dtype_name(rates) != "f32":
        rates = lib.cast(rates, "f32")
    # The compiled code asserts this too (and would abort the process).
    bad = [r for r in lib.to_list(rates) if not 0.0 < r <= 1.0]
    if bad:
        raise ValueError(f"hla.{op}: decay rates must be in (0, 1], got {bad[0]!r}")
    return rates


def check_log_decay(op, lib, g):
    """kda's ``g`` is a log-decay, <= 0 (SEMANTICS.md §6): a positive entry
    makes the state grow without bound (the output overflows). NaN entries
    are not checked, like non-finite values of any other operand."""
    largest = lib.largest_positive(g)
    if largest is not None:
        raise ValueError(f"hla.{op}: g is a log-decay and must be <= 0 everywhere, got an "
                         f"entry {largest!r} > 0")


def check_cu_seqlens_values(op, offsets, T):
    """The run-time rule of compiled code (which aborts the process on a
    violation): offsets start at 0, never decrease and end at T."""
    if offsets[0] != 0 or offsets[-1] != T or any(b < a for a, b in zip(offsets, offsets[1:])):
        shown = offsets if len(offsets) <= 16 else offsets[:8] + ["..."] + offsets[-4:]
        raise ValueError(f"hla.{op}: cu_seqlens must start at 0, never decrease and end at "
                         f"T = {T}, got {shown}")


def _check_initial_state(op, lib, device, initial_state, shapes, names):
    if initial_state is None:
        return []
    if not isinstance(initial_state, (tuple, list)):
        raise TypeError(f"hla.{op}: initial_state must be a tuple of arrays "
                        f"({', '.join(names)}), got {type(initial_state).__name__}")
    if len(initial_state) != len(shapes):
        what = ", ".join(names) if names else "none: this op has no state"
        raise ValueError(f"hla.{op}: initial_state must hold {len(shapes)} arrays ({what}), "
                         f"got {len(initial_state)}")
    states = []
    for i, (x, shape, name) in enumerate(zip(initial_state, shapes, names)):
        x = _tensors.as_array(x, f"hla.{op}: initial_state[{i}]")
        if _tensors.library_of(x) is not lib:
            raise TypeError(f"hla.{op}: initial_state[{i}] ({name}) is a {type(x).__name__} "
                            f"but q is a {lib.name} array")
        if lib.device(x) != device:
            raise ValueError(f"hla.{op}: initial_state[{i}] ({name}) is on {lib.device(x)} "
                             f"but q is on {device}")
        if _shape(x) != tuple(shape):
            raise ValueError(f"hla.{op}: initial_state[{i}] ({name}) must have shape "
                             f"{list(shape)}, got {list(_shape(x))}")
        x_dtype = lib.dtype_name(x)
        if x_dtype not in FLOAT_DTYPES + ("f64",):
            raise TypeError(f"hla.{op}: initial_state[{i}] ({name}) must be a float array, "
                            f"got {x_dtype}")
        states.append(x if x_dtype == "f32" else lib.cast(x, "f32"))  # states are f32
    return states


_torch_ops_module = None


def _torch_ops():
    """hla._torch_ops, imported on first use (it imports torch)."""
    global _torch_ops_module
    if _torch_ops_module is None:
        from . import _torch_ops as module
        module.register()
        _torch_ops_module = module
    return _torch_ops_module


def _call(op, named, options, initial_state, output_final_state, cu_seqlens, chunk_size,
          target):
    """Shared body of the public functions."""
    lib, device, dtype, arrays = _check_operands(op, named)
    B, T, Hq, d = _shape(arrays[0])
    head_decay = None
    if "decay" in OP_ATTRIBUTES[op]:
        head_decay = _check_head_decay(op, lib, device, options.get("decay"), Hq)
        if head_decay is not None:
            options = dict(options, decay=None)
    attrs = _check_options(op, d, options)
    chunk_size = _check_chunk_size(op, chunk_size)
    target = _target_for(op, device, target)
    cu = _check_cu_seqlens(op, lib, device, cu_seqlens, B)
    output_final_state = bool(output_final_state)
    if op == "linsimp" and attrs["kernel"] == "exact" and (
            initial_state is not None or output_final_state):
        raise ValueError("hla.linsimp: kernel='exact' has no finite state; initial_state and "
                         "output_final_state need kernel='favor'")
    N = B if cu is None else int(cu.shape[0]) - 1
    m = _shape(arrays[-1])[0] if op == "linsimp" else None
    components = state_components(op, d, _shape(arrays[2])[3], attrs, m)
    shapes = [(N, Hq) + tuple(s) for _, s in components]
    states = _check_initial_state(op, lib, device, initial_state, shapes,
                                  [n for n, _ in components])
    if lib is _tensors.TorchArrays:
        outputs = _torch_ops().run(op, arrays, states, cu, attrs, output_final_state,
                                   chunk_size, head_decay)
    else:
        outputs = execute(op, arrays, states, cu, attrs, output_final_state, chunk_size,
                          target, head_decay)
    if output_final_state:
        return outputs[0], tuple(outputs[1:])
    return outputs[0]


# ---------------------------------------------------------------------------
# Running checked arguments
# ---------------------------------------------------------------------------

_functions = {}  # exact call signature -> runtime.CompiledFunction
compiler.register_memory_cache(_functions)


def _ir_attributes(op, attrs):
    """The attributes written into the IR: the op's defaults are left out so
    that equal programs have equal text (and share a cache entry)."""
    out = {"scale": attrs["scale"]}
    if attrs.get("masked") is False:
        out["masked"] = False
    if attrs.get("normalize"):
        out["normalize"] = True
        out["eps"] = attrs["eps"]
    if attrs.get("decay", 1.0) != 1.0:
        out["decay"] = attrs["decay"]
    if attrs.get("ridge", 0.0) != 0.0:
        out["ridge"] = attrs["ridge"]
    if op == "linsimp":
        out["window"] = attrs["window"]
        if attrs["kernel"] != "favor":
            out["kernel"] = attrs["kernel"]
    return out


def build_ir(op, inputs, dtypes, attrs, state_shapes_in, final_shapes, cu,
             head_decay=False):
    """IR text for one call. ``inputs``: shapes in op order; ``cu``: None or
    (length, "i32"/"i64"); ``final_shapes``: [] unless the final state is
    returned; ``head_decay``: the op takes its decay rates per query head (a
    last argument)."""
    names = operand_names(op)
    q_shape, v_shape = inputs[0], inputs[2]
    out_shape = (q_shape[0], q_shape[1], q_shape[2], v_shape[3])
    return ir.attention_function(
        op, [(n, s, t) for n, s, t in zip(names, inputs, dtypes)], _ir_attributes(op, attrs),
        state_shapes=state_shapes_in, final_state_shapes=final_shapes, cu_seqlens=cu,
        output_shape=out_shape, output_dtype=dtypes[0],
        head_decay=q_shape[2] if head_decay else None)


def compiled_function(op, inputs, dtypes, attrs, state_shapes_in, final_shapes, cu,
                      chunk_size, target, head_decay=False):
    """The compiled ``@attend`` for one call signature (memoised)."""
    key = (op, target, tuple(inputs), tuple(dtypes), tuple(sorted(attrs.items())),
           tuple(state_shapes_in), tuple(final_shapes), cu, chunk_size, bool(head_decay))
    fn = _functions.get(key)
    if fn is not None:
        return fn
    text = build_ir(op, inputs, dtypes, attrs, state_shapes_in, final_shapes, cu, head_decay)
    try:
        library = compiler.compile(text, target=target, chunk_size=chunk_size)
    except compiler.TargetNotImplementedError:
        raise
    except compiler.CompileError as e:
        if op in NOT_YET_LOWERED:
            raise compiler.OpNotImplementedError(
                f"hla.{op}: the {target} code generator does not lower {op} yet; the "
                f"compiler says:\n{e.diagnostics.rstrip()}", e.diagnostics, target) from None
        raise
    fn = library.function(ir.FUNCTION_NAME)
    _functions[key] = fn
    return fn


def _check_buffers(op, fn, in_views, out_views):
    """The buffers against the compiled signature. The IR was built from
    these very arrays, so this cannot fail unless something before it is
    wrong; it is cheap and guards the ABI."""
    for views, specs in ((in_views, fn.inputs), (out_views, fn.outputs)):
        if len(views) != len(specs) or any(
                tuple(v.shape) != s.shape or v.dtype != s.dtype or not v.is_contiguous
                for v, s in zip(views, specs)):
            raise RuntimeError(f"hla.{op}: internal error: buffers "
                               f"{[(v.dtype, v.shape) for v in views]} do not match the "
                               f"compiled signature {specs}")


def execute(op, arrays, states, cu, attrs, output_final_state, chunk_size, target,
            head_decay=None):
    """Runs checked arguments: values of cu_seqlens, dense copies, compile
    (cached), allocate outputs in the caller's library, call by pointer.
    ``head_decay``: the decay rates per query head (f32 [H_q]), or None.
    Returns [o, *final_state]."""
    lib = _tensors.library_of(arrays[0])
    device = lib.device(arrays[0])
    B, T, Hq, _ = _shape(arrays[0])
    if target == "cuda" and device != "cuda:0":
        raise ValueError(f"hla.{op}: the inputs are on {device}, but hla's CUDA runtime runs "
                         f"on device 0 (cuda:0); choose the GPU with CUDA_VISIBLE_DEVICES")
    if cu is not None:
        check_cu_seqlens_values(op, [int(c) for c in lib.to_list(cu)], T)
        cu = lib.contiguous(cu)
    if op == "kda":
        check_log_decay(op, lib, arrays[3])
    N = B if cu is None else int(cu.shape[0]) - 1
    shapes = [tuple(s) for s in state_shapes(op, arrays, attrs, N)]
    final_shapes = shapes if output_final_state else []
    out_shape = _shape(arrays[0])[:3] + (_shape(arrays[2])[3],)
    if B == 0 or Hq == 0:
        # No batch or no query heads: the output and every state have no
        # elements. Nothing to compile (the compiler rejects empty
        # dimensions) and nothing to compute.
        return ([lib.empty(out_shape, lib.dtype_name(arrays[0]), device)]
                + [lib.empty(s, "f32", device) for s in final_shapes])
    arrays = [lib.contiguous(x) for x in arrays]
    states = [lib.contiguous(s) for s in states]
    dtypes = [lib.dtype_name(x) for x in arrays]
    cu_sig = None if cu is None else (int(cu.shape[0]), lib.dtype_name(cu))
    fn = compiled_function(op, [_shape(x) for x in arrays], dtypes, attrs,
                           shapes if states else [], final_shapes, cu_sig, chunk_size, target,
                           head_decay is not None)
    outputs = [lib.empty(out_shape, dtypes[0], device)]
    outputs += [lib.empty(s, "f32", device) for s in final_shapes]
    rates = [] if head_decay is None else [lib.contiguous(head_decay)]
    _run_compiled(op, fn, lib, arrays + states + ([cu] if cu is not None else []) + rates,
                  outputs, target, device)
    return outputs


def _run_compiled(op, fn, lib, ins, outputs, target, device):
    """Calls ``fn`` on the buffers of ``ins`` and ``outputs`` (checked
    against its signature). CUDA: on torch's current stream, the one the
    inputs were exported for and the outputs were allocated on (no host
    sync)."""
    in_views = [lib.borrow(x) for x in ins]
    out_views = [lib.borrow(x) for x in outputs]
    _check_buffers(op, fn, in_views, out_views)
    stream = (_tensors.torch_module().cuda.current_stream(device).cuda_stream
              if target == "cuda" else None)
    fn.call_pointers([v.data for v in in_views], [v.data for v in out_views], stream)


def compiled_backward(op, inputs, dtypes, attrs, chunk_size, target, initial_shapes=(),
                      final_shapes=(), head_decay=False):
    """The compiled backward of ``@attend`` (``vjp=True``): (q, k, v, [g, beta,] [s0...],
    do, [ds1...]) -> (dq, dk, dv, [dg, dbeta,] [ds0...]) with an initial state of
    ``initial_shapes`` and the final state's cotangents of ``final_shapes``
    (each empty for none), memoised like the forward."""
    key = ("vjp", op, target, tuple(inputs), tuple(dtypes), tuple(sorted(attrs.items())),
           chunk_size, tuple(initial_shapes), tuple(final_shapes), bool(head_decay))
    fn = _functions.get(key)
    if fn is None:
        text = build_ir(op, inputs, dtypes, attrs, list(initial_shapes), list(final_shapes),
                        None, head_decay)
        library = compiler.compile(text, target=target, chunk_size=chunk_size, vjp=True,
                                   entry=ir.FUNCTION_NAME)
        fn = library.function(ir.FUNCTION_NAME)
        _functions[key] = fn
    return fn


@contextlib.contextmanager
def recorded_compiles():
    """Runs as usual and records every compile the ops ask for, forward and
    backward (cache hits too): yields a list that fills with (ir_text,
    compile options) pairs, for ``compiler.precompile`` to build the same
    artefacts for another target (a GPU machine without the compiler)."""
    records = []
    forward, backward = compiled_function, compiled_backward

    def record(text, options):
        if (text, options) not in records:
            records.append((text, options))

    def recording_forward(op, inputs, dtypes, attrs, state_shapes_in, final_shapes, cu,
                          chunk_size, target, head_decay=False):
        record(build_ir(op, inputs, dtypes, attrs, state_shapes_in, final_shapes, cu,
                        head_decay),
               {"chunk_size": chunk_size})
        return forward(op, inputs, dtypes, attrs, state_shapes_in, final_shapes, cu,
                       chunk_size, target, head_decay)

    def recording_backward(op, inputs, dtypes, attrs, chunk_size, target,
                           initial_shapes=(), final_shapes=(), head_decay=False):
        record(build_ir(op, inputs, dtypes, attrs, list(initial_shapes), list(final_shapes),
                        None, head_decay),
               {"chunk_size": chunk_size, "vjp": True, "entry": ir.FUNCTION_NAME})
        return backward(op, inputs, dtypes, attrs, chunk_size, target, initial_shapes,
                        final_shapes, head_decay)

    module = sys.modules[__name__]
    module.compiled_function, module.compiled_backward = recording_forward, recording_backward
    try:
        yield records
    finally:
        module.compiled_function, module.compiled_backward = forward, backward


def execute_backward(op, arrays, grad_output, attrs, chunk_size, target, states=(),
                     final_grads=(), head_decay=None):
    """The gradients [d(arrays)..., *d(states)[, d(head_decay)]] of
    sum(grad_output * o) + sum(final_grads * final_state), (o, final_state)
    = op(*arrays, initial_state=states), for the op's checked tensors
    ``arrays`` (q, k, v; kda: and g, beta; linsimp: and r, u, omega; grouped
    K/V heads too; no packed sequences); ``states`` and ``final_grads`` are f32 [B, H, ...] (empty
    for none), ``head_decay`` the decay rates per query head (f32 [H_q]) or
    None. Derived by the compiler from the op's monoid; on the CPU or, for
    torch CUDA tensors, the GPU (on torch's current stream)."""
    why = underived_backward(op, attrs)
    if why is not None:
        raise NotImplementedError(f"hla.{op}: the backward is not derived {why}")
    lib = _tensors.library_of(arrays[0])
    device = lib.device(arrays[0])
    if target == "cuda" and device != "cuda:0":
        raise ValueError(f"hla.{op}: the inputs are on {device}, but hla's CUDA runtime runs "
                         f"on device 0 (cuda:0); choose the GPU with CUDA_VISIBLE_DEVICES")
    dtypes = [lib.dtype_name(x) for x in arrays]
    rates = [] if head_decay is None else [head_decay]
    grads_of = list(arrays) + list(states) + rates
    if any(n == 0 for n in _shape(arrays[0])[:3]):
        return [lib.empty(_shape(x), lib.dtype_name(x), device) for x in grads_of]
    arrays = [lib.contiguous(x) for x in arrays]
    states = [lib.contiguous(x) for x in states]
    rates = [lib.contiguous(x) for x in rates]
    final_grads = [lib.contiguous(x) for x in final_grads]
    grad_output = lib.contiguous(grad_output)
    fn = compiled_backward(op, [_shape(x) for x in arrays], dtypes, attrs, chunk_size, target,
                           [_shape(x) for x in states], [_shape(x) for x in final_grads],
                           head_decay is not None)
    outputs = [lib.empty(_shape(x), lib.dtype_name(x), device) for x in grads_of]
    _run_compiled(op, fn, lib, arrays + states + rates + [grad_output] + final_grads,
                  outputs, target, device)
    return outputs


# ---------------------------------------------------------------------------
# Public functions
# ---------------------------------------------------------------------------

def linear_attention(q, k, v, *, scale=None, normalize=False, eps=1e-6, decay=None,
                     initial_state=None, output_final_state=False, cu_seqlens=None,
                     chunk_size=None, target=None):
    """First-order linear attention (SEMANTICS.md §1).

    ``o_t = sum_{j<=t} decay^(t-j) (scale q_t . k_j) v_j``.
    State ``(P [N, H_q, D, Dv],)``, normalized ``(P, m [N, H_q, D])``.
    """
    return _call("linear_attention", [("q", q), ("k", k), ("v", v)],
                 dict(scale=scale, normalize=normalize, eps=eps, decay=decay),
                 initial_state, output_final_state, cu_seqlens, chunk_size, target)


def hla2(q, k, v, *, scale=None, masked=True, normalize=False, eps=1e-6, decay=None,
         ridge=0.0, initial_state=None, output_final_state=False, cu_seqlens=None,
         chunk_size=None, target=None):
    """Second-order symmetric HLA (SEMANTICS.md §2).

    State: masked ``(S [D, D], C [D, Dv], G [D, Dv])``, normalized
    ``(S, C, m [D], G, h [D])``; unmasked ``(S, C)`` / ``(S, C, m)``; each
    with leading ``[N, H_q]`` (N = B, or the number of packed sequences).
    """
    return _call("hla2", [("q", q), ("k", k), ("v", v)],
                 dict(scale=scale, masked=masked, normalize=normalize, eps=eps, decay=decay,
                      ridge=ridge),
                 initial_state, output_final_state, cu_seqlens, chunk_size, target)


def ahla(q, k, v, *, scale=None, normalize=False, eps=1e-6, decay=None, initial_state=None,
         output_final_state=False, cu_seqlens=None, chunk_size=None, target=None):
    """Asymmetric second-order HLA (SEMANTICS.md §3).

    State ``(P [D, Dv], E [D, Dv])``, normalized ``(P, m [D], E, n [D])``.
    """
    return _call("ahla", [("q", q), ("k", k), ("v", v)],
                 dict(scale=scale, normalize=normalize, eps=eps, decay=decay),
                 initial_state, output_final_state, cu_seqlens, chunk_size, target)


def hla3(q, k, v, *, scale=None, normalize=False, eps=1e-6, decay=None, initial_state=None,
         output_final_state=False, cu_seqlens=None, chunk_size=None, target=None):
    """Third-order HLA, the causal masked operator (SEMANTICS.md §4).

    State ``(S [D, D], P [D, Dv], X [D, Dv])``, normalized
    ``(S, P, m [D], X, x [D])``.
    """
    return _call("hla3", [("q", q), ("k", k), ("v", v)],
                 dict(scale=scale, normalize=normalize, eps=eps, decay=decay),
                 initial_state, output_final_state, cu_seqlens, chunk_size, target)


def linsimp(q, k, v, r, u, *, omega, window=64, kernel="favor", scale=None,
            initial_state=None, output_final_state=False, cu_seqlens=None, chunk_size=None,
            target=None):
    """Linearized 2-simplicial attention (SEMANTICS.md §5).

    ``r`` [B, T, H_kv, D] / ``u`` [B, T, H_kv, Dv] are the anchor keys and
    values, ``omega`` [m, D] the random feature matrix (``hla.reference.
    linsimp_omega``; cast to the inputs' dtype). ``scale`` is tau. The favor
    kernel approximates the exact one only for small-norm inputs.
    State (favor): ``(M [m, Dv], a [m], anchor_r [W-1, D], anchor_u [W-1, Dv],
    anchor_valid [W-1])``; kernel='exact' has none.
    Both kernels are compiled (exact: quadratic in T, without state).
    """
    return _call("linsimp", [("q", q), ("k", k), ("v", v), ("r", r), ("u", u),
                             ("omega", omega)],
                 dict(scale=scale, window=window, kernel=kernel),
                 initial_state, output_final_state, cu_seqlens, chunk_size, target)


def kda(q, k, v, *, g, beta, scale=None, initial_state=None, output_final_state=False,
        cu_seqlens=None, chunk_size=None, target=None):
    """Kimi Delta Attention, the gated delta rule (SEMANTICS.md §6).

    ``g`` [B, T, H_kv, D] is the log-decay (<= 0; an entry > 0 raises
    ValueError before anything runs), ``beta`` [B, T, H_kv].
    State ``(S [D, Dv],)``. Compiled in the WY/UT chunked form.
    """
    return _call("kda", [("q", q), ("k", k), ("v", v), ("g", g), ("beta", beta)],
                 dict(scale=scale), initial_state, output_final_state, cu_seqlens,
                 chunk_size, target)
