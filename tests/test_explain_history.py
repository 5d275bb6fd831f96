"""`explain`, `history` and `diff` through the CLI, checked against what other commands show."""

from __future__ import annotations

import json
import shlex

import pytest

from helpers import one_line
from tpufleet.text import share_text


def _ok(cli, *args):
    r = cli(*args)
    assert r.code == 0, (args, r.err)
    return r


def _snapshot(cli):
    slices = {s["name"]: s for s in _ok(cli, "show", "slices", "-o", "json").json}
    faults = {f["id"]: f for f in _ok(cli, "faults", "--all", "-o", "json").json}
    ocs = {o["id"]: {tuple(p) for p in o["xconnects"]} for o in _ok(cli, "show", "ocs", "-o", "json").json}
    return slices, faults, ocs


@pytest.fixture
def story(fleet):
    """Serial 1 init; 2 allocate a; 3 wire a; 4 allocate b; 5 wire b."""
    _ok(fleet, "allocate", "a", "--shape", "4x4x8")
    _ok(fleet, "plan-xconnect", "a", "--apply")
    _ok(fleet, "allocate", "b", "--shape", "4x4x4")
    _ok(fleet, "plan-xconnect", "b", "--apply")
    return fleet


def test_diff_agrees_with_state_snapshots(story):
    s0, f0, o0 = _snapshot(story)  # at serial 5
    _ok(story, "inject-fault", "ocs:pod0/y/4")
    _ok(story, "release", "b")
    _ok(story, "allocate", "c", "--shape", "4x4x4", "--cubes", "c10")
    _ok(story, "plan-xconnect", "c", "--apply")
    s1, f1, o1 = _snapshot(story)
    d = _ok(story, "diff", "5", "-o", "json").json
    assert (d["from"], d["to"], d["commits"], d["without_detail"]) == (5, 9, 4, [])
    assert d["slices"]["added"] == sorted(s1.keys() - s0.keys()) == ["c"]
    assert d["slices"]["removed"] == sorted(s0.keys() - s1.keys()) == ["b"]
    changed = {n for n in s0.keys() & s1.keys() if s0[n]["state"] != s1[n]["state"]}
    assert set(d["slices"]["changed"]) == changed == {"a"}
    assert d["slices"]["changed"]["a"]["state"] == [s0["a"]["state"], s1["a"]["state"]]
    assert [f["id"] for f in d["faults"]["opened"]] == sorted(f1.keys() - f0.keys())
    expected_ocs = {k: (o1[k] - o0[k], o0[k] - o1[k]) for k in o0 if o0[k] != o1[k]}
    got = {f"ocs:{k}": ({tuple(p) for p in c["add"]}, {tuple(p) for p in c["remove"]}) for k, c in d["ocs"].items()}
    assert got == expected_ocs and expected_ocs  # wiring c on c10 added cross-connects


def test_diff_nets_out_changes_undone_within_the_range(story):
    _ok(story, "allocate", "t", "--shape", "4x4x4")
    _ok(story, "release", "t")
    d = _ok(story, "diff", "5", "-o", "json").json
    assert d["slices"] == {"added": [], "removed": [], "changed": {}} and d["commits"] == 2


def test_diff_refuses_serials_out_of_range(story):
    r = story("diff", "4", "99")
    assert r.code == 2 and "current serial" in r.err


@pytest.mark.parametrize("since", ["6", "99"])
def test_history_since_a_serial_past_the_current_is_refused_as_diff_refuses_it(story, since):
    assert story("diff", since).code == 2
    r = story("history", "--since", since)
    assert r.code == 2 and r.out == ""
    assert one_line(r) == f"tpufleet: error: bad option --since '{since}': need SERIAL <= 5 (the current serial)"
    assert [row["serial"] for row in _ok(story, "history", "--since", "5", "-o", "json").json] == [5]


