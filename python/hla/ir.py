"""MLIR text of one attention op wrapped in a function, for ``hla.compile``.

``attention_function`` writes::

    func.func @attend(%q: tensor<...>, %k: ..., %v: ..., [op inputs],
                      [%s0, %s1, ...], [%cu]) -> (tensor<o>, [final states])
      %out:N = hla.<op> %q, %k, %v, ... initial_state(...) cu_seqlens(%cu) {attrs}
      return ...

Argument order is the artefact's input order and result order its output
order: q, k, v, the op's extra operands (kda: g, beta; linsimp: r, u,
omega), the initial state components, cu_seqlens; then o and the final
state components.
"""

from __future__ import annotations

import math

FUNCTION_NAME = "attend"


def tensor_type(shape, dtype):
    dims = "".join(f"{int(s)}x" for s in shape)
    return f"tensor<{dims}{dtype}>"


def format_f64(value):
    """An f64 attribute that parses back to exactly ``value``.

    ``repr`` would give ``1e-06``, which MLIR's lexer does not read as a
    float (it wants a '.'); 17 significant digits round-trip every double.
    """
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"attribute value must be finite, got {value!r}")
    return f"{value:.17e} : f64"


def attribute(key, value):
    if isinstance(value, bool):
        return f"{key} = {'true' if value else 'false'}"
    if key == "window":
        return f"{key} = {int(value)} : i64"
    if key == "kernel":
        return f"{key} = #hla.kernel<{value}>"
    return f"{key} = {format_f64(value)}"


def attention_function(op, inputs, attributes, state_shapes=(), final_state_shapes=(),
                       cu_seqlens=None, output_shape=None, output_dtype=None,
                       head_decay=None):
    """The MLIR text of ``func.func @attend`` applying ``hla.<op>``.

    inputs        [(name, shape, dtype)] of the op's tensor operands in op
                  order (q, k, v, then the op's own); dtype an MLIR type
                  name (f32, f16, bf16)
    attributes    {name: value}: floats (f64), bools, window (i64), kernel
    state_shapes  full shapes of the initial state components ([N, H_q, ...],
                  f32); non-empty means the op takes an initial_state
    final_state_shapes  the same for the final state; non-empty means the
                  function also returns it
    cu_seqlens    None or (length, "i32" | "i64")
    head_decay    None, or the number of query heads H_q: the op takes its
                  decay rates per head, a last argument [H_q] f32
    """
    args = [(name, tensor_type(shape, dtype)) for name, shape, dtype in inputs]
    operands = ", ".join(f"%{name}" for name, _, _ in inputs)
    state_types = [tensor_type(s, "f32") for s in state_shapes]
    if state_shapes:
        names = [f"s{i}" for i in range(len(state_shapes))]
        args += list(zip(names, state_types))
        operands += " initial_state(" + ", ".join(f"%{n}" for n in names) + ")"
    if cu_seqlens is not None:
        length, dtype = cu_seqlens
        args.append(("cu_seqlens", tensor_type((length,), dtype)))
        operands += " cu_seqlens(%cu_seqlens)"
    if head_decay is not None:
        args.append(("head_decay", tensor_type((head_decay,), "f32")))
        operands += " head_decay(%head_decay)"
    results = [tensor_type(output_shape, output_dtype)]
    results += [tensor_type(s, "f32") for s in final_state_shapes]
    attrs = ", ".join(attribute(k, v) for k, v in sorted(attributes.items()))
    attrs = f" {{{attrs}}}" if attrs else ""
    arg_list = ", ".join(f"%{name}: {t}" for name, t in args)
    in_types = ", ".join(t for _, t in args)
    res_types = ", ".join(results)
    if len(results) == 1:
        lhs, returned = "%out", "%out"
    else:
        lhs = f"%out:{len(results)}"
        returned = ", ".join(f"%out#{i}" for i in range(len(results)))
    return (f"func.func @{FUNCTION_NAME}({arg_list}) -> ({res_types}) {{\n"
            f"  {lhs} = hla.{op} {operands}{attrs} : ({in_types}) -> ({res_types})\n"
            f"  return {returned} : {res_types}\n"
            f"}}\n")
