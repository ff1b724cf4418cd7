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

Writers compile to a temporary name in the cache directory, *seal* it (append
its size and sha256, see ``verify_artefact``), load it and ``os.replace`` it
into place, so concurrent processes never see a half-written artefact.
Processes that miss the same entry at once take turns on a lock file
(``.lock-<key>``, removed after): the later ones find the first one's entry,
so an entry is compiled once. Readers check the
seal before loading, so a truncated or corrupted file (a partial copy of
the cache, a full disk, an older hla's unsealed artefact) is discarded with
a warning and compiled again instead of being mapped, which would fault on
first use. A cache that cannot be written falls back to a per-user
directory under the temp directory; one that cannot take the artefact (a
full disk) gives an uncached copy, with a warning.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import hashlib
import json
import logging
import os
import re
import shutil
import stat
import struct
import tempfile
import threading
import time
import warnings

from . import _library, runtime

TARGETS = ("cpu", "cuda")
SCAN_SCHEDULES = ("auto", "sequential", "blelloch")  # cpu
CUDA_SCHEDULES = ("auto", "persistent", "segmented")
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


# The keywords of hla.compile: hlaCompile's options (lib/Target/
# ArtefactOptions.cpp, whose keys are these with '-' for '_'; a test keeps the
# two lists equal). Checked here for type and range so that a typo is a
# TypeError/ValueError naming the keyword before anything is compiled; the
# compiler checks values again.
_OPTIONS = {
    "chunk_size": ("int", 1), "segments": ("int", 0), "scan_threads": ("int", 1),
    "value_tile": ("int", -1), "fission_live_bytes": ("int", 0),
    "cuda_threads": ("int", 32), "cuda_warpgroups": ("int", 0),
    "scan_schedule": ("choice", SCAN_SCHEDULES), "cuda_schedule": ("choice", CUDA_SCHEDULES),
    "chunk_form": ("choice", CHUNK_FORMS),
    "cuda_mma": ("choice", ("auto", "wgmma", "mma.sync")),
    "cuda_generator": ("choice", ("auto", "tiles", "phases")),
    "parallel_gradients": ("choice", ("auto", "on", "off")),
    "hoist_chunk_work": ("choice", ("auto", "on", "off")),
    "bf16_products": ("choice", ("auto", "on", "off")),
    "split_gradients": ("bool",), "cuda_allow_spills": ("bool",),
    "vectorize": ("bool",), "causal_isolation": ("bool",), "vjp": ("bool",),
    "summary_entries": ("bool",),
    "linsimp_stable_features": ("bool",), "linsimp_anchor_rows": ("int", 0),
    "cuda_chip": ("str",), "cuda_features": ("str",), "cuda_toolkit": ("str",),
    "entry": ("str",), "ptxas_log": ("str",), "runtime_dir": ("str",),
}


def _normalise_options(options, target="cpu"):
    """Python keywords -> hlaCompile's "key=value" pairs, validated here so
    that a typo is a TypeError/ValueError naming the keyword."""
    pairs = {}
    for key, value in options.items():
        if value is None:
            continue
        if key not in _OPTIONS:
            raise TypeError(f"hla.compile: unknown option {key!r} (known: "
                            f"{', '.join(_OPTIONS)})")
        kind = _OPTIONS[key]
        if kind[0] == "int":
            if isinstance(value, bool) or not isinstance(value, int) or value < kind[1]:
                raise ValueError(f"hla.compile: {key} must be an integer >= {kind[1]}, "
                                 f"got {value!r}")
            text = str(int(value))
        elif kind[0] == "choice":
            if value not in kind[1]:
                raise ValueError(f"hla.compile: {key} must be one of {kind[1]}, got {value!r}")
            text = value
        elif kind[0] == "bool":
            if not isinstance(value, bool):
                raise ValueError(f"hla.compile: {key} must be True or False, got {value!r}")
            text = "true" if value else "false"
        else:
            if not isinstance(value, str) or any(c.isspace() for c in value) or not value:
                raise ValueError(f"hla.compile: {key} must be a non-empty string without "
                                 f"spaces, got {value!r}")
            text = value
        pairs[key.replace("_", "-")] = text
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
    """Writes ``path`` by renaming a complete temporary into place (a
    directory already at ``path`` is replaced)."""
    directory = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=os.path.basename(path))
    try:
        with os.fdopen(fd, "w" if isinstance(data, str) else "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)  # mkstemp made it private; caches may be shared
        _replace(tmp, path)
    except BaseException:
        _remove(tmp)
        raise


def _replace(src, dst):
    """os.replace, also over a directory (a damaged cache entry)."""
    try:
        os.replace(src, dst)
    except OSError:
        if not (os.path.isdir(dst) and not os.path.islink(dst)):
            raise
        _discard(dst)
        os.replace(src, dst)


def _remove(path):
    try:
        os.remove(path)
    except OSError:
        pass


def _discard(path):
    """Removes a cache file, or a directory where a file belongs. The
    directory is first renamed aside, so nobody sees it half removed."""
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            aside = f"{os.path.dirname(path)}/.tmp-discard-{os.getpid()}-{threading.get_ident()}"
            os.rename(path, aside)
            shutil.rmtree(aside, ignore_errors=True)
        else:
            os.remove(path)
    except FileNotFoundError:
        pass


def _is_private_dir(path):
    """Whether ``path`` is a directory of ours that nobody else can write."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return (stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid()
            and not st.st_mode & 0o022)


_private_fallback = None


def _fallback_cache_dir():
    """``<tmp>/hla-cache-<uid>``, or, should that name be taken by someone
    else (or not be a directory), a private directory for this process."""
    global _private_fallback
    path = os.path.join(tempfile.gettempdir(), f"hla-cache-{os.getuid()}")
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
    except OSError:
        pass
    if _is_private_dir(path) and os.access(path, os.W_OK | os.X_OK):
        return path
    with _lock:
        if _private_fallback is None or not os.path.isdir(_private_fallback):
            _private_fallback = tempfile.mkdtemp(prefix="hla-cache-")
        return _private_fallback


def _writable_cache_dir():
    path = cache_dir()
    try:
        os.makedirs(path, exist_ok=True)
        if os.access(path, os.W_OK | os.X_OK):
            return path
        reason = "permission denied"
    except OSError as e:
        reason = e.strerror or str(e)
    try:
        fallback = _fallback_cache_dir()
    except OSError as e:
        raise OSError(e.errno, f"hla.compile: the cache directory {path} is not writable "
                               f"({reason}) and no temporary directory can be made either "
                               f"({e}); set HLA_CACHE_DIR to a writable directory") from e
    warnings.warn(f"hla: cache directory {path} is not writable ({reason}); using "
                  f"{fallback} (set HLA_CACHE_DIR)", RuntimeWarning, stacklevel=3)
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
    try:  # only a shortcut: a cache that cannot take it costs a library load
        os.makedirs(os.path.dirname(memo), exist_ok=True)
        _atomic_write(memo, version)
    except OSError:
        pass
    return version


def cache_key(ir_text, target, options):
    """The disk cache key of an artefact (see the module doc)."""
    _, digest = _library.library_identity()
    material = json.dumps({"ir": ir_text, "target": target, "options": options,
                           "compiler": compiler_version(), "library": digest},
                          sort_keys=True)
    return hashlib.sha256(material.encode()).hexdigest()


# ---------------------------------------------------------------------------
# Sealed artefacts
# ---------------------------------------------------------------------------
#
# A cache artefact is the shared object as the linker wrote it followed by a
# seal of SEAL_SIZE bytes: a magic, the size of what precedes it and its
# sha256. The dynamic loader maps only what the ELF's program headers name,
# so the trailing bytes change nothing for it; a truncated file has lost its
# seal (or the seal no longer matches), so it is never loaded. Sealing one
# file rather than writing a separate manifest keeps the check and the
# contents in the single atomic rename.

_SEAL_MAGIC = b"\0hla-artefact-1\0"
_SEAL = struct.Struct("<16sQ32s")  # magic, size of the sealed part, sha256
SEAL_SIZE = _SEAL.size


class ArtefactWriteError(OSError):
    """An artefact could not be written completely (a full disk, say)."""


def _sha256_prefix(f, size):
    h = hashlib.sha256()
    f.seek(0)
    left = size
    while left:
        block = f.read(min(left, 1 << 20))
        if not block:
            break
        h.update(block)
        left -= len(block)
    return h.digest()


def _elf_problem(f, size):
    """Why the first ``size`` bytes of ``f`` are not a complete 64-bit
    little-endian ELF file (every program header's bytes and the section
    header table present), or None. Other ELF kinds are not checked."""
    f.seek(0)
    header = f.read(64)
    if len(header) < 64 or header[:4] != b"\x7fELF":
        return "not an ELF file"
    if header[4] != 2 or header[5] != 1:
        return None
    phoff, shoff = struct.unpack_from("<QQ", header, 0x20)
    phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", header, 0x36)
    if phoff + phnum * phentsize > size or shoff + shnum * shentsize > size:
        return f"truncated ELF file ({size} bytes; its headers reach further)"
    for i in range(phnum):
        f.seek(phoff + i * phentsize)
        entry = f.read(phentsize)
        if len(entry) < 0x28:
            return "truncated ELF program header"
        offset, = struct.unpack_from("<Q", entry, 0x08)
        filesz, = struct.unpack_from("<Q", entry, 0x20)
        if offset + filesz > size:
            return (f"truncated ELF file ({size} bytes; segment {i} ends at "
                    f"{offset + filesz})")
    return None


def _seal(path):
    """Appends the seal to a freshly written artefact and flushes it to
    disk. Raises ArtefactWriteError if the file is incomplete or cannot be
    written (ENOSPC shows here at the latest)."""
    try:
        with open(path, "r+b") as f:
            size = os.fstat(f.fileno()).st_size
            problem = _elf_problem(f, size)
            if problem:
                raise ArtefactWriteError(errno.EIO, f"the compiler's output is incomplete "
                                                    f"({problem})", path)
            digest = _sha256_prefix(f, size)
            f.seek(size)
            f.write(_SEAL.pack(_SEAL_MAGIC, size, digest))
            f.flush()
            os.fsync(f.fileno())
    except ArtefactWriteError:
        raise
    except OSError as e:
        raise ArtefactWriteError(e.errno, e.strerror or str(e), path) from e


def verify_artefact(path):
    """None if ``path`` is a complete artefact as ``hla.compile`` wrote it
    (sealed, size and sha256 matching, a complete ELF), else why not."""
    try:
        st = os.stat(path)
    except OSError as e:
        return f"cannot be read ({e.strerror or e})"
    if stat.S_ISDIR(st.st_mode):
        return "is a directory"
    if not stat.S_ISREG(st.st_mode):
        return "is not a regular file"
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size < SEAL_SIZE:
                return f"truncated or empty ({size} bytes)"
            f.seek(size - SEAL_SIZE)
            magic, sealed, digest = _SEAL.unpack(f.read(SEAL_SIZE))
            if magic != _SEAL_MAGIC:
                return "has no seal (truncated, or not written by hla.compile)"
            if sealed != size - SEAL_SIZE:
                return (f"truncated or extended: {size} bytes, the seal says "
                        f"{sealed + SEAL_SIZE}")
            if _sha256_prefix(f, sealed) != digest:
                return "its contents do not match the seal's sha256 (corrupted)"
            return _elf_problem(f, sealed)
    except OSError as e:
        return f"cannot be read ({e.strerror or e})"


# Compiles take seconds and happen on first use: each is logged (INFO) with
# what was compiled and how long it took; logging.basicConfig(level=INFO)
# or logging.getLogger("hla").setLevel(...) shows them.
_log = logging.getLogger("hla")


def _describe_graph(ir_text):
    """"hla2, linear_attention in @main, @f" style summary of a graph."""
    ops = sorted(set(re.findall(r"\bhla\.([a-z0-9_]+)\b", ir_text)))
    functions = re.findall(r"func\.func\s+(?:(?:private|public|nested)\s+)?@([\w$.]+)", ir_text)
    return (", ".join(ops) or "no hla op") + " in " + ", ".join("@" + f for f in functions)


def _run_hla_compile(ir_text, target, option_text, output_path):
    """hlaCompile to ``output_path``, sealed when it succeeds. Returns
    (ok, diagnostics); raises ArtefactWriteError if the output could not be
    completed."""
    lib = _library.load()
    diagnostics = ctypes.c_void_p()
    with _lock:
        stats["compiles"] += 1
    _log.info("hla: compiling %s for %s (%s)", _describe_graph(ir_text), target,
              option_text or "default options")
    start = time.monotonic()
    ok = lib.hlaCompile(ir_text.encode(), target.encode(), b"shared", option_text.encode(),
                        output_path.encode(), ctypes.byref(diagnostics))
    _log.info("hla: %s in %.2f s", "compiled" if ok else "compile failed",
              time.monotonic() - start)
    text = ""
    if diagnostics.value:
        text = ctypes.string_at(diagnostics.value).decode(errors="replace")
        lib.hlaFreeString(diagnostics)
    if ok:
        _seal(output_path)
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
    segmented form or schedule; 0 = chosen for the target), ``value_tile``
    (int, value columns per iteration of the fused form or persistent
    schedule; 0 = all, -1 = chosen for the target), ``scan_schedule``
    (cpu: "auto" | "sequential" | "blelloch"), ``cuda_schedule`` ("auto" |
    "persistent" | "segmented"), ``scan_threads`` (int), ``vectorize``
    (bool); the full list is hla-opt's (``hla-opt --help``, the artefact
    options).
    Raises ``CompileError`` (with ``.diagnostics``) when the compiler rejects
    the IR, ``TargetNotImplementedError`` (also a NotImplementedError) for a
    target it cannot generate code for yet, ``OSError`` when neither the
    cache directory nor a temporary directory can take the artefact.
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


def precompile(ir, target="cpu", **options):
    """Compiles into the disk cache without loading the result, so that a
    machine that can run but not compile (a GPU machine without LLVM)
    finds it: the entry ``compile(ir, target, **options)`` would make.
    Returns the artefact's path; raises CompileError like ``compile``."""
    if target not in TARGETS:
        raise ValueError(f"hla.compile: unknown target {target!r} (known: {', '.join(TARGETS)})")
    ir_text = _read_ir(ir)
    normalised = _normalise_options(options, target)
    key = cache_key(ir_text, target, normalised)
    directory = _writable_cache_dir()
    path = os.path.join(directory, key + ".so")
    if not os.path.exists(path):
        ok, text = _run_hla_compile(ir_text, target, _option_text(normalised), path)
        if not ok:
            _raise_compile_error(target, text)
        _keep_ir(directory, key, ir_text)
    return path


def _option_text(normalised):
    """hlaCompile's option string."""
    return " ".join(f"{k}={v}" for k, v in normalised.items())


def _keep_ir(directory, key, ir_text):
    """The entry's IR beside it, for humans only: a cache too full for it
    still works."""
    try:
        _atomic_write(os.path.join(directory, key + ".mlir"), ir_text)
    except OSError:
        pass


def _load_or_compile(ir_text, target, normalised, key):
    names = runtime.public_functions(ir_text)
    primary = cache_dir()
    directory = _writable_cache_dir()
    # A read-only cache (artefacts compiled elsewhere) is still read.
    for place in dict.fromkeys((primary, directory)):
        library = _load_entry(os.path.join(place, key + ".so"), names,
                              may_discard=place == directory)
        if library is not None:
            return library
    option_text = _option_text(normalised)
    try:
        _library.load()
    except _library.CompilerNotFoundError as e:
        # A machine that only runs cached artefacts: say which one is missing.
        head = " ".join(line.strip() for line in ir_text.splitlines()[:2])[:400]
        raise _library.CompilerNotFoundError(
            f"hla.compile: no cached artefact for {_describe_graph(ir_text)} (target {target}, "
            f"{option_text or 'default options'}; key {key} in {primary}) and the compiler "
            f"cannot load: {e}\nIR: {head}") from e
    path = os.path.join(directory, key + ".so")
    with _compile_lock(directory, key):
        # Another process may have compiled it while this one waited.
        library = _load_entry(path, names, may_discard=True)
        if library is not None:
            return library
        try:
            library = _compile_into(directory, path, ir_text, target, option_text, names)
        except ArtefactWriteError as e:
            return _compile_uncached(directory, e, ir_text, target, option_text, names)
        _keep_ir(directory, key, ir_text)
        return library


@contextlib.contextmanager
def _compile_lock(directory, key):
    """Holds an exclusive lock on ``<directory>/.lock-<key>`` so that
    processes missing the same entry at once compile it once: the others wait
    and then find the entry. Only an economy, never needed for correctness
    (entries appear by atomic rename), so a directory that cannot take the
    lock file just goes without. The kernel drops the lock if its holder
    dies; the holder removes the file when done (a waiter that locked the
    removed file only looks the entry up again)."""
    lock_path = os.path.join(directory, ".lock-" + key)
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            try:
                os.unlink(lock_path)
            except OSError:
                pass
    finally:
        os.close(fd)  # releases the lock


def _load_entry(path, names, may_discard):
    """The library of a valid cache entry, or None (absent; or damaged, then
    discarded with a warning where the cache is writable)."""
    if not os.path.lexists(path):
        return None
    problem = verify_artefact(path)
    if problem is None:
        try:
            library = runtime.load(path, names)
        except OSError as e:
            if not os.path.exists(path):
                return None  # replaced or removed meanwhile: compile it
            # A library the artefact needs is missing here (libomp, say):
            # recompiling would not help, and the entry is not damaged.
            if "cannot open shared object file" in str(e):
                raise OSError(f"hla.compile: the cached artefact {path} cannot load on "
                              f"this machine: {e}") from e
            problem = f"cannot be loaded ({e})"
        else:
            with _lock:
                stats["disk_hits"] += 1
            return library
    action = "compiling it again"
    if may_discard:
        try:
            _discard(path)
        except OSError as e:
            action = f"it cannot be removed ({e}); compiling it again"
    warnings.warn(f"hla.compile: ignoring the damaged cache entry {path}: {problem}; "
                  f"{action}", RuntimeWarning, stacklevel=5)
    return None


def _output_failed(text, output):
    """Whether hlaCompile's diagnostics say that writing ``output`` failed
    (the link step names its output; a full disk shows up there)."""
    return output in text


def _free_space_note(directory):
    try:
        st = os.statvfs(directory)
    except OSError:
        return ""
    return f"; its filesystem has {st.f_bavail * st.f_frsize} bytes free"


def _compile_into(directory, path, ir_text, target, option_text, names):
    """Compiles to a temporary in ``directory``, seals and loads it, then
    renames it to ``path``. Raises ArtefactWriteError when the directory
    cannot take the artefact (nothing is left behind)."""
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".so")
    except OSError as e:
        raise ArtefactWriteError(e.errno, e.strerror or str(e), directory) from e
    os.close(fd)
    try:
        ok, text = _run_hla_compile(ir_text, target, option_text, tmp)
        if not ok:
            if _output_failed(text, tmp):
                raise ArtefactWriteError(
                    errno.EIO, f"the compiler could not write its output there"
                               f"{_free_space_note(directory)}:\n{text.rstrip()}", directory)
            _raise_compile_error(target, text)
        if text.strip():
            warnings.warn(f"hla.compile: compiler messages:\n{text.rstrip()}", stacklevel=5)
        os.chmod(tmp, 0o755)  # mkstemp made it private; caches may be shared
        # Loaded before the rename: whatever happens to `path` afterwards
        # (another process replacing or discarding it), this handle is ours.
        library = runtime.load(tmp, names)
        library.path = os.path.abspath(path)
        try:
            _replace(tmp, path)
        except OSError as e:
            warnings.warn(f"hla.compile: could not store the artefact as {path} ({e}); "
                          f"it is not cached", RuntimeWarning, stacklevel=5)
        return library
    finally:
        _remove(tmp)