def test_every_view_of_the_journal_names_its_summary_as_the_json_does(story):
    """`show journal` headed the column `summary`, as the JSON names the field; `history` and `report` said `change`."""
    assert "summary" in _ok(story, "history", "-o", "json").json[0]
    header = _ok(story, "show", "journal").out.splitlines()[0]
    assert header.split() == ["serial", "time", "(UTC)", "user", "summary"]
    assert _ok(story, "history").out.splitlines()[0] == header
    report = _ok(story, "report").out.splitlines()
    assert report[report.index("latest changes:") + 1] == header
    md = _ok(story, "report", "-o", "md").out.splitlines()
    cells = [cell.strip() for cell in md[md.index("## Latest changes") + 2].strip("|").split("|")]
    assert cells == ["serial", "time (UTC)", "user", "summary"]
    assert "<th>user</th><th>summary</th>" in _ok(story, "report", "-o", "html").out


def test_history_filters(story):
    rows = _ok(story, "history", "-o", "json").json
    assert [r["serial"] for r in rows] == [1, 2, 3, 4, 5]
    assert [r["serial"] for r in _ok(story, "history", "--since", "4", "-o", "json").json] == [4, 5]
    assert [r["serial"] for r in _ok(story, "history", "--slice", "b", "-o", "json").json] == [4, 5]
    assert len(_ok(story, "history", "--since", "1h", "-o", "json").json) == 5
    assert _ok(story, "history", "--since", "2999-01-01", "-o", "json").json == []
    assert len(_ok(story, "history", "--since", "2000-01-01T00:00+05:00", "-o", "json").json) == 5
    bad = story("history", "--since", "last tuesday")
    assert bad.code == 2 and "--since" in bad.err and "7d" in bad.err


def test_explain_evicted_slice_names_the_reschedule_target(fleet):
    _ok(fleet, "allocate", "s", "--shape", "4x4x8")
    _ok(fleet, "plan-xconnect", "s", "--apply")
    cube = _ok(fleet, "show", "slices", "-o", "json").json[0]["cubes"][0]
    _ok(fleet, "inject-fault", f"cube:{cube}")
    e = _ok(fleet, "explain", "s", "-o", "json").json
    proposal = _ok(fleet, "show", "slices", "-o", "json").json[0]["proposal"]
    assert e["state"] == "evicted" and e["next"] == ["tpufleet reschedule s", "tpufleet routes s"]
    assert f"reschedule would move it to cubes {', '.join(proposal['cubes'])}" in " ".join(e["why"])
    assert [f["target"] for f in e["faults"]] == [f"cube:{cube}"]
    _ok(fleet, "reschedule", "s")
    assert _ok(fleet, "show", "slices", "-o", "json").json[0]["cubes"] == proposal["cubes"]


def test_explain_pending_slice_names_the_blocking_ocs(fleet):
    _ok(fleet, "inject-fault", "ocs:pod0/z/5")
    _ok(fleet, "allocate", "s", "--shape", "8x8x8", "--no-fault-tolerant-routing")
    e = _ok(fleet, "explain", "s", "-o", "json").json
    text = " ".join(e["why"])
    assert e["state"] == "allocated" and "cannot be wired" in text and "ocs:pod0/z/5" in text
    assert "`tpufleet policy s --fault-tolerant-routing`" in text and e["next"][0] == "tpufleet clear-fault f1"
    assert not any("policy" in step for step in e["next"])  # another way, not a step to run after the clear
    _ok(fleet, "policy", "s", "--fault-tolerant-routing")
    # wired and routed around the OCS now; once it is repaired, its deferred cross-connects and tables again
    steps = _ok(fleet, "explain", "s", "-o", "json").json["next"]
    assert steps == [
        "tpufleet plan-xconnect s --apply",
        "tpufleet routes s",
        "tpufleet clear-fault f1",
        "tpufleet plan-xconnect s --apply",
        "tpufleet routes s",
    ]
    for step in steps:
        _ok(fleet, *shlex.split(step)[1:])
    row = _ok(fleet, "show", "slices", "-o", "json").json[0]
    assert (row["state"], row["routes"], row["missing_xconnects"]) == ("connected", "fresh", 0)


