"""A state directory written by tpufleet 0.2 is read and written by this version as it stands (no migration step).

The fixture `tests/fixtures/state-0.2/` was made by tpufleet 0.2 (commit 56184d7, `e4a0dd8~1`, the last commit
before the 0.3.0 section of the changelog) with these commands, in this order (its journal records them):

    init --cubes-per-pod 8
    allocate small --shape 4x4x4 --cubes c00
    allocate sub --shape 2x2x2                      (a sub-cube slice: machines 0 and 4 of c01)
    allocate tw --shape 4x4x8 --twisted
    allocate job --shape 4x4x4 --slices 2           (a multislice job)
    plan-xconnect small --apply
    plan-xconnect job --out PLAN; apply-xconnect PLAN
    routes small
    policy small --min-throughput 0.5
    inject-fault link:c00/y/3/out; clear-fault link:c00/y/3/out
    inject-fault host:c03/2
    inject-fault cube:c07 --planned --reason maint
    release tw; release job
    allocate ev --shape 4x4x4 --cubes c04; plan-xconnect ev --apply
    inject-fault host:c04/1                         (ev evicted, its move to c02 reserved)
    inject-fault ocs:pod0/x/5                       (small degraded, its tables stale)
    routes small                                    (tables around the OCS fault, stored: fresh at serial 20)

Each run as `PYTHONPATH=<a worktree of that commit> python -m tpufleet --state B ...`. Kept:
state.json, journal.jsonl (20 lines) and routes/small.npz (0.2's `cache/` is left out: it is a cache).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import Cli

FIXTURE = Path(__file__).parent / "fixtures" / "state-0.2"
SERIAL = 20  # the fixture's serial, as 0.2 left it


@pytest.fixture
def old(tmp_path, capsys):
    state = tmp_path / "state"
    shutil.copytree(FIXTURE, state)
    return Cli(capsys, state)


def _serial(cli: Cli) -> int:
    r = cli("status", "-o", "json")
    assert r.code == 0, r.err
    return int(r.json["serial"])


def _check_tables_used(cli: Cli) -> None:
    """0.2's stored tables for `small` are fresh and are the ones `collective` models on."""
    status = cli("status", "-o", "json")
    assert status.code == 0, status.err
    small = {s["name"]: s for s in status.json["slices"]}["small"]
    assert small["routes"] == "fresh"
    assert small["state"] == "degraded"
    assert status.json["stale_routes"] == [] and status.json["missing_routes"] == []
    r = cli("collective", "small", "--op", "all-reduce", "--bytes", "1GiB", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["tables"]["source"] == "stored"
    assert r.json["tables"]["stale"] is False
    assert r.json["tables"]["degraded"] is True
    assert r.json["slowdown"] > 1


READS = [
    ["status"],
    ["show", "inventory"],
    ["show", "health"],
    ["show", "slices"],
    ["show", "jobs"],
    ["show", "ocs"],
    ["show", "journal", "--tail", "5"],
    ["show", "map"],
    ["explain", "small"],
    ["explain", "sub"],
    ["explain", "ev"],
    ["explain", "ocs:pod0/x/5"],
    ["explain", "host:c03/2"],
    ["history"],
    ["history", "--slice", "small"],
    ["diff", "1"],
    ["diff", "2", "9"],
    ["report", "-o", "json"],
    ["faults", "--all"],
    ["metrics"],
    ["capacity"],
    ["plan-spares"],
    ["suspects"],
    ["export", "node-labels"],
    ["export", "slices"],
]


def test_reads_of_a_0_2_state_succeed_and_change_nothing(old):
    before = {p.relative_to(FIXTURE): p.read_bytes() for p in FIXTURE.rglob("*") if p.is_file()}
    for argv in READS:
        r = old(*argv)
        assert r.code == 0, (argv, r.err)
        assert "Traceback" not in r.err, argv
    after = {p.relative_to(old.state): p.read_bytes() for p in old.state.rglob("*") if p.is_file()}
    assert {k: after.get(k) for k in before} == before
    _check_tables_used(old)


def test_figures_of_a_0_2_state(old):
    status = old("status", "-o", "json").json
    assert status["serial"] == SERIAL
    assert status["cubes"] == {"free": 2, "allocated": 3, "out": 3}
    assert status["open_faults"] == 4
    slices = {s["name"]: s for s in status["slices"]}
    assert set(slices) == {"small", "sub", "ev"}
    assert slices["ev"]["state"] == "evicted" and slices["ev"]["proposal"]["cubes"] == ["c02"]
    assert slices["sub"]["machines"] == [0, 4] and slices["sub"]["state"] == "allocated"
    faults = old("faults", "--all", "-o", "json").json
    assert [(f["id"], f["cleared"] is None) for f in faults] == [
        ("f1", False),
        ("f2", True),
        ("f3", True),
        ("f4", True),
        ("f5", True),
    ]
    history = old("history", "-o", "json").json
    assert [h["serial"] for h in history] == list(range(1, SERIAL + 1))
    diff = old("diff", "1", "-o", "json").json
    assert diff["slices"]["added"] == ["ev", "small", "sub"]


def test_a_write_on_a_0_2_state_advances_the_serial_by_one_and_keeps_its_journal(old):
    r = old("inject-fault", "host:c05/1")
    assert r.code == 0, r.err
    assert _serial(old) == SERIAL + 1
    history = old("history", "-o", "json").json
    assert [h["serial"] for h in history] == list(range(1, SERIAL + 2))
    assert history[12]["summary"] == "inject-fault f3 cube:c07"  # a 0.2 line, read back
    assert history[-1]["summary"].startswith("inject-fault f6 host:c05/1")
    _check_tables_used(old)  # a fault on another cube leaves small's 0.2 tables in use
    steps = [
        ["clear-fault", "f2"],
        ["allocate", "new", "--shape", "4x4x4"],
        ["plan-xconnect", "new", "--apply"],
        ["routes", "new"],
        ["release", "sub"],
        ["routes", "small"],
    ]
    for n, argv in enumerate(steps, start=2):
        r = old(*argv)
        assert r.code == 0, (argv, r.err)
        assert _serial(old) == SERIAL + n, argv
    slices = {s["name"]: s for s in old("show", "slices", "-o", "json").json}
    assert set(slices) == {"small", "new", "ev"}
    assert slices["new"]["routes"] == "fresh" and slices["small"]["routes"] == "fresh"
    for argv in (a for a in READS if a != ["explain", "sub"]):  # released above
        r = old(*argv)
        assert r.code == 0, (argv, r.err)


def test_diff_across_the_upgrade_gives_no_proposal_a_0_2_line_did_not_record(old):
    """0.2 evicted `ev` at serial 18 without recording its proposal; this version's reschedule records it going.
    From serial 17 (ev connected, no proposal) to now (moved, no proposal) its proposal did not change."""
    r = old("reschedule", "ev")
    assert r.code == 0, r.err
    assert _serial(old) == SERIAL + 1
    ev = old("diff", "17", "-o", "json").json["slices"]["changed"]["ev"]
    assert ev["cubes"] == [["c04"], ["c02"]]
    assert "proposal" not in ev
    assert old("diff", "18", "-o", "json").json["slices"]["changed"]["ev"]["proposal"] == [["c02"], None]
    assert "proposal" not in old("diff", "17").out
