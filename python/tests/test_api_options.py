"""One list of compile options: hla-opt's flags, the C API's keys and
hla.compile's keywords are the same knobs (lib/Target/ArtefactOptions.cpp),
each accepted by all three."""

from __future__ import annotations

import os
import re
import subprocess

import numpy as np

import hla
from hla import _library, compiler

from .api_util import REPO, needs_compiler, rel_err

HLA_OPT = os.path.join(REPO, "build", "bin", "hla-opt")

GRAPH = """
func.func @attention(%q: tensor<1x37x2x16xf32>, %k: tensor<1x37x2x16xf32>, %v: tensor<1x37x2x16xf32>) -> tensor<1x37x2x16xf32> {
  %o = hla.hla2 %q, %k, %v {decay = 0.9 : f64} : (tensor<1x37x2x16xf32>, tensor<1x37x2x16xf32>, tensor<1x37x2x16xf32>) -> tensor<1x37x2x16xf32>
  return %o : tensor<1x37x2x16xf32>
}
"""


def compiler_keys():
    return set(_library.load().hlaCompileOptionNames().decode().split())


def hla_opt_flags():
    """The flags hla-opt lists under "hla artefact options", but for the
    two that choose the artefact (--hla-target, --emit)."""
    text = subprocess.run([HLA_OPT, "--help"], capture_output=True, text=True,
                          check=True).stdout
    section = text.split("hla artefact options:", 1)[1].split("\n\n", 2)[1]
    flags = set(re.findall(r"^  --([a-z0-9-]+)", section, flags=re.M))
    return flags - {"hla-target", "emit"}


@needs_compiler
def test_python_keywords_are_the_compiler_keys():
    assert {k.replace("_", "-") for k in compiler._OPTIONS} == compiler_keys()


@needs_compiler
def test_hla_opt_flags_are_the_compiler_keys():
    assert hla_opt_flags() == compiler_keys()


@needs_compiler
def test_every_knob_is_accepted(tmp_path):
    """Knobs the C API and Python used to reject (cuda_mma, cuda_threads,
    linsimp_stable_features, ...) now compile; CUDA ones are inert on the
    CPU target, and the result is unchanged."""
    rng = np.random.default_rng(7)
    q, k, v = (rng.standard_normal((1, 37, 2, 16)).astype(np.float32) for _ in range(3))
    plain = hla.compile(GRAPH, chunk_size=16)
    every = hla.compile(GRAPH, chunk_size=16, linsimp_stable_features=False, cuda_mma="mma.sync",
                        cuda_threads=128, cuda_chip="sm_80", cuda_features="+ptx80",
                        causal_isolation=True, vectorize=True, entry="attention")
    want = plain.attention(q, k, v)
    assert rel_err(every.attention(q, k, v), want) == 0.0


@needs_compiler
def test_hla_opt_takes_the_same_knobs(tmp_path):
    src = tmp_path / "g.mlir"
    src.write_text(GRAPH)
    r = subprocess.run([HLA_OPT, str(src), "--emit=obj", "-o", str(tmp_path / "g.o"),
                        "--linsimp-stable-features=false", "--cuda-threads=128",
                        "--chunk-size=16"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    bad = subprocess.run([HLA_OPT, str(src), "--emit=obj", "-o", str(tmp_path / "g.o"),
                          "--cuda-threads=7"], capture_output=True, text=True)
    assert bad.returncode != 0
    assert "option 'cuda-threads' needs an integer in [32, 1024], not '7'" in bad.stderr