def test_explain_degraded_slice_matches_show_slices(fleet):
    _ok(fleet, "allocate", "s", "--shape", "8x8x8")
    _ok(fleet, "plan-xconnect", "s", "--apply")
    _ok(fleet, "inject-fault", "ocs:pod0/x/6")
    e = _ok(fleet, "explain", "s", "-o", "json").json
    shown = _ok(fleet, "show", "slices", "-o", "json").json[0]["degraded"]
    assert e["state"] == "degraded" and e["degraded"] == shown
    assert f"keeps {share_text(shown['all_to_all_retained'])}" in e["why"][0]
    # no tables stored yet: routed now around the fault, and again once it is cleared; no reschedule
    assert e["next"] == ["tpufleet routes s", "tpufleet clear-fault f1", "tpufleet routes s"]
    _ok(fleet, "routes", "s")
    _ok(fleet, "clear-fault", "f1")
    e = _ok(fleet, "explain", "s", "-o", "json").json
    assert "its routing tables are stale (fault cleared" in " ".join(e["why"]) or e["routes"] == "fresh"


def test_explain_component_lists_dependants(story):
    _ok(story, "routes", "a")
    a_cube = _ok(story, "show", "slices", "-o", "json").json[0]["cubes"][0]
    e = _ok(story, "explain", f"cube:{a_cube}", "-o", "json").json
    assert (e["state"], e["slices"], e["tables"], e["faults"]) == ("healthy", ["a"], ["a"], [])
    ocs = _ok(story, "explain", "ocs:pod0/x/0", "-o", "json").json
    assert ocs["slices"] == ["a", "b"] and ocs["tables"] == ["a"]
    free = _ok(story, "explain", "cube:c63", "-o", "json").json
    assert free["slices"] == [] and free["next"] == []
    assert free["why"] == ["`tpufleet inject-fault cube:c63 --dry-run` shows what a failure here would do"]


@pytest.mark.parametrize(
    "what, code, text", [("nope", 1, "unknown slice"), ("cube:c99", 2, "c99"), ("ocs:pod7/x/1", 2, "pod7")]
)
def test_explain_unknown_things(fleet, what, code, text):
    r = fleet("-o", "json", "explain", what)
    assert r.code == code and text in json.loads(r.err)["error"]


def test_diff_shows_a_slice_made_again_under_its_name(fleet):
    _ok(fleet, "allocate", "x", "--shape", "4x4x8")
    _ok(fleet, "release", "x")
    _ok(fleet, "allocate", "x", "--shape", "4x4x4", "--cubes", "c20")
    d = _ok(fleet, "diff", "1", "-o", "json").json
    assert d["slices"]["added"] == ["x"] and d["slices"]["changed"] == {}
    d = _ok(fleet, "diff", "2", "-o", "json").json
    assert d["slices"]["added"] == [] and d["slices"]["removed"] == []
    assert d["slices"]["changed"]["x"]["shape"] == ["4x4x8", "4x4x4"]
    assert d["slices"]["changed"]["x"]["cubes"] == [["c00", "c01"], ["c20"]]


def test_diff_across_init_force_shows_what_was_replaced(fleet):
    _ok(fleet, "allocate", "a", "--shape", "4x4x4")
    _ok(fleet, "plan-xconnect", "a", "--apply")
    _ok(fleet, "init", "--force")
    d = _ok(fleet, "diff", "3", "-o", "json").json
    assert d["slices"]["removed"] == ["a"] and d["ocs"] and all(not c["add"] for c in d["ocs"].values())


def _rewrite_journal(state, change):
    path = state / "journal.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps(change(e)) + "\n" for e in lines))


@pytest.mark.parametrize("bad", ["²", "0001-01-01T00:00+01:00", "9" * 30])
def test_history_since_out_of_range_is_bad_input(fleet, bad):
    r = fleet("history", "--since", bad)
    assert r.code == 2 and r.err.startswith("tpufleet: error: bad option --since")


