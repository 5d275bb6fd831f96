"""A maintenance plan is of the fleet it was made on: `init --force` since replaced that fleet, so the plan is
refused (exit 1, nothing changed), however alike the new fleet's names look."""

from __future__ import annotations

from helpers import snapshot

NOTICES = (
    "- {target: cube:c00, window_start: 2020-07-01T09:00:00Z, window_end: 2020-07-01T13:00:00Z}\n"
    "- {target: cube:c01, window_start: 2020-07-02T09:00:00Z, window_end: 2020-07-02T13:00:00Z}\n"
)


def test_a_plan_made_before_init_force_is_refused_on_the_replaced_fleet(cli, tmp_path):
    """The plan of a fleet of 2 pods x 8 cubes applied to the one `init --force` made in its place (1 pod x 16
    cubes, slices of the same names allocated on the same cubes): the wave drained and moved as if nothing had
    happened, on spare counts of another fleet."""
    assert cli("init", "--cubes-per-pod", "8", "--pods", "2").code == 0
    for name in ("a", "b"):
        assert cli("allocate", name, "--shape", "4x4x4").code == 0
    notices, plan = tmp_path / "notices.yaml", tmp_path / "plan.json"
    notices.write_text(NOTICES)
    assert cli("plan-maintenance", "--notices", notices, "--max-parallel", "1", "--out", plan).code == 0
    assert cli("init", "--force", "--cubes-per-pod", "16").code == 0
    for name in ("a", "b"):
        assert cli("allocate", name, "--shape", "4x4x4").code == 0
    before = snapshot(cli.state)
    for extra in (["--dry-run"], []):
        r = cli("apply-maintenance", plan, "--wave", "1", *extra)
        assert r.code == 1, (r.code, r.out)
        assert str(plan) in r.err and "init --force" in r.err and "plan again" in r.err, r.err
    assert snapshot(cli.state) == before


def test_a_plan_with_an_open_drain_made_before_init_force_is_told_the_fleet_was_replaced(reserved, tmp_path):
    """The reservation's maintenance drains c40 and c99 (f1, f2), which the plan's notices name (`open_drain`):
    after `init --force` those faults are the old fleet's, retired to the journal, and the plan was refused as a bad
    file naming one (exit 2), not as a plan of a replaced fleet."""
    plan = tmp_path / "plan.json"
    assert reserved("plan-maintenance", "--out", plan).code == 0
    assert '"open_drain": "f1"' in plan.read_text()
    assert reserved("init", "--force", "--generation", "tpu7x").code == 0
    before = snapshot(reserved.state)
    r = reserved("apply-maintenance", plan, "--wave", "1")
    assert r.code == 1 and "init --force" in r.err and "plan again" in r.err and "field notices" not in r.err, r.err
    assert snapshot(reserved.state) == before
