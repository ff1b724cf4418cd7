"""A decay rate per query head (the ops' ``head_decay`` tensor), compiled
for the CPU and compared with the float64 references on fresh random
inputs: every decayed op and option set, lengths that are not multiples of
the chunk (and length 1), several chunk sizes, the phased, fused and
segmented forms, grouped heads, state in and out, packed sequences. Each
head's rate differs, so a rate read from the wrong head shows."""

from __future__ import annotations

import os

import numpy as np
import pytest

import hla.reference as ref

from .api_util import central_differences, needs_compiler
from .codegen_util import (HLA_OPT, OPTION_CASES, attention_graph, compile_graph,
                           relative_error, run_exe)

pytestmark = pytest.mark.skipif(
    not os.path.exists(HLA_OPT), reason="hla-opt is not built (run the README's build)"
)

OPS = ["linear_attention", "hla2", "ahla", "hla3"]


def inputs(rng, T, hq, hkv, d, dv, positive):
    def draw(shape, scale):
        x = rng.standard_normal(shape) * scale
        return np.abs(x) if positive else x
    q = draw((1, T, hq, d), d ** -0.5).astype(np.float32)
    k = draw((1, T, hkv, d), d ** -0.5).astype(np.float32)
    v = rng.standard_normal((1, T, hkv, dv)).astype(np.float32)
    # Rates from slow to fast, one of them 1 (no decay), in a random order.
    rates = np.concatenate([[1.0], rng.uniform(0.6, 0.99, hq - 1)])
    return q, k, v, rng.permutation(rates).astype(np.float32)


def check(tmp_path, op, T, options, *, chunk=16, hq=4, hkv=2, d=8, dv=6, form=None,
          seed=0, tol=1e-5):
    rng = np.random.default_rng(seed)
    options = {key: value for key, value in options.items() if key != "decay"}
    q, k, v, g = inputs(rng, T, hq, hkv, d, dv, positive=bool(options.get("normalize")))
    graph = attention_graph(op, q.shape, k.shape, v.shape, options, head_decay=True)
    exe = compile_graph(graph, chunk=chunk,
                        extra=tuple(f"--chunk-form={form}".split()) if form else ())
    (out,) = run_exe(exe, [q, k, v, g], tmp_path)
    expected = getattr(ref, op)(q, k, v, decay=g.astype(np.float64), **options)
    err = relative_error(out, expected)
    assert err <= tol, f"{op} {options} T={T} chunk={chunk} {form}: relative error {err:.2e}"


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("T", [1, 15, 16, 17, 100])
@pytest.mark.parametrize("chunk", [8, 16])
def test_lengths_and_chunks(tmp_path, op, T, chunk):
    check(tmp_path, op, T, {}, chunk=chunk, seed=T + chunk)


@pytest.mark.parametrize("op,options", [(op, o) for op in OPS for o in OPTION_CASES[op]])
def test_options(tmp_path, op, options):
    check(tmp_path, op, 37, options)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("form", ["phased", "fused", "segmented --segments=3"])
def test_forms(tmp_path, op, form):
    check(tmp_path, op, 70, dict(normalize=True), form=form, seed=5)


@pytest.mark.parametrize("op", OPS)
def test_state_and_packed_sequences(tmp_path, op):
    """Packed sequences (one empty) from given states, final states out."""
    rng = np.random.default_rng(8)
    T, hq, hkv, d, dv = 90, 4, 2, 8, 6
    q, k, v, g = inputs(rng, T, hq, hkv, d, dv, positive=False)
    cu = np.array([0, 20, 20, 90], np.int32)
    n = len(cu) - 1
    _, like = getattr(ref, op)(q[:, :1], k[:, :1], v[:, :1], output_final_state=True)
    state = tuple((rng.standard_normal((n,) + s.shape[1:]) * 0.2).astype(np.float32)
                  for s in like)
    graph = attention_graph(op, q.shape, k.shape, v.shape, {},
                            state_shapes=[s.shape for s in state], final_state=True,
                            cu_seqlens=len(cu), head_decay=True)
    exe = compile_graph(graph, chunk=16)
    outs = run_exe(exe, [q, k, v, *state, cu, g], tmp_path)
    expected, final = getattr(ref, op)(q, k, v, decay=g.astype(np.float64),
                                       initial_state=state, output_final_state=True,
                                       cu_seqlens=cu)
    assert relative_error(outs[0], expected) <= 1e-5
    for got, want in zip(outs[1:], final):
        assert relative_error(got, want) <= 1e-5


