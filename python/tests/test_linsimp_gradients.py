"""LinSimp's backward, derived by the compiler (favor kernel: hla.anchor_vjp;
exact kernel: hla.linsimp_exact_vjp), against central differences of the
float64 reference (SEMANTICS.md §5) on fresh random inputs: the gradients of
q, k, v, the anchors r, u, the feature matrix Ω and the state (M, a and the
anchor ring); lengths that are not multiples of the chunk and length 1,
windows shorter and longer than the chunk (and than the sequence), W = 1,
grouped heads, a scale, initial anchors partly invalid; through torch
autograd, packed sequences included."""

from __future__ import annotations

import os

import numpy as np
import pytest

import hla.reference as ref

from .api_util import central_differences, needs_compiler
from .codegen_util import HLA_OPT, linsimp_graph

pytestmark = pytest.mark.skipif(
    not os.path.exists(HLA_OPT), reason="hla-opt is not built (run the README's build)"
)

D, DV, M = 4, 3, 8


def draw_inputs(rng, B, T, hq, hkv, W, state, invalid):
    """q, k, r of small norm (the favor kernel's regime), v, u, Ω, and the
    state (M, a, anchor r, u, validity with its first `invalid` anchors
    padding)."""
    q = rng.standard_normal((B, T, hq, D)) * 0.5
    k = rng.standard_normal((B, T, hkv, D)) * 0.5
    v = rng.standard_normal((B, T, hkv, DV))
    r = rng.standard_normal((B, T, hkv, D)) * 0.5
    u = rng.standard_normal((B, T, hkv, DV))
    omega = rng.standard_normal((M, D))
    states = []
    if state:
        valid = np.ones((B, hq, W - 1))
        valid[..., :invalid] = 0.0
        states = [rng.uniform(0.1, 0.5, (B, hq, M, DV)), rng.uniform(0.1, 0.5, (B, hq, M)),
                  rng.standard_normal((B, hq, W - 1, D)) * 0.5,
                  rng.standard_normal((B, hq, W - 1, DV)), valid]
    return [q, k, v, r, u, omega], states


def exact_kernel(text):
    """`text`'s hla.linsimp with kernel = exact."""
    return text.replace("{window", "{kernel = #hla.kernel<exact>, window")


def gradient_check(agree, *, T, W, chunk, B=1, hq=1, hkv=1, state=False, invalid=0,
                   scale=None, seed=0, kernel="favor"):
    import hla
    rng = np.random.default_rng(seed + 7 * T + 31 * W)
    operands, states = draw_inputs(rng, B, T, hq, hkv, W, state, invalid)
    text = linsimp_graph(B, T, hq, hkv, D, DV, M, W, state=state, scale=scale)
    if kernel == "exact":
        text = exact_kernel(text)
    backward = hla.compile(text, chunk_size=chunk, vjp=True, entry="main").main
    g = rng.standard_normal((B, T, hq, DV))
    h = [rng.standard_normal(s.shape) for s in states]
    f32 = [np.asarray(x, np.float32) for x in (*operands, *states, g, *h)]
    grads = backward(*f32)
    assert len(grads) == 6 + len(states)

    valid = states[4] if state else None

    def forward(q, k, v, r, u, omega, *rest):
        out = ref.linsimp(q, k, v, r, u, omega=omega, window=W, scale=scale, kernel=kernel,
                          initial_state=(*rest, valid) if state else None,
                          output_final_state=state)
        if not state:
            return np.ravel(out)
        o, final = out
        return np.concatenate([np.ravel(o)] + [np.ravel(x) for x in final])

    # The compiled function takes f32: the reference sees the same rounded
    # values. The validity (0 or 1) is not differentiated; its gradient is 0.
    inputs = [np.asarray(x, np.float32).astype(np.float64) for x in (*operands, *states[:4])]
    weight = np.concatenate([np.ravel(g)] + [np.ravel(x) for x in h])
    want = central_differences(forward, inputs, weight)
    names = ["dq", "dk", "dv", "dr", "du", "domega", "dM", "da", "danchor_r", "danchor_u"]
    what = f"linsimp gradients ({kernel}) T={T} W={W} chunk={chunk} B={B} hq={hq} " \
           f"hkv={hkv} state={state} invalid={invalid} scale={scale}"
    for name, got, expected in zip(names, grads, want):
        if kernel == "exact" and name == "domega":
            assert not np.any(got), "the exact kernel does not read omega"
            continue
        agree(got, expected, f"{what} {name}", tol=2e-4)
    if state:
        assert not np.any(grads[-1]), "the validity's gradient is zero"


