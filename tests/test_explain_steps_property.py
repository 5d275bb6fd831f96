"""`explain`'s `next` steps, as a property over short random command sequences (see test_explain_steps.py).

On the default fleet (one pod of 64 4x4x4 cubes), a few slices (4x4x4 to 8x8x8, and the sub-cube 2x2x4) and a
multislice job of 2 slices go through allocate, plan-xconnect --apply, routes, faults (OCS, optical link, host,
cube, planned drain) and their clears, `policy --no-fault-tolerant-routing` and release. After each step, in a
copy of the state: every slice's and job's `explain` steps, run in order, each exit 0; `explain` then asks for
nothing more but clears of faults still open (a wiring or a move is followed by the slice's tables); those cleared
too, the slice is `connected` with fresh tables (a sub-cube slice never routed needs none) and the job `running`.
The hints of `inject-fault` (`routes_stale`, `jobs[].next`) and of `clear-fault` (`routes_stale`, `rewire`) are
run the same way.
"""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, note, settings
from hypothesis import strategies as st

SLICES = ("a", "b")
JOB = "j"
NAMES = (*SLICES, JOB)
SHAPES = ("4x4x4", "4x4x8", "4x8x8", "8x8x8", "2x2x4")
JOB_SHAPES = ("4x4x4", "2x2x4")
CUBES = tuple(f"c{i:02d}" for i in range(6))  # where the first slices land
# An example runs every step of every slice after each command: a few seconds. The nightly profile searches more.
EXAMPLES = {"nightly": 100}.get(settings.get_current_profile_name(), 15)

_targets = st.one_of(
    st.builds("ocs:pod0/{}/{}".format, st.sampled_from("xyz"), st.integers(0, 3)),
    st.builds("link:{}/{}/{}/out".format, st.sampled_from(CUBES), st.sampled_from("xyz"), st.integers(0, 15)),
    st.builds("host:{}/{}".format, st.sampled_from(CUBES), st.integers(0, 15)),
    st.builds("cube:{}".format, st.sampled_from(CUBES)),
)
_commands = st.one_of(
    st.tuples(st.just("allocate"), st.sampled_from(SLICES), st.sampled_from(SHAPES)),
    st.tuples(st.just("job"), st.sampled_from(JOB_SHAPES)),
    st.tuples(st.just("wire"), st.sampled_from(NAMES)),
    st.tuples(st.just("routes"), st.sampled_from(NAMES)),
    st.tuples(st.just("fault"), _targets, st.booleans()),  # planned or not
    st.tuples(st.just("clear"), st.integers(0, 3)),
    st.tuples(st.just("policy"), st.sampled_from(NAMES)),
    st.tuples(st.just("release"), st.sampled_from(NAMES)),
    st.tuples(st.just("reschedule"), st.sampled_from(("a", "b", "j-0", "j-1"))),
)


@st.composite
def _setups(draw: Any) -> list[list[str]]:
    """Some of the slices and the job allocated first (each wired, and routed, or not), so that the commands drawn
    after find them."""
    out: list[list[str]] = []
    for name in draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=3, unique=True)):
        shape = draw(st.sampled_from(JOB_SHAPES if name == JOB else SHAPES))
        out.append(["allocate", name, "--shape", shape, *(["--slices", "2"] if name == JOB else [])])
        wired = draw(st.integers(0, 2))  # allocated only, wired, wired and routed
        out += [["plan-xconnect", name, "--apply"]][: min(wired, 1)] + [["routes", name]][: max(wired - 1, 0)]
    return out


def _argv(step: str) -> list[str]:
    argv = shlex.split(step)
    assert argv[0] == "tpufleet", step
    return argv[1:]


def _run(cli: Any, *args: str) -> Any:
    r = cli(*args)
    assert r.code == 0, (args, r.code, r.err)
    return r


def _open_faults(cli: Any) -> list[str]:
    return [f["id"] for f in _run(cli, "faults", "-o", "json").json if f["cleared"] is None]


