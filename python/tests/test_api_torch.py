"""The functional API on torch tensors, torch.ops.hla.*, and hla.nn.

CPU tests run everywhere torch is installed; CUDA tests skip without a
device; torch.compile tests skip on torch < 2. The shapes match
test_api_functional's where possible, so compiles are shared.
"""

from __future__ import annotations

import numpy as np
import pytest

import hla
from hla import CompilerNotFoundError

from .api_util import (OPS, T, central_differences, inputs, needs_artefacts, needs_compiler, needs_cuda,
                       needs_torch, needs_torch2, reference, rel_err, torch)

pytestmark = needs_torch


def tensors(seed, **kwargs):
    return tuple(torch.from_numpy(x) for x in inputs(seed, **kwargs))


@needs_artefacts
@pytest.mark.parametrize("op", OPS)
def test_float32_against_reference(op):
    q, k, v = tensors(40)
    o = getattr(hla, op)(q, k, v)
    assert isinstance(o, torch.Tensor) and o.dtype == torch.float32 and o.device == q.device
    assert rel_err(o.numpy(), reference(op, q.numpy(), k.numpy(), v.numpy())) <= 1e-5


@needs_artefacts
@pytest.mark.parametrize("dtype,tol", [("float16", 2e-3), ("bfloat16", 1e-2)])
def test_half_precision(dtype, tol):
    q, k, v = (x.to(getattr(torch, dtype)) for x in tensors(41))
    o, state = hla.hla2(q, k, v, output_final_state=True)
    assert o.dtype == q.dtype
    assert all(s.dtype == torch.float32 for s in state)
    # The reference sees the same rounded inputs, in float64.
    want, want_state = reference("hla2", *(x.double().numpy() for x in (q, k, v)),
                                 output_final_state=True)
    assert rel_err(o.double().numpy(), want) <= tol
    for got, ref in zip(state, want_state):
        assert rel_err(got.numpy(), ref) <= tol


@needs_artefacts
def test_transposed_bhtd_inputs():
    """x.transpose(1, 2) of [B, H, T, D] tensors: one dense copy each."""
    q, k, v = tensors(42)
    bhtd = [x.transpose(1, 2).contiguous() for x in (q, k, v)]
    views = [x.transpose(1, 2) for x in bhtd]
    assert not views[0].is_contiguous()
    before = hla.stats()["contiguous_copies"]
    o = hla.hla2(*views, decay=0.9)
    assert hla.stats()["contiguous_copies"] == before + 3
    assert o.is_contiguous() and o.shape == q.shape
    assert rel_err(o.numpy(), reference("hla2", q.numpy(), k.numpy(), v.numpy(),
                                        decay=0.9)) <= 1e-5


@needs_artefacts
def test_grouped_heads_state_round_trip():
    q, k, v = tensors(43, t=64, hq=2, hkv=1)
    zeros = (torch.zeros(1, 2, 16, 16), torch.zeros(1, 2, 16, 16))
    o1, s1 = hla.ahla(q[:, :32], k[:, :32], v[:, :32], initial_state=zeros,
                      output_final_state=True, decay=0.9)
    o2, s2 = hla.ahla(q[:, 32:], k[:, 32:], v[:, 32:], initial_state=s1,
                      output_final_state=True, decay=0.9)
    whole, s_whole = hla.ahla(q, k, v, initial_state=zeros, output_final_state=True,
                              decay=0.9)
    assert rel_err(torch.cat([o1, o2], 1).numpy(), whole.numpy()) <= 1e-5
    for a, b in zip(s2, s_whole):
        assert rel_err(a.numpy(), b.numpy()) <= 1e-5


@needs_artefacts
def test_packed_sequences():
    q, k, v = tensors(44, hkv=1)
    cu = torch.tensor([0, 1, 1, 20, T], dtype=torch.int32)
    o, final = hla.hla3(q, k, v, cu_seqlens=cu, output_final_state=True, decay=0.93)
    want, want_final = reference("hla3", q.numpy(), k.numpy(), v.numpy(),
                                 cu_seqlens=cu.numpy(), output_final_state=True, decay=0.93)
    assert rel_err(o.numpy(), want) <= 1e-5
    for got, ref in zip(final, want_final):
        assert rel_err(got.numpy(), ref) <= 1e-5


@needs_artefacts
def test_second_call_does_not_compile():
    q, k, v = tensors(45)
    hla.linear_attention(q, k, v)
    before = hla.stats()["compiles"]
    hla.linear_attention(q * 2, k, v)
    assert hla.stats()["compiles"] == before


# ---------------------------------------------------------------------------
# Custom ops
# ---------------------------------------------------------------------------

