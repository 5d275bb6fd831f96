"""`show map`: the picture of a pod (golden text without a terminal) and its JSON, checked against `status`."""

from __future__ import annotations

from pathlib import Path

import pytest

GOLDEN = Path(__file__).parent / "golden"


@pytest.fixture
def busy_pod(fleet):
    """Three slices (one wired and rerouted around a failed OCS, one not yet wired and so planned around it), a
    failed cube and a drained machine."""
    steps = [
        ("allocate", "big", "--shape", "4x8x8"),
        ("plan-xconnect", "big", "--apply"),
        ("allocate", "mid", "--shape", "4x4x8"),
        ("allocate", "tiny", "--shape", "2x2x2"),
        ("inject-fault", "ocs:pod0/x/3"),
        ("inject-fault", "cube:c40"),
        ("inject-fault", "host:c41/3", "--planned"),
    ]
    for step in steps:
        r = fleet(*step)
        assert r.code == 0, (step, r.err)
    return fleet


def test_map_golden_text(busy_pod, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    r = busy_pod("show", "map")
    assert r.code == 0, r.err
    assert r.out == (GOLDEN / "map-busy-pod.txt").read_text()


def test_map_json_agrees_with_status(busy_pod):
    fm = busy_pod("show", "map", "-o", "json").json
    status = busy_pod("status", "-o", "json").json
    (pod,) = fm["pods"]
    assert pod["counts"]["slice"] == status["cubes"]["allocated"]
    assert pod["counts"]["free"] == status["cubes"]["free"]
    assert pod["counts"]["out"] + pod["counts"]["drained"] == status["cubes"]["out"]
    assert [c["cube"] for c in pod["cubes"] if c["state"] == "drained"] == ["c41"]
    assert [c["cube"] for c in pod["cubes"] if c["state"] == "out"] == ["c40"]
    failed = [o["id"] for o in pod["ocs"] if o["state"] == "failed"]
    assert failed == ["ocs:pod0/x/3"] and len(pod["ocs"]) == 48
    assert sum(o["xconnects"] for o in pod["ocs"]) == status["ocs"]["xconnects"]
    legend = {e["slice"]: e for e in fm["legend"]}
    slices = {s["name"]: s for s in status["slices"]}
    assert {n: e["state"] for n, e in legend.items()} == {n: s["state"] for n, s in slices.items()}
    for name, s in slices.items():
        marked = sorted(c["cube"] for c in pod["cubes"] if c["slices"] == [name])
        assert marked == sorted(s["cubes"])
        assert {c["mark"] for c in pod["cubes"] if c["slices"] == [name]} == {legend[name]["mark"]}


def test_map_positions_are_the_inventory_order(fleet):
    cubes = fleet("show", "map", "-o", "json").json["pods"][0]["cubes"]
    assert [tuple(c["xyz"]) for c in cubes[:5]] == [(0, 0, 0), (1, 0, 0), (2, 0, 0), (3, 0, 0), (0, 1, 0)]
    assert tuple(cubes[63]["xyz"]) == (3, 3, 3)


def test_map_of_one_pod_and_an_unknown_pod(cli):
    assert cli("init", "--pods", "2").code == 0
    assert [p["pod"] for p in cli("show", "map", "--pod", "pod1", "-o", "json").json["pods"]] == ["pod1"]
    r = cli("show", "map", "--pod", "pod9")
    assert r.code == 2 and "pod9" in r.err and "pod0, pod1" in r.err


def test_map_marks_cubes_reserved_for_an_evicted_slice(fleet):
    assert fleet("allocate", "s", "--shape", "4x4x8").code == 0
    assert fleet("plan-xconnect", "s", "--apply").code == 0
    assert fleet("inject-fault", "cube:c00").code == 0
    proposal = fleet("show", "slices", "-o", "json").json[0]["proposal"]["cubes"]
    cubes = fleet("show", "map", "-o", "json").json["pods"][0]["cubes"]
    reserved = [c["cube"] for c in cubes if c["state"] == "reserved"]
    assert reserved == sorted(c for c in proposal if c not in ("c00", "c01")) and reserved
    assert all(c["mark"] == "*" and c["slices"] == ["s"] for c in cubes if c["state"] == "reserved")


def test_map_written_to_a_file_has_no_colour_codes(busy_pod, tmp_path):
    out = tmp_path / "report.txt"
    assert busy_pod("report", "--out", out).code == 0
    assert "\x1b[" not in out.read_text() and "pod pod0" in out.read_text()


@pytest.mark.parametrize(
    ("env", "styled"), [({"TERM": "xterm"}, True), ({"TERM": "dumb"}, False), ({"NO_COLOR": "1"}, False)]
)
def test_colour_only_where_the_terminal_shows_it(monkeypatch, env, styled):
    from tpufleet.cli.mapview import _paint

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert ("\x1b[" in _paint("A", set())) is styled


def test_cubes_the_provider_reports_degraded_are_marked(reserved):
    """c17, c58 and c121 (the fixture reservation's DEGRADED sub-blocks) serve: free, marked `~`, flagged in JSON;
    a slice on one keeps its letter and the flag."""
    assert reserved("allocate", "s", "--shape", "4x4x4", "--cubes", "c17").code == 0
    out = reserved("show", "map", "-o", "json")
    assert out.code == 0, out.err
    cubes = {c["cube"]: c for c in out.json["pods"][0]["cubes"]}
    assert sorted((n for n, c in cubes.items() if c["degraded"]), key=lambda n: int(n[1:])) == ["c17", "c58", "c121"]
    assert cubes["c58"]["state"] == "free" and cubes["c58"]["mark"] == "~"
    assert cubes["c17"]["state"] == "slice" and cubes["c17"]["mark"] == "A"
    assert sum(c["mark"] == "~" for c in cubes.values()) == 2
    assert out.json["pods"][0]["counts"]["free"] == 144 - 1 - 2  # still free: they serve
    text = reserved("show", "map").out
    assert "~ free, reported DEGRADED" in text
    y2 = text.splitlines()[4].split()  # c58 (x2 of z=3) and c121 (x1 of z=7) are both in row y2
    assert y2[0] == "y2" and [i for i, m in enumerate(y2[1:]) if m == "~"] == [3 * 4 + 2, 7 * 4 + 1]