@pytest.mark.parametrize("damage", [{}, None, "x", {"slices": []}])
def test_damaged_deltas_count_as_without_detail(story, damage):
    _rewrite_journal(story.state, lambda e: {**e, "delta": damage} if e["serial"] == 3 else e)
    d = _ok(story, "diff", "1", "-o", "json").json
    assert d["without_detail"] == [3] and d["slices"]["added"] == ["a", "b"]
    assert [r["serial"] for r in _ok(story, "history", "--slice", "a", "-o", "json").json] == [2, 3]


def test_history_of_a_slice_in_older_journals(story):
    _rewrite_journal(story.state, lambda e: {k: v for k, v in e.items() if k != "delta"})
    assert [r["serial"] for r in _ok(story, "history", "--slice", "a", "-o", "json").json] == [2, 3]
    assert _ok(story, "history", "--slice", "x", "-o", "json").json == []  # "init: 1 pod(s) x 64 cubes" is not x
    assert _ok(story, "diff", "1", "-o", "json").json["without_detail"] == [2, 3, 4, 5]


def test_damaged_journal_lines_are_named(story):
    path = story.state / "journal.jsonl"
    lines = path.read_text().splitlines()
    lines[2] = "not json"
    path.write_text("\n".join(lines) + "\n")
    r = story("history")
    assert r.code == 0 and "damaged line(s) 3 skipped" in r.err
    assert "damaged line(s) 3" in story("diff", "1").err


def test_explain_next_steps_are_commands_that_work(fleet):
    """Every `next` entry is a bare command, and running the first one is accepted."""
    _ok(fleet, "allocate", "s", "--shape", "4x4x8")
    _ok(fleet, "plan-xconnect", "s", "--apply")
    _ok(fleet, "inject-fault", "ocs:pod0/z/7")  # one pod: the evicted... or degraded slice has nowhere to go
    e = _ok(fleet, "explain", "s", "-o", "json").json
    assert all(step.startswith("tpufleet ") and "#" not in step for step in e["next"])
    assert "reschedule" not in " ".join(e["next"]) or e["state"] == "evicted"


def test_explain_evicted_without_a_replacement_then_after_repair(fleet):
    _ok(fleet, "allocate", "s", "--shape", "4x4x8", "--no-fault-tolerant-routing")
    _ok(fleet, "plan-xconnect", "s", "--apply")
    _ok(fleet, "inject-fault", "ocs:pod0/z/7")
    e = _ok(fleet, "explain", "s", "-o", "json").json
    assert e["state"] == "evicted" and e["next"] == [
        "tpufleet clear-fault f1",
        "tpufleet reschedule s",
        "tpufleet routes s",
    ]
    assert "reschedule cannot move it yet" in " ".join(e["why"])
    _ok(fleet, "clear-fault", "f1")
    e = _ok(fleet, "explain", "s", "-o", "json").json
    assert e["next"] == ["tpufleet reschedule s", "tpufleet routes s"] and "fault f1 is cleared" in " ".join(e["why"])
    _ok(fleet, *e["next"][0].split()[1:])


def test_explain_sub_cube_slice_names_the_fault_under_it(fleet):
    _ok(fleet, "allocate", "b", "--shape", "2x2x2")
    machines = _ok(fleet, "show", "slices", "-o", "json").json[0]["machines"]
    _ok(fleet, "inject-fault", "ocs:pod0/x/5")
    e = _ok(fleet, "explain", "b", "-o", "json").json
    assert e["faults"] == [] and "no cross-connects needed" in e["why"][0]
    _ok(fleet, "inject-fault", f"host:c00/{machines[0]}")
    e = _ok(fleet, "explain", "b", "-o", "json").json
    assert [f["target"] for f in e["faults"]] == [f"host:c00/{machines[0]}"]
    assert "cannot be wired" not in " ".join(e["why"])