def test_ops_registered():
    hla.register_torch_ops()
    for op in ["linear_attention", "hla2", "ahla", "hla3", "linsimp", "kda"]:
        assert hasattr(torch.ops.hla, op)


def test_fake_shapes_on_meta():
    """The shape function (what torch.compile traces with) needs no compile."""
    hla.register_torch_ops()
    q, k, v = (torch.empty(1, 37, 4, 16, device="meta"), torch.empty(1, 37, 2, 16, device="meta"),
               torch.empty(1, 37, 2, 8, device="meta"))
    cu = torch.empty(4, dtype=torch.int32, device="meta")
    out = torch.ops.hla.hla2(q, k, v, [], cu, 0.25, True, True, 1e-6, 1.0, 0.0, True, 0)
    assert [tuple(x.shape) for x in out] == [(1, 37, 4, 8), (3, 4, 16, 16), (3, 4, 16, 8),
                                            (3, 4, 16), (3, 4, 16, 8), (3, 4, 16)]
    assert out[0].dtype == torch.float32 and out[1].dtype == torch.float32
    q16 = q.to(torch.bfloat16)
    (o,) = torch.ops.hla.linear_attention(q16, k.bfloat16(), v.bfloat16(), [], None, 0.25,
                                          False, 1e-6, 1.0, False, 0)
    assert o.dtype == torch.bfloat16 and tuple(o.shape) == (1, 37, 4, 8)


def _grad_case(op, options, seed, hkv=2):
    """(autograd gradients, central differences of the reference) of
    sum(g * op(q, k, v)) at a length that is not a multiple of the chunk."""
    q, k, v = tensors(seed, t=11, hq=2, hkv=hkv, d=4, dv=3,
                      positive=bool(options.get("normalize")))
    g = torch.randn(q.shape[:3] + v.shape[3:], generator=torch.Generator().manual_seed(seed))
    leaves = [x.clone().requires_grad_(True) for x in (q, k, v)]
    o = getattr(hla, op)(*leaves, chunk_size=4, **options)
    (o * g).sum().backward()
    want = central_differences(lambda *x: reference(op, *x, **options),
                               [x.numpy() for x in (q, k, v)], g.numpy())
    return [x.grad.numpy() for x in leaves], want


@needs_artefacts
@pytest.mark.parametrize("op,options", [
    ("linear_attention", {"decay": 0.9}), ("hla2", {}), ("hla2", {"masked": False}),
    ("ahla", {"normalize": True, "eps": 0.1}), ("hla3", {"decay": 0.9})])
def test_backward_matches_reference(op, options):
    got, want = _grad_case(op, options, seed=60)
    for name, a, b in zip("qkv", got, want):
        assert rel_err(a, b) <= 1e-4, f"d{name}: {rel_err(a, b):.2e}"


@needs_artefacts
def test_backward_grouped_heads():
    """Two query heads share one K/V head: dk, dv sum over the group."""
    got, want = _grad_case("hla2", {"decay": 0.95}, seed=61, hkv=1)
    assert got[1].shape == (1, 11, 1, 4)
    for name, a, b in zip("qkv", got, want):
        assert rel_err(a, b) <= 1e-4, f"d{name}: {rel_err(a, b):.2e}"


@needs_artefacts
@pytest.mark.parametrize("op,options", [("hla2", {"decay": 0.9}), ("linear_attention", {})])
def test_backward_packed_sequences(op, options):
    """cu_seqlens (an empty sequence, one of one token, lengths that are
    not multiples of the chunk), grouped heads: gradients against central
    differences of the reference with the same packing."""
    q, k, v = tensors(64, t=23, hq=2, hkv=1, d=4, dv=3)
    cu = torch.tensor([0, 0, 1, 9, 23], dtype=torch.int32)
    g = torch.randn(q.shape[:3] + v.shape[3:], generator=torch.Generator().manual_seed(64))
    leaves = [x.clone().requires_grad_(True) for x in (q, k, v)]
    o = getattr(hla, op)(*leaves, cu_seqlens=cu, chunk_size=4, **options)
    (o * g).sum().backward()
    want = central_differences(
        lambda *x: reference(op, *x, cu_seqlens=cu.numpy(), **options),
        [x.numpy() for x in (q, k, v)], g.numpy())
    for name, a, b in zip("qkv", leaves, want):
        assert rel_err(a.grad.numpy(), b) <= 1e-4, f"d{name}: {rel_err(a.grad.numpy(), b):.2e}"


