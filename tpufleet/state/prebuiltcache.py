"""The prebuilt kernels' cache (`tpufleet.goodput.prebuilt`): built once for their sources, the installs of Numba,
llvmlite and numpy, Python's version and the machine's architecture (`module_name`), in a process of its own
(`prebuiltbuild`, about 8 s), imported and installed, so a report of a large log never imports Numba.

Kept where Numba keeps its own cache of the same functions: ``$NUMBA_CACHE_DIR/tpufleet`` when set, else the
kernels' ``__pycache__``, else ``$XDG_CACHE_HOME/tpufleet`` (``~/.cache/tpufleet``). Two processes that want it at
once build it once (a lock beside it; the second waits, then imports the first's); a module is written whole, then
renamed into place. A build that fails (no C compiler or setuptools, say) leaves ``NAME.failed`` beside it, saying
why, and Numba's JIT is used as before, without trying again until the sources or installs change (remove the file
to try again). ``TPUFLEET_PREBUILT=0`` leaves Numba's JIT in use; with Numba's ``NUMBA_DISABLE_JIT`` nothing is
built, and the loop is not used (`linescan`).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.machinery
import importlib.util
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

from tpufleet.goodput import prebuilt

SWITCH = "TPUFLEET_PREBUILT"  # "0": Numba's JIT alone
PREFIX = "_tpufleet_kernels_"
BUILD_TIMEOUT_S = 900  # (about 8 s on a quiet 2-CPU machine)
_BUILDER = "tpufleet.state.prebuiltbuild"


@functools.cache
def install() -> bool:
    """Install the prebuilt kernels, building them first when not built (once); False where they cannot be (no
    Numba, TPUFLEET_PREBUILT=0 or NUMBA_DISABLE_JIT, no C compiler or writable cache, a build that failed before, a
    module that cannot be imported or lacks a function it should have): Numba's JIT is used then, as before
    (unless NUMBA_DISABLE_JIT)."""
    try:
        module = _loaded()
    except (OSError, ImportError):  # (a source or an install's files unreadable: its name cannot be told)
        return False
    if module is None:
        return False
    try:
        prebuilt.install(module)
    except AttributeError:  # (a module built from other sources under this name: never by the builder, which checks)
        return False
    return True


def _loaded() -> types.ModuleType | None:
    if os.environ.get(SWITCH, "1") == "0" or os.environ.get("NUMBA_DISABLE_JIT", "0") not in ("", "0"):
        return None
    if importlib.util.find_spec("numba") is None:
        return None
    name = module_name()
    directories = _directories()
    for directory in directories:
        found = _module_file(directory, name)
        if found is not None:
            _used(found)
            return _imported(name, found)
    for directory in directories:
        if _writable(directory):
            built = _built(directory, name)
            return None if built is None else _imported(name, built)
    return None


def module_name() -> str:
    """The module's name for these sources, these installs of Numba, llvmlite and numpy, Python and the machine:
    one built for others is never imported."""
    digest = hashlib.sha256()
    for module in (*(f"tpufleet.goodput.{s}" for s in prebuilt.SOURCES), prebuilt.__name__, _BUILDER):
        digest.update(Path(_origin(module)).read_bytes())
    for package in ("numba", "llvmlite", "numpy"):
        digest.update(_installed(package).encode())
    digest.update(f"{sys.version} {sys.implementation.cache_tag} {platform.machine()}".encode())
    return PREFIX + digest.hexdigest()[:20]


def _installed(package: str) -> str:
    """What tells one install of `package` from another: its metadata's directory names beside it (their version)
    and its ``__init__.py``'s path, size and time of change (importlib.metadata, 60 ms to import, would be most of
    what finding the module costs)."""
    origin = Path(_origin(package))
    stat = origin.stat()
    versions = sorted(p.name for p in origin.parent.parent.glob(f"{package}-*.dist-info"))
    return f"{versions} {origin} {stat.st_size} {stat.st_mtime_ns}"


def _origin(module: str) -> str:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise ImportError(module)
    return spec.origin


def _directories() -> list[Path]:
    numba_cache = os.environ.get("NUMBA_CACHE_DIR")
    if numba_cache:
        return [Path(numba_cache) / "tpufleet"]
    user = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tpufleet"
    return [Path(_origin("tpufleet.goodput.linekernel")).parent / "__pycache__", user]


def _module_file(directory: Path, name: str) -> Path | None:
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        if (directory / f"{name}{suffix}").is_file():
            return directory / f"{name}{suffix}"
    return None


def _writable(directory: Path) -> bool:
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(directory, os.W_OK | os.X_OK)


def _built(directory: Path, name: str) -> Path | None:
    """Build the module into `directory` under a lock (unless another process built it, or a build failed there
    before): its file, or None."""
    import filelock

    try:
        with filelock.FileLock(directory / f"{name}.lock", timeout=BUILD_TIMEOUT_S + 60):
            found = _module_file(directory, name)
            if found is not None or (directory / f"{name}.failed").exists():
                return found
            for scratch in directory.glob(f".{name}-*"):  # (a build whose process was killed: none runs now)
                shutil.rmtree(scratch, ignore_errors=True)
            return _build(directory, name)
    except (filelock.Timeout, OSError):
        return None


def _build(directory: Path, name: str) -> Path | None:
    """Run the builder into a fresh directory beside the cache and rename its module into place; on a failure
    (but a builder killed by a signal), write NAME.failed with the builder's last words."""
    scratch = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=directory)).resolve()
    try:
        failure = _run_builder(scratch, name)
        made = _module_file(scratch, name)
        if failure is None and made is not None:
            os.replace(made, directory / made.name)
            _drop_stale(directory, name)
            return directory / made.name
        if failure is not None and failure is not _INTERRUPTED:  # (a build killed may build next time)
            (directory / f"{name}.failed").write_text(failure)
        return None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


