"""Finding and loading the compiler's C API, libHLACAPI.so.

The library pulls in all of LLVM and MLIR, so it is loaded only when
something is actually compiled: ``import hla`` and calls whose artefact is
already cached never load it (they only read its file, for a digest).

Where the library is looked for, in order:

1. ``$HLA_LIBRARY_DIR/libHLACAPI.so`` (when the variable is set, only there);
2. ``<repo>/build/lib/libHLACAPI.so``, the README build, found relative to
   this package (``<repo>/python/hla``);
3. the dynamic loader's search path (``ctypes.util.find_library``), for a
   system-wide install.
"""

from __future__ import annotations

import ctypes
import hashlib
import ctypes.util
import os
import threading

LIBRARY_NAME = "libHLACAPI.so"

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_REPO_BUILD_DIR = os.path.join(os.path.dirname(os.path.dirname(_PACKAGE_DIR)), "build", "lib")

_lock = threading.Lock()
_loaded = None  # (path, ctypes.CDLL) once loaded


class CompilerNotFoundError(RuntimeError):
    """libHLACAPI.so could not be found or loaded."""


def library_path():
    """Absolute path of the libHLACAPI.so that compiles would use.

    Raises CompilerNotFoundError, listing the places searched, when there is
    none.
    """
    env_dir = os.environ.get("HLA_LIBRARY_DIR")
    if env_dir:
        # An explicit choice is final: silently using another build would
        # make artefacts (and bugs) hard to attribute.
        candidate = os.path.join(env_dir, LIBRARY_NAME)
        if os.path.isfile(candidate):
            return os.path.abspath(candidate)
        raise CompilerNotFoundError(f"hla: HLA_LIBRARY_DIR is {env_dir!r} but {candidate} "
                                    f"does not exist")
    searched = []
    candidate = os.path.join(_REPO_BUILD_DIR, LIBRARY_NAME)
    if os.path.isfile(candidate):
        return candidate
    searched.append(candidate + " (the repository's build)")
    found = ctypes.util.find_library("HLACAPI")
    if found:
        # find_library returns a soname; the loader resolves it, but the cache
        # key needs a real file, so only accept it when it names one.
        for directory in ("/usr/local/lib", "/usr/lib", "/usr/lib/x86_64-linux-gnu"):
            path = os.path.join(directory, found)
            if os.path.isfile(path):
                return path
    searched.append("the dynamic loader's search path")
    raise CompilerNotFoundError(
        "hla: the compiler library libHLACAPI.so was not found; looked in "
        + "; ".join(searched)
        + ". Build it (README) or set HLA_LIBRARY_DIR to the directory holding it.")


_digests = {}


def library_identity():
    """(path, sha256 of its contents) of the compiler library, without
    loading it.

    Development builds keep one version string across rebuilds, so caches
    key on the library's contents as well; contents, unlike modification
    times, survive copying a cache and the library to another machine. The
    digest is computed once per process and file state.
    """
    path = library_path()
    st = os.stat(path)
    state = (path, st.st_size, st.st_mtime_ns)
    digest = _digests.get(state)
    if digest is None:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        digest = _digests[state] = h.hexdigest()
    return path, digest


def load():
    """The loaded library (ctypes.CDLL) with its functions' types declared."""
    global _loaded
    with _lock:
        path = library_path()
        if _loaded is not None and _loaded[0] == path:
            return _loaded[1]
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            raise CompilerNotFoundError(f"hla: cannot load {path}: {e}") from e
        lib.hlaCompile.restype = ctypes.c_bool
        lib.hlaCompile.argtypes = [ctypes.c_char_p] * 5 + [ctypes.POINTER(ctypes.c_void_p)]
        lib.hlaFreeString.restype = None
        lib.hlaFreeString.argtypes = [ctypes.c_void_p]
        lib.hlaCompilerVersion.restype = ctypes.c_char_p
        lib.hlaCompilerVersion.argtypes = []
        _loaded = (path, lib)
        return lib


def is_loaded():
    """Whether this process has loaded libHLACAPI.so (tests check laziness)."""
    return _loaded is not None