@needs_artefacts
def test_backward_direct_op_call():
    """torch.ops.hla.<op> carries the same backward as the functional API."""
    q, k, v = (x.requires_grad_(True) for x in tensors(62))
    (o,) = torch.ops.hla.linear_attention(q, k, v, [], None, 0.25, False, 1e-6, 1.0, False, 0)
    o.sum().backward()
    q2, k2, v2 = (x.detach().clone().requires_grad_(True) for x in (q, k, v))
    hla.linear_attention(q2, k2, v2, scale=0.25).sum().backward()
    for a, b in ((q, q2), (k, k2), (v, v2)):
        assert torch.allclose(a.grad, b.grad)


@needs_artefacts
@pytest.mark.parametrize("op,options,hkv", [
    ("hla2", {"decay": 0.9}, 1), ("linear_attention", {"normalize": True, "eps": 0.1}, 2),
    ("hla3", {}, 2)])
def test_backward_through_states(op, options, hkv):
    """An initial state that requires grad and the final state in the loss
    (as truncated backpropagation through time uses them): every gradient
    against central differences of the float64 reference; grouped heads."""
    positive = bool(options.get("normalize"))
    q, k, v = tensors(65, t=11, hq=2, hkv=hkv, d=4, dv=3, positive=positive)
    rng = np.random.default_rng(65)
    shapes = hla.functional.state_shapes(op, [q, k, v], options, 1)
    s0 = [torch.from_numpy(rng.uniform(0.1, 0.5, s) if positive
                           else rng.standard_normal(s) * 0.3).float() for s in shapes]
    g = torch.from_numpy(rng.standard_normal(q.shape[:3] + v.shape[3:])).float()
    h = [torch.from_numpy(rng.standard_normal(s)).float() for s in shapes]
    leaves = [x.clone().requires_grad_(True) for x in (q, k, v, *s0)]
    o, final = getattr(hla, op)(*leaves[:3], initial_state=tuple(leaves[3:]),
                                output_final_state=True, chunk_size=4, **options)
    ((o * g).sum() + sum((f * w).sum() for f, w in zip(final, h))).backward()

    def flat(*x):
        o, final = reference(op, *x[:3], initial_state=tuple(x[3:]), output_final_state=True,
                             **options)
        return np.concatenate([np.ravel(o)] + [np.ravel(f) for f in final])

    weight = np.concatenate([g.numpy().ravel()] + [w.numpy().ravel() for w in h])
    want = central_differences(flat, [x.detach().numpy() for x in leaves], weight)
    for i, (a, b) in enumerate(zip(leaves, want)):
        assert rel_err(a.grad.numpy(), b) <= 1e-4, f"gradient {i}: {rel_err(a.grad.numpy(), b):.2e}"


@needs_artefacts
def test_backward_refusals():
    q, k, v = tensors(63)
    q.requires_grad_(True)
    # The final state of packed sequences is not differentiated yet.
    cu = torch.tensor([0, 5, q.shape[1]])
    o, state = hla.hla2(q, k, v, cu_seqlens=cu, output_final_state=True)
    with pytest.raises(NotImplementedError, match="final state of packed sequences"):
        (o.sum() + state[0].sum()).backward()


@needs_artefacts
def test_no_grad_inference():
    q, k, v = tensors(40)
    q.requires_grad_(True)
    with torch.no_grad():
        o = hla.hla2(q, k, v)
    assert not o.requires_grad


# ---------------------------------------------------------------------------
# hla.nn.HLAttention
# ---------------------------------------------------------------------------

def _layer(**kwargs):
    import hla.nn
    torch.manual_seed(0)
    options = dict(d_model=32, n_heads=2, n_kv_heads=1, op="hla2", decay=0.95)
    options.update(kwargs)
    return hla.nn.HLAttention(**options)


def _manual(layer, x):
    """The same sublayer written out with numpy and the float64 reference."""
    w = {name: getattr(layer, name).weight.detach().double().numpy()
         for name in ("q_proj", "k_proj", "v_proj", "o_proj")}
    xs = x.detach().double().numpy()
    B, T_, _ = xs.shape
    q = (xs @ w["q_proj"].T).reshape(B, T_, layer.n_heads, layer.head_dim)
    k = (xs @ w["k_proj"].T).reshape(B, T_, layer.n_kv_heads, layer.head_dim)
    v = (xs @ w["v_proj"].T).reshape(B, T_, layer.n_kv_heads, layer.head_dim)
    o = reference(layer.op, q, k, v, **layer.op_options)
    return o.reshape(B, T_, -1) @ w["o_proj"].T


