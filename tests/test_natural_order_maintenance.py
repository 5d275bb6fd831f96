"""`apply-maintenance` refusing a wave that would not do what its plan says names the slices as the fleet counts
them (s9 before s10), as every other list of slices is."""

from __future__ import annotations

import json

import pytest
import yaml

NOTICES = [
    {"target": "cube:c00", "window_start": "2099-07-01T09:00:00Z", "window_end": "2099-07-01T13:00:00Z"},
    {"target": "cube:c01", "window_start": "2099-07-01T10:00:00Z", "window_end": "2099-07-01T14:00:00Z"},
]


def _plan(fleet, tmp_path) -> dict:
    for name in ("s9", "s10"):  # s9 on c00, s10 on c01: one wave drains both
        assert fleet("allocate", name, "--shape", "4x4x4").code == 0
    (tmp_path / "n.yaml").write_text(yaml.safe_dump(NOTICES))
    r = fleet("plan-maintenance", "--notices", tmp_path / "n.yaml", "--max-parallel", "2", "--out", tmp_path / "p.json")
    assert r.code == 0, r.err
    return json.loads((tmp_path / "p.json").read_text())


def _swap_destinations(wave: dict) -> None:
    a, b = wave["moves"]
    a["cubes_in"], b["cubes_in"] = b["cubes_in"], a["cubes_in"]


@pytest.mark.parametrize("edit", [lambda w: w.update(moves=[]), _swap_destinations], ids=["moved-too", "elsewhere"])
def test_a_wave_differing_from_its_plan_names_the_slices_as_counted(fleet, tmp_path, edit):
    plan = _plan(fleet, tmp_path)
    edit(plan["waves"][0])
    (tmp_path / "edited.json").write_text(json.dumps(plan))
    r = fleet("apply-maintenance", tmp_path / "edited.json", "--wave", "1", "--dry-run")
    assert r.code == 1, r.err
    assert r.err.count("'s9'") == r.err.count("'s10'") == 1, r.err
    assert r.err.index("'s9'") < r.err.index("'s10'"), r.err


def test_a_wave_moves_its_slices_as_the_fleet_counts_them(fleet, tmp_path):
    """A wave moved the slices its drains stop in text order (s10 before s9), so s10 took the first free cube and
    the plan listed its commands first; it now moves them as the fault path does, s9 first."""
    wave = _plan(fleet, tmp_path)["waves"][0]
    moved = [m["slice"] for m in wave["moves"]]
    assert moved == ["s9", "s10"]
    first, second = (m["cubes_in"] for m in wave["moves"])
    assert first == ["c02"] and second == ["c03"]  # the first free cubes, in that order
    reschedules = [c for c in wave["commands"] if c.startswith("tpufleet reschedule")]
    assert [c.split()[2] for c in reschedules] == ["s9", "s10"]
