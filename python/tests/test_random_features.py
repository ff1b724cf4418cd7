"""hla.random_features: LinSimp's seeded Ω, identical in Python and C++."""

import ctypes
import math

import numpy as np
import pytest

import hla
from hla import _library
from hla.random_features import random_features_list

from .api_util import needs_compiler


def _from_compiler(m, d, seed):
    lib = _library.load()
    fn = lib.hlaRandomFeatures
    fn.restype = ctypes.c_bool
    fn.argtypes = [ctypes.c_int64, ctypes.c_int64, ctypes.c_uint64,
                   ctypes.POINTER(ctypes.c_double)]
    out = np.full((m, d), np.nan)
    ok = fn(m, d, seed, out.ctypes.data_as(ctypes.POINTER(ctypes.c_double)))
    return out if ok else None


@needs_compiler
@pytest.mark.parametrize("m,d,seed", [(256, 64, 0), (256, 64, 12345), (100, 16, 7),
                                      (5, 8, 1), (1, 1, 2), (64, 128, 3)])
def test_python_and_compiler_agree_bit_for_bit(m, d, seed):
    ours = hla.random_features(m, d, seed)
    theirs = _from_compiler(m, d, seed)
    assert theirs is not None
    np.testing.assert_array_equal(ours, theirs)


@needs_compiler
def test_compiler_refuses_bad_sizes():
    assert _from_compiler(0, 4, 0) is None
    assert _from_compiler(1 << 20, 1 << 5, 0) is None


def test_blocks_are_orthogonal_and_norms_chi():
    m, d = 200, 16
    om = hla.random_features(m, d, seed=4)
    assert om.shape == (m, d)
    norms = np.linalg.norm(om, axis=1)
    unit = om / norms[:, None]
    for s in range(0, m, d):
        block = unit[s:s + d]
        np.testing.assert_allclose(block @ block.T, np.eye(len(block)), atol=1e-13)
    # Row norms are chi(d): mean sqrt(2) Γ((d+1)/2) / Γ(d/2) ≈ 3.94 for d = 16.
    chi_mean = math.sqrt(2) * math.exp(math.lgamma((d + 1) / 2) - math.lgamma(d / 2))
    assert abs(norms.mean() - chi_mean) < 4 * math.sqrt(d - chi_mean ** 2) / math.sqrt(m)


def test_seeded():
    a = hla.random_features(40, 8, seed=9)
    np.testing.assert_array_equal(a, hla.random_features(40, 8, seed=9))
    assert not np.array_equal(a, hla.random_features(40, 8, seed=10))
    # The first rows of a larger matrix are the smaller matrix's directions.
    b = hla.random_features(48, 8, seed=9)
    np.testing.assert_allclose(a[:8] / np.linalg.norm(a[:8], axis=1, keepdims=True),
                               b[:8] / np.linalg.norm(b[:8], axis=1, keepdims=True), atol=1e-14)


def test_features_estimate_the_exponential_kernel_without_bias():
    """φ(x)·φ(y) with this Ω estimates exp(x·y); over many seeds the mean
    lands on it (the sign fix of the QR is what removes the bias)."""
    d, m = 8, 8
    rng = np.random.default_rng(0)
    x, y = 0.4 * rng.standard_normal(d), 0.4 * rng.standard_normal(d)
    want = math.exp(float(x @ y))
    estimates = []
    for seed in range(3000):
        om = hla.random_features(m, d, seed)
        fx = hla.reference.linsimp_features(x[None], om)[0]
        fy = hla.reference.linsimp_features(y[None], om)[0]
        estimates.append(float(fx @ fy))
    estimates = np.array(estimates)
    stderr = estimates.std() / math.sqrt(len(estimates))
    assert abs(estimates.mean() - want) < 4 * stderr, (estimates.mean(), want, stderr)


def test_bad_arguments():
    with pytest.raises(ValueError, match="m >= 1"):
        random_features_list(0, 4)
    with pytest.raises(TypeError, match="d must be an int"):
        random_features_list(4, 2.0)
    with pytest.raises(ValueError, match="2\\^24"):
        random_features_list(1 << 20, 32)
    with pytest.raises(ValueError, match="seed"):
        random_features_list(4, 4, seed=-1)
