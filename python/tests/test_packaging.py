"""Installing the package with pip (python/pyproject.toml), and an installed
copy finding the compiler library (hla._library) outside the repository.

pip builds a wheel from a copy of python/ (building in place would leave
build/ and hla.egg-info/ in the working tree, and two runs would race on
them); the wheel is then installed with --target and with --prefix, and each
install is exercised in a fresh interpreter whose only path entry for hla is
the install, run outside the repository.
"""

from __future__ import annotations

import ctypes.util
import glob
import importlib.metadata
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile

import pytest

from hla import _library

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCE = os.path.join(REPO, "python")
BUILD_LIB = os.path.join(REPO, "build", "lib")
LIBRARY = os.path.join(BUILD_LIB, _library.LIBRARY_NAME)
PYTHON_DIR = f"python{sys.version_info.major}.{sys.version_info.minor}"


def _pip_unavailable():
    """Why pip cannot build the package here without a network, or None."""
    if importlib.util.find_spec("pip") is None:
        return "pip is not installed for this interpreter"
    # --no-build-isolation builds with what is installed: setuptools and,
    # before setuptools 70.1 (which carries its own bdist_wheel), wheel.
    if importlib.util.find_spec("setuptools") is None:
        return "setuptools is not installed (pip would need the network to get it)"
    # Its version from the metadata: importing setuptools here would swap out
    # distutils under whatever already imported it.
    version = tuple(int(p) for p in importlib.metadata.version("setuptools").split(".")[:2]
                    if p.isdigit())
    if version < (70, 1) and importlib.util.find_spec("wheel") is None:
        return "wheel is not installed (pip would need the network to get it)"
    return None


_PIP_UNAVAILABLE = _pip_unavailable()
pytestmark = pytest.mark.skipif(_PIP_UNAVAILABLE is not None,
                                reason=_PIP_UNAVAILABLE or "")
needs_library = pytest.mark.skipif(not os.path.isfile(LIBRARY),
                                   reason=f"{LIBRARY} is not built")


def _pip(*args, cwd):
    # --no-index: a local wheel/source with --no-deps needs no index, and this
    # makes sure a misconfigured pip.conf cannot send it to the network.
    result = subprocess.run(
        [sys.executable, "-m", "pip", *args, "--no-index", "--no-deps",
         "--disable-pip-version-check", "--no-input", "--quiet"],
        capture_output=True, text=True, cwd=cwd, timeout=120)
    assert result.returncode == 0, f"pip {' '.join(args)} failed:\n{result.stdout}{result.stderr}"


def _run_installed(code, pythonpath, cwd, env=None):
    """Runs ``code`` in a fresh interpreter that sees hla only at
    ``pythonpath`` (no repository path, no HLA_LIBRARY_DIR unless ``env``
    sets it); returns the JSON object it prints last."""
    full_env = {k: v for k, v in os.environ.items()
                if k not in ("PYTHONPATH", "HLA_LIBRARY_DIR", "PYTHONSTARTUP")}
    full_env.update(PYTHONPATH=pythonpath, PYTHONNOUSERSITE="1")
    full_env.update(env or {})
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                            text=True, env=full_env, cwd=cwd, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def _inside(path, directory):
    path, directory = os.path.realpath(path), os.path.realpath(directory)
    return os.path.commonpath([path, directory]) == directory


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """The wheel pip builds from (a copy of) ./python."""
    work = tmp_path_factory.mktemp("hla-packaging")
    source = work / "python"
    # tests/ is copied too: it must stay out of the wheel by pyproject.toml's
    # package list, not by being absent.
    shutil.copytree(SOURCE, source, ignore=shutil.ignore_patterns(
        "__pycache__", "*.pyc", "build", "dist", "*.egg-info", ".pytest_cache"))
    _pip("wheel", "--no-build-isolation", "-w", str(work / "wheels"), str(source), cwd=work)
    (path,) = glob.glob(str(work / "wheels" / "hla-*.whl"))
    return path


def test_wheel_holds_the_package_only(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
    # hla and its metadata only: no tests/, no second top-level package.
    tops = {n.split("/")[0] for n in names}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"hla"}, tops
    # Every file of the source package (subpackages and data files alike) is
    # installed: the package reads nothing from the repository at run time.
    package = os.path.join(SOURCE, "hla")
    wanted = set()
    for root, dirs, files in os.walk(package):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        wanted.update(os.path.relpath(os.path.join(root, f), SOURCE).replace(os.sep, "/")
                      for f in files if not f.endswith(".pyc"))
    assert wanted <= names, sorted(wanted - names)


