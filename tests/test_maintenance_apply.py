"""`tpufleet apply-maintenance PLAN --wave N` on the TPU7x fixture reservation (144 sub-blocks, 2 imported
maintenance drains) with a running 12x12x24 and 16x16x16: every wave applied in order through the CLI leaves no
slice evicted and ends where replaying the plan's printed commands ends; a slice allocated or released on other
cubes leaves the plan valid; a fault anywhere in the pod since the plan, a slice on a cube the wave touches, waves
out of order or twice, and a plan newer than the state are refused (exit 1, one line, the state byte-identical); malformed plan files and waves out of range exit 2."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import Cli

from helpers import one_line, snapshot
from tpufleet.errors import BadStateFile

FIXTURE = Path(__file__).parent.parent / "fixtures" / "gke" / "tpu7x-reservation-subblocks.json"


def _start(cli: Any) -> Any:
    assert cli("init", "--generation", "tpu7x").code == 0
    assert cli("import", "reservation", FIXTURE, "--apply").code == 0
    assert cli("allocate", "a", "--shape", "12x12x24").code == 0  # c00-c54 without c40
    assert cli("allocate", "b", "--shape", "16x16x16").code == 0  # c55-c118 without c99
    return cli


@pytest.fixture
def running(cli):
    return _start(cli)


def _notice(cube: str, start: str, end: str) -> dict[str, str]:
    return {"target": f"cube:{cube}", "window_start": f"2026-07-{start}:00Z", "window_end": f"2026-07-{end}:00Z"}


# c00 and c01 (slice a) one morning; c55 (b) from noon that day, so the first wave's cubes stay out through the
# second; c02 (a) on the 3rd; c56 and c57 (b) together on the 4th. --max-parallel 2: three waves.
NOTICES = [
    _notice("c00", "01T09:00", "01T13:00"),
    _notice("c01", "01T10:00", "01T14:00"),
    _notice("c55", "01T12:00", "02T13:00"),
    _notice("c02", "03T09:00", "03T13:00"),
    _notice("c56", "04T09:00", "04T13:00"),
    _notice("c57", "04T09:00", "04T13:00"),
]


def _plan(cli: Any, tmp_path: Path, notices: list[dict[str, str]] = NOTICES, parallel: int = 2) -> dict:
    path = tmp_path / "notices.yaml"
    path.write_text(yaml.safe_dump(notices))
    out = tmp_path / "plan.json"
    r = cli("plan-maintenance", "--notices", path, "--max-parallel", parallel, "--out", out, "-o", "json")
    assert r.code == 0, r.err
    return r.json


def _placed(cli: Any) -> dict[str, tuple[str, frozenset[str]]]:
    return {s["name"]: (s["state"], frozenset(s["cubes"])) for s in cli("show", "slices", "-o", "json").json}


def _open_faults(cli: Any) -> set[str]:
    return {f["target"] for f in cli("status", "-o", "json").json["faults"]}


def _serial(cli: Any) -> int:
    return cli("status", "-o", "json").json["serial"]


@pytest.mark.slow
def test_every_wave_in_order_evicts_nothing_and_ends_where_the_commands_end(running, tmp_path, capsys):
    plan = _plan(running, tmp_path)
    waves = plan["waves"]
    assert [w["cubes"] for w in waves] == [["c00", "c01"], ["c55", "c02"], ["c56", "c57"]]
    assert waves[0]["cleared_after"] == [] and len(waves[1]["cleared_after"]) == 4  # the windows overlap
    assert [[m["slice"] for m in w["moves"]] for w in waves] == [["a"], ["a", "b"], ["b"]]
    assert waves[0]["holders_before"]["c00"] == ["a"]
    serial = _serial(running)
    for w in waves:
        r = running("apply-maintenance", tmp_path / "plan.json", "--wave", w["wave"], "-o", "json")
        assert r.code == 0, r.err
        d = r.json
        serial += 1
        assert (d["wave"], d["waves"], d["dry_run"], d["serial"], d["plan_serial"]) == (w["wave"], 3, False, serial, 4)
        assert d["cubes"] == w["cubes"] and d["commands"] == w["commands"]
        assert [(m["slice"], m["cubes_out"], m["cubes_in"]) for m in d["moved"]] == [
            (m["slice"], m["cubes_out"], m["cubes_in"]) for m in w["moves"]
        ]
        named = {"inject-fault": "drain", "clear-fault": "clear"}
        assert [s["step"] for s in d["steps"]] == [named.get(c.split()[1], c.split()[1]) for c in d["commands"]]
        assert len(d["faults_opened"]) == len(w["cubes"]) and len(d["faults_cleared"]) == len(w["cleared_after"])
        assert _serial(running) == serial  # one transaction a wave
        placed = _placed(running)
        assert sorted(placed) == ["a", "b"] and all(state != "evicted" for state, _ in placed.values())
    applied = _placed(running)
    assert all(state == "connected" for state, _ in applied.values())
    assert _open_faults(running) == {"cube:c40", "cube:c99"}
    assert {s["name"]: s["routes"] for s in running("show", "slices", "-o", "json").json} == {
        "a": "fresh",
        "b": "fresh",
    }

    replay = _start(Cli(capsys, tmp_path / "replay"))
    for command in plan["commands"]:
        done = replay(*shlex.split(command)[1:])
        assert done.code == 0, (command, done.err)
    assert _placed(replay) == applied
    assert _open_faults(replay) == _open_faults(running)


def test_dry_run_changes_nothing_and_says_what_the_wave_does(running, tmp_path):
    plan = _plan(running, tmp_path)
    before = snapshot(running.state)
    r = running("apply-maintenance", tmp_path / "plan.json", "--wave", "1", "--dry-run", "-o", "json")
    assert r.code == 0, r.err
    assert snapshot(running.state) == before
    assert r.json["dry_run"] and r.json["serial"] == 4 and r.json["commands"] == plan["waves"][0]["commands"]
    assert [m["cubes_in"] for m in r.json["moved"]] == [plan["waves"][0]["moves"][0]["cubes_in"]]
    table = running("apply-maintenance", tmp_path / "plan.json", "--wave", "1", "--dry-run")
    assert table.code == 0 and "nothing was changed (dry run)" in table.out


def test_out_of_order_refused_and_twice_nothing_to_do_with_nothing_changed(running, tmp_path):
    _plan(running, tmp_path)
    plan = tmp_path / "plan.json"
    before = snapshot(running.state)
    assert "wave 1 of plan" in one_line(running("apply-maintenance", plan, "--wave", "2"), 1)
    assert snapshot(running.state) == before
    assert running("apply-maintenance", plan, "--wave", "1").code == 0
    after_one = snapshot(running.state)
    again = running("apply-maintenance", plan, "--wave", "1")  # a runbook run twice: nothing to do, as apply-xconnect
    assert again.code == 0 and again.out.strip().endswith("applied at serial 5 already; nothing to do"), again.err
    as_json = running("apply-maintenance", plan, "--wave", "1", "-o", "json")
    assert as_json.code == 0 and as_json.json["already_applied"] and as_json.json["applied_serial"] == 5
    assert (as_json.json["serial"], as_json.json["steps"], as_json.json["moved"]) == (5, [], [])
    assert "wave 2 of plan" in one_line(running("apply-maintenance", plan, "--wave", "3"), 1)
    assert snapshot(running.state) == after_one
    assert running("apply-maintenance", plan, "--wave", "2").code == 0


def _untouched_free(running: Any, plan: dict) -> list[str]:
    touched = {c for w in plan["waves"] for c in w["holders_before"]}
    used = {c for _, cubes in _placed(running).values() for c in cubes}
    return [f"c{i}" for i in range(100, 144) if f"c{i}" not in touched | used]


def test_unrelated_changes_leave_the_plan_valid(running, tmp_path):
    plan = _plan(running, tmp_path)
    spare, other = _untouched_free(running, plan)[:2]
    assert running("allocate", "eval", "--shape", "4x4x4", "--cubes", spare).code == 0
    assert running("allocate", "probe", "--shape", "4x4x4", "--cubes", other).code == 0
    assert running("release", "probe").code == 0
    assert _serial(running) == 7
    for wave in (1, 2, 3):
        r = running("apply-maintenance", tmp_path / "plan.json", "--wave", wave, "-o", "json")
        assert r.code == 0, r.err
        assert [m["cubes_in"] for m in r.json["moved"]] == [m["cubes_in"] for m in plan["waves"][wave - 1]["moves"]]
    assert all(state != "evicted" for state, _ in _placed(running).values())


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (("inject-fault", "host:c01/5"), "fault f3 on host:c01/5 opened at serial 5"),  # a cube wave 1 drains
        (("inject-fault", "link:c30/x/5/out"), "fault f3 on link:c30/x/5/out"),  # a cube of the slice it moves
        (("inject-fault", "cube:{into}", "--planned"), "fault f3 on cube:{into}"),  # where the slice goes
        (("allocate", "x", "--shape", "4x4x4", "--cubes", "{into}"), "cube {into} is held by x (the plan: free)"),
        (("release", "a"), "cube c00 is held by no slice (the plan: a); cube c01 is held by no slice (the plan: a); "),
        (("inject-fault", "ocs:pod0/x/5"), "fault f3 on ocs:pod0/x/5"),  # an OCS of the pod
        # a failure elsewhere in the pod: it takes a spare the plan counted on
        (("inject-fault", "host:{untouched}/3"), "fault f3 on host:{untouched}/3 opened at serial 5 in pod0"),
    ],
)
def test_a_change_under_the_wave_is_refused_as_stale(running, tmp_path, change, said):
    plan = _plan(running, tmp_path)
    into, untouched = plan["waves"][0]["moves"][0]["cubes_in"][0], _untouched_free(running, plan)[0]
    change = tuple(a.format(into=into, untouched=untouched) for a in change)
    said = said.format(into=into, untouched=untouched)
    assert running(*change).code == 0
    before, serial = snapshot(running.state), _serial(running)
    line = one_line(running("apply-maintenance", tmp_path / "plan.json", "--wave", "1"), 1)
    assert line.startswith(f"tpufleet: error: stale plan {tmp_path / 'plan.json'}: made at serial 4, and since then")
    assert said in line
    assert snapshot(running.state) == before and _serial(running) == serial
    assert (running.state / "state.json").read_bytes() == before["state.json"]


def test_a_plan_newer_than_the_state_is_refused(running, tmp_path, capsys):
    _plan(running, tmp_path)
    other = Cli(capsys, tmp_path / "other")
    assert other("init", "--generation", "tpu7x").code == 0
    before = snapshot(other.state)
    line = one_line(other("apply-maintenance", tmp_path / "plan.json", "--wave", "1"), 1)
    assert "was made at serial 4, after this state (1)" in line
    assert snapshot(other.state) == before


def _edit(doc: dict, path: str, value: object) -> dict:
    doc = json.loads(json.dumps(doc))
    *parents, last = path.split(".")
    node = doc
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if value is KeyError:
        del node[last]
    elif isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return doc


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        ("kind", "tpufleet-xconnect-plan", "field kind"),
        ("serial", -1, "field serial"),
        ("serial", "4", "field serial"),
        ("waves.0.wave", 2, "field waves.0.wave"),
        ("waves.0.cubes.0", "c 00", "field waves.0.cubes.0"),
        ("waves.0.cubes.0", "c140", "field waves.0.cubes.0"),  # not one of the plan's notices
        ("waves.1.cleared_after.0", "cube:c99", "field waves.1.cleared_after.0"),
        ("waves.0.holders_before", KeyError, "field waves.0"),
        ("waves.0.moves.0.status", "maybe", "field waves.0.moves.0.status"),
        ("notices.0.window_start", "tomorrow", "field notices.0.window_start"),
        ("notices.0.window_start", "2026-13-45T99:99:99Z", "field notices.0.window_start"),
        ("notices.0.window_end", "2026-07-01T08:00:00Z", "field notices.0.window_end"),
        ("waves", [], "field waves"),
        ("waves.0.cubes", ["c00", "c00"], "field waves.0.cubes"),
        ("waves.1.cubes.1", "c00", "field waves.1.cubes.1"),  # c00 is wave 1's
        ("waves.0.cleared_after", ["cube:c02"], "field waves.0.cleared_after.0"),  # c02 is drained in wave 2
        ("notices.0.open_drain", "f99", "field notices.0.open_drain: no such fault in the state"),
        ("notices.0.open_drain", "f1", "field notices.0.open_drain: a fault of cube:c40, not of cube:c00"),
        ("notices.0.open_drain", "x", "field notices.0.open_drain"),
        ("max_parallel", 0, "field max_parallel"),
        ("spares", -1, "field spares"),
        ("waves.0.free_healthy_cubes", -5, "field waves.0.free_healthy_cubes"),
        ("waves.0.moves.0.pod", "pod 9", "field waves.0.moves.0.pod"),
        ("waves.0.moves.0.cubes_in", ["c120", "c120"], "field waves.0.moves.0.cubes_in"),
        ("waves.0.kept_down", ["cube:c77"], "field waves.0.kept_down.0: not one of the wave's cleared_after"),
        ("waves.0.commands", ["tpufleet reschedule a --avoid c55,c55"], "field waves.0.commands.0"),
    ],
)
def test_bad_plan_files_exit_2_naming_the_field(running, tmp_path, path, value, field):
    plan = _plan(running, tmp_path)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_edit(plan, path, value)))
    before = snapshot(running.state)
    line = one_line(running("apply-maintenance", bad, "--wave", "1"))
    assert str(bad) in line and field in line
    assert snapshot(running.state) == before


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("waves.0.window_start", "2026-13-01T00:00:00Z"),  # no 13th month
        ("waves.0.window_end", "not a time"),
        ("waves.0.window_end", 5),
        ("waves.0.window_end", None),  # its notices' ends are known
        ("waves.0.window_end", "2026-07-01T08:00:00Z"),  # before its start
        ("waves.0.window_start", "2026-07-01T10:00:00Z"),  # a time, not its notices' earliest start (09:00)
        ("waves.0.window_start", None),
    ],
)
def test_a_waves_window_unlike_its_notices_is_bad_input(running, tmp_path, path, value):
    plan = _plan(running, tmp_path)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_edit(plan, path, value)))
    before = snapshot(running.state)
    line = one_line(running("apply-maintenance", bad, "--wave", "1"))
    assert f"{bad}: field {path}:" in line and f"(value {value!r})" in line
    assert snapshot(running.state) == before


@pytest.mark.parametrize("target", ["cube:c999", "cube:c00", "cube:c02"])  # no cube, no drain open, another wave's
def test_already_drained_names_a_notice_of_the_wave_with_an_open_drain(running, tmp_path, target):
    plan = _plan(running, tmp_path)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_edit(plan, "waves.0.already_drained", [target])))
    before = snapshot(running.state)
    line = one_line(running("apply-maintenance", bad, "--wave", "1"))
    said = f"field waves.0.already_drained.0: not a notice of the wave with an open_drain (value {target!r})"
    assert line == f"tpufleet: error: {bad}: {said}"
    assert snapshot(running.state) == before


def _twice(doc: dict, key: str) -> None:
    doc[key].append(doc[key][0])


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda d: _twice(d, "notices"), "field notices.6.target: a second notice for the cube (the first: notices.0)"),
        (
            lambda d: d["notices"].append({**d["notices"][0], "target": "cube:c60"}),
            "field notices.6.target: in no wave's cubes: a notice the plan never drains (value 'cube:c60')",
        ),
        (
            lambda d: _twice(d["waves"][0], "moves"),
            "field waves.0.moves.1.slice: the slice moves twice in the wave (the first: waves.0.moves.0) (value 'a')",
        ),
        (
            lambda d: d["waves"][0].update(holders_before={}),
            "field waves.0.holders_before: no entry for cube c00, which the wave touches (value {})",
        ),
        (
            lambda d: d["waves"][0]["holders_before"].pop(d["waves"][0]["moves"][0]["cubes_in"][0]),
            "field waves.0.holders_before: no entry for cube c1",  # where the slice goes
        ),
        (
            lambda d: d["waves"][0]["moves"].__setitem__(0, {"slice": "a", "status": "unserved", "reason": " "}),
            "field waves.0.moves.0.reason: an unserved move must say why (value ' ')",
        ),
        (
            lambda d: d["waves"][0]["moves"].__setitem__(0, {"slice": "a", "status": "unserved"}),
            "field waves.0.moves.0.reason: an unserved move must say why",  # absent: no value to show
        ),
    ],
)
def test_a_hand_edited_plan_is_checked_as_strictly_as_a_written_one(running, tmp_path, edit, said):
    plan = _plan(running, tmp_path)
    assert running("inject-fault", f"host:{_untouched_free(running, plan)[0]}/3").code == 0  # the plan is stale
    doc = json.loads(json.dumps(plan))
    edit(doc)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    before = snapshot(running.state)
    line = one_line(running("apply-maintenance", bad, "--wave", "1"))
    assert line.startswith(f"tpufleet: error: {bad}: {said}")
    assert snapshot(running.state) == before


def test_the_stale_fault_check_covers_the_waves_own_cubes_whatever_its_holders(running, tmp_path):
    from dataclasses import replace

    from tpufleet.ops.maintenance import changed_since
    from tpufleet.state import maintenanceplan
    from tpufleet.state.store import Store

    plan = _plan(running, tmp_path)
    assert running("inject-fault", f"host:{_untouched_free(running, plan)[0]}/3").code == 0
    saved = maintenanceplan.read(tmp_path / "plan.json")
    bare = replace(saved.waves[0], holders_before={})
    assert [w for w in changed_since(Store(running.state).load(), saved, bare, set()) if "opened at serial 5" in w]


def test_a_move_to_a_pod_the_fleet_lacks_is_bad_input(running, tmp_path):
    plan = _plan(running, tmp_path)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_edit(plan, "waves.0.moves.0.to_pod", "pod9")))
    before = snapshot(running.state)
    line = one_line(running("apply-maintenance", bad, "--wave", "1"))
    assert f"{bad}: field waves.0.moves.0.to_pod:" in line and "(value 'pod9')" in line
    assert snapshot(running.state) == before


@pytest.mark.parametrize(("to_pod", "problem"), [("pod9", "no such pod"), ("pod1", "no such pod"), ("pod0", None)])
def test_check_fleet_names_a_moves_pod_the_fleet_lacks(running, tmp_path, to_pod, problem):
    from tpufleet.state import maintenanceplan
    from tpufleet.state.store import Store

    plan = _plan(running, tmp_path)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(_edit(plan, "waves.0.moves.0.to_pod", to_pod)))
    saved, fleet = maintenanceplan.read(path), Store(running.state).load().fleet
    if problem is None:
        maintenanceplan.check_fleet(saved, fleet)
        return
    with pytest.raises(BadStateFile) as caught:
        maintenanceplan.check_fleet(saved, fleet)
    assert (caught.value.field, caught.value.value) == ("waves.0.moves.0.to_pod", to_pod)
    assert problem in caught.value.problem


def test_check_fleet_names_a_move_to_another_pod_than_its_cubes():
    from tpufleet.model import default_fleet
    from tpufleet.state.maintenanceplan import SavedMaintenancePlan, SavedMove, SavedWave, check_fleet

    move = SavedMove("s", "moved", ("c00",), ("c05",), "pod0")  # c05 is pod1's
    saved = SavedMaintenancePlan("p.json", "0" * 16, 1, (SavedWave(1, (), (), (move,), (), {}, ()),))
    with pytest.raises(BadStateFile) as caught:
        check_fleet(saved, default_fleet(2, 4))
    assert (caught.value.field, caught.value.value) == ("waves.0.moves.0.cubes_in.0", "c05")
    assert "a cube of pod1, not of to_pod pod0" in caught.value.problem


def test_bad_files_and_waves_exit_2(running, tmp_path):
    _plan(running, tmp_path)
    plan = tmp_path / "plan.json"
    before = snapshot(running.state)
    assert "--wave: '4' is not a wave of plan" in one_line(running("apply-maintenance", plan, "--wave", "4"))
    assert running("apply-maintenance", plan, "--wave", "0").code == 2
    assert running("apply-maintenance", plan).code == 2  # --wave is required
    assert "nope.json" in one_line(running("apply-maintenance", tmp_path / "nope.json", "--wave", "1"))
    (tmp_path / "text.json").write_text("{not json")
    assert "text.json" in one_line(running("apply-maintenance", tmp_path / "text.json", "--wave", "1"))
    assert snapshot(running.state) == before


def test_a_wave_that_would_move_elsewhere_than_the_plan_says_is_refused(running, tmp_path):
    plan = _plan(running, tmp_path)
    into = plan["waves"][0]["moves"][0]["cubes_in"]
    other = next(c for c in _untouched_free(running, plan) if c not in into)
    wave = plan["waves"][0]
    wave["moves"][0]["cubes_in"] = [other]
    wave["holders_before"] = {c: v for c, v in wave["holders_before"].items() if c not in into} | {other: []}
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(plan))
    before = snapshot(running.state)
    line = one_line(running("apply-maintenance", edited, "--wave", "1"), 1)
    assert f"slice 'a' would move to {','.join(into)} (the plan: {other}); plan again" in line
    assert snapshot(running.state) == before


def test_the_imported_drains_plan_leaves_them_to_the_reservation(running, tmp_path):
    """The reservation still announces the maintenance: its drains are closed by `import reservation` once it is
    over (or by hand), never by a wave, which would hand the cube out again meanwhile."""
    r = running("plan-maintenance", "--out", tmp_path / "drains.json", "-o", "json")
    assert r.code == 0 and [w["already_drained"] for w in r.json["waves"]] == [["cube:c40"], ["cube:c99"]]
    first = running("apply-maintenance", tmp_path / "drains.json", "--wave", "1", "-o", "json")
    assert first.code == 0, first.err
    d = first.json
    assert d["steps"] == [
        {"step": "drain", "target": "cube:c40", "fault_id": "f1", "opened": False},
        {"step": "clear", "target": "cube:c40", "fault_ids": [], "kept_drain": "f1"},
    ]
    assert (d["faults_opened"], d["faults_cleared"], d["moved"]) == ([], [], [])
    assert _open_faults(running) == {"cube:c40", "cube:c99"}
    assert running("clear-fault", "cube:c99").code == 0  # done by hand meanwhile: the plan's drain is gone
    line = one_line(running("apply-maintenance", tmp_path / "drains.json", "--wave", "2"), 1)
    assert "the drain f2 of cube:c99 was cleared" in line


def test_a_drain_replaced_by_another_on_its_cube_is_named_cleared(running, tmp_path):
    """The plan saw drain f1 on c40: cleared and another opened there, the stale plan says f1 is gone (checking
    only that some drain was open, it named the new fault alone)."""
    assert running("plan-maintenance", "--out", tmp_path / "drains.json").code == 0
    assert running("clear-fault", "cube:c40").code == 0
    assert running("inject-fault", "cube:c40", "--planned", "--reason", "x", "-o", "json").json["fault_id"] == "f3"
    before = snapshot(running.state)
    line = one_line(running("apply-maintenance", tmp_path / "drains.json", "--wave", "1"), 1)
    assert "stale plan" in line and "the drain f1 of cube:c40 was cleared" in line
    assert snapshot(running.state) == before


def _future(cube: str, day: str) -> dict[str, str]:
    return {
        "target": f"cube:{cube}",
        "window_start": f"2099-07-{day}T09:00:00Z",
        "window_end": f"2099-07-{day}T13:00:00Z",
    }


def test_a_wave_keeps_its_cubes_drained_until_their_window_ends(running, tmp_path, monkeypatch):
    from tpufleet.state import store

    plan = _plan(running, tmp_path, [_future("c120", "01"), _future("c121", "02")], parallel=1)
    text = running("apply-maintenance", tmp_path / "plan.json", "--wave", "1", "--dry-run").out
    assert "left open (its window ends 2099-07-01T13:00:00Z" in text
    assert [w["cleared_after"] for w in plan["waves"]] == [["cube:c120"], ["cube:c121"]]
    first = running("apply-maintenance", tmp_path / "plan.json", "--wave", "1", "-o", "json")
    assert first.code == 0, first.err
    [drain, clear] = first.json["steps"]
    assert drain["opened"] and clear == {
        "step": "clear",
        "target": "cube:c120",
        "fault_ids": [],
        "left_open": drain["fault_id"],
        "until": "2099-07-01T13:00:00Z",
    }
    assert first.json["faults_cleared"] == [] and "cube:c120" in _open_faults(running)
    assert running("allocate", "x", "--shape", "4x4x4", "--cubes", "c120").code == 1  # under maintenance
    monkeypatch.setattr(store, "utc_now", lambda: "2099-07-02T08:00:00Z")  # wave 1's window is over
    second = running("apply-maintenance", tmp_path / "plan.json", "--wave", "2", "-o", "json")
    assert second.code == 0, second.err
    steps = second.json["steps"]
    assert steps[0] == {"step": "clear", "target": "cube:c120", "fault_ids": [drain["fault_id"]]}
    assert steps[-1]["left_open"] and second.json["faults_cleared"] == [drain["fault_id"]]
    assert _open_faults(running) == {"cube:c40", "cube:c99", "cube:c121"}
    assert running("allocate", "x", "--shape", "4x4x4", "--cubes", "c120").code == 0


def test_a_wave_never_clears_an_operators_own_drain(running, tmp_path):
    assert running("inject-fault", "cube:c120", "--planned", "--reason", "fan RMA").code == 0
    _plan(running, tmp_path, [_notice("c120", "01T09:00", "01T13:00")])  # a window already over
    r = running("apply-maintenance", tmp_path / "plan.json", "--wave", "1", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["steps"][-1]["kept_drain"] and r.json["faults_cleared"] == []
    assert "cube:c120" in _open_faults(running)


def test_a_reservation_window_of_no_length_and_a_plan_of_no_notices_apply_as_written(cli, tmp_path):
    """What `plan-maintenance` writes, `apply-maintenance` reads: a window whose end is its start (the reservation
    said so), and a plan made from no notices (no wave to apply: bad --wave, exit 2)."""
    doc = json.loads(FIXTURE.read_text())
    windows = [
        item["reservationSubBlockMaintenance"]["upcomingGroupMaintenance"]
        for item in doc
        if "upcomingGroupMaintenance" in item.get("reservationSubBlockMaintenance", {})
    ]
    assert len(windows) == 2
    for window in windows:
        window["windowEndTime"] = window["windowStartTime"]
    reservation = tmp_path / "reservation.json"
    reservation.write_text(json.dumps(doc))
    assert cli("init", "--generation", "tpu7x").code == 0
    assert cli("import", "reservation", reservation, "--apply").code == 0
    assert cli("plan-maintenance", "--out", tmp_path / "p.json").code == 0
    r = cli("apply-maintenance", tmp_path / "p.json", "--wave", "1", "-o", "json")
    assert r.code == 0, r.err
    empty = Cli(cli.capsys, tmp_path / "empty")
    assert empty("init").code == 0
    assert empty("plan-maintenance", "--out", tmp_path / "none.json").code == 0
    line = one_line(empty("apply-maintenance", tmp_path / "none.json", "--wave", "1"), 2)
    assert "has no waves" in line


def _sub_blocks(windows: dict[int, tuple[str, str]]) -> list[dict[str, Any]]:
    """The fixture's first four sub-blocks (a 4-cube pod), with pending maintenance on those of `windows`."""
    doc = json.loads(FIXTURE.read_text())[:4]
    for i, (start, end) in windows.items():
        doc[i]["reservationSubBlockMaintenance"] = {
            "upcomingGroupMaintenance": {
                "type": "SCHEDULED",
                "windowStartTime": start,
                "windowEndTime": end,
                "maintenanceStatus": "PENDING",
            },
            "maintenancePendingCount": 16,
            "schedulingType": "GROUPED",
        }
    return doc


