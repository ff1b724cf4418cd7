"""pytest configuration for the Python package tests.

Makes ``import hla`` work without installing the package (python/ goes on
sys.path), gives hla.compile a per-session cache directory and provides
``agree``, a relative-error checker that also records the largest error seen
per category, printed at the end of the run.
"""

import json
import os
import pathlib
import shutil
import sys
import tempfile

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

# hla.compile's disk cache: a fresh directory per session, so that tests see
# cold-cache behaviour and leave nothing in ~/.cache. HLA_TEST_CACHE_DIR
# names a directory to use (and keep) instead, e.g. to run the API tests on
# a machine where the compiler library cannot load, from artefacts compiled
# elsewhere.
_SESSION_CACHE = None


def pytest_configure(config):
    global _SESSION_CACHE
    kept = os.environ.get("HLA_TEST_CACHE_DIR")
    if kept:
        os.environ["HLA_CACHE_DIR"] = kept
    else:
        _SESSION_CACHE = tempfile.mkdtemp(prefix="hla-test-cache-")
        os.environ["HLA_CACHE_DIR"] = _SESSION_CACHE


def pytest_unconfigure(config):
    if _SESSION_CACHE:
        shutil.rmtree(_SESSION_CACHE, ignore_errors=True)

# category -> largest relative error seen (agreement checks) or smallest
# disagreement seen (negative controls, recorded with a leading "!").
_ERRORS = {}


def _relative(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape, f"shape {a.shape} != {b.shape}"
    err, ref = np.linalg.norm(a - b), np.linalg.norm(b)
    return err, ref


@pytest.fixture
def agree():
    """``agree(a, b, what, tol=1e-12)``: assert ``|a - b| <= tol |b|`` (Frobenius).

    ``a`` and ``b`` may be arrays or equal-length tuples of arrays (states);
    tuples are compared component by component. Exact zeros compare equal.
    """

    def check(a, b, what, tol=1e-12):
        pairs = list(zip(a, b)) if isinstance(b, tuple) else [(a, b)]
        if isinstance(b, tuple):
            assert isinstance(a, tuple) and len(a) == len(b), f"{what}: state arity differs"
        worst = 0.0
        for i, (x, y) in enumerate(pairs):
            err, ref = _relative(x, y)
            r = err / ref if ref > 0 else err
            worst = max(worst, r)
            assert err <= tol * ref or err == 0.0, (
                f"{what}[{i}]: relative error {r:.3e} > {tol:.0e}")
        _record(what, worst)
        return worst

    return check


@pytest.fixture
def disagree():
    """``disagree(a, b, what, at_least=1e-3)``: assert ``|a - b| > at_least |b|``."""

    def check(a, b, what, at_least=1e-3):
        err, ref = _relative(a, b)
        r = err / ref
        key = "!" + what
        _record(key, r)
        assert r > at_least, f"{what}: expected a disagreement > {at_least}, got {r:.3e}"
        return r

    return check


def _record(key, value):
    """Keeps the worst value seen: the largest error, the smallest
    disagreement (keys with a leading "!")."""
    if key.startswith("!"):
        _ERRORS[key] = min(_ERRORS.get(key, np.inf), value)
    else:
        _ERRORS[key] = max(_ERRORS.get(key, 0.0), value)


# Under pytest-xdist (scripts/test.sh runs a worker per core) each worker
# records its own table; the workers hand theirs to the controller, which
# prints the merged one.
def pytest_sessionfinish(session):
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["hla_errors"] = json.dumps(_ERRORS)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    for key, value in json.loads(getattr(node, "workeroutput", {}).get("hla_errors", "{}")).items():
        _record(key, value)


def pytest_terminal_summary(terminalreporter):
    if not _ERRORS:
        return
    terminalreporter.write_sep("-", "reference cross-checks: max relative error per category")
    for key in sorted(k for k in _ERRORS if not k.startswith("!")):
        terminalreporter.write_line(f"{key:<40s} {_ERRORS[key]:.2e}")
    neg = sorted(k for k in _ERRORS if k.startswith("!"))
    if neg:
        terminalreporter.write_sep("-", "negative controls: smallest disagreement seen")
        for key in neg:
            terminalreporter.write_line(f"{key[1:]:<40s} {_ERRORS[key]:.2e}")