def _compile_uncached(directory, error, ir_text, target, option_text, names):
    """The cache could not take the artefact: compile it into a private
    temporary directory, load it and delete the file (the mapping stays)."""
    reason = f"{error.strerror or error}"
    try:
        scratch = tempfile.mkdtemp(prefix="hla-uncached-")
    except OSError as e:
        raise OSError(error.errno, f"hla.compile: could not store the artefact in the cache "
                                   f"directory {directory} ({reason}) nor create a temporary "
                                   f"directory ({e})") from error
    try:
        path = os.path.join(scratch, "artefact.so")
        try:
            ok, text = _run_hla_compile(ir_text, target, option_text, path)
        except ArtefactWriteError as e:
            raise OSError(e.errno, f"hla.compile: could not store the artefact in the cache "
                                   f"directory {directory} ({reason}) nor in {scratch} "
                                   f"({e.strerror or e})") from error
        if not ok:
            if _output_failed(text, path):
                raise OSError(error.errno, f"hla.compile: could not store the artefact in the "
                                           f"cache directory {directory} ({reason}) nor in "
                                           f"{scratch}{_free_space_note(scratch)}") from error
            _raise_compile_error(target, text)
        library = runtime.load(path, names)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    warnings.warn(f"hla.compile: could not store the artefact in the cache directory "
                  f"{directory} ({reason.splitlines()[0]}); using an uncached copy "
                  f"(set HLA_CACHE_DIR to a directory with room)", RuntimeWarning, stacklevel=4)
    return library


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
