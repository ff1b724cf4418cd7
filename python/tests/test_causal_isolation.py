"""Causal isolation of the CPU code generator: an output at token s depends
only on tokens <= s, so a non-finite value (NaN, +-inf) injected into any
token input at token t must leave every output before t finite and equal to
the clean run's, for every op, chunk form and scan schedule.

The masked-matmul form multiplies each row with every token of its chunk
(masked by zeros, and 0 * NaN = NaN); hla-chunk's causal isolation reads a
chunk with such a token out a second time without it (see Passes.td). The
poison positions hit the middle of a chunk, a chunk's first token, the first
token of the sequence and the last one.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import hla

from .api_util import compiler_available
from .codegen_util import (HLA_OPT, attention_graph, compile_graph, kda_graph,
                           linsimp_graph, run_exe)

pytestmark = pytest.mark.skipif(
    not os.path.exists(HLA_OPT), reason="hla-opt is not built (run the README's build)"
)

B, T, HQ, HKV, D, DV = 2, 50, 2, 1, 8, 4
CHUNK = 16
POSITIONS = [37, 32, 0, T - 1]

# (form, extra hla-opt flags): the three chunk forms, both scan schedules.
FORMS = {
    "phased-sequential": ("--chunk-form=phased", "--scan-schedule=sequential"),
    "phased-blelloch": ("--chunk-form=phased", "--scan-schedule=blelloch"),
    "fused": ("--chunk-form=fused",),
    "segmented": ("--chunk-form=segmented", "--segments=2"),
}


def _graph_and_inputs(op, rng):
    """The op's graph, its token inputs (name, array) and its other inputs."""
    def draw(*shape, scale=0.5):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    if op == "kda":
        graph = kda_graph(B, T, HQ, HKV, D, DV)
        tokens = [("q", draw(B, T, HQ, D)), ("k", draw(B, T, HKV, D)),
                  ("v", draw(B, T, HKV, DV)),
                  ("g", -np.abs(draw(B, T, HKV, D))),
                  ("beta", 1 / (1 + np.exp(-draw(B, T, HKV))))]
        return graph, tokens, []
    if op in ("linsimp", "linsimp-exact"):
        m, window = 16, 5
        graph = linsimp_graph(B, T, HQ, HKV, D, DV, m, window)
        if op == "linsimp-exact":
            graph = graph.replace("{window", "{kernel = #hla.kernel<exact>, window")
        tokens = [("q", draw(B, T, HQ, D)), ("k", draw(B, T, HKV, D)),
                  ("v", draw(B, T, HKV, DV)), ("r", draw(B, T, HKV, D)),
                  ("u", draw(B, T, HKV, DV))]
        return graph, tokens, [draw(m, D, scale=1.0)]
    options = {"decay": 0.9, "normalize": True} if op != "hla2" else {
        "decay": 0.9, "ridge": 0.5}
    graph = attention_graph(op, (B, T, HQ, D), (B, T, HKV, D), (B, T, HKV, DV),
                            options)
    positive = options.get("normalize", False)
    tokens = []
    for name, shape in (("q", (B, T, HQ, D)), ("k", (B, T, HKV, D)),
                        ("v", (B, T, HKV, DV))):
        x = draw(*shape)
        tokens.append((name, np.abs(x) if positive and name != "v" else x))
    return graph, tokens, []


@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("op", ["linear_attention", "hla2", "ahla", "hla3",
                                "kda", "linsimp"])
def test_poisoned_token_leaves_earlier_outputs(tmp_path, op, form):
    check_isolation(tmp_path, op, FORMS[form])


def test_exact_linsimp(tmp_path):
    """LinSimp's exact kernel (its own lowering, no chunked state)."""
    check_isolation(tmp_path, "linsimp-exact", ())


def check_isolation(tmp_path, op, flags):
    rng = np.random.default_rng(abs(hash((op, flags))) % 2**32)
    graph, tokens, rest = _graph_and_inputs(op, rng)
    exe = compile_graph(graph, chunk=CHUNK, extra=flags)
    form = " ".join(flags)
    clean_inputs = [x for _, x in tokens] + rest
    (clean,) = run_exe(exe, clean_inputs, tmp_path)
    assert np.all(np.isfinite(clean))
    poisoned_runs = 0
    for which, (name, _) in enumerate(tokens):
        for t, poison in zip(POSITIONS, [np.nan, np.inf, -np.inf, np.nan]):
            inputs = [x.copy() for x in clean_inputs]
            # One batch entry, every head and channel of the token.
            inputs[which][1, t] = poison
            (out,) = run_exe(exe, inputs, tmp_path)
            where = f"{op} {form}: {poison} in {name} at t={t}"
            # The other batch entry is untouched; this one up to t.
            np.testing.assert_array_equal(out[0], clean[0], err_msg=where)
            before = out[1, :t]
            assert np.all(np.isfinite(before)), (
                f"{where}: outputs before t not finite at tokens "
                f"{sorted(set(np.argwhere(~np.isfinite(before))[:, 0]))}")
            np.testing.assert_allclose(before, clean[1, :t], rtol=1e-6, atol=1e-6,
                                       err_msg=where)
            # The poison still reaches the output it feeds (the readout at
            # t reads every input of token t, except that LinSimp's anchor
            # terms and KDA's gate only act through later tokens).
            if t == POSITIONS[0] and not (op.startswith("linsimp") and name in ("r", "u")) \
                    and not (op == "kda" and name == "g"):
                assert not np.all(np.isfinite(out[1, t:])), where
            poisoned_runs += 1
    assert poisoned_runs == len(tokens) * len(POSITIONS)


def test_option_through_the_python_api():
    """hla.compile(causal_isolation=...) reaches hla-chunk through the C API:
    on (the default), a NaN value at token 37 leaves the tokens before it
    finite; off, the earlier rows of its 16-token chunk (32..36) are NaN."""
    if not compiler_available():
        pytest.skip("libHLACAPI.so is not built")
    shape = "tensor<1x50x2x8xf32>"
    graph = (f"func.func @f(%q: {shape}, %k: {shape}, %v: {shape}) -> {shape} {{\n"
             f"  %o = hla.linear_attention %q, %k, %v : ({shape}, {shape}, {shape}) -> {shape}\n"
             f"  return %o : {shape}\n}}\n")
    rng = np.random.default_rng(7)
    q, k, v = (rng.standard_normal((1, 50, 2, 8)).astype(np.float32) for _ in range(3))
    v[0, 37] = np.nan
    on = hla.compile(graph, chunk_size=16).f(q, k, v)
    off = hla.compile(graph, chunk_size=16, causal_isolation=False).f(q, k, v)
    assert np.all(np.isfinite(on[0, :37]))
    assert not np.all(np.isfinite(off[0, 32:37]))
    np.testing.assert_array_equal(on[0, :32], off[0, :32])
    with pytest.raises(ValueError, match="causal_isolation"):
        hla.compile(graph, causal_isolation="yes")
