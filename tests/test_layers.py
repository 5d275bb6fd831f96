"""The layer checks `make lint` runs catch what they are for: a core module that imports the state layer (even
inside a function), a use case that imports the shell, and a core module that opens a file."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def _copy(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "tpufleet", tmp_path / "tpufleet", ignore=shutil.ignore_patterns("__pycache__", "data"))
    shutil.copy(ROOT / ".importlinter", tmp_path / ".importlinter")
    return tmp_path


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], cwd=root, env=env, capture_output=True, text=True, timeout=300
    )


def _check_io(root: Path) -> subprocess.CompletedProcess[str]:
    tool = ROOT / "tools" / "check_core_io.py"
    return subprocess.run([sys.executable, str(tool), str(root)], capture_output=True, text=True, timeout=300)


pytestmark = pytest.mark.skipif(
    not LINT_IMPORTS.exists(), reason="import-linter is a lint extra (make lint installs it)"
)


def test_the_tree_as_it_is_keeps_its_layers():
    assert _lint_imports(ROOT).returncode == 0
    assert _check_io(ROOT).returncode == 0


@pytest.mark.parametrize(
    "module, planted, culprit",
    [
        ("routing/planted.py", "def f():\n    from tpufleet.state import store\n", "tpufleet.routing.planted"),
        ("goodput/planted.py", "import tpufleet.ops.slices\n", "tpufleet.goodput.planted"),
        ("ops/planted.py", "from tpufleet.cli import render\n", "tpufleet.ops.planted"),
    ],
)
def test_a_planted_upward_import_breaks_the_contracts(tmp_path, module, planted, culprit):
    root = _copy(tmp_path)
    (root / "tpufleet" / module).write_text(planted)
    r = _lint_imports(root)
    assert r.returncode == 1
    assert culprit in r.stdout


def test_a_planted_file_read_in_the_core_is_caught(tmp_path):
    root = _copy(tmp_path)
    (root / "tpufleet" / "routing" / "planted.py").write_text(
        "from pathlib import Path\n\ndef f(p: Path) -> str:\n    return p.read_text()\n"
    )
    r = _check_io(root)
    assert r.returncode == 1
    assert "tpufleet/routing/planted.py: read_text()" in r.stderr


def test_a_planted_long_function_is_caught(tmp_path):
    root = _copy(tmp_path)
    body = "".join(f"    x{i} = {i}\n" for i in range(45))
    (root / "tpufleet" / "cli" / "planted.py").write_text(f"def planted() -> None:\n    '''Doc.'''\n{body}")
    tool = ROOT / "tools" / "check_function_lengths.py"
    r = subprocess.run([sys.executable, str(tool), str(root)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 1
    assert "tpufleet/cli/planted.py:planted: 45 lines, over the 40 allowed" in r.stderr
    assert subprocess.run([sys.executable, str(tool)], capture_output=True, timeout=300).returncode == 0


def test_the_module_length_tool_catches_a_long_module_and_a_listed_one_grown_or_shrunk(tmp_path):
    root = _copy(tmp_path)
    (root / "tpufleet" / "planted.py").write_text("".join(f"x{i} = {i}\n" for i in range(401)))
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        from check_module_lengths import KNOWN
    finally:
        sys.path.pop(0)
    listed, most = root / "tpufleet" / "state" / "store.py", KNOWN["tpufleet/state/store.py"][0]
    lines = listed.read_text().splitlines()
    listed.write_text("\n".join(lines + ["# grown"] * (most + 1 - len(lines))) + "\n")
    shrunk = root / "tpufleet" / "fleetstate.py"
    shrunk.write_text("\n".join(shrunk.read_text().splitlines()[:400]) + "\n")
    tool = ROOT / "tools" / "check_module_lengths.py"
    r = subprocess.run([sys.executable, str(tool), str(root)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 1
    assert "tpufleet/planted.py: 401 lines, over the 400 allowed" in r.stderr
    assert f"tpufleet/state/store.py: {most + 1} lines, over the 400 allowed (listed at {most})" in r.stderr
    assert "tpufleet/fleetstate.py: now within the limit: take it off KNOWN" in r.stderr
    assert subprocess.run([sys.executable, str(tool)], capture_output=True, timeout=300).returncode == 0


def test_the_core_contract_lists_every_core_module():
    """A new top-level module is core unless it is the shell, a use case or the state layer: import-linter must
    forbid it the upper layers too, so its contract lists exactly what `check_core_io` scans."""
    import configparser

    sys.path.insert(0, str(ROOT / "tools"))
    try:
        from check_core_io import core_names
    finally:
        sys.path.pop(0)
    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter")
    listed = config["importlinter:contract:core"]["source_modules"].split()
    assert sorted(listed) == [f"tpufleet.{name}" for name in core_names(ROOT / "tpufleet")]
