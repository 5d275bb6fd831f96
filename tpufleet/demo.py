"""`make demo`: the main job on the embedded default fleet, in a temporary state directory.

Each step is a real `tpufleet` command line, printed before its output, so the demo doubles as a runbook.
"""

from __future__ import annotations

import gzip
import shlex
import sys
import tempfile
import time
from pathlib import Path

from tpufleet.cli import main

STEPS = [
    ("Create the default fleet: one TPUv4 pod, 64 cubes, 48 OCS", "init"),
    ("What a twisted 4x4x8 buys over a regular one", "topology 4x4x8"),
    (None, "topology 4x4x8 --twisted"),
    ("Allocate a twisted 4x4x8 and a regular 8x8x8 slice", "allocate tw --shape 4x4x8 --twisted"),
    (None, "allocate big --shape 8x8x8"),
    ("Plan the cross-connects (Terraform style), save the plan, apply it", "plan-xconnect tw --out {tmp}/tw.plan"),
    (None, "apply-xconnect {tmp}/tw.plan"),
    (None, "plan-xconnect big --apply"),
    ("Planning again changes nothing", "plan-xconnect big --detailed-exitcode"),
    ("Routing tables for both slices: minimal, balanced, deadlock-free", "routes tw"),
    (None, "routes big"),
    ("The OCS now carrying cross-connects (first rows)", "show ocs"),
    ("Drill first: what would an OCS failure do? (nothing changes)", "inject-fault ocs:pod0/x/5 --dry-run"),
    (
        "It happens: fault-tolerant routing keeps both slices running",
        "inject-fault ocs:pod0/x/5 --reason 'MEMS mirror stuck'",
    ),
    (None, "routes big"),
    (None, "routes tw"),
    ("A machine fails: its cube leaves the pool, its slice is evicted", "inject-fault host:c05/3"),
    ("See it: the pod's map, and why the slice is where it is", "show map"),
    (None, "explain big"),
    (None, "reschedule big"),
    (None, "routes big"),
    ("Repairs done", "clear-fault ocs:pod0/x/5"),
    (None, "clear-fault host:c05/3"),
    (None, "faults --all"),
    (
        "Program what was deferred while the OCS was down, and route the healthy network again",
        "plan-xconnect big --apply",
    ),
    (None, "routes big"),
    (None, "routes tw"),
    (
        'Why OCS: availability of a job against its size (Fig. 1 of the TPUv4 paper "Resiliency at Scale")',
        "simulate-availability --cubes 1,8,16,24,32,48,50,56 --trials 20000 --plot demo-out/availability.png",
    ),
    (
        "ML Productivity Goodput of a week of job logs (HTML report in demo-out/)",
        "goodput-report demo-out/jobs.jsonl --by accelerator,size --period day -o html --out demo-out/goodput.html",
    ),
    (None, "goodput-report demo-out/jobs.jsonl --by accelerator,size --period day"),
    (
        "What MPG would a month give? Simulate the pod under load and faults, then report",
        "simulate-fleet --days 30 --seed 1 --out demo-out/simulated.jsonl",
    ),
    (None, "goodput-report demo-out/simulated.jsonl --by size --period week"),
    ("The state after all that", "status"),
    (None, "history --since 12"),
    ("What changed from serial 7 (both slices routed) to now", "diff 7"),
    ("How long does a 1 GiB gradient all-reduce take on big's tables?", "collective big --op all-reduce --bytes 1GiB"),
    (
        "A multislice job: two 4x4x8 islands joined by the data-centre network (Pathways, Cloud TPU multislice)",
        "allocate llm --shape 4x4x8 --slices 2 --elastic 1",
    ),
    (None, "plan-xconnect llm --apply"),
    (None, "show jobs"),
    (None, "collective llm --op all-reduce --bytes 1GiB --model-flops-per-step 8e14 --assume-healthy"),
    ("The whole fleet on one page (HTML in demo-out/)", "report -o html --out demo-out/fleet.html"),
    (
        "Today's fleet: a TPU7x superpod (144 cubes) from its reservation's sub-blocks, 3 DEGRADED, 2 under maintenance",
        "--state {tmp}/superpod init --generation tpu7x",
    ),
    (None, "--state {tmp}/superpod import reservation {fixtures}/gke/tpu7x-reservation-subblocks.json --apply"),
    (None, "--state {tmp}/superpod allocate train --shape 12x12x24"),
    (None, "--state {tmp}/superpod allocate eval --shape 16x16x16"),
    ("How many cubes to hold back, and what still fits after a day's failures", "--state {tmp}/superpod plan-spares"),
    (None, "--state {tmp}/superpod capacity --confidence 0.95 --horizon 1d"),
    (
        "Maintenance announced for next week on a cube of each slice: kept with its sub-block, the slices run on",
        "--state {tmp}/superpod import reservation {tmp}/sb-next-week.json --apply",
    ),
    (
        "Every maintenance notice as waves that stop no job: each slice moves off its cube before the window",
        "--state {tmp}/superpod plan-maintenance --out {tmp}/maint.json",
    ),
    (None, "--state {tmp}/superpod apply-maintenance {tmp}/maint.json --wave 1"),
    (None, "--state {tmp}/superpod apply-maintenance {tmp}/maint.json --wave 2"),
    (None, "--state {tmp}/superpod apply-maintenance {tmp}/maint.json --wave 3"),
    (None, "--state {tmp}/superpod status"),
]

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"  # the repository's (the demo runs from a checkout)


