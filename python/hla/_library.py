"""Finding and loading the compiler's C API, libHLACAPI.so.

The library pulls in all of LLVM and MLIR, so it is loaded only when
something is actually compiled: ``import hla`` and calls whose artefact is
already cached never load it (they only read its file, for a digest).

Where the library is looked for, in order (the first file that exists wins):

1. ``$HLA_LIBRARY_DIR/libHLACAPI.so`` (when the variable is set, only there);
2. ``<repo>/build/lib/libHLACAPI.so``, the README build, found relative to
   this package -- only while the package really is the repository's
   ``<repo>/python/hla`` (next to ``python/pyproject.toml``, below the
   top-level ``CMakeLists.txt``), never for an installed copy;
3. the installed prefix: when this package was installed into
   ``<prefix>/lib/pythonX.Y/site-packages`` (or ``dist-packages``, or
   ``lib64``), ``<prefix>/lib/libHLACAPI.so``, where ``cmake --install``
   with the same prefix puts it. Debian's pip turns ``--prefix P`` into
   ``P/local/lib/python3.X/dist-packages``, so for such a ``.../local``
   prefix ``P/lib`` is tried after ``P/local/lib``;
4. the dynamic loader's search path (``ctypes.util.find_library``), for a
   system-wide install.

Installing (``pip install --no-build-isolation --no-deps ./python`` needs
only setuptools, no network): install the package and the C++ build with the
same prefix, e.g. ``pip install --prefix P ./python`` and ``cmake --install
build --prefix P``, and nothing needs configuring. A ``pip install --target
DIR`` (or a copy of the package) has no prefix: set ``HLA_LIBRARY_DIR`` to
the directory holding libHLACAPI.so, or install the library system-wide.
"""

from __future__ import annotations

import ctypes
import hashlib
import ctypes.util
import os
import re
import threading

LIBRARY_NAME = "libHLACAPI.so"

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def _repository_build_dir(package_dir):
    """``<repo>/build/lib`` when ``package_dir`` is the repository's
    ``<repo>/python/hla``, else None.

    Only the layout is checked, not that the build exists: an installed copy
    (site-packages, ``pip install --target``) must never pick up whatever
    happens to sit at ``../../build/lib`` relative to it.
    """
    source_dir = os.path.dirname(package_dir)  # <repo>/python
    repo = os.path.dirname(source_dir)
    if (os.path.basename(source_dir) == "python"
            and os.path.isfile(os.path.join(source_dir, "pyproject.toml"))
            and os.path.isfile(os.path.join(repo, "CMakeLists.txt"))):
        return os.path.join(repo, "build", "lib")
    return None


def _prefix_library_dirs(package_dir):
    """The ``<prefix>/lib`` directories to try when ``package_dir`` is
    ``<prefix>/lib/pythonX.Y/site-packages/hla`` (or a variant), else [].

    Paths are not resolved: a symlinked site-packages names the prefix the
    user installed into, which is where ``cmake --install`` put the library.
    """
    site = os.path.dirname(package_dir)
    python = os.path.dirname(site)  # pythonX.Y; Debian's own packages: python3
    libdir = os.path.dirname(python)  # <prefix>/lib or <prefix>/lib64
    prefix = os.path.dirname(libdir)
    if (os.path.basename(site) not in ("site-packages", "dist-packages")
            or not re.fullmatch(r"python3(\.\d+)?", os.path.basename(python))
            or os.path.basename(libdir) not in ("lib", "lib64")):
        return []
    # The C++ install always uses lib/ (cmake/modules/AddHLA.cmake), even
    # where Python's pure packages live under lib64/.
    dirs = [libdir]
    if os.path.basename(libdir) != "lib":
        dirs.append(os.path.join(prefix, "lib"))
    # Debian's pip maps --prefix P onto P/local/lib/python3.X/dist-packages
    # (its posix_local scheme) while cmake --install --prefix P uses P/lib.
    if os.path.basename(site) == "dist-packages" and os.path.basename(prefix) == "local":
        dirs.append(os.path.join(os.path.dirname(prefix), "lib"))
    return dirs


_REPO_BUILD_DIR = _repository_build_dir(_PACKAGE_DIR)
_PREFIX_LIBRARY_DIRS = _prefix_library_dirs(_PACKAGE_DIR)

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
    # At most one of these two applies: a package is either the repository's
    # source tree or installed under a prefix.
    places = []
    if _REPO_BUILD_DIR is not None:
        places.append((_REPO_BUILD_DIR, "the repository's build"))
    places += [(d, "the install prefix of this package") for d in _PREFIX_LIBRARY_DIRS]
    for directory, what in places:
        candidate = os.path.join(directory, LIBRARY_NAME)
        if os.path.isfile(candidate):
            return candidate
        searched.append(f"{candidate} ({what})")
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
        + f" (hla is at {_PACKAGE_DIR}). Build it (README), install it into this "
        "package's prefix, or set HLA_LIBRARY_DIR to the directory holding it.")


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
        lib.hlaCompileOptionNames.restype = ctypes.c_char_p
        lib.hlaCompileOptionNames.argtypes = []
        _loaded = (path, lib)
        return lib


def is_loaded():
    """Whether this process has loaded libHLACAPI.so (tests check laziness)."""
    return _loaded is not None
