"""Empty sequences (T = 0) for every op: compiled like any length, an empty
output, and the final state equal to the initial state (zeros without
one). Empty batches and heads, which compile nothing, are in
test_api_errors.py."""

from __future__ import annotations

import numpy as np
import pytest

import hla

from .api_util import needs_compiler
from .test_api_errors import ALL_OPS, op_call

pytestmark = needs_compiler

_STATE_SHAPES = {"linear_attention": [(4, 4)], "hla2": [(4, 4)] * 3, "ahla": [(4, 4)] * 2,
                 "hla3": [(4, 4)] * 3, "kda": [(4, 4)],
                 "linsimp": [(8, 4), (8,), (2, 4), (2, 4), (2,)]}


@pytest.mark.parametrize("op", ALL_OPS)
def test_empty_sequence_keeps_the_state(op):
    rng = np.random.default_rng(11)
    initial = tuple(rng.standard_normal((1, 2) + s).astype(np.float32)
                    for s in _STATE_SHAPES[op])
    if op == "linsimp":  # anchor_valid is a 0/1 mask
        initial = initial[:4] + (np.ones_like(initial[4]),)
    o, final = op_call(op, t=0, initial_state=initial, output_final_state=True)
    assert o.shape == (1, 0, 2, 4)
    assert len(final) == len(initial)
    for got, want in zip(final, initial):
        np.testing.assert_array_equal(got, want)


def test_empty_packed_sequences_keep_their_state():
    """cu_seqlens [0, 0, 0]: two empty sequences, each keeps its state."""
    rng = np.random.default_rng(12)
    initial = (rng.standard_normal((2, 2, 4, 4)).astype(np.float32),)
    o, final = op_call("linear_attention", t=0, cu_seqlens=[0, 0, 0], initial_state=initial,
                       output_final_state=True)
    assert o.shape == (1, 0, 2, 4)
    np.testing.assert_array_equal(final[0], initial[0])
    o, final = op_call("linear_attention", t=0, cu_seqlens=[0, 0, 0],
                       output_final_state=True)
    assert final[0].shape == (2, 2, 4, 4) and not final[0].any()
