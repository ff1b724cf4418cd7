"""``hla.compile``: MLIR text in, a loaded shared library out, cached.

Two caches sit in front of ``hlaCompile``:

* in this process, a dict from the cache key to the loaded library;
* on disk, ``$HLA_CACHE_DIR`` (default ``$XDG_CACHE_HOME/hla``, i.e.
  ``~/.cache/hla``): ``<key>.so`` plus ``<key>.mlir`` (the IR, for humans).

The key is the sha256 of the IR text, the target, the normalised options,
the compiler's version string and the sha256 of libHLACAPI.so's contents
(development builds keep the version string across rebuilds). The version
string itself is remembered on disk per digest of the library,
so a cache hit never loads libHLACAPI.so, which pulls in all of LLVM.

Writers compile to a temporary name in the cache directory and ``os.replace``
it into place, so concurrent processes never see a half-written artefact:
the worst case is that two of them compile the same thing.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import tempfile
import threading
import warnings

from . import _library, runtime

TARGETS = ("cpu", "cuda")
SCHEDULES = {"cpu": ("auto", "sequential", "blelloch"),
             "cuda": ("auto", "persistent", "segmented")}
CHUNK_FORMS = ("phased", "fused", "segmented")

# Counters, for tests and for users who want to know what a call cost:
# compiles = hlaCompile calls; disk_hits = artefacts loaded from the disk
# cache; memory_hits = calls answered by the in-process dict.
stats = {"compiles": 0, "disk_hits": 0, "memory_hits": 0}

_loaded = {}  # key -> runtime.CompiledLibrary
_key_locks = {}
_lock = threading.Lock()


class CompileError(RuntimeError):
    """hlaCompile rejected the IR. ``diagnostics`` holds the compiler's text."""

    def __init__(self, message, diagnostics="", target=None):
        super().__init__(message)
        self.diagnostics = diagnostics
        self.target = target


class TargetNotImplementedError(CompileError, NotImplementedError):
    """The compiler has no code generator for this target yet."""


class OpNotImplementedError(CompileError, NotImplementedError):
    """The target's code generator does not lower this op yet."""


def cache_dir():
    """The disk cache directory (created on first use)."""
    path = os.environ.get("HLA_CACHE_DIR")
    if not path:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        path = os.path.join(base, "hla")
    return path


def _normalise_options(options, target="cpu"):
    """Python keywords -> hlaCompile's "key=value" pairs, validated here so
    that a typo is a TypeError/ValueError naming the keyword."""
    pairs = {}
    for key, value in options.items():
        if value is None:
            continue
        if key in ("chunk_size", "scan_threads"):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"hla.compile: {key} must be an integer >= 1, got {value!r}")
            pairs[key.replace("_", "-")] = str(int(value))
        elif key == "segments":
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"hla.compile: segments must be an integer >= 0, got {value!r}")
            pairs["segments"] = str(int(value))
        elif key == "schedule":
            if value not in SCHEDULES[target]:
                raise ValueError(f"hla.compile: schedule must be one of {SCHEDULES[target]} "
                                 f"for target {target!r}, got {value!r}")
            pairs["schedule"] = value
        elif key == "chunk_form":
            if value not in CHUNK_FORMS:
                raise ValueError(f"hla.compile: chunk_form must be one of {CHUNK_FORMS}, "
                                 f"got {value!r}")
            pairs["chunk-form"] = value
        elif key == "vectorize":
            if not isinstance(value, bool):
                raise ValueError(f"hla.compile: vectorize must be True or False, got {value!r}")
            pairs["vectorize"] = "true" if value else "false"
        else:
            raise TypeError(f"hla.compile: unknown option {key!r} (known: chunk_size, "
                            f"chunk_form, segments, schedule, scan_threads, vectorize)")
    return dict(sorted(pairs.items()))


def _read_ir(ir):
    if isinstance(ir, bytes):
        return ir.decode()
    if isinstance(ir, os.PathLike):
        with open(ir) as f:
            return f.read()
    if not isinstance(ir, str):
        raise TypeError(f"hla.compile: expected MLIR text or a path, got {type(ir).__name__}")
    # A single line naming an existing file is a path; MLIR text of a module
    # always has more than one line or a '{'.
    if "\n" not in ir and "{" not in ir:
        if os.path.isfile(ir):
            with open(ir) as f:
                return f.read()
        if ir.strip().endswith(".mlir"):
            raise FileNotFoundError(f"hla.compile: no such file: {ir!r}")
    return ir


