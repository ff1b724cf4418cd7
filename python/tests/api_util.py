"""Shared pieces of the Python API tests (test_api_*.py).

Compiles dominate these tests' run time, so they share a few shapes: most
cases use T = 37 (not a multiple of any chunk size), H = 2, D = 16; each
distinct (op, shapes, dtype, options) costs one compile per session.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import hla
from hla import _library

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HLA_OPT = os.environ.get("HLA_OPT", os.path.join(REPO, "build", "bin", "hla-opt"))

try:
    import torch
except ImportError:  # numpy-only environments still run the numpy tests
    torch = None

OPS = ["linear_attention", "hla2", "ahla", "hla3"]
B, T, H, D = 1, 37, 2, 16


def compiler_available():
    try:
        _library.load()
        return True
    except _library.CompilerNotFoundError:
        return False


needs_compiler = pytest.mark.skipif(not compiler_available(),
                                    reason="libHLACAPI.so is not built or cannot load")
# Tests that only run compiled artefacts also run without the compiler when
# HLA_TEST_CACHE_DIR holds them (compiled elsewhere, same libHLACAPI.so).
needs_artefacts = pytest.mark.skipif(
    not compiler_available() and not os.environ.get("HLA_TEST_CACHE_DIR"),
    reason="libHLACAPI.so cannot load and HLA_TEST_CACHE_DIR holds no artefacts")
needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")
needs_cuda = pytest.mark.skipif(torch is None or not torch.cuda.is_available(),
                                reason="needs a CUDA device")
needs_torch2 = pytest.mark.skipif(
    torch is None or int(torch.__version__.split(".")[0]) < 2,
    reason="torch.compile needs torch >= 2")


def inputs(seed, *, b=B, t=T, hq=H, hkv=None, d=D, dv=None, positive=False,
           dtype=np.float32):
    """Random q, k, v (float32 numpy): q, k scaled by d**-0.5 so sums stay O(1);
    ``positive`` for normalized ops, whose denominators must not cross 0."""
    rng = np.random.default_rng(seed)
    hkv = hq if hkv is None else hkv
    dv = d if dv is None else dv

    def draw(shape, scale):
        x = rng.standard_normal(shape) * scale
        return (np.abs(x) if positive else x).astype(dtype)

    return (draw((b, t, hq, d), d ** -0.5), draw((b, t, hkv, d), d ** -0.5),
            draw((b, t, hkv, dv), 1.0))


def rel_err(got, want):
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, (got.shape, want.shape)
    if not np.all(np.isfinite(got)):
        return float("inf")
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-300))


def to_numpy(x):
    if torch is not None and isinstance(x, torch.Tensor):
        return x.detach().cpu().float().numpy()
    return np.asarray(x)


def run_python(code, env=None, timeout=120):
    """Runs ``code`` in a fresh /usr/bin/python3-like interpreter (this one)
    with python/ on the path; returns the completed process."""
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = os.path.join(REPO, "python") + os.pathsep + full_env.get(
        "PYTHONPATH", "")
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=full_env, timeout=timeout, cwd=REPO)


def reference(op, *args, **kwargs):
    return getattr(hla.reference, op)(*args, **kwargs)


def central_differences(fn, arrays, g, h=1e-6):
    """Gradients of sum(g * fn(*arrays)) by central differences in float64,
    one per array (fn: a float64 reference)."""
    arrays = [np.array(a, dtype=np.float64) for a in arrays]
    g = np.asarray(g, dtype=np.float64)

    def loss():
        return float(np.sum(g * fn(*arrays)))

    grads = []
    for a in arrays:
        grad = np.zeros_like(a)
        flat, out = a.reshape(-1), grad.reshape(-1)
        for e in range(flat.size):
            keep = flat[e]
            flat[e] = keep + h
            plus = loss()
            flat[e] = keep - h
            minus = loss()
            flat[e] = keep
            out[e] = (plus - minus) / (2 * h)
        grads.append(grad)
    return grads
