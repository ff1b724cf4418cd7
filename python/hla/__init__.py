"""hla: higher-order linear attention compiled through MLIR.

    import hla
    o = hla.hla2(q, k, v)                       # numpy or torch, [B, T, H, D]
    o, state = hla.hla3(q, k, v, output_final_state=True)
    lib = hla.compile(mlir_text, target="cpu")  # any model graph; lib.main(...)

* ``hla.linear_attention``, ``hla.hla2``, ``hla.ahla``, ``hla.hla3``,
  ``hla.linsimp``, ``hla.kda``: the attention ops on arrays (``functional``).
* ``hla.random_features``: LinSimp's seeded feature matrix Ω, the same
  bits as the compiler's ``hla.random_features`` op.
* ``hla.compile``: MLIR -> loaded shared library, cached on disk
  (``compiler``); ``hla.CompileError`` carries the compiler's diagnostics;
  ``hla.RuntimeError`` (a builtin RuntimeError) a compiled function's
  failure at run time, e.g. a failed check of ``cu_seqlens``.
* ``hla.nn.HLAttention``: a torch attention sublayer (imports torch).
* ``hla.reference``: float64 NumPy references of every op (SEMANTICS.md).
* ``hla.runtime``: calling artefacts made by ``hla-opt --emit=shared``.

Importing hla loads neither torch nor the compiler library; the compiler is
loaded on the first compile that misses the cache. See docs/PYTHON.md.
"""

import sys as _sys

from . import reference  # noqa: F401
from . import runtime  # noqa: F401
from ._library import CompilerNotFoundError  # noqa: F401
from .compiler import (  # noqa: F401
    CompileError,
    OpNotImplementedError,
    TargetNotImplementedError,
    compile,
)
from .functional import ahla, hla2, hla3, kda, linear_attention, linsimp  # noqa: F401
from .random_features import random_features  # noqa: F401
# hla.RuntimeError; kept out of __all__ so that `from hla import *` does not
# shadow the builtin it subclasses.
from .runtime import RuntimeError  # noqa: F401,A001

__version__ = "0.1.0"

__all__ = ["compile", "CompileError", "TargetNotImplementedError", "OpNotImplementedError",
           "CompilerNotFoundError",
           "linear_attention", "hla2", "ahla", "hla3", "linsimp", "kda", "random_features",
           "register_torch_ops",
           "stats", "reference", "runtime"]


def register_torch_ops():
    """Registers ``torch.ops.hla.*`` (imports torch). Idempotent.

    Happens by itself when hla is imported after torch, when ``hla.nn`` is
    imported and on the first call with torch tensors; call it yourself
    before ``torch.compile`` traces code that calls the functional API
    without having done any of those.
    """
    from . import _torch_ops
    _torch_ops.register()


def stats():
    """Counters of this process: hlaCompile calls ("compiles"), disk and
    in-memory cache hits, and contiguous copies made of strided inputs."""
    from . import _tensors, compiler
    counters = dict(compiler.stats)
    counters["contiguous_copies"] = _tensors.copy_count
    return counters


def __getattr__(name):
    # ``hla.nn`` without an explicit import; it needs torch, so only on demand.
    if name == "nn":
        import importlib
        return importlib.import_module(".nn", __name__)
    raise AttributeError(f"module 'hla' has no attribute {name!r}")


if "torch" in _sys.modules:
    # torch is already there, so registering costs no import and makes the
    # ops exist before any torch.compile trace reaches them.
    register_torch_ops()
