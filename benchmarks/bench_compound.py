"""Compound faults on a full pod, end to end through the CLI: a 16x16x16 slice wired and routed on
one pod, then what-ifs (`inject-fault --dry-run`) on top of the faults already open, each a fresh process.

Every figure is printed beside `tpufleet status` on the same state (a process that loads the state and does
nothing else), as a ratio: the what-if costs that many plain commands.

Run alone with `python benchmarks/bench_compound.py` (about three minutes; `--open-faults` for the rows of
`bench_open_faults` alone); `make bench` runs it too. Every process
runs with tpufleet's bytecode cached, as an installed package has it (`installed_env`: a private cache prefix,
whatever PYTHONDONTWRITEBYTECODE the shell has; without it each process compiled about 60 modules first, 0.1-0.15 s).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SLICE_SHAPE = "16x16x16"
FIRST, SECOND, THIRD = "ocs:pod0/x/3", "ocs:pod0/y/5", "ocs:pod0/z/2"
GOAL = 2.0  # seconds, end to end on the 2-core machine

Record = Callable[[str, float, str, str, float], None]


def installed_env(tmp: str | Path) -> dict[str, str]:
    """The environment of an installed tpufleet: its bytecode cached (here in a private prefix under `tmp`, so the
    work tree stays clean), whatever PYTHONDONTWRITEBYTECODE the shell has."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = f"{tmp}/pycache"
    return env


def _cli(state: Path, *args: str) -> tuple[float, float, dict | list | None, int]:
    """Wall time, CPU time (user + system), JSON output and exit code of one `tpufleet` process (bytecode cached
    under the state's parent)."""
    argv = [sys.executable, "-m", "tpufleet", "--state", str(state), *args, "-o", "json"]
    env = installed_env(state.parent)
    start, t = os.times(), time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, check=False, env=env)
    took, end = time.perf_counter() - t, os.times()
    cpu = end.children_user - start.children_user + end.children_system - start.children_system
    try:
        out = json.loads(done.stdout) if done.stdout.strip() else None
    except json.JSONDecodeError:
        out = None
    return took, cpu, out, done.returncode


def _ok(state: Path, *args: str) -> dict | list | None:
    _, _, out, code = _cli(state, *args)
    if code != 0:
        raise SystemExit(f"bench_compound: `tpufleet {' '.join(args)}` exited {code}")
    return out


def _median(state: Path, args: tuple[str, ...], repeat: int) -> tuple[float, float, dict | list | None]:
    """Median wall and median CPU time of `repeat` runs, and the last run's JSON."""
    runs = [_cli(state, *args) for _ in range(repeat)]
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs), runs[-1][2]


def _verdict(out: dict | list | None) -> str:
    """`reroute 0.687 (3 VCs)` or `reschedule: why` of the slice in a dry run's answer."""
    if not isinstance(out, dict) or not out.get("slices"):
        return "?"
    impact = out["slices"][0]
    if impact["action"] == "reroute":
        rr = impact["reroute"]
        return f"reroute, keeps {rr['all_to_all_retained']:.3f} ({rr['vcs']} VCs)"
    return f"{impact['action']}: {impact['reason']}"


def _pod(base: Path) -> tuple[Path, list[str]]:
    """A fleet with one 16x16x16 slice on its pod, wired and routed; the slice's cubes."""
    state = base / "healthy"
    _ok(state, "init")
    allocated = _ok(state, "allocate", "s", "--shape", SLICE_SHAPE)
    _ok(state, "plan-xconnect", "s", "--apply")
    _ok(state, "routes", "s")
    assert isinstance(allocated, dict)
    return state, list(allocated["cubes"])


def _with(base: Path, source: Path, name: str, *targets: str) -> Path:
    """A copy of `source` with `targets` injected (recorded, each rerouted)."""
    state = base / name
    shutil.copytree(source, state)
    for target in targets:
        _ok(state, "inject-fault", target)
    return state


