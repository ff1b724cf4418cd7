"""Run-time failures of compiled functions raise hla.RuntimeError.

A compiled function whose run-time check fails (here: hla-chunk's checks of
``cu_seqlens``), or whose CUDA driver call fails, returns a status; Python
raises ``hla.RuntimeError`` with the runtime's message, the process goes on
and the next call works. Before, the runtime printed the message and ended
the process (exit status 2), which took pytest with it.
"""

from __future__ import annotations

import builtins
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import hla

from .api_util import HLA_OPT, needs_compiler

T, H, D = 24, 2, 8
VARLEN = f"""
func.func @main(%q: tensor<1x{T}x{H}x{D}xf32>, %k: tensor<1x{T}x{H}x{D}xf32>,
                %v: tensor<1x{T}x{H}x{D}xf32>, %cu: tensor<3xi32>)
    -> tensor<1x{T}x{H}x{D}xf32> {{
  %o = hla.linear_attention %q, %k, %v cu_seqlens(%cu)
      : (tensor<1x{T}x{H}x{D}xf32>, tensor<1x{T}x{H}x{D}xf32>,
         tensor<1x{T}x{H}x{D}xf32>, tensor<3xi32>) -> tensor<1x{T}x{H}x{D}xf32>
  return %o : tensor<1x{T}x{H}x{D}xf32>
}}
"""


@pytest.fixture(scope="module")
def varlen():
    return hla.compile(VARLEN, target="cpu", chunk_size=8)


def qkv(seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((1, T, H, D)) * 0.3).astype(np.float32) for _ in range(3)]


def check_valid_call(lib, agree):
    q, k, v = qkv()
    cu = np.array([0, 10, T], np.int32)
    o = lib.main(q, k, v, cu)
    agree(o, hla.reference.linear_attention(q, k, v, cu_seqlens=cu), "runtime errors: after", 1e-5)


def test_runtime_error_is_a_builtin_runtime_error():
    assert issubclass(hla.RuntimeError, builtins.RuntimeError)
    assert hla.RuntimeError is hla.runtime.RuntimeError


@needs_compiler
@pytest.mark.parametrize("offsets, message", [
    ([1, 10, T], "hla: cu_seqlens[0] must be 0"),
    ([0, 10, T - 1], "hla: cu_seqlens must end at the packed length T"),
    ([0, T + 6, T], "hla: cu_seqlens must not decrease"),
])
def test_failed_check_raises_and_the_next_call_works(varlen, agree, offsets, message):
    q, k, v = qkv()
    with pytest.raises(hla.RuntimeError) as info:
        varlen.main(q, k, v, np.array(offsets, np.int32))
    assert str(info.value) == f"main: {message}"
    check_valid_call(varlen, agree)
    # Fails again the same way: nothing of the failed call lingers.
    with pytest.raises(hla.RuntimeError, match=message.replace("[", r"\[").replace("]", r"\]")):
        varlen.main(q, k, v, np.array(offsets, np.int32))
    check_valid_call(varlen, agree)


@needs_compiler
@pytest.mark.parametrize("options", [
    dict(chunk_form="fused", segments=3, scan_threads=2),
    dict(chunk_form="phased", scan_threads=2),
])
def test_checks_of_parallel_forms_raise(agree, options):
    """The fused and phased forms run their chunks in OpenMP parallel loops;
    the offsets are checked once before them, so a bad cu_seqlens raises
    here too (a check inside a parallel region once ended the process)."""
    lib = hla.compile(VARLEN, target="cpu", chunk_size=8, **options)
    q, k, v = qkv()
    for _ in range(2):
        with pytest.raises(hla.RuntimeError, match="cu_seqlens must not decrease"):
            lib.main(q, k, v, np.array([0, T + 6, T], np.int32))
        check_valid_call(lib, agree)


DECAYED = f"""
func.func @main(%q: tensor<1x{T}x{H}x{D}xf32>, %k: tensor<1x{T}x{H}x{D}xf32>,
                %v: tensor<1x{T}x{H}x{D}xf32>, %g: tensor<{H}xf32>)
    -> tensor<1x{T}x{H}x{D}xf32> {{
  %o = hla.linear_attention %q, %k, %v head_decay(%g)
      : (tensor<1x{T}x{H}x{D}xf32>, tensor<1x{T}x{H}x{D}xf32>,
         tensor<1x{T}x{H}x{D}xf32>, tensor<{H}xf32>) -> tensor<1x{T}x{H}x{D}xf32>
  return %o : tensor<1x{T}x{H}x{D}xf32>
}}
"""


