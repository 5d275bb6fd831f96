"""The prebuilt kernels' cache (`tpufleet.goodput.prebuilt`): built once per version of their sources, Numba and
numpy (`module_name`), in a process of its own (`prebuiltbuild`, about 8 s), imported and installed, so a report of
a large log never imports Numba.

Kept where Numba keeps its own cache of the same functions: ``$NUMBA_CACHE_DIR/tpufleet`` when set, else the
kernels' ``__pycache__``, else ``$XDG_CACHE_HOME/tpufleet`` (``~/.cache/tpufleet``). Two processes that want it at
once build it once (a lock beside it; the second waits, then imports the first's); a module is written whole, then
renamed into place. A build that fails (no C compiler, say) leaves ``NAME.failed`` beside it, saying why, and
Numba's JIT is used as before, without trying again until the sources or versions change (remove the file to try
again). ``TPUFLEET_PREBUILT=0`` leaves the JIT alone; so does Numba's ``NUMBA_DISABLE_JIT``.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.machinery
import importlib.metadata
import importlib.util
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import types
from pathlib import Path

from tpufleet.goodput import prebuilt

SWITCH = "TPUFLEET_PREBUILT"  # "0": Numba's JIT alone
PREFIX = "_tpufleet_kernels_"
BUILD_TIMEOUT_S = 900  # (8 s on the project's 2-CPU machine, quiet)
_BUILDER = "tpufleet.state.prebuiltbuild"


@functools.cache
def install() -> bool:
    """Install the prebuilt kernels, building them first when not built (once); False where they cannot be (no
    Numba, its JIT switched off, no C compiler or writable cache): Numba's JIT is used then, as before."""
    module = _loaded()
    if module is not None:
        prebuilt.install(module)
    return module is not None


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
            return _imported(name, found)
    for directory in directories:
        if _writable(directory):
            built = _built(directory, name)
            return None if built is None else _imported(name, built)
    return None


def module_name() -> str:
    """The module's name for these sources, Numba, llvmlite, numpy, Python and machine: one built for others is
    never imported."""
    digest = hashlib.sha256()
    for module in (*(f"tpufleet.goodput.{s}" for s in prebuilt.SOURCES), prebuilt.__name__, _BUILDER):
        digest.update(Path(_origin(module)).read_bytes())
    for distribution in ("numba", "llvmlite", "numpy"):
        digest.update(importlib.metadata.version(distribution).encode())
    digest.update(f"{sys.version} {sys.implementation.cache_tag} {platform.machine()}".encode())
    return PREFIX + digest.hexdigest()[:20]


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
            return _build(directory, name)
    except (filelock.Timeout, OSError):
        return None


def _build(directory: Path, name: str) -> Path | None:
    """Run the builder into a fresh directory beside the cache and rename its module into place; on a failure,
    write NAME.failed with the builder's last words."""
    scratch = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=directory))
    try:
        failure = _run_builder(scratch, name)
        made = _module_file(scratch, name)
        if failure is None and made is not None:
            os.replace(made, directory / made.name)
            _drop_stale(directory, name)
            return directory / made.name
        (directory / f"{name}.failed").write_text(failure or "the builder wrote no module\n")
        return None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _run_builder(scratch: Path, name: str) -> str | None:
    """The builder run in its own process: None when it succeeded, else why not (its output's last lines)."""
    package_parent = str(Path(_origin("tpufleet")).parent.parent)
    path = os.pathsep.join(p for p in (package_parent, os.environ.get("PYTHONPATH", "")) if p)
    command = [sys.executable, "-m", _BUILDER, str(scratch), name]
    try:
        done = subprocess.run(
            command, env={**os.environ, "PYTHONPATH": path}, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{type(e).__name__}: {e}\n"
    if done.returncode == 0:
        return None
    return "".join((done.stdout + done.stderr).splitlines(keepends=True)[-20:]) or f"exit {done.returncode}\n"


def _drop_stale(directory: Path, name: str) -> None:
    """Remove the modules built for other sources or versions and their failures (a process still using one keeps
    its mapping; their locks are left: another version's process may hold one)."""
    for stale in directory.glob(f"{PREFIX}*"):
        if not stale.name.startswith(name) and not stale.name.endswith(".lock") and stale.is_file():
            stale.unlink(missing_ok=True)


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