def test_rates_equal_to_the_attribute(tmp_path):
    """Every head at one rate gives what the `decay` attribute gives."""
    rng = np.random.default_rng(3)
    q, k, v, _ = inputs(rng, 50, 2, 2, 8, 6, positive=False)
    g = np.full(2, 0.9, np.float32)
    per_head = compile_graph(attention_graph("hla2", q.shape, k.shape, v.shape, {},
                                             head_decay=True), chunk=16)
    attribute = compile_graph(attention_graph("hla2", q.shape, k.shape, v.shape,
                                              dict(decay=0.9)), chunk=16)
    (a,) = run_exe(per_head, [q, k, v, g], tmp_path)
    (b,) = run_exe(attribute, [q, k, v], tmp_path)
    assert relative_error(a, b) <= 1e-6


# ---------------------------------------------------------------------------
# The backward: the rates' gradient (and every other one) derived by the
# compiler, against central differences of the float64 reference.
# ---------------------------------------------------------------------------

GRADIENT_CASES = [
    ("linear_attention", {}),
    ("linear_attention", {"normalize": True, "eps": 0.1}),
    ("hla2", {}),
    ("hla2", {"ridge": 0.5, "scale": 0.7}),
    ("hla2", {"masked": False, "normalize": True, "eps": 0.1}),
    ("ahla", {}),
    ("ahla", {"normalize": True, "eps": 0.1}),
    ("hla3", {}),
]


def gradient_check(op, options, T, agree, *, heads=2, kv_heads=None, state=False,
                   **compile_options):
    import hla
    from hla import functional
    rng = np.random.default_rng(T + 17 * heads)
    B, d, dv = 1, 4, 3
    Hkv = kv_heads or heads
    positive = options.get("normalize", False)
    draw = ((lambda *s: rng.uniform(0.2, 1.0, s)) if positive
            else (lambda *s: rng.standard_normal(s)))
    q, k, v = draw(B, T, heads, d), draw(B, T, Hkv, d), rng.standard_normal((B, T, Hkv, dv))
    rates = rng.uniform(0.55, 0.95, heads)
    full = {p: options.get(p, default) for p, default in
            [("scale", None), ("normalize", False), ("eps", 1e-6), ("masked", True),
             ("ridge", 0.0)] if p in functional.OP_ATTRIBUTES[op]}
    attrs = functional._check_options(op, d, dict(full, decay=None))
    shapes = ([(B, heads) + s for _, s in functional.state_components(op, d, dv, attrs)]
              if state else [])
    s0 = [draw(*s) * 0.5 for s in shapes]
    g = rng.standard_normal((B, T, heads, dv))
    h = [rng.standard_normal(s) for s in shapes]
    text = attention_graph(op, q.shape, k.shape, v.shape,
                           {key: value for key, value in options.items()},
                           state_shapes=shapes, final_state=state, head_decay=True)
    backward = hla.compile(text, chunk_size=4, vjp=True, entry="main",
                           **compile_options).main
    f32 = [np.asarray(x, np.float32) for x in (q, k, v, *s0, rates, g, *h)]
    grads = backward(*f32)

    def forward(q, k, v, *rest):
        state0, gammas = rest[:-1], rest[-1]
        out = getattr(ref, op)(q, k, v, **options, decay=gammas,
                               initial_state=tuple(state0) if state else None,
                               output_final_state=state)
        if not state:
            return np.ravel(out)
        o, final = out
        return np.concatenate([np.ravel(o)] + [np.ravel(x) for x in final])

    # The compiled function takes and returns f32: the reference sees the
    # same rounded values.
    inputs = [np.asarray(x, np.float32).astype(np.float64) for x in (q, k, v, *s0, rates)]
    weight = np.concatenate([np.ravel(g)] + [np.ravel(x) for x in h])
    want = central_differences(forward, inputs, weight)
    names = ["dq", "dk", "dv"] + [f"ds{i}" for i in range(len(s0))] + ["drates"]
    for name, got, expected in zip(names, grads, want):
        agree(got, expected, f"head_decay gradients: {op} {options} T={T} {name}",
              tol=2e-4)


@needs_compiler
@pytest.mark.parametrize("T", [1, 11])
@pytest.mark.parametrize("op,options", GRADIENT_CASES, ids=lambda c: str(c))
def test_gradients(op, options, T, agree):
    gradient_check(op, options, T, agree)


@needs_compiler
@pytest.mark.parametrize("op", OPS)
def test_gradients_through_states(op, agree):
    """Initial state in (its gradient), final state out (its cotangent)."""
    gradient_check(op, {}, 10, agree, state=True)


@needs_compiler
@pytest.mark.parametrize("op", ["linear_attention", "hla2"])
def test_gradients_grouped_heads(op, agree):
    gradient_check(op, {}, 9, agree, heads=4, kv_heads=2)