def test_explain_components_inside_failed_ones(fleet):
    _ok(fleet, "allocate", "whole", "--shape", "4x4x4", "--cubes", "c05")
    _ok(fleet, "allocate", "part", "--shape", "2x2x1")
    part_machine = _ok(fleet, "show", "slices", "-o", "json").json[0]["machines"][0]
    _ok(fleet, "inject-fault", "host:c04/3")
    _ok(fleet, "inject-fault", "ocs:pod0/x/5")
    _ok(fleet, "inject-fault", "host:c06/1", "--planned")
    chip = _ok(fleet, "explain", "chip:c04/2,2,0", "-o", "json").json  # machine 4*0 + 2*(2//2) + 2//2 = 3
    assert chip["state"] == "failed with host:c04/3" and [f["id"] for f in chip["faults"]] == ["f1"]
    link = _ok(fleet, "explain", "link:c05/x/5/out", "-o", "json").json
    assert link["state"] == "failed with ocs:pod0/x/5" and link["slices"] == ["whole"]
    assert _ok(fleet, "explain", "host:c06/1", "-o", "json").json["state"] == "drained"
    cube = _ok(fleet, "explain", "cube:c06", "-o", "json").json
    assert cube["state"] == "out of the pool: host:c06/1 drained" and cube["next"] == ["tpufleet clear-fault f3"]
    holder = _ok(fleet, "show", "slices", "-o", "json").json
    part_cube = next(s["cubes"][0] for s in holder if s["name"] == "part")
    other = next(m for m in range(16) if m != part_machine)
    assert _ok(fleet, "explain", f"host:{part_cube}/{other}", "-o", "json").json["slices"] == []
    assert _ok(fleet, "explain", f"host:{part_cube}/{part_machine}", "-o", "json").json["slices"] == ["part"]


def test_explain_a_job_and_its_slices(fleet):
    _ok(fleet, "allocate", "j", "--shape", "4x4x4", "--slices", "2")
    job = _ok(fleet, "explain", "j", "-o", "json").json
    assert job["kind"] == "job" and job["name"] == "j" and job["total_slices"] == 2
    part = _ok(fleet, "explain", "j-0", "-o", "json").json
    assert part["job"] == "j" and "j" in part["why"][0]
    assert all(step.startswith("tpufleet ") for step in job["next"] + part["next"])
    legend = _ok(fleet, "show", "map", "-o", "json").json["legend"]
    assert {e["slice"]: e["job"] for e in legend} == {"j-0": "j", "j-1": "j"}


@pytest.mark.parametrize("routes", [{"stored": 5}, {"stale": None}, {"dropped": 5}, [1]])
def test_a_delta_with_mistyped_routes_counts_as_without_detail(story, routes):
    """`history --slice` read a mistyped `routes` field and exited 70."""
    _rewrite_journal(story.state, lambda e: {**e, "delta": {**e["delta"], "routes": routes}} if e["serial"] == 3 else e)
    assert _ok(story, "diff", "1", "-o", "json").json["without_detail"] == [3]
    assert [r["serial"] for r in _ok(story, "history", "--slice", "a", "-o", "json").json] == [2, 3]


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_a_journal_line_nested_past_the_input_limit_is_a_damaged_line(story, fmt):
    """600 levels of `details` made `history -o json` and `show journal -o yaml` exit 70 (the writers recurse)."""
    deep: object = []
    for _ in range(600):
        deep = [deep]
    _rewrite_journal(story.state, lambda e: {**e, "details": {"deep": deep}} if e["serial"] == 3 else e)
    for args in (("history",), ("show", "journal")):
        r = story(*args, "-o", fmt)
        assert r.code == 0 and "damaged line(s) 3 skipped" in r.err, r.err
        assert 3 not in [row["serial"] for row in (r.json if fmt == "json" else __import__("yaml").safe_load(r.out))]