def bench(record: Record, repeat: int = 3) -> None:
    with tempfile.TemporaryDirectory(prefix="tpufleet-compound-") as tmp:
        base = Path(tmp)
        healthy, cubes = _pod(base)
        links = (f"link:{cubes[9]}/x/7/out", f"link:{cubes[22]}/z/11/in")
        one = _with(base, healthy, "one", FIRST)
        two = _with(base, one, "two", SECOND)
        two_links = _with(base, two, "two-links", *links)
        cases = [
            (f"one OCS down ({FIRST}), --dry-run a second ({SECOND})", one, SECOND, "2.9-7.8 s"),
            (f"two OCS down, --dry-run a link ({links[0]})", two, links[0], "7-10 s"),
            (f"two OCS down, --dry-run a third ({THIRD})", two, THIRD, "29-34 s"),
            (f"two OCS and two links down, --dry-run the third OCS ({THIRD})", two_links, THIRD, "(the goal)"),
        ]
        for label, state, target, issue in cases:
            took, cpu, out = _median(state, ("inject-fault", target, "--dry-run"), repeat)
            load = os.getloadavg()[
                0
            ]  # the machine is shared: CPU says what the what-if costs, the load how far wall is
            status, _, _ = _median(state, ("status",), 3)
            name = f"{label}: {_verdict(out)} [cpu {cpu:.2f} s, load {load:.1f}]"
            record(name, took, f"goal <= {GOAL:g} s; issue: {issue}", "status", status)


def _slice(base: Path, name: str, generation: str | None, shape: str) -> Path:
    """A fleet of one pod (of `generation`) with one slice of `shape`, wired and routed."""
    state = base / name
    _ok(state, "init", *(["--generation", generation] if generation else []))
    _ok(state, "allocate", "s", "--shape", shape)
    _ok(state, "plan-xconnect", "s", "--apply")
    _ok(state, "routes", "s")
    return state


def bench_open_faults(record: Record, repeat: int = 3) -> None:
    """What-ifs on a slice with faults already open, where the repairs are not the ring runs' (per-destination
    orders, chain rounds): an 8x8x16 with x/3 and a z link down, and an OCS on a fully routed TPU7x superpod
    (16x24x24, 9,216 chips). CPU time is what `routing.walked` changed; each row beside `status` on its state."""
    with tempfile.TemporaryDirectory(prefix="tpufleet-open-faults-") as tmp:
        base = Path(tmp)
        slice_ = _slice(base, "8x8x16", None, "8x8x16")
        for target in ("ocs:pod0/x/3", "link:c09/z/7/out"):
            _ok(slice_, "inject-fault", target)
        superpod = _slice(base, "superpod", "tpu7x", "16x24x24")
        cases = [
            ("8x8x16, x/3 and link:c09/z/7/out open; --dry-run link:c05/y/2/out", slice_, "link:c05/y/2/out"),
            ("8x8x16, x/3 and link:c09/z/7/out open; --dry-run ocs y/5", slice_, "ocs:pod0/y/5"),
            ("TPU7x superpod, 16x24x24 routed; --dry-run ocs x/3", superpod, "ocs:pod0/x/3"),
        ]
        for label, state, target in cases:
            took, cpu, out = _median(state, ("inject-fault", target, "--dry-run"), repeat)
            load = os.getloadavg()[0]
            status, status_cpu, _ = _median(state, ("status",), 3)
            name = f"{label}: {_verdict(out)} [cpu {cpu:.2f} s, status cpu {status_cpu:.2f} s, load {load:.1f}]"
            record(name, took, f"goal <= {GOAL:g} s", "status", status)


def main() -> None:
    sys.path[:0] = [str(ROOT)]

    def show(name: str, value: float, target: str, baseline_name: str, baseline: float) -> None:
        ratio = value / baseline if baseline else float("inf")
        print(f"{name}\n    {value:7.2f} s ({target})  {baseline_name} {baseline:5.2f} s: {ratio:.1f}x", flush=True)

    if "--open-faults" not in sys.argv[1:]:
        bench(show)
    bench_open_faults(show)


if __name__ == "__main__":
    main()
