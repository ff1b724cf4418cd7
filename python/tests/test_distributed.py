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

from .distributed_worker import whole_inputs  # noqa: E402

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
    return getattr(hla, case["op"])(arrays["q"], arrays["k"], arrays["v"], **extra,
                                    **case["options"], initial_state=state,
                                    chunk_size=case.get("chunk_size"),
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
}


@needs_compiler
@pytest.mark.parametrize("name", sorted(CASES))
def test_split_equals_single_process(name, tmp_path, agree):
    case = dict(seed=7, B=2, H=2, D=16, Dv=8, **CASES[name])
    results, errors = run_ranks(case, tmp_path)
    assert errors == [None] * len(case["spans"]), errors
    o, final = single_process(case)
    agree(np.concatenate([r["o"] for r in results], axis=1), o,
          f"distributed {case['op']} output", tol=1e-5)
    for r in results:
        agree(tuple(r[f"s{i}"] for i in range(len(final))), final,
              f"distributed {case['op']} final state", tol=1e-5)


@needs_compiler
def test_spans_that_disagree_raise_on_every_rank(tmp_path):
    case = dict(op="linear_attention", options={}, seed=1, B=1, T=16, H=2, D=16, Dv=8,
                spans=[8, 8], bad_heads=True)
    _, errors = run_ranks(case, tmp_path)
    for e in errors:
        assert e and e.startswith("ValueError") and "differ in a size other than T" in e, e


@needs_compiler
def test_an_empty_span_raises_on_every_rank(tmp_path):
    case = dict(op="hla2", options={}, seed=1, B=1, T=8, H=2, D=16, Dv=8, spans=[8, 0])
    _, errors = run_ranks(case, tmp_path)
    for e in errors:
        assert e and "every rank needs at least one token" in e, e


def test_unsplit_op_and_uninitialised_group_raise():
    import hla.distributed
    x = torch.zeros(1, 4, 1, 8)
    with pytest.raises(NotImplementedError, match="linsimp is not split"):
        hla.distributed._run("linsimp", [], {}, None, False, None, None, None)
    with pytest.raises(RuntimeError, match="torch.distributed is not initialized"):
        hla.distributed.hla2(x, x, x)
    with pytest.raises(TypeError, match="needs torch tensors"):
        hla.distributed.hla2(x.numpy(), x.numpy(), x.numpy())
    with pytest.raises(TypeError, match="missing keyword operand 'g'"):
        hla.distributed.kda(x, x, x, beta=x[..., 0])
    with pytest.raises(TypeError, match="unknown keyword"):
        hla.distributed.hla2(x, x, x, window=3)


def test_backward_is_refused():
    import hla.distributed
    x = torch.zeros(1, 4, 1, 8, requires_grad=True)
    with pytest.raises(NotImplementedError, match="backward across ranks"):
        hla.distributed.hla2(x, x, x)


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