def test_explain_an_electrical_link_by_either_name_and_every_slice_behind_it(cli):
    """The cable between machines 4 and 8 of c03, named from its upper end, read "healthy"; by either name only the
    slice on the named end's machine was listed, though the fault stopped both."""
    _ok(cli, "init", "--cubes-per-pod", "8")
    _ok(cli, "allocate", "s1", "--shape", "2x2x2", "--cubes", "c03")  # machines 0 and 4
    _ok(cli, "allocate", "s2", "--shape", "2x2x1", "--cubes", "c03")  # machine 8
    _ok(cli, "inject-fault", "ici:c03/0,0,2/-z")
    for name in ("ici:c03/0,0,2/-z", "ici:c03/0,0,1/+z"):
        e = _ok(cli, "explain", name, "-o", "json").json
        assert e["target"] == "ici:c03/0,0,1/+z" and e["state"] == "failed"
        assert [f["id"] for f in e["faults"]] == ["f1"] and e["slices"] == ["s1", "s2"]


def test_explain_says_the_tables_are_missing_when_their_file_is_gone(fleet):
    """`show slices` said missing and `collective` refused, while `explain` said fresh and proposed nothing."""
    _ok(fleet, "allocate", "a", "--shape", "4x4x4")
    _ok(fleet, "plan-xconnect", "a", "--apply")
    _ok(fleet, "routes", "a")
    (fleet.state / "routes" / "a.npz").unlink()
    e = _ok(fleet, "explain", "a", "-o", "json").json
    assert e["routes"] == "missing" and e["next"] == ["tpufleet routes a"]
    assert fleet("show", "slices", "-o", "json").json[0]["routes"] == "missing"


def test_a_newline_in_a_journal_summary_prints_no_forged_row(story):
    """A summary carries names from outside (an imported file's path): its newline printed a second, forged row
    in the `history`, `show journal` and `report` tables."""
    forged = "import slices sl\n99        2026-01-01T00:00:00Z  admin   release everything \x1b[8mhidden"
    _rewrite_journal(story.state, lambda e: {**e, "summary": forged, "user": "ad\nmin"} if e["serial"] == 3 else e)
    for args in (("history",), ("show", "journal"), ("report",)):
        out = _ok(story, *args).out
        assert "\n99 " not in out and "\x1b" not in out, (args, out)
        assert "sl\\n99" in out and "ad\\nmin" in out, (args, out)


def test_a_newline_in_a_hand_edited_delta_prints_no_forged_diff_line(story):
    _rewrite_journal(
        story.state,
        lambda e: (
            {**e, "delta": {**e["delta"], "slices": {**e["delta"]["slices"], "added": ["x\n  + slice FORGED"]}}}
            if e["serial"] == 2
            else e
        ),
    )
    out = _ok(story, "diff", "1").out
    assert "\n  + slice FORGED" not in out and "x\\n  + slice FORGED" in out


def test_explain_an_evicted_slice_never_reserved_for_says_so(cli):
    """Nothing was free when the fault struck, so nothing was reserved; explain said the reserved cubes were no
    longer usable."""
    _ok(cli, "init", "--cubes-per-pod", "8")
    _ok(cli, "allocate", "q", "--shape", "4x4x4", "--no-fault-tolerant-routing")
    _ok(cli, "plan-xconnect", "q", "--apply")
    _ok(cli, "inject-fault", "ocs:pod0/y/3")
    _ok(cli, "clear-fault", "f1")
    why = _ok(cli, "explain", "q", "-o", "json").json["why"]
    assert any("nothing was reserved for it" in w for w in why) and not any("reserved cubes" in w for w in why)


@pytest.fixture
def released_job(fleet):
    """Serial 2 allocate job j (j-0, j-1); 3 allocate slice k; 4 wire j; 5 routes j-1; 6 policy j; 7 release j."""
    _ok(fleet, "allocate", "j", "--shape", "4x4x4", "--slices", "2")
    _ok(fleet, "allocate", "k", "--shape", "4x4x4")
    _ok(fleet, "plan-xconnect", "j", "--apply")
    _ok(fleet, "routes", "j-1")
    _ok(fleet, "policy", "j", "--min-throughput", "0.9")
    _ok(fleet, "release", "j")
    return fleet