def test_a_plan_never_counts_on_a_cube_a_drain_it_did_not_open_keeps_down(cli, tmp_path):
    """The reservation's drain of c00 is the reservation's to close: a wave leaves it open, so the plan must not
    move a slice onto c00 after c00's window (it said "every notice served", and applying wave 2 then failed on the
    plan's own move, however often it was planned again)."""
    first = tmp_path / "first.json"
    first.write_text(json.dumps(_sub_blocks({0: ("2026-07-01T00:00:00Z", "2026-07-01T06:00:00Z")})))
    second = tmp_path / "second.json"
    windows = {0: ("2026-07-01T00:00:00Z", "2026-07-01T06:00:00Z"), 2: ("2026-07-01T08:00:00Z", "2026-07-01T10:00:00Z")}
    second.write_text(json.dumps(_sub_blocks(windows)))
    assert cli("init", "--generation", "tpu7x", "--cubes-per-pod", "4").code == 0
    assert cli("import", "reservation", first, "--apply").code == 0
    assert cli("allocate", "s", "--shape", "4x4x8", "--cubes", "c02,c03").code == 0
    assert cli("allocate", "o", "--shape", "4x4x4", "--cubes", "c01").code == 0
    assert cli("import", "reservation", second, "--apply").code == 0
    r = cli("plan-maintenance", "--out", tmp_path / "plan.json", "-o", "json")
    assert [w["kept_down"] for w in r.json["waves"]] == [["cube:c00"], ["cube:c02"]]
    assert r.code == 1 and not r.json["served"]
    assert [(u["wave"], u["slice"]) for u in r.json["unserved"]] == [(2, "s")]
    assert cli("apply-maintenance", tmp_path / "plan.json", "--wave", "1").code == 0
    before = snapshot(cli.state)
    line = one_line(cli("apply-maintenance", tmp_path / "plan.json", "--wave", "2"), 1)
    assert "stops slice 's'" in line  # what the plan said, before anything is drained
    assert snapshot(cli.state) == before


