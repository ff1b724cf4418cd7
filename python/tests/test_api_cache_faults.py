"""The disk cache under faults and load (issue 15).

Damaged entries (a truncated or corrupted artefact, a directory where a file
belongs) are detected before anything is loaded and are compiled again;
concurrent processes and threads on a cold cache all get the right result
and leave one valid entry; an unwritable cache or one on a full filesystem
gives a correct result (with a warning) or a clear error, never a
half-written file.

Anything that could kill the interpreter (loading a truncated shared object
faults on first use) runs in a subprocess whose exit status is checked, so a
regression is a failing test, not a dead pytest. The graphs are tiny (one
compile is well under a second) and each test uses a fresh cache directory.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import uuid
import warnings

import numpy as np
import pytest

import hla
from hla import compiler

from .api_util import REPO, needs_compiler, reference, rel_err

pytestmark = needs_compiler


def _graph(tag):
    """A small graph with a function ``f`` (x -> 3x) whose cache key is new
    (``tag`` is in a constant's name)."""
    name = "f_" + tag.replace("-", "_")
    return f"""
func.func @{name}(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {{
  %y = arith.addf %x, %x : tensor<4x3xf32>
  %z = arith.addf %y, %x : tensor<4x3xf32>
  return %z : tensor<4x3xf32>
}}
""", name


def _env(cache, **extra):
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"), HLA_CACHE_DIR=str(cache))
    env.update({k: str(v) for k, v in extra.items()})
    return env


# Run in a child: compile the graph in argv[1], call its function, print the
# counters, the warnings and whether the result is right, as one JSON line.
_CHILD = r"""
import json, sys, warnings
import numpy as np
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    import hla
    name = sys.argv[2]
    with open(sys.argv[1]) as f:
        lib = hla.compile(f.read())
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    ok = bool((getattr(lib, name)(x) == 3 * x).all())
print(json.dumps(dict(hla.stats(), ok=ok, warnings=[str(w.message) for w in caught])))
"""


def _run_child(graph_path, name, env, user=None):
    preexec = None
    if user is not None:
        def preexec():
            os.setgid(user)
            os.setgroups([])
            os.setuid(user)
    result = subprocess.run([sys.executable, "-c", _CHILD, str(graph_path), name],
                            capture_output=True, text=True, env=env, cwd="/",
                            timeout=120, preexec_fn=preexec)
    report = None
    if result.returncode == 0 and result.stdout.strip():
        report = json.loads(result.stdout.strip().splitlines()[-1])
    return result, report


def _entries(directory):
    """The cache directory's file names, the compiler memo folder left out."""
    return sorted(n for n in os.listdir(directory) if n != "compilers")


def _leftovers(directory):
    """Temporaries anywhere under the cache directory."""
    found = []
    for root, dirs, files in os.walk(directory):
        found += [os.path.join(root, n) for n in files + dirs
                  if n.startswith((".tmp", ".lock"))]
    return found


def _assert_one_valid_entry(directory, key):
    assert _entries(directory) == [key + ".mlir", key + ".so"], _entries(directory)
    assert compiler.verify_artefact(os.path.join(directory, key + ".so")) is None
    assert not _leftovers(directory)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A fresh, empty cache directory for this process (and its children)."""
    directory = tmp_path / "cache"
    monkeypatch.setenv("HLA_CACHE_DIR", str(directory))
    compiler.clear_memory_cache()
    yield directory
    compiler.clear_memory_cache()


# ---------------------------------------------------------------------------
# Damaged entries
# ---------------------------------------------------------------------------

def _truncate_to(path, fraction):
    data = open(path, "rb").read()
    with open(path, "wb") as f:
        f.write(data[:int(len(data) * fraction)])


def _flip_a_byte(path):
    data = bytearray(open(path, "rb").read())
    data[len(data) // 2] ^= 0xFF
    with open(path, "wb") as f:
        f.write(bytes(data))


def _strip_seal(path):
    """What an artefact of an older hla (no seal) or a foreign writer looks
    like: the ELF as the linker wrote it."""
    data = open(path, "rb").read()
    with open(path, "wb") as f:
        f.write(data[:-compiler.SEAL_SIZE])


@pytest.mark.parametrize("damage", [
    lambda p: _truncate_to(p, 0.6),   # a partial copy: a valid ELF header, pages missing
    lambda p: _truncate_to(p, 0.98),  # only the tail missing
    _flip_a_byte,
    _strip_seal,
], ids=["truncated-60%", "truncated-98%", "flipped-byte", "unsealed"])
def test_damaged_artefact_is_compiled_again_not_loaded(tmp_path, damage):
    """A damaged <key>.so is discarded with a warning and compiled again.
    (Before the seal, the truncated ones killed the process with SIGBUS.)"""
    cache = tmp_path / "cache"
    graph, name = _graph(uuid.uuid4().hex[:12])
    graph_path = tmp_path / "graph.mlir"
    graph_path.write_text(graph)
    env = _env(cache)
    result, first = _run_child(graph_path, name, env)
    assert result.returncode == 0, result.stderr
    assert first["ok"] and first["compiles"] == 1
    (so,) = [cache / n for n in _entries(cache) if n.endswith(".so")]
    damage(so)
    result, second = _run_child(graph_path, name, env)
    assert result.returncode == 0, (
        f"the process died (status {result.returncode}) loading a damaged artefact:\n"
        f"{result.stderr[-2000:]}")
    assert second["ok"], second
    assert second["compiles"] == 1 and second["disk_hits"] == 0, second
    assert any("damaged cache entry" in w for w in second["warnings"]), second["warnings"]
    _assert_one_valid_entry(cache, so.name[:-3])
    # And the entry written again is used as it is.
    result, third = _run_child(graph_path, name, env)
    assert result.returncode == 0, result.stderr
    assert third["compiles"] == 0 and third["disk_hits"] == 1 and not third["warnings"], third


def test_verify_artefact_reports_the_damage(cache):
    graph, _ = _graph(uuid.uuid4().hex[:12])
    hla.compile(graph)
    key = compiler.cache_key(graph, "cpu", {})
    path = os.path.join(cache, key + ".so")
    assert compiler.verify_artefact(path) is None
    copy = str(cache / "copy.so")
    data = open(path, "rb").read()
    with open(copy, "wb") as f:
        f.write(data[:1000])
    assert "truncated" in compiler.verify_artefact(copy) or "seal" in compiler.verify_artefact(copy)
    with open(copy, "wb") as f:
        f.write(data[:-1])
    assert compiler.verify_artefact(copy) is not None
    with open(copy, "wb") as f:
        f.write(data + b"x")
    assert compiler.verify_artefact(copy) is not None
    with open(copy, "wb") as f:
        f.write(b"")
    assert compiler.verify_artefact(copy) is not None
    os.remove(copy)
    os.mkdir(copy)
    assert "directory" in compiler.verify_artefact(copy)


@pytest.mark.parametrize("which", ["so", "mlir", "memo"])
def test_directory_in_place_of_a_cache_file_is_replaced(cache, which):
    """<key>.so, <key>.mlir or the compiler-version memo being a directory
    (with something in it) is replaced, not an IsADirectoryError."""
    graph, name = _graph(uuid.uuid4().hex[:12])
    key = compiler.cache_key(graph, "cpu", {})  # creates the memo
    memo_dir = os.path.join(cache, "compilers")
    (memo,) = os.listdir(memo_dir)
    target = {"so": os.path.join(cache, key + ".so"),
              "mlir": os.path.join(cache, key + ".mlir"),
              "memo": os.path.join(memo_dir, memo)}[which]
    if os.path.exists(target):
        os.remove(target)
    os.makedirs(os.path.join(target, "inner"))
    with open(os.path.join(target, "inner", "file"), "w") as f:
        f.write("x")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lib = hla.compile(graph)
    x = np.ones((4, 3), np.float32)
    np.testing.assert_array_equal(getattr(lib, name)(x), 3 * x)
    if which != "memo":
        assert os.path.isfile(target)
        _assert_one_valid_entry(cache, key)
    # A fresh process reads the entry back (and the memo, if it was replaced).
    compiler.clear_memory_cache()
    before = dict(compiler.stats)
    hla.compile(graph)
    assert compiler.stats["compiles"] == before["compiles"]
    assert compiler.stats["disk_hits"] == before["disk_hits"] + 1


# ---------------------------------------------------------------------------
# Load: processes and threads on a cold cache
# ---------------------------------------------------------------------------

_OP_CHILD = r"""
import json, sys
import numpy as np
import hla
data = np.load(sys.argv[1])
q, k, v = data["q"], data["k"], data["v"]
o = hla.hla2(q, k, v, decay=0.9)
want = hla.reference.hla2(q, k, v, decay=0.9)
err = float(np.linalg.norm(o - want) / np.linalg.norm(want))
print(json.dumps(dict(hla.stats(), err=err)))
"""


def _op_inputs(seed, t):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((1, t, 1, 8)) * s).astype(np.float32)
            for s in (8 ** -0.5, 8 ** -0.5, 1.0)]


def _only_key(directory):
    keys = {n[:-3] for n in _entries(directory) if n.endswith(".so")}
    assert len(keys) == 1, _entries(directory)
    return keys.pop()


def test_processes_on_a_cold_cache(tmp_path):
    """Four processes call the same op at once on an empty cache: each gets
    the right result; one of them compiles (the others wait on its lock and
    load its entry); one valid entry, no temporaries or lock files remain."""
    cache = tmp_path / "cache"
    q, k, v = _op_inputs(1, 13)
    np.savez(tmp_path / "qkv.npz", q=q, k=k, v=v)
    env = _env(cache)
    procs = [subprocess.Popen([sys.executable, "-c", _OP_CHILD, str(tmp_path / "qkv.npz")],
                              env=env, cwd="/", stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(4)]
    compiles = 0
    for p in procs:
        out, err = p.communicate(timeout=180)
        assert p.returncode == 0, err
        report = json.loads(out.strip().splitlines()[-1])
        assert report["err"] <= 1e-5, report
        assert report["compiles"] + report["disk_hits"] == 1, report
        compiles += report["compiles"]
    assert compiles == 1
    _assert_one_valid_entry(cache, _only_key(cache))


def test_threads_on_a_cold_cache(cache):
    """Four threads of one process call the same op at once on an empty
    cache: one compile, each gets the right result."""
    q, k, v = _op_inputs(2, 11)
    want = reference("hla2", q, k, v, decay=0.9)
    before = compiler.stats["compiles"]
    barrier = threading.Barrier(4)
    results, errors = [None] * 4, []

    def work(i):
        try:
            barrier.wait()
            results[i] = hla.hla2(q, k, v, decay=0.9)
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    for o in results:
        assert rel_err(o, want) <= 1e-5
    assert compiler.stats["compiles"] == before + 1
    _assert_one_valid_entry(cache, _only_key(cache))


# ---------------------------------------------------------------------------
# Unwritable and full caches
# ---------------------------------------------------------------------------

@contextlib.contextmanager
def _mounted_tmpfs(directory, options):
    """A tmpfs on ``directory`` (root only); skips where mount is refused."""
    os.makedirs(directory, exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(directory)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        pytest.skip(f"mount is not permitted here: {result.stderr.strip()}")
    try:
        yield directory
    finally:
        subprocess.run(["umount", "-l", str(directory)], capture_output=True)


def _private_tmp(tmp_path, monkeypatch):
    """Points tempfile (where the fallback cache lives) at a fresh folder."""
    tmp = tmp_path / "tmp"
    tmp.mkdir(mode=0o777)
    os.chmod(tmp, 0o1777)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    return tmp


def _check_uncached_call(cache_dir, tmp):
    """hla2 on a cache that cannot take the artefact: right result, a
    warning, no temporaries in the cache."""
    q, k, v = _op_inputs(3, 9)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        o = hla.hla2(q, k, v, decay=0.9)
    assert rel_err(o, reference("hla2", q, k, v, decay=0.9)) <= 1e-5
    assert caught, "expected a warning about the cache"
    return [str(w.message) for w in caught]


def test_cache_path_under_a_file(tmp_path, monkeypatch):
    """HLA_CACHE_DIR below a regular file (unwritable even for root): the
    per-user fallback under the temp directory is used, with a warning."""
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("HLA_CACHE_DIR", str(blocker / "cache"))
    tmp = _private_tmp(tmp_path, monkeypatch)
    compiler.clear_memory_cache()
    messages = _check_uncached_call(blocker / "cache", tmp)
    assert any("not writable" in m for m in messages), messages
    fallback = tmp / f"hla-cache-{os.getuid()}"
    _assert_one_valid_entry(fallback, _only_key(fallback))
    compiler.clear_memory_cache()


def test_read_only_cache(tmp_path, monkeypatch):
    """A cache on a read-only filesystem: entries already there are used;
    new ones go to the fallback, with a warning."""
    cache = tmp_path / "ro"
    monkeypatch.setenv("HLA_CACHE_DIR", str(cache))
    tmp = _private_tmp(tmp_path, monkeypatch)
    compiler.clear_memory_cache()
    q, k, v = _op_inputs(4, 10)
    with _mounted_tmpfs(cache, "size=4m"):
        hla.hla2(q, k, v, decay=0.9)  # seeds it while writable
        key = _only_key(cache)
        remount = subprocess.run(["mount", "-o", "remount,ro", str(cache)],
                                 capture_output=True, text=True)
        if remount.returncode != 0:
            pytest.skip(f"remounting read-only is not permitted: {remount.stderr.strip()}")
        compiler.clear_memory_cache()
        before = dict(compiler.stats)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            o = hla.hla2(q, k, v, decay=0.9)
        assert rel_err(o, reference("hla2", q, k, v, decay=0.9)) <= 1e-5
        assert compiler.stats["compiles"] == before["compiles"]
        assert compiler.stats["disk_hits"] == before["disk_hits"] + 1
        # A new key: compiled into the fallback.
        messages = _check_uncached_call(cache, tmp)
        assert any("not writable" in m for m in messages), messages
        assert _entries(cache) == [key + ".mlir", key + ".so"]
        fallback = tmp / f"hla-cache-{os.getuid()}"
        _assert_one_valid_entry(fallback, _only_key(fallback))
    compiler.clear_memory_cache()


def test_unwritable_cache_for_an_ordinary_user():
    """chmod 0o500 on the cache: a process of an ordinary user (root ignores
    the mode, so as root the child runs as nobody) warns, uses the fallback
    and gets the right result."""
    import shutil
    # Not pytest's tmp_path: its parent is private to root.
    base = tempfile.mkdtemp(prefix="hla-test-unwritable-", dir="/tmp")
    try:
        os.chmod(base, 0o755)
        cache = os.path.join(base, "cache")
        tmp = os.path.join(base, "tmp")
        os.mkdir(cache)
        os.mkdir(tmp)
        os.chmod(tmp, 0o1777)
        graph, name = _graph(uuid.uuid4().hex[:12])
        graph_path = os.path.join(base, "graph.mlir")
        with open(graph_path, "w") as f:
            f.write(graph)
        os.chmod(graph_path, 0o644)
        os.chmod(cache, 0o500)
        user = None
        if os.geteuid() == 0:
            import pwd
            try:
                user = pwd.getpwnam("nobody").pw_uid
            except KeyError:
                pytest.skip("no 'nobody' user to drop root to")
        env = _env(cache, TMPDIR=tmp, HOME=tmp)
        result, report = _run_child(graph_path, name, env, user=user)
        assert result.returncode == 0, result.stderr
        assert report["ok"] and report["compiles"] == 1, report
        assert any("not writable" in w for w in report["warnings"]), report["warnings"]
        assert os.listdir(cache) == []
        uid = user if user is not None else os.getuid()
        fallback = os.path.join(tmp, f"hla-cache-{uid}")
        _assert_one_valid_entry(fallback, _only_key(fallback))
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_full_filesystem(tmp_path, monkeypatch):
    """A cache on a full filesystem (a 64 KiB tmpfs, nearly filled): the
    call still gives the right result, warns, and leaves no temporary or
    partial artefact in the cache."""
    mount = tmp_path / "small"
    monkeypatch.setenv("HLA_CACHE_DIR", str(mount / "cache"))
    compiler.clear_memory_cache()
    with _mounted_tmpfs(mount, "size=64k"):
        os.makedirs(mount / "cache")
        compiler.cache_key("", "cpu", {})  # the memo, while there is room
        fd = os.open(mount / "filler", os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            while True:
                os.write(fd, b"\0" * 1024)
        except OSError:
            pass
        os.ftruncate(fd, max(os.fstat(fd).st_size - 4096, 0))  # room for small files only
        os.close(fd)
        messages = _check_uncached_call(mount / "cache", None)
        assert any("could not store" in m for m in messages), messages
        assert [n for n in _entries(mount / "cache") if not n.endswith(".mlir")] == []
        assert not _leftovers(mount / "cache")
    compiler.clear_memory_cache()


def _fsync_fails_under(directory, monkeypatch):
    """Simulates a full disk for files under ``directory``: fsync, where a
    filesystem with delayed allocation (or NFS) reports ENOSPC, fails."""
    import errno
    real = os.fsync

    def fsync(fd):
        name = os.readlink(f"/proc/self/fd/{fd}")
        if directory is None or name.startswith(str(directory)):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd)

    monkeypatch.setattr(os, "fsync", fsync)


def test_no_space_while_sealing(cache, monkeypatch):
    """ENOSPC simulated where the artefact is flushed (no mount needed): the
    result is still right, the cache holds no artefact and no temporary."""
    _fsync_fails_under(cache, monkeypatch)
    messages = _check_uncached_call(cache, None)
    assert any("could not store" in m and "No space left" in m for m in messages), messages
    assert not [n for n in _entries(cache) if n.endswith(".so")]
    assert not _leftovers(cache)


def test_nowhere_to_write_is_a_clear_error(tmp_path, monkeypatch):
    """When neither the cache nor the temp directory can take the artefact,
    the error says so (an OSError naming both), and nothing is left."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("HLA_CACHE_DIR", str(cache))
    compiler.clear_memory_cache()
    _fsync_fails_under(None, monkeypatch)
    q, k, v = _op_inputs(5, 7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(OSError, match="could not store the artefact") as info:
            hla.hla2(q, k, v)
    assert str(cache) in str(info.value) and "No space left" in str(info.value)
    assert not [n for n in _entries(cache) if n.endswith(".so")]
    assert not _leftovers(cache)
    compiler.clear_memory_cache()


def test_precompiled_entry_runs_without_the_compiler(tmp_path, monkeypatch):
    """compiler.precompile fills the cache for a machine that cannot load the
    compiler: there the entry is found and runs; a graph not in the cache
    raises CompilerNotFoundError naming the graph, the target and the key."""
    from hla import _library
    text, name = _graph("precompiled")
    monkeypatch.setenv("HLA_CACHE_DIR", str(tmp_path / "cache"))
    path = compiler.precompile(text, "cpu")
    assert os.path.exists(path) and compiler.verify_artefact(path) is None
    assert compiler.precompile(text, "cpu") == path  # present: nothing to do

    def absent():
        raise _library.CompilerNotFoundError("simulated: no LLVM on this machine")
    monkeypatch.setattr(_library, "load", absent)
    library = compiler.compile(text)
    assert getattr(library, name)(np.ones((4, 3), np.float32)).tolist() == [[3.0] * 3] * 4
    with pytest.raises(_library.CompilerNotFoundError) as e:
        compiler.compile(text.replace(name, name + "_missing"))
    message = str(e.value)
    assert f"no cached artefact for no hla op in @{name}_missing (target cpu" in message
    assert "key " in message and "simulated: no LLVM" in message