def _history_serials(cli, name, *args):
    return [r["serial"] for r in _ok(cli, "history", "--slice", name, *args, "-o", "json").json]


def test_history_of_a_released_job_lists_every_line_of_its_slices(released_job):
    assert _history_serials(released_job, "j") == [2, 4, 5, 6, 7]
    assert _history_serials(released_job, "j-1") == [2, 4, 5, 6, 7]
    assert _history_serials(released_job, "k") == [3]
    assert _history_serials(released_job, "j", "--since", "5") == [5, 6, 7]
    released = _ok(released_job, "show", "journal", "-o", "json").json[-1]["delta"]["slices"]
    assert released["jobs"] == {"j-0": "j", "j-1": "j"}
    assert "jobs" not in _ok(released_job, "show", "journal", "-o", "json").json[2]["delta"]["slices"]  # k's line


def _without_jobs(entry):
    if isinstance(entry.get("delta"), dict):
        entry["delta"]["slices"].pop("jobs", None)
    return entry


@pytest.mark.parametrize(
    ("older", "expected"),
    [
        (_without_jobs, [2, 4, 5, 6, 7]),  # 0.2 lines: the job's slices are those its own lines added
        (lambda e: {k: v for k, v in e.items() if k != "delta"}, [2, 4, 6, 7]),  # before deltas: by summaries
    ],
)
def test_history_of_a_job_in_older_journals(released_job, older, expected):
    _rewrite_journal(released_job.state, older)
    assert _history_serials(released_job, "j") == expected
    assert _history_serials(released_job, "k") == [3]


def test_explain_of_a_fault_id_names_the_component_to_explain(fleet):
    """`faults` lists ids (f1); `explain f1` said `unknown slice or job`, as if the fault did not exist."""
    _ok(fleet, "inject-fault", "ocs:pod0/x/3")
    r = fleet("explain", "f1")
    assert r.code == 1
    assert "'f1' is a fault" in r.err and "`tpufleet explain ocs:pod0/x/3`" in r.err
    assert "unknown" not in r.err
    assert fleet("explain", "ocs:pod0/x/3").code == 0
    assert "unknown slice or job 'f9'" in fleet("explain", "f9").err


def test_explain_degraded_slice_routes_first_while_its_tables_cross_a_fault(fleet):
    """A degraded slice whose stored tables predate its fault runs on tables through the failed part until `routes`
    stores tables around it: `explain` gave `clear-fault` first, which waits for the repair."""
    _ok(fleet, "allocate", "s", "--shape", "8x8x8")
    _ok(fleet, "plan-xconnect", "s", "--apply")
    _ok(fleet, "routes", "s")
    _ok(fleet, "inject-fault", "ocs:pod0/x/6")
    e = _ok(fleet, "explain", "s", "-o", "json").json
    assert e["next"] == ["tpufleet routes s", "tpufleet clear-fault f1", "tpufleet routes s"]
    assert "its stored routing tables were made before f1 and still route through it until" in " ".join(e["why"])
    _ok(fleet, "routes", "s")
    assert _ok(fleet, "explain", "s", "-o", "json").json["next"] == ["tpufleet clear-fault f1", "tpufleet routes s"]
    _ok(fleet, "inject-fault", "ocs:pod0/y/2")
    e = _ok(fleet, "explain", "s", "-o", "json").json
    assert e["next"] == ["tpufleet routes s", "tpufleet clear-fault f1", "tpufleet clear-fault f2", "tpufleet routes s"]
    assert (
        "its stored routing tables were made before f2 and still route through it until `tpufleet routes s` stores tables around it"
        in e["why"]
    )  # not f1: they route around it
    _ok(fleet, "routes", "s")
    _ok(fleet, "clear-fault", "f2")  # stale again, yet around every fault still open: no need to route first
    e = _ok(fleet, "explain", "s", "-o", "json").json
    assert e["state"] == "degraded" and e["routes"] == "stale"
    assert e["next"] == ["tpufleet clear-fault f1", "tpufleet routes s"]
