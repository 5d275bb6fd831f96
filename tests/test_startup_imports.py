"""`tpufleet --help` and `status` on a state without routing tables import only what they use: the routing, goodput
and import use cases, the tables' readers, the map, logging and sockets are imported by the commands that need
them, in the function that does (each process spent about 0.1 s of CPU importing them). In a process of their
own: the suite's other tests import everything."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# Imported by neither command: the modules they imported at start before
NEITHER = (
    "logging",
    "socket",
    "numpy",
    "yaml",
    "tpufleet.ops.routes",
    "tpufleet.routing",
    "tpufleet.goodput.events",
    "tpufleet.goodput.metrics",
)
# Nor by --help, which reads no state
NOT_BY_HELP = ("tpufleet.fleetstate", "tpufleet.ops.fleet", "tpufleet.ids", "fastjsonschema")
# Nor by `status` where no slice has tables to read
NOT_BY_STATUS = (
    "zipfile",
    "concurrent.futures",
    "tpufleet.fleetmap",
    "tpufleet.state.tablesindex",
    "tpufleet.collectives.tables",
)


def _imported(tmp_path, *argv: str) -> set[str]:
    """The modules of NEITHER, NOT_BY_HELP and NOT_BY_STATUS a fresh process imported running the command."""
    code = (
        "import json, sys\n"
        "from tpufleet.cli import main\n"
        "try:\n"
        f"    main({list(argv)!r})\n"
        "except SystemExit as exc:\n"
        "    assert exc.code in (0, None), exc.code\n"
        f"print(json.dumps([m for m in {[*NEITHER, *NOT_BY_HELP, *NOT_BY_STATUS]!r} if m in sys.modules]),"
        " file=sys.stderr)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    return set(json.loads(r.stderr.strip().splitlines()[-1]))


def test_help_imports_no_use_case(tmp_path):
    assert _imported(tmp_path, "--help") & {*NEITHER, *NOT_BY_HELP} == set()


@pytest.mark.parametrize("argv", [["status", "--help"], ["routes", "--help"], ["goodput-report", "-h"]])
def test_a_commands_help_imports_no_use_case_it_does_not_run(tmp_path, argv):
    """(The options before the command are read as for the command itself: the state's location, the config.)"""
    assert _imported(tmp_path, *argv) & set(NEITHER) == set()


def test_status_without_tables_imports_neither_the_routing_nor_the_tables_readers(tmp_path):
    state = str(tmp_path / "state")
    _imported(tmp_path, "--state", state, "init")
    imported = _imported(tmp_path, "--state", state, "status")
    assert imported & {*NEITHER, *NOT_BY_STATUS} == set()
    assert "tpufleet.fleetstate" in imported  # (the check sees what status does import)