JOB_LOG = Path(__file__).resolve().parent / "data" / "demo-goodput.jsonl.gz"


def write_job_log(path: str) -> None:
    """A few days of synthetic jobs on two accelerator types, with failures and restarts: the sample log shipped
    with the package (made by tests/oracles/synthetic_jobs.py, `write_demo_log`), unpacked to `path`."""
    Path(path).write_bytes(gzip.decompress(JOB_LOG.read_bytes()))


def write_announced(path: str) -> None:
    """The fixture reservation as it may read next week: maintenance announced on sub-blocks 10 and 100 (cubes of
    the demo's two superpod slices), 7 and 8 days from now, four hours each."""
    import copy
    import json
    from datetime import UTC, datetime, timedelta

    doc = json.loads((FIXTURES / "gke" / "tpu7x-reservation-subblocks.json").read_text())
    hour = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    for index, days in ((10, 7), (100, 8)):
        notice = copy.deepcopy(doc[40]["reservationSubBlockMaintenance"])  # the fixture's own notice, moved
        start = hour + timedelta(days=days)
        window = {"windowStartTime": start, "windowEndTime": start + timedelta(hours=4)}
        notice["upcomingGroupMaintenance"].update({k: t.strftime("%Y-%m-%dT%H:%M:%SZ") for k, t in window.items()})
        doc[index]["reservationSubBlockMaintenance"] = notice
    Path(path).write_text(json.dumps(doc, indent=1))


def run(argv: list[str]) -> int:
    try:
        main(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    return 0


def demo(steps=STEPS) -> int:
    import os

    os.makedirs("demo-out", exist_ok=True)
    write_job_log("demo-out/jobs.jsonl")
    with tempfile.TemporaryDirectory(prefix="tpufleet-demo-") as tmp:
        state = f"{tmp}/state"
        write_announced(f"{tmp}/sb-next-week.json")
        print(f"# state directory: {state} (temporary)\n")
        for title, line in steps:
            line = line.format(tmp=tmp, fixtures=FIXTURES)
            if title:
                print(f"\n## {title}")
            print(f"$ tpufleet {line}")
            sys.stdout.flush()
            started = time.perf_counter()
            argv = shlex.split(line)
            if "--state" not in argv:  # the superpod's steps name their own (a second --state is refused)
                argv = ["--state", state, *argv]
            if line == "show ocs":
                from contextlib import redirect_stdout
                from io import StringIO

                buf = StringIO()
                with redirect_stdout(buf):
                    code = run(argv)
                print("\n".join(buf.getvalue().splitlines()[:8]) + "\n  ...")
            else:
                code = run(argv)
            sys.stdout.flush()
            print(f"  [exit {code}, {time.perf_counter() - started:.2f}s]")
            if code not in (0, 4):
                return code
    return 0


if __name__ == "__main__":
    sys.exit(demo())