def test_planning_again_clears_the_drains_an_earlier_plan_opened(cli, tmp_path):
    """A plan made again after the first went stale takes over its drains: the first plan's wave 1 drain of c00
    was "not ours" to the second, left down with nothing to clear it."""
    assert cli("init").code == 0
    assert cli("allocate", "a", "--shape", "4x4x8").code == 0
    notices = [_future("c00", "01"), _future("c10", "03")]
    _plan(cli, tmp_path, notices, parallel=1)
    assert cli("apply-maintenance", tmp_path / "plan.json", "--wave", "1").code == 0  # drain f1 of c00, left open
    assert cli("allocate", "z", "--shape", "4x4x4", "--cubes", "c10").code == 0
    assert cli("apply-maintenance", tmp_path / "plan.json", "--wave", "2").code == 1  # stale: plan again
    again = _plan(cli, tmp_path, notices, parallel=1)
    assert [w["kept_down"] for w in again["waves"]] == [[], []]
    assert "tpufleet clear-fault cube:c00" in again["commands"]


def test_a_plan_made_again_clears_an_earlier_plans_drain_once_its_window_is_over(cli, tmp_path, monkeypatch):
    from tpufleet.state import store

    assert cli("init", "--pods", "1", "--cubes-per-pod", "3").code == 0
    assert cli("allocate", "a", "--shape", "4x4x8", "--cubes", "c00,c01").code == 0
    assert cli("plan-xconnect", "a", "--apply").code == 0
    notices = [_future("c00", "01"), _future("c01", "02")]
    _plan(cli, tmp_path, notices, parallel=1)
    assert cli("apply-maintenance", tmp_path / "plan.json", "--wave", "1").code == 0  # c00's drain left open
    again = tmp_path / "again"
    again.mkdir()
    _plan(cli, again, notices, parallel=1)
    assert cli("apply-maintenance", again / "plan.json", "--wave", "1").code == 0
    monkeypatch.setattr(store, "utc_now", lambda: "2099-07-02T10:00:00Z")  # c00's window is over
    r = cli("apply-maintenance", again / "plan.json", "--wave", "2", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["steps"][0]["step"] == "clear" and r.json["steps"][0]["target"] == "cube:c00"


def test_a_wave_applied_before_the_cube_it_moves_onto_is_back_says_when_not_plan_again(cli, tmp_path):
    """Wave 2 moves slice a back onto c00, whose drain wave 1 left open until its window ends: applied before then,
    it said "cannot move slice 'a' ...; plan again", and planning again planned the same move (refused the same
    way). It is refused naming the cube, its drain and when it is back; nothing changed."""
    assert cli("init", "--cubes-per-pod", "3").code == 0
    assert cli("allocate", "a", "--shape", "4x4x8", "--cubes", "c00,c01").code == 0
    plan = _plan(cli, tmp_path, [_future("c00", "01"), _future("c02", "02")], parallel=1)
    assert [[(m["slice"], m["cubes_in"]) for m in w["moves"]] for w in plan["waves"]] == [
        [("a", ["c02"])],
        [("a", ["c00"])],
    ]
    first = cli("apply-maintenance", tmp_path / "plan.json", "--wave", "1", "-o", "json")
    assert first.code == 0, first.err
    drain = first.json["faults_opened"][0]
    before = snapshot(cli.state)
    line = one_line(cli("apply-maintenance", tmp_path / "plan.json", "--wave", "2"), 1)
    assert f"moves a slice onto cube:c00, back only when its drain {drain} is cleared" in line
    assert "its window ends 2099-07-01T13:00:00Z: apply wave 2 then" in line and "plan again" not in line
    assert snapshot(cli.state) == before
    assert cli("clear-fault", "cube:c00").code == 0  # the work done early: the cube is back
    assert cli("apply-maintenance", tmp_path / "plan.json", "--wave", "2").code == 0


@pytest.mark.parametrize("edited", ["notices.0.target", "waves.0.cubes.0"])
def test_a_notice_and_its_waves_cube_apart_are_both_named(running, tmp_path, edited):
    """A notice's target edited (or its wave's cube): the wave's cube has no notice and the notice no wave, and which
    side was edited cannot be told, so the message names both."""
    plan = _plan(running, tmp_path)
    cube = plan["waves"][0]["cubes"][0]
    notice = next(i for i, n in enumerate(plan["notices"]) if n["target"] == f"cube:{cube}")
    field = f"notices.{notice}.target" if edited.startswith("notices") else edited
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_edit(plan, field, "cube:c140" if edited.startswith("notices") else "c140")))
    before = snapshot(running.state)
    line = one_line(running("apply-maintenance", bad, "--wave", "1"))
    wave_cube, notice_target = ("c00", "cube:c140") if edited.startswith("notices") else ("c140", "cube:c00")
    assert "field waves.0.cubes.0: it is not one of the plan's notices" in line and f"(value {wave_cube!r})" in line
    assert f"no wave's cubes name notices.{notice}.target {notice_target}" in line
    assert snapshot(running.state) == before