@needs_library
def test_target_install_imports_and_compiles(wheel, tmp_path):
    target = tmp_path / "target"
    _pip("install", "--target", str(target), wheel, cwd=tmp_path)
    result = _run_installed("""
        import importlib.metadata, json
        import numpy as np
        import hla
        from hla import _library
        rng = np.random.default_rng(0)
        q, k, v = (rng.standard_normal((1, 8, 2, 4)).astype(np.float32) * s
                   for s in (0.5, 0.5, 1.0))
        o = hla.hla2(q, k, v)
        want = hla.reference.hla2(q, k, v)
        err = float(np.linalg.norm(o - want) / np.linalg.norm(want))
        print(json.dumps(dict(file=hla.__file__, version=hla.__version__,
                              dist_version=importlib.metadata.version("hla"),
                              library=_library.library_path(), loaded=_library.is_loaded(),
                              compiles=hla.stats()["compiles"], err=err)))
        """, str(target), cwd=str(tmp_path),
        env={"HLA_LIBRARY_DIR": BUILD_LIB, "HLA_CACHE_DIR": str(tmp_path / "cache")})
    assert _inside(result["file"], target), result["file"]
    # pyproject.toml's static version must follow hla.__version__.
    assert result["dist_version"] == result["version"]
    assert result["library"] == LIBRARY
    # A cold cache: the installed package really loaded the compiler.
    assert result["loaded"] and result["compiles"] == 1
    assert result["err"] <= 1e-5


_PRINT_LIBRARY = """
    import json
    import hla
    from hla import _library
    try:
        path, error = _library.library_path(), None
        version = _library.load().hlaCompilerVersion().decode()
    except _library.CompilerNotFoundError as e:
        path, error, version = None, str(e), None
    print(json.dumps(dict(file=hla.__file__, path=path, error=error, version=version)))
    """


def _site_packages_under(prefix):
    """The directory holding the hla that pip installed below ``prefix``
    (Debian's pip puts --prefix P installs into P/local/lib/...)."""
    (init,) = glob.glob(os.path.join(str(prefix), "**", "hla", "__init__.py"), recursive=True)
    return os.path.dirname(os.path.dirname(init))


@needs_library
@pytest.mark.parametrize("how", ["copy", "pip --prefix"])
def test_installed_prefix_finds_its_library(wheel, tmp_path, how):
    """The package under <prefix>/lib/pythonX.Y/site-packages and the library
    at <prefix>/lib, as `pip install --prefix P` and `cmake --install
    --prefix P` leave them: found with no HLA_LIBRARY_DIR."""
    prefix = tmp_path / "prefix"
    if how == "copy":
        site = prefix / "lib" / PYTHON_DIR / "site-packages"
        staging = tmp_path / "staging"
        _pip("install", "--target", str(staging), wheel, cwd=tmp_path)
        shutil.copytree(staging / "hla", site / "hla")
        site = str(site)
    else:
        _pip("install", "--prefix", str(prefix), wheel, cwd=tmp_path)
        site = _site_packages_under(prefix)
    os.makedirs(prefix / "lib", exist_ok=True)
    os.symlink(LIBRARY, prefix / "lib" / _library.LIBRARY_NAME)
    result = _run_installed(_PRINT_LIBRARY, site, cwd=str(tmp_path))
    assert _inside(result["file"], site), result["file"]
    assert result["error"] is None, result["error"]
    # The prefix's path as installed (not the symlink's target): that is the
    # library the user put there.
    assert result["path"] == str(prefix / "lib" / _library.LIBRARY_NAME)
    assert result["version"].startswith("hla ")


def test_installed_prefix_without_library_says_where_it_looked(wheel, tmp_path):
    site = tmp_path / "prefix" / "lib" / PYTHON_DIR / "site-packages"
    _pip("install", "--target", str(site), wheel, cwd=tmp_path)
    if ctypes.util.find_library("HLACAPI"):
        pytest.skip("a system-wide libHLACAPI.so would be found instead")
    result = _run_installed(_PRINT_LIBRARY, str(site), cwd=str(tmp_path))
    assert result["path"] is None, result
    expected = str(tmp_path / "prefix" / "lib" / _library.LIBRARY_NAME)
    assert f"{expected} (the install prefix of this package)" in result["error"]
    assert "the dynamic loader's search path" in result["error"]
    # An installed copy never looks for a repository build relative to itself.
    assert "repository's build" not in result["error"]


def test_layout_rules():
    """Which directories a package location leads to (no files needed)."""
    prefix_dirs = _library._prefix_library_dirs
    assert prefix_dirs("/opt/p/lib/python3.11/site-packages/hla") == ["/opt/p/lib"]
    assert prefix_dirs("/usr/lib/python3/dist-packages/hla") == ["/usr/lib"]
    assert prefix_dirs("/opt/p/lib64/python3.9/site-packages/hla") == ["/opt/p/lib64",
                                                                       "/opt/p/lib"]
    # Debian's pip: --prefix P -> P/local/lib/python3.X/dist-packages.
    assert prefix_dirs("/opt/p/local/lib/python3.11/dist-packages/hla") == [
        "/opt/p/local/lib", "/opt/p/lib"]
    assert prefix_dirs("/opt/p/local/lib/python3.11/site-packages/hla") == ["/opt/p/local/lib"]
    # --target directories and copies: no prefix to speak of.
    assert prefix_dirs("/tmp/target/hla") == []
    assert prefix_dirs("/opt/p/lib/python3.11/hla") == []
    assert prefix_dirs("/opt/p/share/python3.11/site-packages/hla") == []
    # This checkout is the repository; a look-alike without pyproject.toml,
    # e.g. a --target directory named python/, is not.
    assert _library._repository_build_dir(os.path.join(SOURCE, "hla")) == BUILD_LIB
    assert _library._REPO_BUILD_DIR == BUILD_LIB
    assert _library._repository_build_dir(os.path.join(REPO, "build", "python", "hla")) is None