def _atomic_write(path, data):
    directory = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=os.path.basename(path))
    try:
        with os.fdopen(fd, "w" if isinstance(data, str) else "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)  # mkstemp made it private; caches may be shared
        os.replace(tmp, path)
    except BaseException:
        _remove(tmp)
        raise


def _remove(path):
    try:
        os.remove(path)
    except OSError:
        pass


def _writable_cache_dir():
    path = cache_dir()
    try:
        os.makedirs(path, exist_ok=True)
        if os.access(path, os.W_OK | os.X_OK):
            return path
    except OSError:
        pass
    fallback = os.path.join(tempfile.gettempdir(), f"hla-cache-{os.getuid()}")
    warnings.warn(f"hla: cache directory {path} is not writable; using {fallback} "
                  f"(set HLA_CACHE_DIR)", RuntimeWarning, stacklevel=3)
    os.makedirs(fallback, exist_ok=True)
    return fallback


def compiler_version():
    """The compiler's version string, without loading it when known.

    Remembered in ``<cache>/compilers/<sha256 of the library>`` so that
    processes whose artefacts are all cached never load libHLACAPI.so. (Not
    keyed on the path: a checkout moved or copied elsewhere is the same
    compiler.)
    """
    _, ident = _library.library_identity()
    memo = os.path.join(_writable_cache_dir(), "compilers", ident)
    try:
        with open(memo) as f:
            version = f.read()
        if version:
            return version
    except OSError:
        pass
    version = _library.load().hlaCompilerVersion().decode()
    os.makedirs(os.path.dirname(memo), exist_ok=True)
    _atomic_write(memo, version)
    return version


def cache_key(ir_text, target, options):
    """The disk cache key of an artefact (see the module doc)."""
    _, digest = _library.library_identity()
    material = json.dumps({"ir": ir_text, "target": target, "options": options,
                           "compiler": compiler_version(), "library": digest},
                          sort_keys=True)
    return hashlib.sha256(material.encode()).hexdigest()


def _run_hla_compile(ir_text, target, option_text, output_path):
    lib = _library.load()
    diagnostics = ctypes.c_void_p()
    with _lock:
        stats["compiles"] += 1
    ok = lib.hlaCompile(ir_text.encode(), target.encode(), b"shared", option_text.encode(),
                        output_path.encode(), ctypes.byref(diagnostics))
    text = ""
    if diagnostics.value:
        text = ctypes.string_at(diagnostics.value).decode(errors="replace")
        lib.hlaFreeString(diagnostics)
    return ok, text


def _raise_compile_error(target, text):
    unsupported = f"--hla-target={target} is not supported" in text
    if unsupported:
        raise TargetNotImplementedError(
            f"hla.compile: the compiler cannot generate code for target '{target}' yet "
            f"(it reports: {text.strip()})", text, target)
    raise CompileError(f"hla.compile: compiling for target '{target}' failed:\n{text.rstrip()}",
                       text, target)


def compile(ir, target="cpu", **options):  # noqa: A001 (the public name is the point)
    """Compiles MLIR (text or a path) to a shared library and loads it.

    Returns a ``runtime.CompiledLibrary``: every public function ``@f`` of
    the module is an attribute ``f`` taking and returning arrays.
    Options: ``chunk_size`` (int), ``chunk_form`` ("phased" | "fused" |
    "segmented", cpu), ``segments`` (int, runs of chunks per sequence of the
    segmented form or schedule; 0 = chosen for the target), ``schedule``
    (cpu: "auto" | "sequential" | "blelloch"; cuda: "auto" | "persistent" |
    "segmented"), ``scan_threads`` (int), ``vectorize`` (bool).
    Raises ``CompileError`` (with ``.diagnostics``) when the compiler rejects
    the IR, ``TargetNotImplementedError`` (also a NotImplementedError) for a
    target it cannot generate code for yet.
    """
    if target not in TARGETS:
        raise ValueError(f"hla.compile: unknown target {target!r} (known: {', '.join(TARGETS)})")
    ir_text = _read_ir(ir)
    normalised = _normalise_options(options, target)
    key = cache_key(ir_text, target, normalised)
    with _lock:
        hit = _loaded.get(key)
        if hit is not None:
            stats["memory_hits"] += 1
            return hit
        key_lock = _key_locks.setdefault(key, threading.Lock())
    with key_lock:  # one compile per key among this process's threads
        with _lock:
            if key in _loaded:
                stats["memory_hits"] += 1
                return _loaded[key]
        library = _load_or_compile(ir_text, target, normalised, key)
        with _lock:
            _loaded[key] = library
        return library


def _load_or_compile(ir_text, target, normalised, key):
    directory = _writable_cache_dir()
    path = os.path.join(directory, key + ".so")
    names = runtime.public_functions(ir_text)
    if os.path.exists(path):
        try:
            library = runtime.load(path, names)
            with _lock:
                stats["disk_hits"] += 1
            return library
        except OSError as e:
            # A library the artefact needs is missing here (libomp, say):
            # recompiling would not help, and the entry is not damaged.
            if "cannot open shared object file" in str(e):
                raise OSError(f"hla.compile: the cached artefact {path} cannot load on "
                              f"this machine: {e}") from e
            # A damaged file (disk full, a foreign writer): compile it again.
            _remove(path)
    option_text = " ".join(f"{k}={v}" for k, v in normalised.items())
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".so")
    os.close(fd)
    try:
        ok, text = _run_hla_compile(ir_text, target, option_text, tmp)
        if not ok:
            _raise_compile_error(target, text)
        if text.strip():
            warnings.warn(f"hla.compile: compiler messages:\n{text.rstrip()}", stacklevel=4)
        _atomic_write(os.path.join(directory, key + ".mlir"), ir_text)
        os.chmod(tmp, 0o755)  # mkstemp made it private; caches may be shared
        os.replace(tmp, path)
    finally:
        _remove(tmp)
    return runtime.load(path, names)


_memory_caches = [_loaded]


def register_memory_cache(cache):
    """Lets clear_memory_cache() also empty ``cache`` (a dict of compiled
    functions kept by a layer above, e.g. the functional API)."""
    _memory_caches.append(cache)


def clear_memory_cache():
    """Forgets the libraries loaded in this process (the disk cache stays).

    Already-loaded shared objects stay mapped; only the lookups are dropped,
    so the next call goes back to the disk cache.
    """
    with _lock:
        for cache in _memory_caches:
            cache.clear()