@needs_compiler
@pytest.mark.parametrize("vjp", [False, True])
@pytest.mark.parametrize("rates", [[0.9, 1.5], [0.0, 0.5], [float("nan"), 0.5]])
def test_failed_decay_rates_check_raises(agree, vjp, rates):
    """Decay rates per head outside (0, 1] (or NaN) reaching a compiled
    function directly (the Python API checks them first) raise, forward and
    backward; the next call works."""
    lib = hla.compile(DECAYED, target="cpu", chunk_size=8, vjp=vjp, entry="main")
    q, k, v = qkv()
    extra = [np.ones((1, T, H, D), np.float32)] if vjp else []
    with pytest.raises(hla.RuntimeError, match=r"head_decay rates must be in \(0, 1\]"):
        lib.main(q, k, v, np.array(rates, np.float32), *extra)
    good = np.array([0.9, 0.5], np.float32)
    out = lib.main(q, k, v, good, *extra)
    if not vjp:
        agree(out, hla.reference.linear_attention(q, k, v, decay=good), "rates check: after",
              1e-5)


@needs_compiler
def test_errors_are_per_thread(varlen, agree):
    """The message is thread-local: failing and succeeding calls on several
    threads each see their own outcome."""
    q, k, v = qkv()
    good, bad = np.array([0, 10, T], np.int32), np.array([0, T + 6, T], np.int32)
    expected = hla.reference.linear_attention(q, k, v, cu_seqlens=good)
    outcomes = [None] * 8

    def work(i):
        try:
            for _ in range(20):
                if i % 2:
                    try:
                        varlen.main(q, k, v, bad)
                        outcomes[i] = "no error"
                        return
                    except hla.RuntimeError as e:
                        if "must not decrease" not in str(e):
                            outcomes[i] = f"wrong message {e}"
                            return
                else:
                    o = varlen.main(q, k, v, good)
                    if not np.allclose(o, expected, rtol=1e-4, atol=1e-5):
                        outcomes[i] = "wrong numbers"
                        return
            outcomes[i] = "ok"
        except Exception as e:  # noqa: BLE001 (reported below)
            outcomes[i] = repr(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert outcomes == ["ok"] * 8
    check_valid_call(varlen, agree)


def test_cuda_driver_errors_raise(tmp_path):
    """A CUDA artefact whose driver cannot be opened raises on each call
    instead of ending the process (no GPU needed: $HLA_CUDA_DRIVER names a
    library that does not exist)."""
    if not os.path.exists(HLA_OPT):
        pytest.skip("hla-opt is not built")
    source = tmp_path / "k.mlir"
    source.write_text("""
func.func @main(%q: tensor<1x64x2x32xbf16>, %k: tensor<1x64x2x32xbf16>,
                %v: tensor<1x64x2x32xbf16>) -> tensor<1x64x2x32xbf16> {
  %o = hla.hla2 %q, %k, %v : (tensor<1x64x2x32xbf16>, tensor<1x64x2x32xbf16>,
      tensor<1x64x2x32xbf16>) -> tensor<1x64x2x32xbf16>
  return %o : tensor<1x64x2x32xbf16>
}
""")
    library = tmp_path / "k.so"
    result = subprocess.run([HLA_OPT, str(source), "--hla-target=cuda", "--emit=shared",
                             "-o", str(library)], capture_output=True, text=True)
    if result.returncode and "not supported" in result.stderr:
        pytest.skip("hla-opt was built without the CUDA target")
    assert result.returncode == 0, result.stderr
    script = f"""
import os, sys
sys.path.insert(0, {os.path.join(os.path.dirname(hla.__file__), os.pardir)!r})
os.environ["HLA_CUDA_DRIVER"] = {str(tmp_path / "no-such-driver.so")!r}
import hla
lib = hla.runtime.load({str(library)!r})
for attempt in range(2):
    try:
        lib.main.call_pointers([0, 0, 0], [0])
        print("no error")
    except hla.RuntimeError as e:
        print("raised:", e)
print("still running")
"""
    # In a subprocess: before the fix the failure ended the process, and the
    # driver is opened once per library and process.
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120)
    lines = run.stdout.splitlines()
    assert run.returncode == 0, run.stderr
    assert len(lines) == 3, run.stdout + run.stderr
    for line in lines[:2]:
        assert line.startswith("raised: main: CUDA: initialisation: cannot load "), line
        assert "no-such-driver.so (is an NVIDIA driver installed?)" in line
    assert lines[2] == "still running"
