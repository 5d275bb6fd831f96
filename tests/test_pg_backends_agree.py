"""The two backends side by side: `tools/record_outputs.py --state URL` runs the runbook on a PostgreSQL database and
it gives what it gives on a state directory, command for command (output, errors, exit code), the journal's readers
included; bad input (exit 2) and refused commands (exit 1) agree too, and leave the database's serial, journal and
tables as they were. Against the real server tests/pgserver.py starts; these tests skip, saying why, without one."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pgserver
import pytest
from pgserver import PgServer, db_name

pg_server = pgserver.pg_server  # the fixtures: a server for the session, a new database per test
pg_url = pgserver.pg_url

TOOL = Path(__file__).resolve().parents[1] / "tools" / "record_outputs.py"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
NOT_DONE = (  # (exit code, command): bad input, then refusals
    (2, ["allocate", "x", "--shape", "3x3x3"]),
    (2, ["allocate", "../x", "--shape", "4x4x4"]),
    (2, ["inject-fault", "host:c200/1"]),
    (2, ["inject-fault", "host:c00/1", "--reason", "--dry-run"]),
    (2, ["policy", "mid", "--min-throughput", "2"]),
    (2, ["import", "slices", str(FIXTURES / "gke" / "tpu7x-slices.json"), "--apply"]),
    (2, ["diff", "99"]),
    (1, ["allocate", "x", "--shape", "16x16x16", "--pod", "pod0"]),
    (1, ["allocate", "mid", "--shape", "4x4x4"]),
    (1, ["release", "nosuch"]),
    (1, ["clear-fault", "f99"]),
    (1, ["reschedule", "mid"]),
    (1, ["routes", "llm"]),
    (1, ["init"]),
)
READERS = (["history"], ["diff", "3"], ["show", "journal"], ["show", "journal", "--tail", "2"], ["report"])


@pytest.fixture(scope="module")
def tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("record_outputs", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
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


def _database(server: PgServer, url: str) -> list[tuple[object, ...]]:
    db = db_name(url)
    rows = server.sql("SELECT serial, md5(doc) FROM tpufleet_state", db)
    rows += server.sql("SELECT count(*), max(seq) FROM tpufleet_journal", db)
    return rows + server.sql("SELECT name, md5(data) FROM tpufleet_tables ORDER BY name", db)


def _directory(state: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(state)): p.read_bytes() for p in state.rglob("*") if p.is_file() and ".lock" not in p.name
    }


def test_bad_input_and_refusals_agree_and_change_nothing_on_either(tool, pg_server, pg_url, tmp_path):
    state = tmp_path / "state"
    for args in tool.runbook(state, tmp_path)[:20]:  # through the faults: llm evicted, mid rerouted
        for place in (state, pg_url):
            assert tool.call(place, args)["exit"] == 0, args
    files, rows = _directory(state), _database(pg_server, pg_url)
    for code, args in NOT_DONE:
        on_directory = _normalized(tool, tool.call(state, args), None, tmp_path)
        on_database = _normalized(tool, tool.call(pg_url, args), pg_url, tmp_path)
        assert on_directory["exit"] == code, (args, on_directory["err"])
        assert on_database == on_directory, args
        assert _database(pg_server, pg_url) == rows and _directory(state) == files, args


@pytest.mark.parametrize("args", [["status"], ["show", "journal"], ["allocate", "a", "--shape", "4x4x4"]])
def test_no_fleet_state_is_said_the_same_on_a_directory_and_a_database(tool, pg_url, tmp_path, args):
    state = tmp_path / "state"
    on_directory = _normalized(tool, tool.call(state, args), None, tmp_path)
    on_database = _normalized(tool, tool.call(pg_url, args), pg_url, tmp_path)
    assert on_directory["exit"] == 1 and on_database == on_directory
