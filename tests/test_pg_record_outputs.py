"""`tools/record_outputs.py --state URL`: the runbook on a PostgreSQL database gives what it gives on a state
directory, command for command (output, errors, exit code), the journal's readers included. Against the real server
tests/pgserver.py starts; these tests skip, saying why, without one."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pgserver
import pytest

pg_server = pgserver.pg_server  # the fixtures: a server for the session, a new database per test
pg_url = pgserver.pg_url

TOOL = Path(__file__).resolve().parents[1] / "tools" / "record_outputs.py"
READERS = (["history"], ["diff", "3"], ["show", "journal"], ["show", "journal", "--tail", "2"], ["report"])


@pytest.fixture(scope="module")
def tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("record_outputs", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("record_outputs", module)
    spec.loader.exec_module(module)
    return module


def _normalized(tool: ModuleType, row: dict[str, object], url: str | None, tmp: Path) -> dict[str, object]:
    out = {}
    for key, value in row.items():
        if isinstance(value, str):
            value = tool.as_directory(value, url, tmp / "state") if url else value
            value = tool.normalized(value, tmp)
        out[key] = value
    return out


def _readers(tool: ModuleType, place: str | None, tmp: Path) -> list[dict[str, object]]:
    """The journal's readers after the runbook's first commands, on a directory (`place` None) or a database."""
    state = tmp / "state"
    for args in tool.runbook(state, tmp)[:13]:
        assert tool.call(place or state, args)["exit"] == 0, args
    return [_normalized(tool, tool.call(place or state, list(args)), place, tmp) for args in READERS]


@pytest.mark.slow
def test_the_runbook_gives_the_same_outputs_on_a_database_as_on_a_directory(tool, pg_url):
    upto = 22  # fleet, slices, a job, wiring, routes, collectives, faults, a policy, an import
    on_directory, on_database = tool.record(upto=upto), tool.record(pg_url, upto=upto)
    assert len(on_database) == upto and all(row["exit"] == 0 for row in on_database)
    for directory_row, database_row in zip(on_directory, on_database, strict=True):
        assert database_row == directory_row, database_row["args"]
    routes = next(row for row in on_database if row["args"] == ["routes", "mid"])
    assert '"tables": "TMP/state/routes/mid.npz"' in str(routes["out"])  # the database's place, as a directory's


def test_the_journal_reads_the_same_on_a_database_as_on_a_directory(tool, pg_url, tmp_path):
    (tmp_path / "d").mkdir(), (tmp_path / "p").mkdir()
    on_directory, on_database = _readers(tool, None, tmp_path / "d"), _readers(tool, pg_url, tmp_path / "p")
    assert [row["exit"] for row in on_database] == [0] * len(READERS)
    assert on_database == on_directory
