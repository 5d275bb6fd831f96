"""Regression tests through the CLI for the smaller defects an operator and an adversarial pass found: unbounded
work inside documented limits, hostile cache entries and config files, digits of other scripts, and answers that
were wrong or misleading."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest

from helpers import one_line, snapshot


def state_doc(state: Path) -> dict:
    return json.loads((state / "state.json").read_text())


# ---- unbounded work -------------------------------------------------------------------------------------------
def test_a_job_of_a_billion_slices_is_refused_from_its_size_alone(fleet):
    before = snapshot(fleet.state)
    line = one_line(fleet("allocate", "j", "--shape", "2x2x1", "--slices", "1000000000"), 1)
    assert "1,000,000,000" in line and "1,024" in line
    assert snapshot(fleet.state) == before


@pytest.mark.parametrize(
    "text, needle",
    [
        ("state = " + "[" * 5000 + "]" * 5000 + "\n", "nested"),
        ("lock_timeout = " + "9" * 5000 + "\n", "TOML"),
        ('group = "no-such-group-tpufleet"\n', "field group: no such group"),
        ('state = "{config}"\n', "field state: is not a directory"),  # the config file itself: a file
    ],
)
def test_hostile_config_files_are_bad_input(fleet, tmp_path, monkeypatch, text, needle):
    config = tmp_path / "config.toml"
    config.write_text(text.replace("{config}", str(config)))
    monkeypatch.setenv("TPUFLEET_CONFIG", str(config))
    line = one_line(fleet("status"))
    assert str(config) in line and needle in line
    help_text = fleet("status", "--help")  # a command's help never depends on the config file
    assert help_text.code == 0 and "Usage: tpufleet status" in help_text.out
    before = snapshot(fleet.state)
    value = fleet("inject-fault", "--", "-h")  # "-h" as a value (here the target) asks no help
    assert value.code == 2 and str(config) in value.err
    assert snapshot(fleet.state) == before


# ---- a forged repair-cache entry is a miss ------------------------------------------------------------------------
def _forge(path: Path) -> None:
    """Replace a cache entry by one whose .npy header claims 2**42 elements, with a digest that matches."""
    from tpufleet.state import tablecache

    buf = io.BytesIO()
    header = {"descr": "|i1", "fortran_order": False, "shape": (1 << 42,)}
    np.lib.format.write_array_header_1_0(buf, header)
    body = buf.getvalue() + b"\x00" * 64
    key = path.name.removesuffix(".npy")
    path.write_bytes(tablecache.MAGIC + tablecache._digest(key, body) + body)


def test_forged_cache_entries_are_misses_and_change_no_answer(fleet):
    assert fleet("allocate", "s", "--shape", "4x4x8").code == 0
    assert fleet("plan-xconnect", "s", "--apply").code == 0
    assert fleet("inject-fault", "ocs:pod0/x/5").code == 0
    honest = fleet("routes", "s", "-o", "json")
    assert honest.code == 0, honest.err
    entries = sorted((fleet.state / "cache").glob("*.npy"))
    assert entries
    for entry in entries:
        _forge(entry)
    forged = fleet("routes", "s", "-o", "json")
    assert forged.code == 0, forged.err
    assert forged.json["max_link_load"] == honest.json["max_link_load"]
    dry = fleet("inject-fault", "ocs:pod0/y/2", "--dry-run", "-o", "json")
    assert dry.code == 0, dry.err
    assert [s["action"] for s in dry.json["slices"]] == ["reroute"]


# ---- digits of other scripts, and the size that names the limit -------------------------------------------------
def test_sizes_take_ascii_digits_and_the_unit_of_their_limit(fleet):
    assert fleet("allocate", "c", "--shape", "4x4x4").code == 0
    arabic_ten_gib = "1\u0660GiB"
    assert "--bytes" in one_line(fleet("collective", "c", "--op", "all-reduce", "--bytes", arabic_ten_gib))
    r = fleet("collective", "c", "--op", "all-reduce", "--bytes", "1PiB", "--assume-healthy")
    assert "not a size" not in r.err  # parsed: refused only for being more than a chip's memory
    r = fleet("collective", "c", "--op", "all-reduce", "--bytes", "1MiB", "--assume-healthy", "-o", "json")
    assert r.code == 0, r.err
    assert "SERIAL" in one_line(fleet("diff", "\u0661"))


# ---- wrong or misleading answers --------------------------------------------------------------------------------
def test_an_unwired_fault_tolerant_slice_is_planned_around_a_failed_ocs(fleet):
    assert fleet("allocate", "a", "--shape", "4x4x8").code == 0
    r = fleet("inject-fault", "ocs:pod0/x/5", "-o", "json")
    assert r.code == 0, r.err
    assert [(s["slice"], s["action"]) for s in r.json["slices"]] == [("a", "none")]
    assert state_doc(fleet.state)["slices"]["a"]["state"] == "allocated"
    assert fleet("plan-xconnect", "a", "--apply").code == 0
    routed = fleet("routes", "a", "-o", "json")
    assert routed.code == 0, routed.err
    assert state_doc(fleet.state)["slices"]["a"]["state"] == "degraded"


def test_release_says_which_cubes_are_back_in_the_pool(fleet):
    assert fleet("allocate", "m1", "--shape", "2x2x1", "--cubes", "c05").code == 0
    assert fleet("allocate", "m2", "--shape", "2x2x1", "--cubes", "c05").code == 0
    assert fleet("allocate", "big", "--shape", "4x4x8", "--cubes", "c06,c07").code == 0
    assert fleet("inject-fault", "host:c07/9").code == 0
    r = fleet("release", "m1", "-o", "json")
    assert (r.json["back_in_pool"], r.json["still_held"]) == ([], ["c05"])
    r = fleet("release", "big", "-o", "json")
    assert (r.json["back_in_pool"], r.json["still_out"]) == (["c00", "c06"], ["c07"])  # c00: reserved for its move
    text = fleet("release", "m2").out
    assert "c05 back in the pool" in text


def test_init_force_says_and_journals_what_it_replaced(fleet):
    assert fleet("allocate", "s", "--shape", "4x4x4").code == 0
    assert fleet("plan-xconnect", "s", "--apply").code == 0
    assert fleet("routes", "s").code == 0
    assert fleet("inject-fault", "host:c09/1").code == 0
    r = fleet("init", "--force", "-o", "json")
    assert r.code == 0, r.err
    replaced = r.json["replaced"]
    assert (replaced["slices"], replaced["open_faults"], replaced["route_tables"]) == (1, 1, 1)
    assert replaced["cross_connects"] == 48
    assert "replaced" in fleet("history", "-o", "json").json[-1]["summary"]
    assert list((fleet.state / "routes").iterdir()) == []


def test_a_second_fault_on_a_degraded_slice_is_in_its_history(fleet):
    assert fleet("allocate", "s", "--shape", "4x4x8").code == 0
    assert fleet("plan-xconnect", "s", "--apply").code == 0
    assert fleet("inject-fault", "ocs:pod0/x/5").code == 0
    assert fleet("inject-fault", "ocs:pod0/y/2").code == 0
    history = fleet("history", "--slice", "s", "-o", "json").json
    assert history[-1]["serial"] == state_doc(fleet.state)["serial"]  # the second fault's line names the slice
    last = history[-1]["delta"]["slices"]["changed"]["s"]["reroute"]
    assert last[0]["faults"] == ["f1"] and last[1]["faults"] == ["f1", "f2"]


def test_policy_without_fault_tolerant_routing_does_not_speak_of_rerouting(fleet):
    assert fleet("allocate", "s", "--shape", "4x4x4").code == 0
    text = fleet("policy", "s", "--no-fault-tolerant-routing").out
    assert "off" in text and "rerouted" not in text


def test_sparse_tables_written_where_asked_exit_0(fleet, tmp_path):
    assert fleet("allocate", "s", "--shape", "4x4x8").code == 0
    assert fleet("plan-xconnect", "s", "--apply").code == 0
    out = tmp_path / "sparse.npz"
    r = fleet("routes", "s", "--table-capacity", "16", "--out", out)
    assert r.code == 0, r.err
    assert out.stat().st_size > 0 and "not stored" in r.err
    assert fleet("routes", "s", "--table-capacity", "16").code == 1  # computed, neither stored nor written


@pytest.mark.parametrize("fmt", ["json", "npz", "ibroute"])
def test_routes_format_without_out_is_bad_input(fleet, fmt):
    assert fleet("allocate", "s", "--shape", "4x4x4").code == 0
    assert fleet("plan-xconnect", "s", "--apply").code == 0
    before = snapshot(fleet.state)
    line = one_line(fleet("routes", "s", "--format", fmt))
    assert f"--format: '{fmt}'" in line and "--out" in line
    assert snapshot(fleet.state) == before  # nothing routed, nothing stored


@pytest.mark.parametrize("cubes", ["c05,,c06", "c05,c06,", ",c05,c06"])
def test_an_empty_cube_name_in_a_list_is_a_typo(fleet, cubes):
    before = snapshot(fleet.state)
    line = one_line(fleet("allocate", "s", "--shape", "4x4x8", "--cubes", cubes))
    assert "--cubes" in line and "empty" in line
    assert snapshot(fleet.state) == before
    assert fleet("allocate", "s", "--shape", "4x4x8", "--cubes", "c05,c06").code == 0


def test_a_shape_larger_than_any_pod_is_bad_input_not_a_lack_of_room(fleet):
    before = snapshot(fleet.state)
    line = one_line(fleet("allocate", "x", "--shape", "4x4x260"), 2)
    assert "65 cubes, more than a pod holds (64)" in line
    assert snapshot(fleet.state) == before
    assert fleet("allocate", "x", "--shape", "16x16x16").code == 0


@pytest.mark.parametrize(("typo", "meant"), [(("stauts",), "status"), (("shw",), "show"), (("import", "k9s"), "k8s")])
def test_one_typo_hint(fleet, typo, meant):
    line = one_line(fleet(*typo))
    assert line.count("Did you mean") == 1 and f"'{meant}'" in line


def test_topology_accepts_only_what_allocate_accepts(fleet):
    assert "2x2x1" in one_line(fleet("topology", "3x3x3"))
    assert "2x2x1" in one_line(fleet("allocate", "x", "--shape", "3x3x3"))
    assert fleet("topology", "2x2x2").code == 0


@pytest.mark.parametrize(
    "edit",
    [
        lambda d: d["summary"].update(add=1),
        lambda d: d.update(shape="4x8x4"),
        lambda d: d.update(cubes={c: xyz for c, xyz in zip(reversed(d["cubes"]), d["cubes"].values(), strict=True)}),
    ],
    ids=["summary", "shape", "cube places swapped"],
)
def test_a_plan_whose_reviewed_fields_were_edited_is_refused(fleet, tmp_path, edit):
    assert fleet("allocate", "s", "--shape", "4x4x8").code == 0
    plan = tmp_path / "p.json"
    assert fleet("plan-xconnect", "s", "--out", plan).code == 0
    doc = json.loads(plan.read_text())
    edit(doc)
    plan.write_text(json.dumps(doc))
    before = snapshot(fleet.state)
    assert "plan again" in one_line(fleet("apply-xconnect", plan), 1)
    assert snapshot(fleet.state) == before


def test_a_plan_whose_serial_was_written_as_a_float_is_bad_input(fleet, tmp_path):
    """tpufleet writes integers as integers: `"serial": 3.0` is an edit (JSON Schema alone would call it one)."""
    assert fleet("allocate", "s", "--shape", "4x4x8").code == 0
    plan = tmp_path / "p.json"
    assert fleet("plan-xconnect", "s", "--out", plan).code == 0
    doc = json.loads(plan.read_text())
    plan.write_text(json.dumps(doc).replace(f'"serial": {doc["serial"]}', f'"serial": {doc["serial"]}.0'))
    before = snapshot(fleet.state)
    line = one_line(fleet("apply-xconnect", plan), 2)
    assert str(plan) in line and "serial" in line
    assert snapshot(fleet.state) == before
    plan.write_text(json.dumps(doc))
    assert fleet("apply-xconnect", plan).code == 0


@pytest.mark.parametrize("out, said", [("", "--out: empty file name"), (".", "'.'")])
def test_an_empty_output_name_is_bad_input(fleet, out, said):
    line = one_line(fleet("routes", "s", "--out", out), 2)
    assert "--out" in line and said in line and "file name" in line


@pytest.mark.parametrize(
    "args", [("report",), ("routes", "s"), ("plan-xconnect", "s"), ("metrics",), ("export", "slices")]
)
def test_an_output_named_dash_is_bad_input_and_writes_nothing(fleet, tmp_path, monkeypatch, args):
    """'-' is the Unix habit for standard output; written as a file named '-' in the working directory, the
    output was lost where nobody looks."""
    assert fleet("allocate", "s", "--shape", "4x4x8").code == 0
    assert fleet("plan-xconnect", "s", "--apply").code == 0
    monkeypatch.chdir(tmp_path)
    before = snapshot(fleet.state)
    line = one_line(fleet(*args, "--out", "-"), 2)
    assert "--out '-'" in line and "file name" in line
    assert not (tmp_path / "-").exists() and snapshot(fleet.state) == before


def test_version_is_the_changelogs(fleet):
    import tpufleet

    assert fleet("--version", state=False).out.strip() == f"tpufleet {tpufleet.__version__}"
    changelog = (Path(__file__).parents[1] / "CHANGELOG.md").read_text()
    release = tpufleet.__version__.split(".dev")[0]
    assert f"## {release}" in changelog


@pytest.mark.parametrize(
    "args",
    [
        ["explain", "x" * 5000],
        ["release", "x" * 5000],
        ["allocate", "x" * 5000, "--shape", "4x4x4"],
        ["show", "x" * 5000],
        ["export", "x" * 5000],
        ["apply-xconnect", "x" * 5000],
        ["diff", "x" * 5000],
        ["collective", "a", "--op", "x" * 5000, "--bytes", "1GiB"],
    ],
    ids=["explain", "release", "allocate", "show", "export", "apply-xconnect", "diff", "collective"],
)
def test_messages_quote_at_most_60_characters_of_a_bad_value(fleet, args):
    r = fleet(*args)
    assert r.code in (1, 2)
    (line,) = r.err.strip().splitlines()
    assert "'" + "x" * 61 not in line and len(line) < 600  # a quoted value at most 60, a bare path at most 400


def test_the_maps_own_colours_are_stripped_off_a_terminal_not_shown_escaped(fleet, monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert fleet("allocate", "s", "--shape", "4x4x8").code == 0
    assert fleet("inject-fault", "cube:c09").code == 0
    out = fleet("show", "map").out
    assert "\x1b" not in out and "\\x1b" not in out
    assert "X" in out and "A" in out


def test_terminal_safe_keeps_colours_and_escapes_every_other_sequence():
    from tpufleet.text import terminal_safe

    assert terminal_safe("\x1b[32mA\x1b[0m \x1b[2J\x1b]0;t\x07") == "\x1b[32mA\x1b[0m \\x1b[2J\\x1b]0;t\\x07"


def test_history_of_a_name_no_slice_can_have_is_bad_input_and_a_released_slice_keeps_its_history(fleet):
    assert fleet("allocate", "gone", "--shape", "4x4x4").code == 0
    assert fleet("release", "gone").code == 0
    rows = fleet("history", "--slice", "gone", "-o", "json").json
    assert [r["summary"].split()[0] for r in rows] == ["allocate", "release"]
    for bad in ("../x", "a/b", "", "-x"):
        line = one_line(fleet("history", "--slice", bad), 2)
        assert "--slice" in line and repr(bad) in line


def test_a_profile_path_too_long_for_the_system_is_bad_input(fleet):
    """`collective --profile` probed the path with Path.exists, which raises on a name too long: exit 70."""
    line = one_line(
        fleet("collective", "--topology", "4x4", "--op", "all-reduce", "--bytes", "1MiB", "--profile", "a" * 300), 2
    )
    assert line.startswith(f"tpufleet: error: {'a' * 300}") and "cannot be read" in line  # the file named


def test_capacity_horizon_given_empty_is_bad_input(fleet):
    """An empty --horizon was taken as the 7-day default."""
    line = one_line(fleet("capacity", "--confidence", "0.95", "--horizon", ""), 2)
    assert "--horizon" in line


def test_allocate_given_a_cube_with_a_failed_optical_port_is_refused_as_wiring_would(cli):
    """`allocate --cubes` took it (exit 0) and `plan-xconnect` then refused the port; automatic allocation,
    `capacity` and `plan-spares` never count such a cube. A sub-cube slice needs no optical port."""
    assert cli("init", "--cubes-per-pod", "8").code == 0
    assert cli("inject-fault", "link:c05/x/3/out").code == 0
    before = snapshot(cli.state)
    r = cli("allocate", "z", "--shape", "4x4x4", "--cubes", "c05")
    assert r.code == 1 and "c05 has a failed or drained optical port (faults f1)" in r.err
    assert snapshot(cli.state) == before
    assert cli("allocate", "z", "--shape", "2x2x2", "--cubes", "c05").code == 0


def test_release_of_an_evicted_slice_lists_the_cube_reserved_for_its_move(fleet):
    assert fleet("allocate", "s", "--shape", "4x4x8", "--cubes", "c00,c01").code == 0
    assert fleet("inject-fault", "host:c00/3").code == 0
    reserved = state_doc(fleet.state)["slices"]["s"]["proposal"]["cubes"]
    assert "c00" not in reserved and set(reserved) - {"c01"}
    r = fleet("release", "s")
    assert r.code == 0, r.err
    back = ["c01", *sorted(set(reserved) - {"c01"})]
    assert r.out.strip() == f"released s: {','.join(back)} back in the pool; c00 still out of the pool (open faults)"


def test_release_of_a_job_lists_the_cubes_reserved_for_its_evicted_slices_moves(fleet):
    assert fleet("allocate", "j", "--shape", "4x4x4", "--slices", "2").code == 0
    cubes = {s["name"]: s["cubes"] for s in fleet("show", "slices", "-o", "json").json}
    hit = sorted(cubes)[0]
    assert fleet("inject-fault", f"cube:{cubes[hit][0]}", "--planned").code == 0
    reserved = state_doc(fleet.state)["slices"][hit]["proposal"]["cubes"]
    r = fleet("release", "j", "-o", "json")
    assert r.code == 0, r.err
    assert set(reserved) <= set(r.json["back_in_pool"]) and set(reserved) <= set(r.json["released_cubes"])