def _command(cli: Any, command: tuple[Any, ...]) -> Any:
    """Runs one drawn command; an answer of refusal (exit 1 or 2) is fine, never an internal error."""
    kind, *rest = command
    if kind == "allocate":
        args = ["allocate", rest[0], "--shape", rest[1]]
    elif kind == "job":
        args = ["allocate", JOB, "--shape", rest[0], "--slices", "2"]
    elif kind == "wire":
        args = ["plan-xconnect", rest[0], "--apply"]
    elif kind == "fault":
        args = ["inject-fault", rest[0], *(["--planned"] if rest[1] else [])]
    elif kind == "clear":
        faults = _open_faults(cli)
        if not faults:
            return None
        args = ["clear-fault", faults[rest[0] % len(faults)]]
    elif kind == "policy":
        args = ["policy", rest[0], "--no-fault-tolerant-routing"]
    else:
        args = [kind, rest[0]]
    r = cli(*args, "-o", "json")
    note(f"{' '.join(args)} -> {r.code}")
    assert r.code in (0, 1, 2), (args, r.code, r.err)
    return (args[0], r) if r.code == 0 else None


def _slices(cli: Any) -> dict[str, dict[str, Any]]:
    return {s["name"]: s for s in _run(cli, "show", "slices", "-o", "json").json}


def _healthy(cli: Any, name: str, steps: list[str]) -> None:
    row = _slices(cli)[name]
    sub_cube_unrouted = row["routes"] == "none" and row["shape"] == "2x2x4"
    routes = "fresh" if not sub_cube_unrouted else "none"
    got = (row["state"], row["degraded"], row["routes"], row["missing_xconnects"])
    assert got == ("connected", None, routes, 0), (name, steps, row)


def _copy(cli: Any, scratch: Path) -> Any:
    shutil.rmtree(scratch, ignore_errors=True)
    shutil.copytree(cli.state, scratch)
    return type(cli)(cli.capsys, scratch)


def _explain_steps_end_where_they_say(cli: Any, scratch: Path, name: str, job: bool) -> None:
    """Run in order, each step exits 0; then `explain` asks only for clears of faults still open: a wiring or a
    move is followed by the slice's tables, so the list ends with the slice running."""
    copy = _copy(cli, scratch)
    steps = _run(copy, "explain", name, "-o", "json").json["next"]
    for step in steps:
        _run(copy, *_argv(step))
    left = _run(copy, "explain", name, "-o", "json").json["next"]
    still_open = {f"tpufleet clear-fault {f}" for f in _open_faults(copy)}
    assert set(left) <= still_open, (name, steps, left)
    for fault in _open_faults(copy):
        _run(copy, "clear-fault", fault)
    if job:  # its steps hold its slices' own: each is healthy too
        row = _run(copy, "explain", name, "-o", "json").json
        assert row["state"] == "running", (name, steps)
        for member in row["slices"]:
            _healthy(copy, member, steps)
    else:
        _healthy(copy, name, steps)


def _hints_work(cli: Any, scratch: Path, kind: str, answer: Any) -> None:
    """`inject-fault`'s `routes_stale` and `jobs[].next`, `clear-fault`'s `rewire` and `routes_stale`."""
    doc = answer.json
    steps = [f"tpufleet plan-xconnect {n} --apply" for n in doc.get("rewire", [])]
    # `inject-fault`'s list holds the tables of the slices it moves too: their step is the move (`next` lines in
    # its table are for the rerouted ones only); `clear-fault`'s holds wired slices only
    moved = {s["slice"] for s in doc.get("slices", []) if s["action"] != "reroute"}
    stale = [n for n in doc.get("routes_stale", []) if n not in moved]
    steps += [f"tpufleet routes {n}" for n in stale]
    copy = _copy(cli, scratch)
    for step in steps:
        _run(copy, *_argv(step))
    for name in stale:
        assert _slices(copy)[name]["routes"] == "fresh", (kind, name)
    for job in doc.get("jobs", []):
        copy = _copy(cli, scratch)
        for step in job["next"]:
            _run(copy, *_argv(step))


def _check(cli: Any, scratch: Path) -> None:
    jobs = set()
    for name, row in _slices(cli).items():
        _explain_steps_end_where_they_say(cli, scratch, name, job=False)
        if row["job"]:
            jobs.add(row["job"])
    for job in sorted(jobs):
        _explain_steps_end_where_they_say(cli, scratch, job, job=True)


@pytest.mark.slow
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # shrinking reruns whole sequences; the notes say enough
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(setup=_setups(), commands=st.lists(_commands, min_size=1, max_size=6))
def test_explain_steps_run_in_order_and_end_where_they_say(
    fleet: Any, tmp_path: Path, setup: list, commands: list
) -> None:
    _run(fleet, "init", "--force")
    for args in setup:
        _run(fleet, *args)
    scratch = tmp_path / "copy"
    for command in commands:
        done = _command(fleet, command)
        if done is not None and done[0] in ("inject-fault", "clear-fault"):
            _hints_work(fleet, scratch, *done)
        _check(fleet, scratch)