@needs_compiler
@pytest.mark.parametrize("T,W,chunk", [
    (7, 3, 2),     # ragged, window shorter than the chunk... and longer
    (9, 5, 2),     # the ring spans several chunks
    (13, 4, 4),    # ragged last chunk
    (16, 4, 4),    # whole chunks
    (6, 1, 4),     # W = 1: no ring
    (5, 8, 16),    # one chunk, the window longer than the sequence
    (2, 4, 1),     # chunks of one token
])
def test_gradients(T, W, chunk, agree):
    gradient_check(agree, T=T, W=W, chunk=chunk)


@needs_compiler
@pytest.mark.parametrize("T,W,chunk,invalid", [(11, 4, 4, 0), (6, 5, 2, 2), (3, 8, 2, 3)])
def test_gradients_through_states(T, W, chunk, invalid, agree):
    """From an initial state (M, a and W−1 anchors, the first `invalid` of
    them padding) to the final state's cotangent."""
    gradient_check(agree, T=T, W=W, chunk=chunk, state=True, invalid=invalid)


@needs_compiler
def test_gradients_grouped_heads_batch_and_scale(agree):
    """Four query heads on two K/V heads (k, v, r, u repeated, their
    gradients summed per group), two batch entries, τ = 0.3, with state."""
    gradient_check(agree, T=10, W=3, chunk=4, B=2, hq=4, hkv=2, state=True, scale=0.3)


@needs_compiler
def test_length_one():
    """One token: o = u ⊙ v exactly (its only pair's features cancel), so
    q, k, r and Ω get no gradient, and v, u each other's times the cotangent."""
    import hla
    rng = np.random.default_rng(3)
    (q, k, v, r, u, omega), _ = draw_inputs(rng, 1, 1, 2, 2, 4, False, 0)
    text = linsimp_graph(1, 1, 2, 2, D, DV, M, 4)
    backward = hla.compile(text, chunk_size=4, vjp=True, entry="main").main
    g = rng.standard_normal((1, 1, 2, DV))
    dq, dk, dv, dr, du, domega = backward(
        *[np.asarray(x, np.float32) for x in (q, k, v, r, u, omega, g)])
    for zero in (dq, dk, dr, domega):
        assert np.max(np.abs(zero)) <= 1e-6
    np.testing.assert_allclose(dv, g * u, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(du, g * v, rtol=1e-5, atol=1e-6)


@needs_compiler
@pytest.mark.parametrize("products", ["on", "off"])
def test_bf16_graph_split_products(products, agree):
    """A bf16 graph's favor backward with its matrix products split into
    products of bf16-exact parts (bf16_products=on: what CUDA's tensor cores
    get; the CPU multiplies in f32 either way) and unsplit: both the
    gradients of central differences at the bf16-rounded inputs, to the
    rounding of the bf16 results."""
    import hla
    from .codegen_util import to_bf16
    rng = np.random.default_rng(17)
    B, T, hq, hkv, d, dv, m, W = 1, 13, 2, 1, 8, 4, 16, 4
    scaled = [(B, T, hq, d), (B, T, hkv, d), (B, T, hkv, dv), (B, T, hkv, d),
              (B, T, hkv, dv)]
    operands = [to_bf16(rng.standard_normal(s) * (0.5 if s[-1] == d else 1.0))
                for s in scaled] + [to_bf16(rng.standard_normal((m, d)))]
    g = to_bf16(rng.standard_normal((B, T, hq, dv)))
    text = linsimp_graph(B, T, hq, hkv, d, dv, m, W, dtype="bf16")
    backward = hla.compile(text, chunk_size=4, vjp=True, entry="main",
                           bf16_products=products).main
    grads = backward(*operands, g)

    def forward(q, k, v, r, u, omega):
        return np.ravel(ref.linsimp(q, k, v, r, u, omega=omega, window=W))

    want = central_differences(forward, [x.astype(np.float64) for x in operands],
                               np.ravel(g))
    for name, got, expected in zip(["dq", "dk", "dv", "dr", "du", "domega"], grads, want):
        agree(np.asarray(got, np.float64), expected,
              f"linsimp bf16 gradients, bf16_products={products} {name}", tol=1e-2)


def _torch():
    return pytest.importorskip("torch")


@needs_compiler
def test_torch_autograd(agree):
    """hla.linsimp on torch tensors: q, k, v, r, u and Ω get their gradients
    through autograd."""
    torch = _torch()
    import hla
    rng = np.random.default_rng(11)
    operands, _ = draw_inputs(rng, 1, 9, 2, 2, 3, False, 0)
    weight = rng.standard_normal((1, 9, 2, DV))
    tensors = [torch.tensor(np.asarray(x, np.float32), requires_grad=True) for x in operands]
    out = hla.linsimp(*tensors[:5], omega=tensors[5], window=3, chunk_size=4)
    (out.double() * torch.tensor(weight)).sum().backward()

    def forward(q, k, v, r, u, omega):
        return np.ravel(ref.linsimp(q, k, v, r, u, omega=omega, window=3))

    want = central_differences(forward, [t.detach().double().numpy() for t in tensors],
                               np.ravel(weight))
    for name, t, expected in zip(["dq", "dk", "dv", "dr", "du", "domega"], tensors, want):
        agree(t.grad.numpy(), expected, f"linsimp torch autograd {name}", tol=2e-4)


@needs_compiler
def test_torch_packed_sequences():
    """Packed sequences differentiate as each sequence alone: the tokens'
    gradients are each sequence's own, Ω's their sum."""
    torch = _torch()
    import hla
    rng = np.random.default_rng(5)
    lengths = [5, 9, 2]
    T = sum(lengths)
    operands, _ = draw_inputs(rng, 1, T, 2, 2, 3, False, 0)
    weight = torch.tensor(rng.standard_normal((1, T, 2, DV)), dtype=torch.float32)
    cu = torch.tensor(np.cumsum([0] + lengths), dtype=torch.int32)

    def grads(tensors, cu_seqlens=None, w=weight):
        leaves = [torch.tensor(np.asarray(x, np.float32), requires_grad=True)
                  for x in tensors]
        out = hla.linsimp(*leaves[:5], omega=leaves[5], window=3, chunk_size=4,
                          cu_seqlens=cu_seqlens)
        (out * w).sum().backward()
        return [t.grad.numpy() for t in leaves]

    packed = grads(operands, cu)
    alone = [np.zeros_like(x, dtype=np.float32) for x in operands]
    start = 0
    for n in lengths:
        part = [x[:, start:start + n] for x in operands[:5]] + [operands[5]]
        got = grads(part, None, weight[:, start:start + n])
        for i in range(5):
            alone[i][:, start:start + n] = got[i]
        alone[5] += got[5]
        start += n
    for name, a, b in zip(["dq", "dk", "dv", "dr", "du", "domega"], packed, alone):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6, err_msg=name)


