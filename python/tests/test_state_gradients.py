"""The derived backward through states: ``hla.prefix_vjp`` with ``init`` and
``final_cotangent`` (hla-derive-vjp of a function taking an initial state
and returning the final state), on the CPU.

The compiled backward of ``attend(q, k, v, s0...) -> (o, s1...)`` takes the
cotangents of o and of s1 and returns the gradients of q, k, v and s0; they
are compared with central differences of ``sum(g * o) + sum(h * s1)`` of the
float64 reference (``hla.reference``, independent of the compiler).
Lengths that are not a multiple of the chunk, and 1.
"""

from __future__ import annotations

import numpy as np
import pytest

import hla
import hla.reference as ref
from hla import functional

from .api_util import central_differences, needs_compiler

CASES = [
    ("linear_attention", {"decay": 0.9}),
    ("linear_attention", {"normalize": True, "eps": 0.1}),
    ("hla2", {}),
    ("hla2", {"decay": 0.9, "ridge": 0.5}),
    ("hla2", {"masked": False, "normalize": True, "eps": 0.1}),
    ("ahla", {"decay": 0.8}),
    ("hla3", {}),
    ("hla3", {"decay": 0.9}),
]


def full_options(op, options):
    defaults = {"scale": None, "normalize": False, "eps": 1e-6, "decay": None,
                "masked": True, "ridge": 0.0}
    return {p: options.get(p, defaults[p]) for p in functional.OP_ATTRIBUTES[op]}


@needs_compiler
@pytest.mark.parametrize("parallel_gradients", ["off", "on"])
@pytest.mark.parametrize("T", [1, 11])
@pytest.mark.parametrize("op,options", CASES, ids=lambda c: str(c))
def test_state_gradients(op, options, T, parallel_gradients, agree):
    check_state_gradients(op, options, T, parallel_gradients, agree)


@needs_compiler
@pytest.mark.parametrize("parallel_gradients", ["off", "on"])
@pytest.mark.parametrize("T", [1, 11])
def test_state_gradients_value_tiles(T, parallel_gradients, agree):
    # The initial state read and its gradient written per value tile.
    check_state_gradients("linear_attention", {"decay": 0.9}, T, parallel_gradients,
                          agree, dv=4, value_tile=2)


@needs_compiler
@pytest.mark.parametrize("parallel_gradients", ["off", "on"])
@pytest.mark.parametrize("op,options", [("linear_attention", {"decay": 0.9}), ("hla2", {})],
                         ids=lambda c: str(c))
def test_state_gradients_runs(op, options, parallel_gradients, agree):
    # The initial state folded into every run's start; its gradient from
    # the first run; the final state's cotangent entering the last.
    check_state_gradients(op, options, 19, parallel_gradients, agree,
                          chunk_form="segmented", segments=3)


@needs_compiler
@pytest.mark.parametrize("parallel_gradients", ["off", "on"])
@pytest.mark.parametrize("T", [1, 11])
@pytest.mark.parametrize("op,options", [("linear_attention", {"decay": 0.9}), ("hla2", {}),
                                        ("ahla", {"normalize": True, "eps": 0.1})],
                         ids=lambda c: str(c))
def test_grouped_heads_gradients(op, options, T, parallel_gradients, agree):
    # Four query heads on two K/V heads: the compiler repeats k and v to the
    # query heads and sums their gradients over each group.
    check_state_gradients(op, options, T, parallel_gradients, agree, heads=4, kv_heads=2)


def check_state_gradients(op, options, T, parallel_gradients, agree, dv=3, heads=2,
                          kv_heads=None, **compile_options):
    rng = np.random.default_rng(T)
    B, H, d = 1, heads, 4
    Hkv = kv_heads or H
    positive = options.get("normalize", False)
    draw = ((lambda *s: rng.uniform(0.2, 1.0, s)) if positive
            else (lambda *s: rng.standard_normal(s)))
    q, k, v = draw(B, T, H, d), draw(B, T, Hkv, d), rng.standard_normal((B, T, Hkv, dv))
    attrs = functional._check_options(op, d, full_options(op, options))
    shapes = [(B, H) + s for _, s in functional.state_components(op, d, dv, attrs)]
    s0 = [draw(*s) * 0.5 for s in shapes]
    g = rng.standard_normal((B, T, H, dv))
    h = [rng.standard_normal(s) for s in shapes]
    text = functional.build_ir(op, [q.shape, k.shape, v.shape], ["f32"] * 3, attrs, shapes,
                               shapes, None)
    # The tokens' gradients in the reverse pass, or in a pass parallel
    # over chunks from the states and λ saved per chunk.
    backward = hla.compile(text, chunk_size=4, vjp=True, entry="attend",
                           parallel_gradients=parallel_gradients,
                           **compile_options).attend
    f32 = [np.asarray(x, np.float32) for x in (q, k, v, *s0, g, *h)]
    grads = backward(*f32)

    def forward(q, k, v, *state):
        o, final = getattr(ref, op)(q, k, v, **options, initial_state=tuple(state),
                                    output_final_state=True)
        return np.concatenate([np.ravel(o)] + [np.ravel(s) for s in final])

    weight = np.concatenate([np.ravel(g)] + [np.ravel(x) for x in h])
    want = central_differences(forward, [q, k, v, *s0], weight)
    names = ["dq", "dk", "dv"] + [f"d{n}0" for n, _ in functional.state_components(
        op, d, dv, attrs)]
    for name, got, expected in zip(names, grads, want):
        agree(got, expected, f"state gradients: {op} {name}", tol=1e-4)
