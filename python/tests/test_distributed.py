"""hla.distributed: one sequence split along T over gloo ranks (CPU).

Each case runs 2-4 processes (distributed_worker.py), each holding its span
of one sequence; their output rows, put together, and the final state every
rank returns must equal one process's hla.<op> over the whole sequence
(f32, relative error <= 1e-5).
"""

import json
import os
import pathlib
import socket
import subprocess
import sys

import numpy as np
import pytest

import hla
from .api_util import needs_compiler

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")
if not dist.is_available() or not dist.is_gloo_available():
    pytest.skip("torch.distributed with gloo is not available", allow_module_level=True)

from .distributed_worker import whole_inputs, whole_omega  # noqa: E402

WORKER = pathlib.Path(__file__).with_name("distributed_worker.py")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_ranks(case, tmp_path):
    """Runs one process per span; returns (per-rank npz or None, errors)."""
    world = len(case["spans"])
    port = free_port()
    procs = [subprocess.Popen([sys.executable, str(WORKER), str(port), str(rank), str(world),
                               json.dumps(case), str(tmp_path)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for rank in range(world)]
    logs = [p.communicate(timeout=600)[0] for p in procs]
    for p, log in zip(procs, logs):
        assert p.returncode == 0, log
    results, errors = [], []
    for rank in range(world):
        err = tmp_path / f"{rank}.err"
        errors.append(err.read_text() if err.exists() else None)
        npz = tmp_path / f"{rank}.npz"
        results.append(np.load(npz) if npz.exists() else None)
    return results, errors


def single_process(case):
    arrays, state = whole_inputs(case)
    extra = {n: a for n, a in arrays.items() if n not in ("q", "k", "v")}
    if case["op"] == "linsimp":
        extra["omega"] = whole_omega(case)
    return getattr(hla, case["op"])(arrays["q"], arrays["k"], arrays["v"], **extra,
                                    **case["options"], initial_state=state,
                                    chunk_size=case.get("chunk_size"),
                                    cu_seqlens=case.get("cu"),
                                    output_final_state=True)


CASES = {
    # uneven spans, decay and normalisation, an initial state
    "linear_decay_normalize_2": dict(op="linear_attention",
                                     options={"decay": 0.9, "normalize": True},
                                     T=37, spans=[20, 17], initial_state=True),
    "hla2_3": dict(op="hla2", options={}, T=48, spans=[16, 16, 16]),
    "hla2_decay_ridge_unmasked_2": dict(op="hla2",
                                        options={"decay": 0.95, "ridge": 0.5,
                                                 "masked": False},
                                        T=40, spans=[20, 20], initial_state=True),
    "ahla_decay_2": dict(op="ahla", options={"decay": 0.9}, T=40, spans=[20, 20]),
    # hla3's total has components no state carries (Q2, R, U)
    "hla3_4": dict(op="hla3", options={}, T=40, spans=[10, 10, 10, 10], chunk_size=8),
    # KDA's total is the span's transition matrix as well
    "kda_4": dict(op="kda", options={}, T=41, spans=[11, 10, 10, 10], initial_state=True),
    # one token on a rank
    "kda_one_token_2": dict(op="kda", options={}, T=17, spans=[1, 16]),
    # LinSimp: the anchor window reaches over spans shorter than W - 1 = 4
    # into the initial anchors
    "linsimp_window_5_3": dict(op="linsimp", options={"window": 5}, T=26, spans=[3, 2, 21],
                               initial_state=True, m=16),
    "linsimp_window_4_2": dict(op="linsimp", options={"window": 4, "scale": 0.5}, T=40,
                               spans=[20, 20], m=32),
    # packed sequences: one across all three spans, an empty one, two inside
    # the last span, per-sequence states; kda: one ending on a span boundary
    "hla2_packed_3": dict(op="hla2", options={"decay": 0.9}, B=1, T=60, spans=[20, 20, 20],
                          cu=[0, 7, 45, 45, 52, 60], initial_state=True),
    "kda_packed_3": dict(op="kda", options={}, B=1, T=50, spans=[17, 16, 17],
                         cu=[0, 10, 33, 40, 50], initial_state=True),
}


@needs_compiler
@pytest.mark.parametrize("name", sorted(CASES))
def test_split_equals_single_process(name, tmp_path, agree):
    case = dict(seed=7, B=2, H=2, D=16, Dv=8)
    case.update(CASES[name])
    results, errors = run_ranks(case, tmp_path)
    assert errors == [None] * len(case["spans"]), errors
    o, final = single_process(case)
    agree(np.concatenate([r["o"] for r in results], axis=1), o,
          f"distributed {case['op']} output", tol=1e-5)
    for r in results:
        agree(tuple(r[f"s{i}"] for i in range(len(final))), final,
              f"distributed {case['op']} final state", tol=1e-5)


BACKWARD_CASES = {
    "hla2_decay_3": dict(op="hla2", options={"decay": 0.9}, T=30, spans=[10, 8, 12],
                         initial_state=True),
    "linear_normalize_2": dict(op="linear_attention", options={"normalize": True, "eps": 0.5},
                               T=21, spans=[13, 8], initial_state=True),
    "hla3_2": dict(op="hla3", options={}, T=20, spans=[9, 11]),
    # no index plan: the transposed combine is KDA's combine reversed
    "kda_3": dict(op="kda", options={}, T=23, spans=[9, 6, 8], initial_state=True),
}


@needs_compiler
@pytest.mark.parametrize("name", sorted(BACKWARD_CASES))
def test_backward_across_ranks(name, tmp_path, agree):
    """Each rank's gradients of its rows' and (on rank 0) the final state's
    loss terms, put together, equal one process's autograd gradients of the
    whole loss; the initial state's gradient summed over the ranks too."""
    case = dict(seed=9, B=1, H=2, D=4, Dv=3, backward=True, chunk_size=4)
    case.update(BACKWARD_CASES[name])
    results, errors = run_ranks(case, tmp_path)
    assert errors == [None] * len(case["spans"]), errors
    from .distributed_worker import cotangents
    arrays, state = whole_inputs(case)
    leaves = {n: torch.from_numpy(a).requires_grad_(True) for n, a in arrays.items()}
    s0 = [torch.from_numpy(x).requires_grad_(True) for x in state or ()]
    extra = {n: t for n, t in leaves.items() if n not in ("q", "k", "v")}
    o, final = getattr(hla, case["op"])(leaves["q"], leaves["k"], leaves["v"], **extra,
                                        **case["options"], chunk_size=4,
                                        initial_state=tuple(s0) or None,
                                        output_final_state=True)
    g, h = cotangents(case, tuple(o.shape), [f.shape for f in final])
    loss = (o * torch.from_numpy(g)).sum()
    loss = loss + sum((f * torch.from_numpy(w)).sum() for f, w in zip(final, h))
    loss.backward()
    for n, leaf in leaves.items():
        agree(np.concatenate([r[f"d{n}"] for r in results], axis=1), leaf.grad.numpy(),
              f"distributed {case['op']} d{n}", tol=1e-5)
    for i, x in enumerate(s0):
        agree(sum(r[f"ds{i}"] for r in results), x.grad.numpy(),
              f"distributed {case['op']} initial state gradient", tol=1e-5)


@needs_compiler
def test_spans_that_disagree_raise_on_every_rank(tmp_path):
    case = dict(op="linear_attention", options={}, seed=1, B=1, T=16, H=2, D=16, Dv=8,
                spans=[8, 8], bad_heads=True)
    _, errors = run_ranks(case, tmp_path)
    for e in errors:
        assert e and e.startswith("ValueError") and "differ in a size other than T" in e, e


@needs_compiler
def test_a_bad_argument_on_one_rank_raises_on_every_rank(tmp_path):
    """Rank 1's float64 values are refused there; rank 0 is told, instead of
    waiting for rank 1 in a collective."""
    case = dict(op="hla2", options={}, seed=1, B=1, T=16, H=2, D=16, Dv=8, spans=[8, 8],
                bad_dtype=True)
    _, errors = run_ranks(case, tmp_path)
    assert errors[1] and errors[1].startswith("TypeError") and "mixed dtypes" in errors[1]
    assert errors[0] and errors[0].startswith("RuntimeError") and "rank(s) [1]" in errors[0]


@needs_compiler
def test_an_empty_span_raises_on_every_rank(tmp_path):
    case = dict(op="hla2", options={}, seed=1, B=1, T=8, H=2, D=16, Dv=8, spans=[8, 0])
    _, errors = run_ranks(case, tmp_path)
    for e in errors:
        assert e and "every rank needs at least one token" in e, e


def test_unsplit_op_and_uninitialised_group_raise():
    import hla.distributed
    x = torch.zeros(1, 4, 1, 8)
    with pytest.raises(NotImplementedError, match="rwkv is not split"):
        hla.distributed._run("rwkv", [], {}, None, False, None, None, None)
    with pytest.raises(RuntimeError, match="torch.distributed is not initialized"):
        hla.distributed.hla2(x, x, x)
    with pytest.raises(TypeError, match="missing operand 'g'"):
        hla.distributed.kda(x, x, x, beta=x[..., 0])
    with pytest.raises(TypeError, match="unknown keyword"):
        hla.distributed.hla2(x, x, x, window=3)


@pytest.fixture
def one_rank():
    """A gloo group of this process alone."""
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0,
                            world_size=1)
    yield
    dist.destroy_process_group()


def test_rank_local_refusals(one_rank):
    import hla.distributed
    x = torch.zeros(1, 4, 1, 8)
    with pytest.raises(TypeError, match="needs torch tensors"):
        hla.distributed.hla2(x.numpy(), x.numpy(), x.numpy())
    omega = torch.zeros(4, 8)
    with pytest.raises(NotImplementedError, match="kernel='exact' has no finite state"):
        hla.distributed.linsimp(x, x, x, x, x, omega=omega, window=2, kernel="exact")
    with pytest.raises(NotImplementedError, match="not split for linsimp yet"):
        hla.distributed.linsimp(x, x, x, x, x, omega=omega, window=2, cu_seqlens=[0, 4])
    with pytest.raises(ValueError, match="cu_seqlens"):
        hla.distributed.hla2(x, x, x, cu_seqlens=[0, 3])  # ends before T = 4


def test_backward_is_refused(one_rank):
    import hla.distributed
    x = torch.zeros(1, 4, 1, 8, requires_grad=True)
    omega = torch.zeros(4, 8)
    with pytest.raises(NotImplementedError, match="backward is not implemented yet"):
        hla.distributed.linsimp(x, x, x, x, x, omega=omega, window=2)
    with pytest.raises(NotImplementedError, match="packed sequences across ranks"):
        hla.distributed.hla2(x, x, x, cu_seqlens=[0, 2, 4])


TOTAL_IR = """
#la = #hla.monoid<"la" inputs(q: [d], k: [d], v: [dv]) params(gamma = 0.9)
  state(P: [d, dv], rho: [] eye) token(P = k * v.T, rho = gamma)
  combine(P = rho.b * P.a + P.b, rho = rho.a * rho.b) readout(num = q.T * P)>
func.func @total(%p: tensor<2x9x3x4x5xf32>, %r: tensor<2x9x3xf32>)
    -> (tensor<2x3x4x5xf32>, tensor<2x3xf32>) {
  %P, %R = hla.total #la(%p, %r) : (tensor<2x9x3x4x5xf32>, tensor<2x9x3xf32>)
      -> (tensor<2x3x4x5xf32>, tensor<2x3xf32>)
  return %P, %R : tensor<2x3x4x5xf32>, tensor<2x3xf32>
}
"""


@needs_compiler
def test_total_of_given_segments(agree):
    """hla.total of segments that are not a chunked chain (the sequential
    fold of hla-lower-scans) against the monoid's combine in float64."""
    rng = np.random.default_rng(3)
    p = rng.standard_normal((2, 9, 3, 4, 5)).astype(np.float32)
    r = rng.uniform(0.5, 1.5, (2, 9, 3)).astype(np.float32)
    P, R = hla.compile(TOTAL_IR).total(p, r)
    want_p, want_r = np.zeros((2, 3, 4, 5)), np.ones((2, 3))
    for t in range(9):  # (P, rho) then (P_t, rho_t)
        want_p = r[:, t, :, None, None] * want_p + p[:, t]
        want_r = want_r * r[:, t]
    agree((P, R), (want_p, want_r), "hla.total of given segments", tol=1e-6)
