"""hla.compile: artefacts, the in-process and disk caches, errors, laziness."""

from __future__ import annotations

import json
import re
import os
import subprocess
import sys

import numpy as np
import pytest

import hla
from hla import compiler

from .api_util import (REPO, compiler_available, inputs, needs_compiler, needs_torch, reference, rel_err,
                       run_python, torch)

# A graph with two public functions and a private helper: hla.compile must
# expose exactly the public ones.
GRAPH = """
func.func private @twice(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %y = arith.addf %x, %x : tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}
func.func @double(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %y = func.call @twice(%x) : (tensor<4x3xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}
func.func @attention(%q: tensor<1x37x2x16xf32>, %k: tensor<1x37x2x16xf32>, %v: tensor<1x37x2x16xf32>) -> tensor<1x37x2x16xf32> {
  %o = hla.hla2 %q, %k, %v {decay = 0.9 : f64} : (tensor<1x37x2x16xf32>, tensor<1x37x2x16xf32>, tensor<1x37x2x16xf32>) -> tensor<1x37x2x16xf32>
  return %o : tensor<1x37x2x16xf32>
}
"""


def _temporaries(directory):
    """What an interrupted or failed hla.compile would leave: its own
    temporaries (the compiler's side files are not its business)."""
    return [n for n in os.listdir(directory)
            if n.startswith(".tmp-") and n.endswith((".so", ".mlir"))]


@needs_compiler
def test_compile_text_and_call():
    lib = hla.compile(GRAPH, chunk_size=16, scan_schedule="blelloch")
    assert sorted(lib.functions()) == ["attention", "double"]
    assert "double" in dir(lib)
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_array_equal(lib.double(x), 2 * x)
    q, k, v = inputs(30)
    assert rel_err(lib.attention(q, k, v), reference("hla2", q, k, v, decay=0.9)) <= 1e-5
    with pytest.raises(AttributeError, match="exports no hla function 'twice'"):
        lib.twice


@needs_compiler
def test_compile_segmented_form():
    lib = hla.compile(GRAPH, chunk_size=8, chunk_form="segmented", segments=3)
    q, k, v = inputs(31)
    assert rel_err(lib.attention(q, k, v), reference("hla2", q, k, v, decay=0.9)) <= 1e-5


@needs_compiler
def test_compile_path_and_cache_hits(tmp_path):
    path = tmp_path / "graph.mlir"
    path.write_text(GRAPH)
    first = hla.compile(str(path), scan_schedule="sequential", scan_threads=2, chunk_form="fused")
    before = dict(compiler.stats)
    again = hla.compile(path, scan_schedule="sequential", scan_threads=2,  # os.PathLike too
                        chunk_form="fused")
    assert again is first
    assert compiler.stats["compiles"] == before["compiles"]
    assert compiler.stats["memory_hits"] == before["memory_hits"] + 1
    # Forget the loaded library: the next compile loads the file from disk.
    compiler.clear_memory_cache()
    third = hla.compile(GRAPH, scan_schedule="sequential", scan_threads=2, chunk_form="fused")
    assert third is not first
    assert compiler.stats["compiles"] == before["compiles"]
    assert compiler.stats["disk_hits"] == before["disk_hits"] + 1
    x = np.ones((4, 3), np.float32)
    np.testing.assert_array_equal(third.double(x), 2 * x)


@needs_compiler
def test_cache_key_covers_options_and_target():
    key = compiler.cache_key(GRAPH, "cpu", {})
    assert key != compiler.cache_key(GRAPH, "cpu", {"chunk-size": "16"})
    assert key != compiler.cache_key(GRAPH, "cuda", {})
    assert key != compiler.cache_key(GRAPH + " ", "cpu", {})
    assert key == compiler.cache_key(GRAPH, "cpu", {})


@needs_compiler
def test_cache_files_and_no_temporaries():
    hla.compile(GRAPH)
    directory = compiler.cache_dir()
    key = compiler.cache_key(GRAPH, "cpu", {})
    assert os.path.exists(os.path.join(directory, key + ".so"))
    with open(os.path.join(directory, key + ".mlir")) as f:
        assert f.read() == GRAPH
    assert not _temporaries(directory)


