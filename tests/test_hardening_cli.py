"""Hostile or careless input at the command line: refused in one line with exit 2, cheaply, changing nothing."""

from __future__ import annotations

import json

import pytest

from helpers import snapshot


@pytest.mark.parametrize(
    "target",
    [
        "host:c01/" + "9" * 5000,  # thousands of digits: int() of it would refuse, and the message must stay short
        "cube:c" + "1" * 5000,
        "host:c01/\u0663",  # an Arabic-Indic digit three: not an ASCII digit, would not round-trip
        "chip:c01/1,\u0662,3",
        "cube:c01\n",  # "$" in a pattern matches before a trailing newline
        "ocs:pod0\n/x/1",
    ],
)
def test_hostile_ids_are_refused_in_one_short_line(fleet, target):
    before = snapshot(fleet.state)
    r = fleet("inject-fault", target)
    assert r.code == 2 and r.err.count("\n") == 1 and len(r.err) < 300, r.err
    assert snapshot(fleet.state) == before


@pytest.mark.parametrize("shape", ["4x4x\u0668", "1024x1024x1024", "4x4x8\n", "9999x9999x9999"])
def test_hostile_shapes_are_refused(cli, shape):
    r = cli("topology", shape, "-o", "json", state=False)
    assert r.code == 2 and r.err.count("\n") == 1 and len(r.err) < 300, r.err


def test_the_largest_allowed_slice_is_measured(cli):
    r = cli("topology", "16x32x32", "-o", "json", state=False)  # 16,384 chips, the documented cap
    assert r.code == 0, r.err
    assert r.json["chips"] == 16384 and r.json["diameter"] == 8 + 16 + 16


@pytest.mark.parametrize("args", [["--random", "1000000000"], ["--random", "0"], ["--random", "3", "--seed", "-1"]])
def test_random_draws_are_bounded(fleet, args):
    before = snapshot(fleet.state)
    r = fleet("inject-fault", *args, "--dry-run")
    assert r.code == 2 and r.err.count("\n") == 1
    assert snapshot(fleet.state) == before


def test_a_long_scenario_dry_run_needs_no_lock(fleet, tmp_path):
    """A dry run works on the state as loaded, so it answers even while another command holds the lock."""
    from tpufleet.state.lock import exclusive

    targets = [f"link:c{c:02d}/{d}/{i}/out" for c in range(64) for d in "xyz" for i in range(16)][:2000]
    scenario = tmp_path / "many.yaml"
    scenario.write_text("".join(f"- {t}\n" for t in targets))
    before = snapshot(fleet.state)
    with exclusive(fleet.state, 1, "tpufleet maintenance-window"):
        r = fleet("--lock-timeout", "0", "inject-fault", "--from", scenario, "--dry-run", "-o", "json")
    assert r.code == 0, r.err
    assert [x["target"] for x in r.json] == targets and len({x["fault_id"] for x in r.json}) == 2000
    assert snapshot(fleet.state) == before


def test_slice_names_differing_only_in_case_collide(fleet):
    assert fleet("allocate", "Train", "--shape", "4x4x4").code == 0
    r = fleet("allocate", "train", "--shape", "4x4x4")
    assert r.code == 2 and "only in case" in r.err  # a bad name (README, exit codes), as for a job


def test_an_empty_cube_list_is_refused_not_ignored(fleet):
    r = fleet("allocate", "s", "--shape", "4x4x4", "--cubes", "")
    assert r.code == 2 and "--cubes" in r.err and r.err.count("\n") == 1


def test_ctrl_c_says_so(fleet, monkeypatch):
    from tpufleet import views

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(views, "status", interrupted)
    r = fleet("status")
    assert r.code == 130 and r.err.count("\n") == 1 and "interrupted" in r.err


def test_json_and_tables_are_safe_to_consume():
    from tpufleet.cli.render import flat_table, to_json

    text = to_json({"mtbf_h": float("inf"), "values": [float("nan"), 1.5]})
    assert json.loads(text) == {"mtbf_h": None, "values": [None, 1.5]}  # strict JSON: no Infinity or NaN
    csv = flat_table([{"name": "=HYPERLINK(1)", "n": -3, "note": "@x"}], "csv").splitlines()
    assert csv[1] == "'=HYPERLINK(1),-3,'@x"  # a spreadsheet shows text, runs nothing
    md = flat_table([{"name": "<script>alert(1)</script>", "n": "a|b"}], "md")
    assert "<script>" not in md and "&lt;script&gt;" in md and "a\\|b" in md
