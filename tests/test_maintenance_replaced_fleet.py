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