@needs_artefacts
def test_hlattention_forward():
    layer = _layer()
    x = torch.randn(2, T, 32, generator=torch.Generator().manual_seed(1)) * 0.5
    with torch.no_grad():
        y = layer(x)
    assert y.shape == (2, T, 32) and y.dtype == torch.float32
    assert rel_err(y.numpy(), _manual(layer, x)) <= 1e-5


@needs_artefacts
def test_hlattention_trains():
    """A few Adam steps fitting a fixed target: the loss falls (the layer's
    projections learn through the derived backward, grouped heads and all)."""
    layer = _layer(decay=None)
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(2, 24, 32, generator=gen) * 0.5
    target = torch.randn(2, 24, 32, generator=gen) * 0.1
    optimizer = torch.optim.Adam(layer.parameters(), lr=2e-2)
    losses = []
    for _ in range(15):
        optimizer.zero_grad()
        loss = ((layer(x) - target) ** 2).mean()
        loss.backward()
        optimizer.step()
        losses.append(float(loss))
    assert all(p.grad is not None for p in layer.parameters())
    assert losses[-1] < 0.5 * losses[0], losses


def test_hlattention_validation():
    with pytest.raises(ValueError, match="n_heads = 3 must be a multiple of n_kv_heads = 2"):
        _layer(n_heads=3, n_kv_heads=2, head_dim=8)
    with pytest.raises(ValueError, match="op must be one of"):
        _layer(op="kda")
    with pytest.raises(TypeError, match="unknown option"):
        _layer(window=4)
    with pytest.raises(ValueError, match="not divisible"):
        _layer(d_model=30, n_heads=4, n_kv_heads=4)
    layer = _layer()
    with pytest.raises(ValueError, match=r"x must be \[B, T, d_model = 32\]"):
        layer(torch.zeros(2, 5, 16))
    assert "op='hla2'" in repr(layer)


@needs_artefacts
@needs_torch2
@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_torch_compile_cpu(backend):
    """torch.compile keeps the op opaque (one graph, no break) and gives the
    eager result. Runs the compiled artefact of test_hlattention_forward."""
    layer = _layer()
    x = torch.randn(2, T, 32, generator=torch.Generator().manual_seed(1)) * 0.5
    compiled = torch.compile(layer, backend=backend, fullgraph=True)
    with torch.no_grad():
        eager = layer(x)
        y = compiled(x)
    assert torch.allclose(y, eager, rtol=1e-6, atol=1e-6)


# ---------------------------------------------------------------------------
# CUDA: the compiler has no CUDA code generator yet
# ---------------------------------------------------------------------------

@needs_cuda
@needs_compiler
def test_cuda_inputs_target_cuda():
    """CUDA tensors compile for target "cuda": NotImplementedError while the
    compiler has no CUDA code generator, the reference's answer once it has."""
    q, k, v = tensors(46)
    try:
        o = hla.hla2(q.cuda(), k.cuda(), v.cuda())
    except NotImplementedError as e:
        assert "target 'cuda'" in str(e) or "does not lower" in str(e)
        return
    assert o.device.type == "cuda" and o.dtype == torch.float32
    assert rel_err(o.cpu().numpy(), reference("hla2", q.numpy(), k.numpy(), v.numpy())) <= 1e-5


@needs_cuda
def test_cuda_fake_shapes():
    hla.register_torch_ops()
    q = torch.empty(1, 8, 2, 16, device="cuda")
    from torch._subclasses.fake_tensor import FakeTensorMode  # torch >= 2
    with FakeTensorMode() as mode:
        fq = mode.from_tensor(q)
        out = torch.ops.hla.hla3(fq, fq, fq, [], None, 0.25, False, 1e-6, 1.0, True, 0)
    assert [tuple(x.shape) for x in out] == [(1, 8, 2, 16), (1, 2, 16, 16), (1, 2, 16, 16),
                                            (1, 2, 16, 16)]
    assert all(x.device.type == "cuda" for x in out)


@needs_cuda
@needs_torch2
@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_torch_compile_cuda_module(backend):
    """A module containing HLAttention compiles with fullgraph=True; running
    it behaves like eager (today: NotImplementedError for target cuda)."""
    layer = _layer().cuda()
    x = torch.randn(2, T, 32, device="cuda") * 0.5
    compiled = torch.compile(layer, backend=backend, fullgraph=True)
    try:
        with torch.no_grad():
            eager = layer(x)
    except (NotImplementedError, CompilerNotFoundError) as e:
        # Tracing must still succeed: the compiled module fails the same way,
        # inside the op's kernel, not in torch.compile.
        with pytest.raises(type(e)):
            with torch.no_grad():
                compiled(x)
        return
    with torch.no_grad():
        assert torch.allclose(compiled(x), eager, rtol=1e-5, atol=1e-5)