@needs_compiler
def test_functional_second_call_does_not_compile():
    q, k, v = inputs(31)
    hla.ahla(q, k, v, decay=0.8)
    before = hla.stats()["compiles"]
    o = hla.ahla(q + 1, k, v, decay=0.8)  # same shapes and options: same artefact
    assert hla.stats()["compiles"] == before
    assert rel_err(o, reference("ahla", q + 1, k, v, decay=0.8)) <= 1e-5


@needs_compiler
def test_disk_cache_reused_by_a_fresh_process(tmp_path):
    q, k, v = inputs(32)
    hla.linear_attention(q, k, v, decay=0.7)  # this process compiles or loads it
    np.savez(tmp_path / "qkv.npz", q=q, k=k, v=v)
    code = (
        "import json, numpy as np, hla\n"
        f"data = np.load({str(tmp_path / 'qkv.npz')!r})\n"
        "q, k, v = data['q'], data['k'], data['v']\n"
        "o = hla.linear_attention(q, k, v, decay=0.7)\n"
        "want = hla.reference.linear_attention(q, k, v, decay=0.7)\n"
        "err = float(np.linalg.norm(o - want) / np.linalg.norm(want))\n"
        "print(json.dumps(dict(hla.stats(), err=err)))\n")
    result = run_python(code, env={"PYTHONPATH": os.path.join(REPO, "python")})
    assert result.returncode == 0, result.stderr
    counters = json.loads(result.stdout.strip().splitlines()[-1])
    assert counters["compiles"] == 0 and counters["disk_hits"] == 1, counters
    assert counters["err"] <= 1e-5


@needs_compiler
def test_concurrent_processes_share_the_cache(tmp_path):
    """Two processes missing the same key at once both succeed and leave one
    artefact and no temporaries behind (compile to a temporary, rename)."""
    name = f"double_{os.getpid()}_{id(tmp_path)}"  # a key no earlier run compiled
    graph = GRAPH.replace("@double", "@" + name)
    (tmp_path / "graph.mlir").write_text(graph)
    code = (
        "import numpy as np, hla\n"
        f"lib = hla.compile({str(tmp_path / 'graph.mlir')!r})\n"
        f"assert (lib.{name}(np.ones((4, 3), np.float32)) == 2).all()\n")
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, cwd=REPO,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    key = compiler.cache_key(graph, "cpu", {})
    directory = compiler.cache_dir()
    assert os.path.exists(os.path.join(directory, key + ".so"))
    assert not _temporaries(directory)


def test_import_is_lazy():
    """import hla loads neither the compiler library nor torch."""
    code = ("import sys, hla\n"
            "print(hla._library.is_loaded(), 'torch' in sys.modules)\n")
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "False"]