def test_each_drain_of_a_wave_is_held_until_its_own_cubes_window_ends(running, tmp_path, monkeypatch):
    """Wave 1 drains c00 (maintenance until 13:00) and c01 (until 14:00). Every drain's reason carried the wave's
    latest end, so at 13:30 `explain cube:c00` held its clear until 14:00 while `apply-maintenance` named 13:00;
    each drain carries its own cube's window and both say 13:00."""
    from tpufleet.state import store

    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(_plan(running, tmp_path)))
    monkeypatch.setattr(store, "utc_now", lambda: "2026-06-30T00:00:00Z")
    assert running("apply-maintenance", plan, "--wave", "1").code == 0
    reasons = {f["target"]: f["reason"] for f in running("faults", "-o", "json").json if f["planned"]}
    assert reasons["cube:c00"] == "maintenance wave 1: 2026-07-01T09:00:00Z to 2026-07-01T13:00:00Z"
    assert reasons["cube:c01"] == "maintenance wave 1: 2026-07-01T10:00:00Z to 2026-07-01T14:00:00Z"
    monkeypatch.setattr(store, "utc_now", lambda: "2026-07-01T13:30:00Z")
    c00, c01 = (running("explain", f"cube:{c}", "-o", "json").json for c in ("c00", "c01"))
    assert any(step.startswith("tpufleet clear-fault") for step in c00["next"]), c00
    assert not any(step.startswith("tpufleet clear-fault") for step in c01["next"]), c01
    assert any("2026-07-01T14:00:00Z" in why for why in c01["why"]), c01


