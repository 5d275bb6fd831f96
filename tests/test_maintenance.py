"""`tpufleet plan-maintenance` on the TPU7x fixture reservation (144 sub-blocks, 2 pending maintenance drains) with
a running 12x12x24 and 16x16x16: 20 notices taken in waves with every slice moved, the plan's commands replayed
through the CLI leaving no slice evicted, an impossible set refused naming the slice (exit 1, the plan still
written), the spare target, the Markdown runbook, and malformed notices (exit 2, naming file, field and value)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
import yaml

from helpers import snapshot

FIXTURE = Path(__file__).parent.parent / "fixtures" / "gke" / "tpu7x-reservation-subblocks.json"


@pytest.fixture
def running(cli):
    """The fixture reservation imported (c40 and c99 drained for maintenance), a 12x12x24 (54 cubes: c00-c54
    without c40) and a 16x16x16 (64 cubes: c55-c118 without c99) running; 24 cubes free."""
    assert cli("init", "--generation", "tpu7x").code == 0
    assert cli("import", "reservation", FIXTURE, "--apply").code == 0
    assert cli("allocate", "a", "--shape", "12x12x24").code == 0
    assert cli("allocate", "b", "--shape", "16x16x16").code == 0
    assert cli("status", "-o", "json").json["cubes"] == {"free": 24, "allocated": 118, "out": 2}
    return cli


def notices(cubes: list[str], same_window: bool = False) -> list[dict[str, str]]:
    """One notice a day (or all in one window), 09:00 to 13:00."""
    return [
        {
            "target": f"cube:{c}",
            "window_start": f"2026-07-{1 if same_window else i + 1:02d}T09:00:00Z",
            "window_end": f"2026-07-{1 if same_window else i + 1:02d}T13:00:00Z",
        }
        for i, c in enumerate(cubes)
    ]


def write(tmp_path: Path, doc: object, name: str = "notices.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc))
    return path


TWENTY = [f"c{i:02d}" for i in range(10)] + [f"c{i}" for i in range(55, 65)]  # 10 of a's cubes, 10 of b's


@pytest.mark.slow
def test_twenty_notices_every_slice_moved_and_replay_leaves_none_evicted(running, tmp_path):
    path = write(tmp_path, list(reversed(notices(TWENTY))))  # given out of order: planned by window
    before = snapshot(running.state)
    placed = {s["name"]: s["cubes"] for s in running("show", "slices", "-o", "json").json}
    r = running("plan-maintenance", "--notices", path, "--out", tmp_path / "plan.json", "-o", "json")
    assert r.code == 0, r.err
    plan = r.json
    assert snapshot(running.state) == before  # a plan changes nothing
    assert json.loads((tmp_path / "plan.json").read_text()) == plan
    assert (plan["kind"], plan["serial"], plan["max_parallel"], plan["spares"]) == (
        "tpufleet-maintenance-plan",
        4,
        1,
        0,
    )
    assert len(plan["waves"]) == 20 and plan["moves"] == 20
    assert plan["served"] and plan["unserved"] == [] and plan["spare_shortfall_waves"] == []
    assert [w["cubes"] for w in plan["waves"]] == [[c] for c in TWENTY]
    first = plan["waves"][0]
    assert [(m["slice"], m["status"], m["cubes_out"]) for m in first["moves"]] == [("a", "moved", ["c00"])]
    assert first["free_healthy_cubes"] == 23  # 24 free, one taken by the move, c00 down
    assert first["commands"] == [
        "tpufleet inject-fault cube:c00 --planned --reason "
        "'maintenance wave 1: 2026-07-01T09:00:00Z to 2026-07-01T13:00:00Z'",
        "tpufleet reschedule a --avoid " + ",".join(TWENTY[1:]),  # the cubes later waves drain: taken last
        "tpufleet plan-xconnect a --apply",
        "tpufleet routes a",
        "tpufleet clear-fault cube:c00",
    ]
    assert [m["slice"] for w in plan["waves"] for m in w["moves"]] == ["a"] * 10 + ["b"] * 10
    assert len(plan["commands"]) == 100
    for command in plan["commands"]:
        done = running(*shlex.split(command)[1:])
        assert done.code == 0, (command, done.err)
    slices = {s["name"]: s for s in running("show", "slices", "-o", "json").json}
    assert sorted(slices) == ["a", "b"] and all(s["state"] != "evicted" for s in slices.values())
    predicted = {name: set(cubes) for name, cubes in placed.items()}
    for m in (m for w in plan["waves"] for m in w["moves"]):
        predicted[m["slice"]] = (predicted[m["slice"]] - set(m["cubes_out"])) | set(m["cubes_in"])
    assert {name: set(s["cubes"]) for name, s in slices.items()} == predicted  # moved where the plan said
    assert {f["target"] for f in running("status", "-o", "json").json["faults"]} == {"cube:c40", "cube:c99"}


def test_default_notices_are_the_imported_drains(running):
    r = running("plan-maintenance", "-o", "json")
    assert r.code == 0, r.err
    plan = r.json
    assert plan["source"] == "open maintenance drains and announced maintenance"
    assert [(w["cubes"], w["already_drained"], w["window_start"]) for w in plan["waves"]] == [
        (["c40"], ["cube:c40"], "2026-06-16T09:00:00Z"),
        (["c99"], ["cube:c99"], "2026-06-18T09:00:00Z"),
    ]
    assert plan["moves"] == 0  # the slices were placed after the drains opened
    # the reservation's drains are closed by `import reservation` once the maintenance is over, never by the plan
    assert plan["commands"] == []
    assert [w["kept_down"] for w in plan["waves"]] == [["cube:c40"], ["cube:c99"]]


def test_parallel_waves_and_overlapping_windows(running, tmp_path):
    doc = notices(["c00", "c01", "c55"], same_window=True) + notices(["c02"])[:1]
    doc[-1]["window_start"], doc[-1]["window_end"] = "2026-07-01T12:00:00Z", "2026-07-01T15:00:00Z"
    r = running("plan-maintenance", "--notices", write(tmp_path, doc), "--max-parallel", "2", "-o", "json")
    assert r.code == 0, r.err
    waves = r.json["waves"]
    assert [w["cubes"] for w in waves] == [["c00", "c01"], ["c55", "c02"]]
    assert [len(w["moves"]) for w in waves] == [1, 2]
    # wave 2 starts at 09:00, before wave 1 ends: wave 1's cubes stay out through it and clear after it
    assert waves[0]["cleared_after"] == [] and waves[1]["cleared_after"] == [
        "cube:c00",
        "cube:c01",
        "cube:c55",
        "cube:c02",
    ]
    into = {c for w in waves for m in w["moves"] for c in m["cubes_in"]}
    assert not into & {"c00", "c01", "c02", "c55"}


def test_impossible_notices_name_the_slice_and_exit_1(running, tmp_path):
    cubes = [f"c{i:02d}" for i in range(25)]  # 25 of a's cubes in one window; 24 free cubes
    out = tmp_path / "plan.json"
    path = write(tmp_path, notices(cubes, same_window=True))
    r = running("plan-maintenance", "--notices", path, "--max-parallel", "25", "--out", out, "-o", "json")
    assert r.code == 1, r.err
    plan = r.json
    assert not plan["served"] and plan["moves"] == 0
    assert [(u["wave"], u["slice"], u["notice"], u["status"]) for u in plan["unserved"]] == [
        (1, "a", "cube:c00", "unserved")
    ]
    assert "need 25 healthy free cube(s) in pod0, 24 available" in plan["unserved"][0]["reason"]
    assert "tpufleet reschedule a" not in plan["commands"]
    assert json.loads(out.read_text())["unserved"] == plan["unserved"]
    error = json.loads(r.err)  # -o json: the refusal is one JSON object on stderr, each stopped slice an item
    assert (
        error["exit_code"] == 1
        and error["items"][0].startswith("wave 1: slice a: ")
        and "25 healthy" in error["items"][0]
    )
    table = running("plan-maintenance", "--notices", path, "--max-parallel", "25")
    assert table.code == 1 and "NOT SERVED: cube:c00 (wave 1) stops slice a" in table.out
    # one at a time, each cube comes back before the next goes: served
    assert running("plan-maintenance", "--notices", write(tmp_path, notices(cubes), "seq.yaml")).code == 0


def test_a_drain_on_an_evicted_slices_reserved_move_strands_it_and_says_so(cli, tmp_path):
    """x, evicted by a host fault, has c07 reserved, the pod's only free cube: draining c07 leaves it nowhere to go.
    The plan names it (exit 1) and applying the wave is refused, its reservation kept."""
    assert cli("init", "--pods", "1", "--cubes-per-pod", "8").code == 0
    assert cli("allocate", "big", "--shape", "4x4x24").code == 0  # c00-c05
    assert cli("allocate", "x", "--shape", "4x4x4").code == 0  # c06
    assert cli("inject-fault", "host:c06/3").code == 0  # x evicted, c07 reserved for it
    out = tmp_path / "plan.json"
    r = cli("plan-maintenance", "--notices", write(tmp_path, notices(["c07"])), "--out", out, "-o", "json")
    assert r.code == 1 and not r.json["served"]
    assert [(u["slice"], u["notice"], u["status"]) for u in r.json["unserved"]] == [("x", "cube:c07", "unserved")]
    assert "its reserved move to c07 in pod0 is hit" in r.json["unserved"][0]["reason"]
    before = cli("show", "slices", "-o", "json").json
    applied = cli("apply-maintenance", out, "--wave", "1")
    assert applied.code == 1 and "stops slice 'x'" in applied.err and applied.err.count("\n") == 1
    assert applied.err.rstrip().endswith("run the wave's steps by hand (`plan-maintenance -o md`), which stop it")
    assert cli("show", "slices", "-o", "json").json == before


def test_spare_target(running, tmp_path):
    path = write(tmp_path, notices(["c00", "c01"]))
    held = running("plan-maintenance", "--notices", path, "--spares", "23", "-o", "json")
    assert held.code == 0 and [w["spares_held"] for w in held.json["waves"]] == [True, True]
    short = running("plan-maintenance", "--notices", path, "--spares", "24", "-o", "json")
    assert short.code == 1 and short.json["spare_shortfall_waves"] == [1, 2] and short.json["unserved"] == []
    # each wave's shortfall is named with its figures, not only its number
    assert (
        json.loads(short.err)["items"]
        == [
            f"wave {w}: too few spare cubes: {free} free healthy, --spares 24 wanted"
            for w, free in ((w["wave"], w["free_healthy_cubes"]) for w in short.json["waves"])
        ]
        == [
            "wave 1: too few spare cubes: 23 free healthy, --spares 24 wanted",
            "wave 2: too few spare cubes: 23 free healthy, --spares 24 wanted",
        ]
    )
    assert json.loads(short.err)["error"] == "the plan does not meet its notices: 2 wave(s) short of spares"


def test_spares_are_a_pods_and_a_cube_with_a_port_down_is_none(cli, tmp_path):
    """Draining c00 leaves pod0 no spare whether or not a drain in pod1 shares the wave; pod0's only other free
    cube has a failed optical link: a torus cannot use it, so it is no spare either."""
    assert cli("init", "--pods", "2", "--cubes-per-pod", "8").code == 0
    assert cli("allocate", "a", "--shape", "4x4x24", "--pod", "pod0").code == 0  # c00-c05: c06, c07 free
    assert cli("allocate", "b", "--shape", "4x4x8", "--pod", "pod1").code == 0  # 6 of pod1's cubes free
    assert cli("inject-fault", "link:c07/x/1/out").code == 0
    path = write(tmp_path, notices(["c00", "c08"], same_window=True))
    for parallel in ("1", "2"):
        r = cli("plan-maintenance", "--notices", path, "--max-parallel", parallel, "--spares", "1", "-o", "json")
        assert r.code == 1 and 1 in r.json["spare_shortfall_waves"], (parallel, r.json["waves"])
        assert r.json["waves"][0]["free_healthy_cubes"] == 0  # c00's slice moved onto c06: no wirable cube left
        assert r.json["waves"][0]["free_healthy_pod"] == "pod0"  # pod1 keeps 5 of its free cubes
    # in a fleet of several pods the table and the runbook say whose spares the count is
    table = cli("plan-maintenance", "--notices", path, "--max-parallel", "2", "--spares", "1")
    assert table.code == 1 and table.out.splitlines()[3].endswith("  0 in pod0 (short)"), table.out
    runbook = cli("plan-maintenance", "--notices", path, "--max-parallel", "2", "--spares", "1", "-o", "md")
    assert "; 0 free healthy cube(s) left in pod0 during it." in runbook.out, runbook.out


def test_spares_count_in_the_pod_a_move_lands_in(cli, tmp_path):
    """A wave whose move lands in another pod takes that pod's free cubes: its spares are that pod's when it has
    fewer, not only the notice's pod's (pod0 full but for the moved slice's cubes, pod1 left none)."""
    assert cli("init", "--pods", "2", "--cubes-per-pod", "8").code == 0
    assert cli("allocate", "a", "--shape", "4x4x8", "--pod", "pod0").code == 0  # c00, c01
    assert cli("allocate", "fill", "--shape", "4x4x24", "--pod", "pod0").code == 0  # c02-c07: pod0 full
    assert cli("allocate", "b", "--shape", "4x4x24", "--pod", "pod1").code == 0  # 2 of pod1's cubes free
    r = cli("plan-maintenance", "--notices", write(tmp_path, notices(["c00"])), "--spares", "1", "-o", "json")
    (move,) = r.json["waves"][0]["moves"]
    assert move["to_pod"] == "pod1" and len(move["cubes_in"]) == 2
    wave = r.json["waves"][0]
    assert (wave["free_healthy_cubes"], wave["free_healthy_pod"]) == (0, "pod1")  # pod0 keeps c01
    assert r.code == 1 and r.json["spare_shortfall_waves"] == [1] and wave["spares_held"] is False


def test_one_pods_spares_are_not_named_by_pod(running, tmp_path):
    r = running("plan-maintenance", "--notices", write(tmp_path, notices(["c00"])), "--spares", "23")
    assert r.code == 0 and r.out.splitlines()[3].endswith("  23"), r.out
    runbook = running("plan-maintenance", "--notices", write(tmp_path, notices(["c00"])), "-o", "md")
    assert "; 23 free healthy cube(s) left during it." in runbook.out, runbook.out


def test_markdown_runbook(running, tmp_path):
    r = running("plan-maintenance", "--notices", write(tmp_path, notices(["c00", "c60"])), "-o", "md")
    assert r.code == 0, r.err
    assert r.out.startswith("# Maintenance runbook (state serial 4, ")
    assert "## Wave 1: c00" in r.out and "## Wave 2: c60" in r.out
    assert "2. `tpufleet reschedule a --avoid c60`" in r.out and "3. `tpufleet plan-xconnect a --apply`" in r.out
    assert "4. `tpufleet routes a`" in r.out
    assert "5. After the window ends: `tpufleet clear-fault cube:c00`" in r.out
    assert "1. `tpufleet inject-fault cube:c60 --planned --reason" in r.out


@pytest.mark.parametrize(
    ("doc", "said"),
    [
        (
            [{"target": "host:c01/3", "window_start": "2026-07-01T09:00:00Z", "window_end": "2026-07-01T10:00:00Z"}],
            "notice 1: field target: 'host:c01/3'",
        ),
        (
            [{"target": "cube:c999", "window_start": "2026-07-01T09:00:00Z", "window_end": "2026-07-01T10:00:00Z"}],
            "field target: 'cube:c999'",
        ),
        (
            [{"target": "cube:c01", "window_start": "soon", "window_end": "2026-07-01T10:00:00Z"}],
            "field window_start: 'soon'",
        ),
        (
            [{"target": "cube:c01", "window_start": "2026-07-01T09:00:00Z", "window_end": "2026-07-01T08:00:00Z"}],
            "field window_end",
        ),
        ([{"target": "cube:c01", "window_start": "2026-07-01T09:00:00Z"}], "field window_end: is required"),
        ([{"window_start": "2026-07-01T09:00:00Z", "window_end": "2026-07-01T10:00:00Z"}], "field target: is required"),
        (
            [{"target": "cube:c01", "window_start": None, "window_end": "2026-07-01T10:00:00Z"}],
            "field window_start: None is not",
        ),
        (
            [
                {
                    "target": "cube:c01",
                    "window_start": "2026-07-01T09:00:00Z",
                    "window_end": "2026-07-01T10:00:00Z",
                    "when": 1,
                }
            ],
            "field 'when'",
        ),
        (notices(["c01", "c01"]), "notice 2: field target: cube:c01 is given twice"),
        ([], "non-empty list"),
        ({"notice": []}, "non-empty list"),
        (["cube:c01"], "notice 1: 'cube:c01' is not a mapping"),
    ],
)
def test_bad_notices_exit_2(running, tmp_path, doc, said):
    before = snapshot(running.state)
    path = write(tmp_path, doc)
    r = running("plan-maintenance", "--notices", path)
    assert r.code == 2, r.out
    assert str(path) in r.err and said in r.err
    assert snapshot(running.state) == before


@pytest.mark.parametrize(
    ("target", "meant"),
    [
        ("c05", "did you mean cube:c05?"),
        ("cube:c5", "did you mean cube:c05?"),
        ("CUBE:C05", "did you mean cube:c05?"),
        ("host:c05/3", "did you mean cube:c05? (a notice drains a whole cube)"),
        ("link:c05/x/1/in", "did you mean cube:c05? (a notice drains a whole cube)"),
        ("c999", None),
        ("ocs:pod0/x/1", None),
    ],
)
def test_a_notice_target_naming_a_cube_another_way_is_told_the_cube(running, tmp_path, target, meant):
    """A notice's target typed as `c05` (its kind left out) was told "'c05' is not a cube of the fleet": c05 is one.
    As every id typed another way, it is refused naming the cube it may mean; a part of a cube names its cube."""
    before = snapshot(running.state)
    doc = [{"target": target, "window_start": "2026-07-01T09:00:00Z", "window_end": "2026-07-01T10:00:00Z"}]
    r = running("plan-maintenance", "--notices", write(tmp_path, doc))
    assert r.code == 2 and r.err.count("\n") == 1, r.err
    assert (meant in r.err) if meant else ("did you mean" not in r.err), r.err
    assert snapshot(running.state) == before


@pytest.mark.parametrize(
    ("line", "said"),
    [
        (
            "- {target: cube:c01, window_start: 2026-02-30T13:00:00Z, window_end: 2026-03-01T13:00:00Z}",
            "notice 1: field window_start: '2026-02-30T13:00:00Z'",
        ),
        (
            "- {target: cube:c01, window_start: 2026-02-27T13:00:00Z, window_end: 2026-02-29T13:00:00Z}",
            "notice 1: field window_end: '2026-02-29T13:00:00Z'",  # 2026 is no leap year
        ),
        # a NaN or infinity was named `field 0.window_start` by the file reader (the item 0-based)
        (
            "- {target: cube:c01, window_start: .nan, window_end: 2026-07-01T10:00:00Z}",
            "notice 1: field window_start: .nan is not ",
        ),
        (
            "- {target: cube:c01, window_start: 2026-07-01T09:00:00Z, window_end: .inf}",
            "notice 1: field window_end: .inf is not ",
        ),
        (
            "- {target: cube:c01, window_start: -.inf, window_end: 2026-07-01T10:00:00Z}",
            "notice 1: field window_start: -.inf is not ",
        ),
        (
            "- {target: .nan, window_start: 2026-07-01T09:00:00Z, window_end: 2026-07-01T10:00:00Z}",
            "notice 1: field target: .nan is not ",
        ),
    ],
)
def test_a_bad_value_is_named_by_notice_and_field(running, tmp_path, line, said):
    before = snapshot(running.state)
    path = tmp_path / "notices.yaml"
    path.write_text(line + "\n")
    r = running("plan-maintenance", "--notices", path)
    assert r.code == 2 and r.err.count("\n") == 1 and f"{path}: {said}" in r.err
    assert snapshot(running.state) == before


def test_unquoted_times_are_read_as_quoted_ones(running, tmp_path):
    path = tmp_path / "notices.yaml"
    path.write_text("- {target: cube:c01, window_start: 2026-07-01T09:00:00Z, window_end: 2026-07-01 13:00:00+02:00}\n")
    plan = running("plan-maintenance", "--notices", path, "-o", "json").json
    assert plan["notices"][0]["window_start"] == "2026-07-01T09:00:00Z"
    assert plan["notices"][0]["window_end"] == "2026-07-01T11:00:00Z"


def test_bad_files_and_options_exit_2(running, tmp_path):
    missing = running("plan-maintenance", "--notices", tmp_path / "nope.yaml")
    assert missing.code == 2 and "nope.yaml" in missing.err
    bad = tmp_path / "bad.yaml"
    bad.write_text("- {target: [")
    assert running("plan-maintenance", "--notices", bad).code == 2
    assert running("plan-maintenance", "--max-parallel", "0").code == 2
    assert running("plan-maintenance", "-o", "csv").code == 2
    assert running("plan-maintenance", "--out", tmp_path / "no" / "plan.json").code == 2


def test_a_window_within_one_second_plans_and_a_refused_one_is_named_as_written(running, tmp_path):
    start, end = "2026-07-01T09:00:00.5Z", "2026-07-01T09:00:00.6Z"
    path = write(tmp_path, [{"target": "cube:c01", "window_start": start, "window_end": end}])
    out = tmp_path / "plan.json"
    r = running("plan-maintenance", "--notices", path, "--out", out, "-o", "json")
    assert r.code == 0, r.err
    assert r.json["waves"][0]["window_start"] == r.json["waves"][0]["window_end"] == "2026-07-01T09:00:00Z"
    assert running("apply-maintenance", out, "--wave", "1", "--dry-run").code == 0
    before = snapshot(running.state)
    path = write(tmp_path, [{"target": "cube:c01", "window_start": end, "window_end": start}])
    r = running("plan-maintenance", "--notices", path)
    assert r.code == 2 and f"notice 1: field window_end: {start!r} is not after window_start {end!r}" in r.err
    assert snapshot(running.state) == before


def test_markdown_runbook_shows_the_notices_file_name_as_text(running, tmp_path):
    """The notices' file name went into the runbook's heading as Markdown: `[x](url)` a link, `*x*` emphasis."""
    name = "n_[x](http:h)_*y*.yaml"
    r = running("plan-maintenance", "--notices", write(tmp_path, notices(["c00"]), name), "-o", "md")
    assert r.code == 0, r.err
    markdown_it = pytest.importorskip("markdown_it")
    page = markdown_it.MarkdownIt("commonmark").render(r.out)
    assert "<a " not in page and "<em>" not in page
    assert name in page.splitlines()[0]  # the heading
    assert "<code>tpufleet reschedule a</code>" in page


def test_a_runbook_of_waves_already_drained_says_there_is_nothing_to_run(running):
    """The reservation's drains are open already and no slice is on them: a wave's list of commands was empty, an
    empty list and a second blank line under the wave; it says there is nothing to run."""
    md = running("plan-maintenance", "-o", "md").out
    assert "\n\n\n" not in md.rstrip("\n")
    waves = md.split("\n## Wave ")[1:]
    assert len(waves) == 2 and all(w.rstrip("\n").endswith("\n- nothing to run in this wave") for w in waves)


def test_a_notice_from_a_reservations_open_drain_is_named_by_its_sub_block(reserved, tmp_path):
    """The default notices are named by their sub-blocks: the reservation's open drains (c40, c99) as well as the
    maintenance it announced for later."""
    named = {
        f"cube:{r['cube']}": r["sub_block"] for r in reserved("status", "-o", "json").json["reservation"]["maintenance"]
    }
    plan = reserved("plan-maintenance", "--out", tmp_path / "plan.json", "-o", "json")
    assert plan.code == 0, plan.err
    given = {n["target"]: (n.get("sub_block"), n["open_drain"] is not None) for n in plan.json["notices"]}
    assert given == {t: (sub_block, True) for t, sub_block in named.items()} and len(given) == 2
    assert f"sub-block {named['cube:c40']} is cube c40" in reserved("plan-maintenance").out
    assert reserved("apply-maintenance", tmp_path / "plan.json", "--wave", "1", "--dry-run").code == 0