def test_artefacts_without_the_compiler(tmp_path):
    """Where libHLACAPI.so is absent: import works, compiled artefacts load
    and run, and compiling says what is missing."""
    artefact = hla.compile(GRAPH).path if compiler_available() else None
    code = (
        "import hla, numpy as np\n"
        f"path = {artefact!r}\n"
        "if path:\n"
        "    x = np.ones((4, 3), np.float32)\n"
        "    assert (hla.runtime.load(path).double(x) == 2 * x).all()\n"
        "try:\n"
        "    hla.hla2(*(np.zeros((1, 4, 1, 2), np.float32) for _ in range(3)))\n"
        "except RuntimeError as e:\n"
        "    print('error:', e)\n")
    result = run_python(code, env={"HLA_LIBRARY_DIR": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    assert "error: hla: HLA_LIBRARY_DIR is" in result.stdout
    assert "libHLACAPI.so does not exist" in result.stdout


@needs_compiler
def test_compile_error_carries_diagnostics():
    bad = GRAPH.replace("decay = 0.9", "decay = 1.5")
    with pytest.raises(hla.CompileError) as info:
        hla.compile(bad)
    assert "'decay' must be in (0, 1], got 1.5" in info.value.diagnostics
    assert "'decay' must be in (0, 1]" in str(info.value)
    assert not isinstance(info.value, NotImplementedError)
    with pytest.raises(hla.CompileError, match="custom op 'garbage' is unknown"):
        hla.compile("garbage")


def test_unsupported_target_is_not_implemented():
    """How the compiler says it has no code generator for a target (the
    committed compiler's answer for "cuda") becomes a NotImplementedError.
    Checked on its text, so that no CUDA artefact is ever loaded here: the
    CUDA target is being built, and its artefacts need a driver to load."""
    text = "<input>:0:0: error: hla-opt: --hla-target=cuda is not supported (targets: cpu)\n"
    with pytest.raises(NotImplementedError, match="cannot generate code for target 'cuda'") \
            as info:
        compiler._raise_compile_error("cuda", text)
    assert isinstance(info.value, hla.CompileError)
    assert isinstance(info.value, hla.TargetNotImplementedError)
    assert info.value.diagnostics == text
    with pytest.raises(hla.CompileError) as info:
        compiler._raise_compile_error("cuda", "<input>:3:8: error: op was not bufferized\n")
    assert not isinstance(info.value, NotImplementedError)


@needs_compiler
@needs_torch
def test_compiled_library_takes_torch_tensors():
    lib = hla.compile(GRAPH, chunk_size=16, scan_schedule="blelloch")
    q, k, v = inputs(33)
    tq, tk, tv = (torch.from_numpy(x) for x in (q, k, v))
    out = lib.attention(tq, tk.transpose(1, 2).contiguous().transpose(1, 2), tv)
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float32
    assert rel_err(out.numpy(), reference("hla2", q, k, v, decay=0.9)) <= 1e-5
    with pytest.raises(TypeError, match="must be f32, got f16"):
        lib.attention(tq.half(), tk, tv)
    with pytest.raises(ValueError, match=r"must have shape \[1, 37, 2, 16\]"):
        lib.attention(tq[:, :5], tk, tv)
    with pytest.raises(TypeError, match="takes 3 inputs, got 2"):
        lib.attention(tq, tk)


@needs_compiler
@pytest.mark.parametrize("vectorize", [True, False])
def test_inputs_are_not_modified(vectorize):
    lib = hla.compile(GRAPH, vectorize=vectorize)
    x = np.ones((4, 3), np.float32)
    np.testing.assert_array_equal(lib.double(x), 2 * np.ones((4, 3), np.float32))
    np.testing.assert_array_equal(x, np.ones((4, 3), np.float32))


@needs_compiler
def test_cuda_compiles_single_chunk_decay_with_final_state(tmp_path):
    """Compile-only (no GPU needed, nothing loaded)."""
    from hla import functional
    attrs = {"scale": 0.25, "normalize": False, "eps": 1e-6, "decay": 0.9}
    text = functional.build_ir("linear_attention", [(1, 37, 2, 16)] * 3, ["f32"] * 3, attrs,
                               [], [(1, 2, 16, 16)], None)
    ok, diagnostics = compiler._run_hla_compile(text, "cuda", "chunk-size=64",
                                                str(tmp_path / "a.so"))
    if not ok and "is not supported" in diagnostics:
        pytest.skip("this compiler has no CUDA target")
    if not ok and "ptxas not found" in diagnostics:
        pytest.skip("no CUDA toolkit (ptxas) here")
    assert ok, diagnostics


@needs_compiler
def test_compiles_are_logged(caplog, tmp_path, monkeypatch):
    """Each compile says what it compiles and how long it took (INFO on the
    "hla" logger); a cached call compiles nothing and logs nothing."""
    import logging
    monkeypatch.setenv("HLA_CACHE_DIR", str(tmp_path))
    compiler.clear_memory_cache()
    graph = GRAPH.replace("decay = 0.9", "decay = 0.875")  # a graph no other test compiled
    with caplog.at_level(logging.INFO, logger="hla"):
        hla.compile(graph, chunk_size=16)
    messages = [r.getMessage() for r in caplog.records if r.name == "hla"]
    assert any(m.startswith("hla: compiling hla2 in @twice, @double, @attention for cpu "
                            "(chunk-size=16)") for m in messages), messages
    assert any(re.fullmatch(r"hla: compiled in \d+\.\d\d s", m) for m in messages), messages
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="hla"):
        hla.compile(graph, chunk_size=16)
    assert not [r for r in caplog.records if r.name == "hla"]