@needs_compiler
@pytest.mark.parametrize("T,W,chunk", [(7, 3, 2), (9, 5, 4), (13, 4, 4), (6, 1, 4), (5, 8, 16)])
def test_exact_kernel_gradients(T, W, chunk, agree):
    """The exact kernel (the softmax over every (key, anchor) pair): its
    blocks reversed under each query's fixed log-normaliser; Ω unread."""
    gradient_check(agree, T=T, W=W, chunk=chunk, kernel="exact")


@needs_compiler
def test_exact_kernel_grouped_heads_and_scale(agree):
    gradient_check(agree, T=10, W=3, chunk=4, B=2, hq=4, hkv=2, scale=0.3, kernel="exact")


@needs_compiler
def test_exact_kernel_torch_autograd(agree):
    torch = _torch()
    import hla
    rng = np.random.default_rng(12)
    operands, _ = draw_inputs(rng, 1, 9, 2, 1, 4, False, 0)
    weight = rng.standard_normal((1, 9, 2, DV))
    tensors = [torch.tensor(np.asarray(x, np.float32), requires_grad=True) for x in operands]
    out = hla.linsimp(*tensors[:5], omega=tensors[5], window=4, kernel="exact",
                      chunk_size=4)
    (out.double() * torch.tensor(weight)).sum().backward()

    def forward(q, k, v, r, u, omega):
        return np.ravel(ref.linsimp(q, k, v, r, u, omega=omega, window=4, kernel="exact"))

    want = central_differences(forward, [t.detach().double().numpy() for t in tensors],
                               np.ravel(weight))
    for name, t, expected in zip(["dq", "dk", "dv", "dr", "du"], tensors, want):
        agree(t.grad.numpy(), expected, f"linsimp exact torch autograd {name}", tol=2e-4)
    assert not np.any(tensors[5].grad.numpy())
