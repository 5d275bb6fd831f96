"""Planning and simulation commands reviewed as an operator and an attacker would use them: each test names the
command that showed the defect and asserts tpufleet's own contract (exit code, the field and value named)."""

from __future__ import annotations

from pathlib import Path

import pytest

WORKLOAD = """schema_version: 1
arrival_rate_per_hour: 1.6
duration_hours: {median: 5.0, sigma: 1.0, max: 96.0}
shapes:
  - {shape: 4x4x4, weight: 1}
phases: {training: 1, trainign: 1}
"""


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize(
    ("simulation", "fixed", "field", "problem"),
    [
        ("fleet", "fault_scale: -1", "fixed.fault_scale", "bigger than or equal to 0 (value -1)"),
        ("fleet", "fault_scale: {host: -1}", "fixed.fault_scale.host", "bigger than or equal to 0 (value -1)"),
        ("fleet", "fault_scale: x", "fixed.fault_scale", "must be a number or a mapping (value 'x')"),
        ("availability", "cubes: [1, 0]", "fixed.cubes.1", "bigger than or equal to 1 (value 0)"),
        ("availability", "cubes: 2.5", "fixed.cubes", "must be an integer or a list (value 2.5)"),
    ],
)
def test_a_sweep_value_none_of_a_fields_forms_takes_says_what_is_wrong(
    cli, tmp_path: Path, simulation: str, fixed: str, field: str, problem: str
) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        f"schema_version: 1\nsimulation: {simulation}\nseeds: 1\nfixed: {{{fixed}}}\ngrid: {{generation: [tpu-v4]}}\n"
    )
    r = cli("sweep", str(spec), "--out", str(tmp_path / "out"), "--serial")
    assert r.code == 2, r.err
    line = one_line(r.err)
    assert f"field {field}: " in line and line.endswith(problem), line
    assert "definition" not in line
    assert not (tmp_path / "out").exists()


def test_a_workload_key_outside_a_fields_names_is_named_with_the_names_it_takes(cli, tmp_path: Path) -> None:
    workload = tmp_path / "w.yaml"
    workload.write_text(WORKLOAD)
    r = cli("simulate-fleet", "--days", "1", "--workload", str(workload))
    assert r.code == 2, r.err
    line = one_line(r.err)
    assert "field phases: key 'trainign' is not accepted" in line, line
    assert "bulk_inference" in line and "definition" not in line, line


def test_plan_spares_names_the_ocs_down_now_that_holds_a_rigid_slice_at_zero(fleet) -> None:
    """`plan-spares` with an OCS down and a slice without fault-tolerant routing: P 0 at any spare count, and the
    note blamed "the OCS term", which reads as a small risk, not as the switch to repair first."""
    assert fleet("allocate", "ft", "--shape", "4x4x8").code == 0
    assert fleet("inject-fault", "ocs:pod0/y/2").code == 0
    # allocated while the OCS is down (no pod has every OCS up): wired after the repair, running meanwhile
    assert fleet("allocate", "rigid", "--shape", "4x4x4", "--no-fault-tolerant-routing").code == 0
    (pod,) = fleet("plan-spares", "-o", "json").json["pods"]
    assert pod["ocs_all_up"] == 0.0 and pod["spares"] is None
    assert "ocs:pod0/y/2 down now" in pod["note"] and "rigid" in pod["note"] and "ft " not in pod["note"]
    assert "OCS term" not in pod["note"]
    r = fleet("plan-spares")
    assert r.code == 0 and "ocs:pod0/y/2 down now" in r.out


def test_allocate_cubes_of_one_pod_against_another_pod_names_the_pod_they_are_in(cli) -> None:
    """`allocate --cubes c00,c01 --pod pod1` said "a slice's cubes must all be in one pod (pod1)": they are, in
    pod0; the message now says whose cubes they are, and for cubes of two pods which are where."""
    assert cli("init", "--pods", "2").code == 0
    r = cli("allocate", "s", "--shape", "4x4x8", "--cubes", "c00,c01", "--pod", "pod1")
    assert r.code == 2 and "not in --pod pod1 (c00, c01 in pod0)" in one_line(r.err), r.err
    r = cli("allocate", "s", "--shape", "4x4x8", "--cubes", "c00,c64")
    assert r.code == 2 and "one pod (c00 in pod0; c64 in pod1)" in one_line(r.err), r.err
    assert cli("show", "slices", "-o", "json").json == []


def test_plan_spares_slices_says_a_pod_runs_none_of_them_not_that_it_runs_none(cli) -> None:
    """`plan-spares --slices a` on two pods: pod1, running its own slice b, was said to have "no running slices"."""
    assert cli("init", "--pods", "2").code == 0
    assert cli("allocate", "a", "--shape", "4x4x4", "--pod", "pod0").code == 0
    assert cli("allocate", "b", "--shape", "4x4x4", "--pod", "pod1").code == 0
    pods = {p["pod"]: p for p in cli("plan-spares", "--slices", "a", "-o", "json").json["pods"]}
    assert pods["pod0"]["slices"] == ["a"] and pods["pod1"]["slices"] == []
    assert "no running slices" not in pods["pod1"]["note"] and "--slices" in pods["pod1"]["note"]
    bare = {p["pod"]: p for p in cli("plan-spares", "-o", "json").json["pods"]}
    assert bare["pod1"]["slices"] == ["b"] and bare["pod1"]["note"] is None


SUB_CUBE_WORKLOAD = """schema_version: 1
arrival_rate_per_hour: 1.6
duration_hours: {median: 5.0, sigma: 1.0, max: 96.0}
shapes:
  - {shape: 2x2x1, weight: 1}
  - {shape: 2x4x4, weight: 1}
"""


def test_a_sub_cube_job_hit_by_a_machine_fault_in_a_static_pod_moves_as_it_needs_no_wiring(cli, tmp_path: Path) -> None:
    """`static` kept every job a machine fault hit on its block until the repair (8 h), sub-cube ones too, which
    need no optical wiring: their restart wait was the whole repair on an almost empty pod. They move as in the
    reconfigurable mode now: the same restart waits and disruptions, seed for seed."""
    workload = tmp_path / "w.yaml"
    workload.write_text(SUB_CUBE_WORKLOAD)
    runs = {}
    for mode in ("static", "reconfigurable"):
        args = ("simulate-fleet", "--days", "5", "--mode", mode, "--workload", workload, "--fault-scale", "host=20")
        r = cli(*args, "--seed", "1", "-o", "json", state=False)
        assert r.code == 0, r.err
        runs[mode] = r.json
    assert runs["static"]["disruptions"]["failure"] == 2  # the faults hit jobs: the case is exercised
    assert runs["static"]["restart_wait_hours"] == runs["reconfigurable"]["restart_wait_hours"] == {"small": 0.0}