def test_a_move_whose_cubes_out_were_edited_is_told_by_the_cubes_it_leaves(running, tmp_path):
    """A plan's `cubes_out` edited: the refusal said `would move to X (the plan: X)`, the cubes it lands on, the same
    on both sides; it names the cubes the move leaves."""
    plan = _plan(running, tmp_path)
    move = plan["waves"][0]["moves"][0]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_edit(plan, "waves.0.moves.0.cubes_out", move["cubes_out"][:1])))
    before = snapshot(running.state)
    r = running("apply-maintenance", bad, "--wave", "1")
    left = ",".join(move["cubes_out"])
    assert r.code == 1 and f"slice {move['slice']!r} would leave {left} (the plan: {move['cubes_out'][0]})" in r.err
    assert snapshot(running.state) == before


def test_a_plan_of_another_state_at_the_same_serial_is_not_called_stale(running, tmp_path):
    """Applied to another state that has reached the plan's serial too, the refusal said `stale plan ...: made at
    serial 4, and since then cube c00 is held by ...`, though nothing happened since: it says the plan is not this
    state's."""
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(_plan(running, tmp_path)))
    other = ["--state", str(tmp_path / "other")]
    steps = [
        ("init", "--generation", "tpu7x"),
        ("import", "reservation", FIXTURE, "--apply"),
        ("allocate", "b", "--shape", "16x16x16"),  # the other order: c00 is b's here
        ("allocate", "a", "--shape", "12x12x24"),
    ]
    for step in steps:
        assert running(*other, *step, state=False).code == 0, step
    assert running(*other, "status", "-o", "json", state=False).json["serial"] == json.loads(plan.read_text())["serial"]
    before = snapshot(tmp_path / "other")
    r = running(*other, "apply-maintenance", plan, "--wave", "1", state=False)
    assert (
        r.code == 1 and f"plan {plan} was not made from this state: made at serial 4, the state's serial, yet" in r.err
    )
    assert "stale" not in r.err and snapshot(tmp_path / "other") == before