@needs_compiler
@pytest.mark.parametrize("forms", [dict(chunk_form="segmented", segments=3),
                                   dict(parallel_gradients="on")],
                         ids=["runs", "parallel-gradients"])
def test_gradients_forms(forms, agree):
    gradient_check("hla2", {"ridge": 0.25}, 19, agree, state=True, **forms)


# ---------------------------------------------------------------------------
# The Python API: decay given per head (numpy, torch autograd, HLAttention).
# ---------------------------------------------------------------------------

@needs_compiler
@pytest.mark.parametrize("op", OPS)
def test_functional_numpy(op):
    import hla
    rng = np.random.default_rng(4)
    q, k, v, g = inputs(rng, 45, 4, 2, 8, 6, positive=False)
    out, final = getattr(hla, op)(q, k, v, decay=g, output_final_state=True, chunk_size=16)
    want, want_final = getattr(ref, op)(q, k, v, decay=g.astype(np.float64),
                                        output_final_state=True)
    assert relative_error(out, want) <= 1e-5
    for got, expected in zip(final, want_final):
        assert relative_error(got, expected) <= 1e-5
    # A list of rates is the same.
    assert relative_error(getattr(hla, op)(q, k, v, decay=[float(x) for x in g],
                                           chunk_size=16), want) <= 1e-5


@needs_compiler
def test_functional_errors():
    import hla
    rng = np.random.default_rng(5)
    q, k, v, g = inputs(rng, 10, 4, 2, 8, 6, positive=False)
    with pytest.raises(ValueError, match="needs 4 rates"):
        hla.hla2(q, k, v, decay=g[:2])
    with pytest.raises(ValueError, match=r"decay rates must be in \(0, 1\], got 1.5"):
        hla.hla2(q, k, v, decay=np.array([0.9, 1.5, 0.5, 0.5], np.float32))
    with pytest.raises(ValueError, match=r"must be in \(0, 1\]"):
        hla.linear_attention(q, k, v, decay=np.array([0.9, np.nan, 0.5, 0.5]))
    with pytest.raises(TypeError, match="must be floats"):
        hla.ahla(q, k, v, decay=np.array([1, 1, 1, 1]))


def _torch():
    return pytest.importorskip("torch")


@needs_compiler
@pytest.mark.parametrize("op", ["linear_attention", "hla2"])
def test_torch_autograd(op, agree):
    """Gradients of q, k, v and the rates through torch autograd (float64
    reference by central differences)."""
    torch = _torch()
    rng = np.random.default_rng(6)
    q, k, v, _ = inputs(rng, 13, 2, 2, 4, 3, positive=False)
    g = rng.uniform(0.5, 0.95, 2)  # inside (0, 1): differences step both ways
    weight = rng.standard_normal((1, 13, 2, 3))
    tensors = [torch.tensor(x, requires_grad=True) for x in (q, k, v, g)]
    out = getattr(__import__("hla"), op)(*tensors[:3], decay=tensors[3], chunk_size=4)
    (out.double() * torch.tensor(weight)).sum().backward()

    def forward(q, k, v, rates):
        return np.ravel(getattr(ref, op)(q, k, v, decay=rates))

    want = central_differences(forward, [x.astype(np.float64) for x in (q, k, v, g)],
                               np.ravel(weight))
    for name, t, expected in zip(["dq", "dk", "dv", "drates"], tensors, want):
        agree(t.grad.numpy(), expected, f"head_decay torch autograd: {op} {name}", tol=2e-4)


@needs_compiler
def test_attention_module_learns_its_decay():
    """HLAttention(learn_decay=True): the rates are parameters that get
    gradients and move under an optimizer step, staying in (0, 1)."""
    torch = _torch()
    from hla.nn import HLAttention
    torch.manual_seed(0)
    layer = HLAttention(16, 4, n_kv_heads=2, op="hla2", learn_decay=True,
                        decay=[0.9, 0.8, 0.7, 0.95], chunk_size=8)
    assert torch.allclose(torch.sigmoid(layer.decay_logit),
                          torch.tensor([0.9, 0.8, 0.7, 0.95]), atol=1e-6)
    x = torch.randn(2, 20, 16)
    before = torch.sigmoid(layer.decay_logit).detach().clone()
    layer(x).pow(2).mean().backward()
    assert layer.decay_logit.grad is not None
    assert float(layer.decay_logit.grad.abs().sum()) > 0
    torch.optim.SGD(layer.parameters(), lr=1.0).step()
    after = torch.sigmoid(layer.decay_logit).detach()
    assert not torch.allclose(before, after)
    assert bool(((after > 0) & (after < 1)).all())
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        HLAttention(16, 4, learn_decay=True, decay=1.0)
