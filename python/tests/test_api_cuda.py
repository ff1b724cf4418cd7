"""The functional API on CUDA tensors (skips without a GPU).

CUDA tensors compile for target "cuda" and run on device pointers on torch's
current stream. The GPU machine may lack the compiler (LLVM 22): there the
artefacts come from HLA_TEST_CACHE_DIR, compiled elsewhere with

    HLA_TEST_CACHE_DIR=DIR /usr/bin/python3 -m tests.test_api_cuda --seed

(run in python/; it compiles every call below for target "cuda" without
loading the results, which needs no GPU) plus a normal run of the API tests
with the same DIR for the CPU artefacts.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

import hla
from hla import functional

from .api_util import (T, central_differences, inputs, needs_artefacts, needs_cuda, needs_torch2,
                       reference, rel_err, torch)

pytestmark = [needs_cuda, needs_artefacts]

# Relative Frobenius error bounds. float16 gets bfloat16's bound here (as in
# test/Integration/CUDA): on the H200 hla2 measured 4.5e-3 (f16) and 3.6e-3
# (bf16), where the CPU path gives just the output's rounding, 2.1e-4 and
# 1.7e-3. float32 measured 1e-7..2e-7. Errors are printed with -s.
TOL = {"f32": 1e-5, "f16": 1e-2, "bf16": 1e-2}

# (name, op, input shape options, op options, dtype)
CASES = [
    ("linear_attention", "linear_attention", {}, {}, "f32"),
    ("hla2", "hla2", {}, {}, "f32"),
    ("ahla", "ahla", {}, {}, "f32"),
    ("hla3", "hla3", {}, {}, "f32"),
    # Decay with a final state uses chunk_size=16: with a single chunk the
    # CUDA target fails to compile it (see test_api_compile.py).
    ("hla2-options-grouped", "hla2", dict(hq=4, hkv=2, dv=8, positive=True),
     dict(decay=0.9, normalize=True, ridge=0.5, scale=0.6, eps=1e-4, chunk_size=16), "f32"),
    ("hla3-decay", "hla3", dict(hq=4, hkv=2), dict(decay=0.9, chunk_size=16), "f32"),
    ("hla2-bf16", "hla2", {}, {}, "bf16"),
    ("hla2-f16", "hla2", {}, {}, "f16"),
]


def _cuda(seed, dtype="f32", **shape):
    arrays = inputs(seed, **shape)
    want_in = [x.astype(np.float64) for x in arrays]
    tensors = [torch.from_numpy(x).cuda() for x in arrays]
    if dtype != "f32":
        tensors = [t.to({"f16": torch.float16, "bf16": torch.bfloat16}[dtype]) for t in tensors]
        want_in = [t.double().cpu().numpy() for t in tensors]  # what the GPU sees
    return tensors, want_in


@pytest.mark.parametrize("name,op,shape,options,dtype", CASES, ids=[c[0] for c in CASES])
def test_against_reference(name, op, shape, options, dtype):
    (q, k, v), want_in = _cuda(50, dtype, **shape)
    o, state = getattr(hla, op)(q, k, v, output_final_state=True, **options)
    assert o.device == q.device and o.dtype == q.dtype
    assert all(s.device == q.device and s.dtype == torch.float32 for s in state)
    semantics = {key: value for key, value in options.items() if key != "chunk_size"}
    want, want_state = reference(op, *want_in, output_final_state=True, **semantics)
    err = rel_err(o.double().cpu().numpy(), want)
    print(f"{name}: relative error {err:.2e}")
    assert err <= TOL[dtype]
    for got, ref in zip(state, want_state):
        assert rel_err(got.cpu().numpy(), ref) <= TOL[dtype]


# KDA, (chunk size, dtype): 100 tokens leave a ragged last chunk at 32 and
# 64 tokens; a chunk of 32 holds two blocks of its pair products, one of 64
# four (ChunkDeltaRule.cpp), the search's own choice is 32.
KDA_CASES = [(32, "f32"), (64, "f32"), (32, "bf16"), (64, "bf16")]
KDA_T, KDA_D = 100, 32


def _kda_inputs(seed):
    """q, k, v, g, beta (float32 numpy), as the CPU KDA tests draw them:
    L2-normalised keys, log-decays down to about -0.6 per token."""
    rng = np.random.default_rng(seed)
    shape = (1, KDA_T, 2, KDA_D)
    q = rng.standard_normal(shape) * KDA_D ** -0.5
    k = rng.standard_normal(shape)
    k /= np.linalg.norm(k, axis=-1, keepdims=True)
    v = rng.standard_normal(shape)
    g = -np.abs(rng.standard_normal(shape)) * 0.2
    beta = rng.uniform(0.1, 0.9, shape[:3])
    return [x.astype(np.float32) for x in (q, k, v, g, beta)]


@pytest.mark.parametrize("chunk,dtype", KDA_CASES, ids=[f"c{c}-{d}" for c, d in KDA_CASES])
def test_kda_against_reference(chunk, dtype):
    arrays = _kda_inputs(54)
    tensors = [torch.from_numpy(x).cuda() for x in arrays]
    if dtype != "f32":
        tensors = [t.to(torch.bfloat16) for t in tensors]
    q, k, v, g, beta = tensors
    o, (state,) = hla.kda(q, k, v, g=g, beta=beta, output_final_state=True, chunk_size=chunk)
    want_in = [t.double().cpu().numpy() for t in tensors]  # what the GPU sees
    want, (want_state,) = reference("kda", *want_in[:3], g=want_in[3], beta=want_in[4],
                                    output_final_state=True)
    err = rel_err(o.double().cpu().numpy(), want)
    print(f"kda chunk {chunk} {dtype}: relative error {err:.2e}")
    assert err <= TOL[dtype]
    assert rel_err(state.cpu().numpy(), want_state) <= TOL[dtype]


def test_state_round_trip_and_packed():
    (q, k, v), want_in = _cuda(51, t=64, hq=2, hkv=1)
    zeros = tuple(torch.zeros(1, 2, 16, 16, device="cuda") for _ in range(2))
    o1, s1 = hla.ahla(q[:, :32], k[:, :32], v[:, :32], initial_state=zeros,
                      output_final_state=True, decay=0.9, chunk_size=16)
    o2, s2 = hla.ahla(q[:, 32:], k[:, 32:], v[:, 32:], initial_state=s1,
                      output_final_state=True, decay=0.9, chunk_size=16)
    whole, s_whole = hla.ahla(q, k, v, initial_state=zeros, output_final_state=True,
                              decay=0.9, chunk_size=16)
    assert rel_err(torch.cat([o1, o2], 1).cpu().numpy(), whole.cpu().numpy()) <= 1e-5
    for a, b in zip(s2, s_whole):
        assert rel_err(a.cpu().numpy(), b.cpu().numpy()) <= 1e-5
    cu = torch.tensor([0, 1, 1, 20, T], dtype=torch.int32, device="cuda")
    (q, k, v), want_in = _cuda(52, hkv=1)
    o, final = hla.hla2(q, k, v, cu_seqlens=cu, output_final_state=True, decay=0.93)
    want, want_final = reference("hla2", *want_in, cu_seqlens=cu.cpu().numpy(),
                                 output_final_state=True, decay=0.93)
    assert rel_err(o.cpu().numpy(), want) <= TOL["f32"]
    for got, ref in zip(final, want_final):
        assert rel_err(got.cpu().numpy(), ref) <= TOL["f32"]


def test_transposed_inputs_and_side_stream():
    """Strided [B, H, T, D] views, on a side stream: the kernel runs on the
    current stream, so the result is ready in stream order."""
    (q, k, v), want_in = _cuda(53)
    views = [x.transpose(1, 2).contiguous().transpose(1, 2) for x in (q, k, v)]
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        o = hla.hla2(*views, decay=0.9)
        o = o * 1  # stream-ordered use of the output
    torch.cuda.current_stream().wait_stream(stream)
    assert rel_err(o.cpu().numpy(), reference("hla2", *want_in, decay=0.9)) <= TOL["f32"]


def test_hlattention_cuda_matches_cpu():
    from hla import nn as hla_nn
    torch.manual_seed(0)
    layer = hla_nn.HLAttention(d_model=32, n_heads=2, n_kv_heads=1, op="hla2", decay=0.95)
    x = torch.randn(2, T, 32, generator=torch.Generator().manual_seed(1)) * 0.5
    with torch.no_grad():
        y_cpu = layer(x)
        y_gpu = layer.cuda()(x.cuda())
    assert y_gpu.device.type == "cuda"
    assert rel_err(y_gpu.cpu().numpy(), y_cpu.numpy()) <= 1e-5


# ---------------------------------------------------------------------------
# The derived backward on CUDA tensors
# ---------------------------------------------------------------------------

# (name, op, input shape options, op options, dtype): 21 tokens (not a
# multiple of the chunk), gradients against central differences of the
# float64 reference; bf16 within issue 14's 1e-2.
BACKWARD_CASES = [
    ("linear_attention-decay", "linear_attention", {}, dict(decay=0.9, chunk_size=16), "f32"),
    ("hla2-grouped", "hla2", dict(hq=2, hkv=1), dict(chunk_size=16), "f32"),
    ("hla2-normalized", "hla2", dict(positive=True), dict(normalize=True, eps=0.1), "f32"),
    ("ahla-decay", "ahla", {}, dict(decay=0.9), "f32"),
    ("hla3", "hla3", {}, {}, "f32"),
    ("hla2-bf16", "hla2", {}, {}, "bf16"),
    ("ahla-one-head", "ahla", dict(hq=1), {}, "f32"),  # a chunk loop of one iteration
    # d = 64: register tiles (parallel gradients: few (sequence, head) pairs).
    ("linear_attention-d64-tiles", "linear_attention", dict(d=64), dict(decay=0.9), "bf16"),
]
BACKWARD_T = 21
BACKWARD_TOL = {"f32": 1e-4, "bf16": 1e-2}


def _backward_inputs(seed, shape):
    q, k, v = inputs(seed, t=BACKWARD_T, **shape)
    g = np.random.default_rng(seed + 1).standard_normal(q.shape[:3] + v.shape[3:])
    return (q, k, v), g.astype(np.float32)


@pytest.mark.parametrize("name,op,shape,options,dtype", BACKWARD_CASES,
                         ids=[c[0] for c in BACKWARD_CASES])
def test_backward_against_reference(name, op, shape, options, dtype):
    arrays, g = _backward_inputs(70, shape)
    cast = {"f32": torch.float32, "bf16": torch.bfloat16}[dtype]
    leaves = [torch.from_numpy(x).cuda().to(cast).requires_grad_(True) for x in arrays]
    o = getattr(hla, op)(*leaves, **options)
    (o.float() * torch.from_numpy(g).cuda()).sum().backward()
    semantics = {key: value for key, value in options.items() if key != "chunk_size"}
    seen = [x.detach().double().cpu().numpy() for x in leaves]  # what the GPU saw
    want = central_differences(lambda *x: reference(op, *x, **semantics), seen, g)
    for n, leaf, w in zip("qkv", leaves, want):
        assert leaf.grad.device == leaf.device and leaf.grad.dtype == leaf.dtype
        err = rel_err(leaf.grad.double().cpu().numpy(), w)
        print(f"{name} d{n}: relative error {err:.2e}")
        assert err <= BACKWARD_TOL[dtype], f"d{n}: {err:.2e}"


def _states_case(seed=71):
    """hla2 with decay, an initial state and the final state in the loss."""
    arrays, g = _backward_inputs(seed, {})
    rng = np.random.default_rng(seed)
    shapes = functional.state_shapes("hla2", list(arrays), {"decay": 0.9}, 1)
    s0 = [(rng.standard_normal(s) * 0.3).astype(np.float32) for s in shapes]
    h = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    return arrays, g, s0, h


def test_backward_through_states():
    """The derived backward through an initial state and the final state on
    CUDA tensors (torch's custom-op autograd on torch >= 2.4) against
    central differences of the float64 reference."""
    arrays, g, s0, h = _states_case()
    leaves = [torch.from_numpy(x).cuda().requires_grad_(True) for x in (*arrays, *s0)]
    o, final = hla.hla2(*leaves[:3], initial_state=tuple(leaves[3:]), output_final_state=True,
                        decay=0.9)
    loss = (o * torch.from_numpy(g).cuda()).sum()
    loss = loss + sum((f * torch.from_numpy(w).cuda()).sum() for f, w in zip(final, h))
    loss.backward()

    def flat(*x):
        o, final = reference("hla2", *x[:3], initial_state=tuple(x[3:]),
                             output_final_state=True, decay=0.9)
        return np.concatenate([np.ravel(o)] + [np.ravel(f) for f in final])

    weight = np.concatenate([g.ravel()] + [w.ravel() for w in h])
    want = central_differences(flat, [np.float64(x) for x in (*arrays, *s0)], weight)
    for i, (leaf, w) in enumerate(zip(leaves, want)):
        err = rel_err(leaf.grad.double().cpu().numpy(), w)
        print(f"states gradient {i}: relative error {err:.2e}")
        assert err <= 1e-4, f"gradient {i}: {err:.2e}"


@needs_torch2
@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_compiled_training_step(backend):
    """A training step through torch.compile (fullgraph): the
    forward graph holds hla's op, AOTAutograd's backward graph its derived
    backward; the parameters' gradients equal the eager step's. (The
    step's `loss.backward()` itself stays outside: Dynamo does not trace
    Tensor.backward.)"""
    from hla import nn as hla_nn
    torch.manual_seed(0)
    layer = hla_nn.HLAttention(d_model=32, n_heads=2, n_kv_heads=1, op="hla2", decay=0.95)
    layer = layer.cuda()
    x = torch.randn(2, BACKWARD_T, 32, generator=torch.Generator().manual_seed(1)) * 0.5
    target = torch.randn(2, BACKWARD_T, 32, generator=torch.Generator().manual_seed(2)) * 0.1
    x, target = x.cuda(), target.cuda()

    def loss_of(model):
        return ((model(x) - target) ** 2).mean()

    def step(model):
        loss = loss_of(model)
        loss.backward()
        grads = [p.grad.clone() for p in layer.parameters()]
        layer.zero_grad()
        return loss.detach(), grads

    eager_loss, eager = step(layer)
    compiled_loss, compiled = step(torch.compile(layer, backend=backend, fullgraph=True))
    assert torch.allclose(compiled_loss, eager_loss, rtol=1e-5, atol=1e-6)
    for a, b in zip(compiled, eager):
        assert torch.allclose(a, b, rtol=1e-4, atol=1e-6)


def test_wrong_device_index():
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    q, k, v = (x.to("cuda:1") for x in _cuda(54)[0])
    with pytest.raises(ValueError, match="runs on device 0"):
        hla.hla2(q, k, v)


# ---------------------------------------------------------------------------
# Seeding a cache for a GPU machine without the compiler
# ---------------------------------------------------------------------------

def _seed():
    """Compiles, for target "cuda", every call the tests above make, into
    $HLA_TEST_CACHE_DIR, without loading anything (no GPU needed): each call
    is first run on numpy arrays with the compile intercepted, to learn the
    exact signature the CUDA path will compile."""
    import os
    from hla import compiler, functional, ir

    os.environ["HLA_CACHE_DIR"] = os.environ["HLA_TEST_CACHE_DIR"]
    seen = []

    class Intercepted(Exception):
        pass

    def record(*args):
        seen.append(args)
        raise Intercepted

    real = functional.compiled_function
    functional.compiled_function = record
    real_backward = functional.compiled_backward
    functional.compiled_backward = record

    def plan(fn, *args, dtype="f32", **kwargs):
        try:
            fn(*args, **kwargs)
        except Intercepted:
            op, shapes, dtypes, attrs, states, finals, cu, chunk, _ = seen.pop()
            dtypes = [dtype] * len(dtypes)
            calls.append((op, shapes, dtypes, attrs, states, finals, cu, chunk))

    def plan_backward(arrays, g, dtype, states=(), final_grads=()):
        """The backward of the call planned last, as _torch_ops computes it
        (grouped heads as they are: the compiled backward sums their
        gradients)."""
        op, _, _, attrs, _, _, _, chunk = calls[-1]
        q, k, v = arrays
        try:
            functional.execute_backward(op, [q, k, v], g, attrs, chunk, "cpu", list(states),
                                        list(final_grads))
        except Intercepted:
            op, shapes, dtypes, attrs, chunk, _, initial, final = seen.pop()
            backward_calls.append((op, shapes, [dtype] * len(dtypes), attrs, chunk, initial,
                                   final))

    calls, backward_calls = [], []
    for _, op, shape, options, dtype in CASES:
        plan(getattr(hla, op), *inputs(50, **shape), dtype=dtype, output_final_state=True,
             **options)
    for chunk, dtype in KDA_CASES:
        q, k, v, g, beta = _kda_inputs(54)
        plan(hla.kda, q, k, v, g=g, beta=beta, dtype=dtype, output_final_state=True,
             chunk_size=chunk)
    q, k, v = inputs(51, t=64, hq=2, hkv=1)
    zeros = tuple(np.zeros((1, 2, 16, 16), np.float32) for _ in range(2))
    plan(hla.ahla, q[:, :32], k[:, :32], v[:, :32], initial_state=zeros,
         output_final_state=True, decay=0.9, chunk_size=16)
    plan(hla.ahla, q, k, v, initial_state=zeros, output_final_state=True, decay=0.9,
         chunk_size=16)
    q, k, v = inputs(52, hkv=1)
    plan(hla.hla2, q, k, v, cu_seqlens=np.array([0, 1, 1, 20, T], np.int32),
         output_final_state=True, decay=0.93)
    plan(hla.hla2, *inputs(53), decay=0.9)
    rng = np.random.default_rng(0)
    x = [rng.standard_normal((2, T, n, 16)).astype(np.float32) for n in (2, 1, 1)]
    plan(hla.hla2, *x, decay=0.95)  # HLAttention's call
    for _, op, shape, options, dtype in BACKWARD_CASES:
        arrays, g = _backward_inputs(70, shape)
        plan(getattr(hla, op), *arrays, dtype=dtype, **options)
        plan_backward(arrays, g, dtype)
    arrays, g, s0, h = _states_case()
    plan(hla.hla2, *arrays, initial_state=tuple(s0), output_final_state=True, decay=0.9)
    plan_backward(arrays, g, "f32", s0, h)
    x = [rng.standard_normal((2, BACKWARD_T, n, 16)).astype(np.float32) for n in (2, 1, 1)]
    plan(hla.hla2, *x, decay=0.95)  # the training step's forward
    plan_backward(x, np.zeros((2, BACKWARD_T, 2, 16), np.float32), "f32")
    functional.compiled_function = real
    functional.compiled_backward = real_backward

    for op, shapes, dtypes, attrs, states, finals, cu, chunk in calls:
        text = functional.build_ir(op, shapes, dtypes, attrs, states, finals, cu)
        print(op, dtypes[0], compiler.precompile(text, "cuda", chunk_size=chunk))
    for op, shapes, dtypes, attrs, chunk, initial, final in backward_calls:
        text = functional.build_ir(op, shapes, dtypes, attrs, list(initial), list(final), None)
        print(op, dtypes[0], "backward", compiler.precompile(
            text, "cuda", chunk_size=chunk, vjp=True, entry=ir.FUNCTION_NAME))

    # The CPU reference of test_hlattention_cuda_matches_cpu, compiled by
    # running it (the GPU machine has no compiler).
    import torch
    from hla import nn as hla_nn
    torch.manual_seed(0)
    layer = hla_nn.HLAttention(d_model=32, n_heads=2, n_kv_heads=1, op="hla2", decay=0.95)
    x = torch.randn(2, T, 32, generator=torch.Generator().manual_seed(1)) * 0.5
    with torch.no_grad():
        layer(x)
    print("HLAttention cpu ok")


if __name__ == "__main__" and "--seed" in sys.argv:
    _seed()