def test_a_wave_that_takes_a_reserved_cube_says_where_the_move_goes(cli, tmp_path):
    """An evicted slice's move reserved on c02,c03; wave 2 drains c02. The plan showed no move for the wave, the
    apply only the drain, yet the reservation went to other cubes (only `diff` showed it). Both say it now, and the
    apply does what the plan said."""
    assert cli("init", "--pods", "2").code == 0
    assert cli("allocate", "a", "--shape", "4x4x8").code == 0
    assert cli("inject-fault", "host:c00/3").code == 0
    assert cli("inject-fault", "host:c01/3").code == 0
    reserved = next(s for s in cli("show", "slices", "-o", "json").json if s["name"] == "a")["proposal"]["cubes"]
    assert reserved == ["c02", "c03"]
    notices = [_notice(c, "01T09", "01T13") for c in ("c02", "c00")]
    (tmp_path / "n.yaml").write_text(yaml.safe_dump(notices))
    plan = tmp_path / "p.json"
    made = cli("plan-maintenance", "--notices", tmp_path / "n.yaml", "--out", plan, "-o", "json")
    assert made.code == 0, made.err
    waves = {tuple(w["cubes"]): w for w in made.json["waves"]}
    assert waves[("c00",)]["reservations_moved"] == []
    moved = waves[("c02",)]["reservations_moved"]
    assert [(m["slice"], m["cubes_out"]) for m in moved] == [("a", ["c02"])] and len(moved[0]["cubes_in"]) == 1
    assert "a reserved: c02 -> " in cli("plan-maintenance", "--notices", tmp_path / "n.yaml").out
    number = waves[("c02",)]["wave"]
    for wave in range(1, number + 1):
        applied = cli("apply-maintenance", plan, "--wave", str(wave), "-o", "json")
        assert applied.code == 0, applied.err
    assert applied.json["reservations_moved"] == moved
    after = next(s for s in cli("show", "slices", "-o", "json").json if s["name"] == "a")["proposal"]["cubes"]
    assert sorted(after) == sorted(["c03", *moved[0]["cubes_in"]])