_INTERRUPTED = "the builder was killed by a signal\n"


def _run_builder(scratch: Path, name: str) -> str | None:
    """The builder run in its own process: None when it succeeded, else why not (its output's last lines). Run in
    `scratch` with this tpufleet first on its path (`-P`: not the working directory's, which may hold another
    tpufleet); it refuses to build when its sources' name is not `name`."""
    package_parent = str(Path(_origin("tpufleet")).parent.parent)
    path = os.pathsep.join(p for p in (package_parent, os.environ.get("PYTHONPATH", "")) if p)
    command = [sys.executable, "-P", "-m", _BUILDER, str(scratch), name]
    try:
        done = subprocess.run(
            command,
            cwd=scratch,
            env={**os.environ, "PYTHONPATH": path},
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{type(e).__name__}: {e}\n"
    if done.returncode == 0:
        return None
    if done.returncode < 0:
        return _INTERRUPTED
    return "".join((done.stdout + done.stderr).splitlines(keepends=True)[-20:]) or f"exit {done.returncode}\n"


STALE_S = 14 * 86400  # a module of other sources or installs not imported for this long goes at the next build


def _used(path: Path) -> None:
    """Mark the module as imported now (its time of change: `_drop_stale` removes the others not used for long)."""
    try:
        if time.time() - path.stat().st_mtime > STALE_S / 14:  # (once a day at most: no write on every report)
            os.utime(path)
    except OSError:
        pass


def _drop_stale(directory: Path, name: str) -> None:
    """Remove the modules built for other sources or versions not imported for STALE_S, and failures as old (a
    process still using one keeps its mapping; another install sharing the cache, a Python or tpufleet of its own,
    uses its module daily and keeps it; locks are left: another version's process may hold one)."""
    for stale in directory.glob(f"{PREFIX}*"):
        if stale.name.startswith(name) or stale.name.endswith(".lock") or not stale.is_file():
            continue
        try:
            if time.time() - stale.stat().st_mtime > STALE_S:
                stale.unlink(missing_ok=True)
        except OSError:
            pass


def _imported(name: str, path: Path) -> types.ModuleType | None:
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            return None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except (ImportError, OSError):
        return None
    return module
