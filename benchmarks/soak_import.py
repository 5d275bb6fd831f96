"""Soak: many `import k8s --apply` runs against flapping nodes, in-process; state.json must stay bounded.

    python benchmarks/soak_import.py                 # 10,000 runs (about an hour on the project machine)
    python benchmarks/soak_import.py --runs 500      # a quick check

Every run imports fixtures/k8s/pod-64.json (one pod, 1,023 TPU nodes, its own faults and drains) with a fresh
random set of nodes NotReady and another cordoned (`--flap` nodes in all), so every run opens faults for the new
set and clears those of the last one, as a cron `import k8s --apply` does against a flapping fleet. Commits keep
the latest cleared faults in state.json and move older ones to the journal, so the state should plateau while
the journal (the history) grows.

Printed, each beside its baseline from the same process as a ratio:
* state.json's size every `--every` runs and its largest over the soak (the bound reached) against its size after
  the first import (the same fleet, same names, no history);
* the median time of an import run over the last block against the first block;
* `tpufleet status` (in-process, median of `--repeat`, alternated) on the soaked state against a fresh `init`
  state and against the state after one import.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import io
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
NODES = ROOT / "fixtures" / "k8s" / "pod-64.json"
PARTITION_LABEL = "cloud.google.com/gke-tpu-partition-4x4x4-id"


def cli(*args: str) -> int:
    """`tpufleet ARGS` in this process, its output discarded; the exit code."""
    from tpufleet.cli import main

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
        try:
            main(list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        else:
            code = 0
    if code != 0:
        raise SystemExit(f"tpufleet {' '.join(args)} exited {code}: {err.getvalue()[-2000:]}")
    return code


class Flapper:
    """The fixture's node list with a different random set of nodes NotReady or cordoned on every call."""

    def __init__(self, flap: int, seed: int) -> None:
        self.doc = json.loads(NODES.read_text())
        self.rng = random.Random(seed)
        self.flap = flap
        # healthy, schedulable TPU nodes of a partition: the ones that can flap
        self.nodes = [
            n
            for n in self.doc["items"]
            if PARTITION_LABEL in n["metadata"]["labels"]
            and not n["spec"].get("unschedulable")
            and len(n["spec"].get("taints", [])) == 1
            and all(c["status"] == "True" for c in n["status"]["conditions"] if c["type"] == "Ready")
        ]
        self.saved: list[tuple[dict[str, Any], dict[str, Any]]] = []

    def next(self, path: Path) -> None:
        for node, original in self.saved:  # back to health: last run's set clears
            node["spec"], node["status"] = original["spec"], original["status"]
        self.saved = []
        chosen = self.rng.sample(self.nodes, self.flap)
        for k, node in enumerate(chosen):
            self.saved.append((node, {"spec": copy.deepcopy(node["spec"]), "status": copy.deepcopy(node["status"])}))
            if k % 2 == 0:
                for cond in node["status"]["conditions"]:
                    if cond["type"] == "Ready":
                        cond.update(status="False", reason="KubeletNotReady", message="PLEG is not healthy")
            else:
                node["spec"]["unschedulable"] = True
        path.write_text(json.dumps(self.doc, separators=(",", ":")))


def size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


def faults_in(state_json: Path) -> tuple[int, int]:
    """(open, cleared) fault records in state.json."""
    faults = json.loads(state_json.read_text()).get("faults", [])
    records = faults.values() if isinstance(faults, dict) else faults
    cleared = sum(1 for f in records if f.get("cleared"))
    return len(records) - cleared, cleared


def status_times(states: dict[str, str], repeat: int) -> dict[str, float]:
    """Median seconds of in-process `status` on each state, the runs alternated so all see the same load."""
    for state in states.values():
        cli("--state", state, "status")  # warm: imports and caches outside the timing
    times: dict[str, list[float]] = {name: [] for name in states}
    for _ in range(repeat):
        for name, state in states.items():
            t = time.perf_counter()
            cli("--state", state, "status")
            times[name].append(time.perf_counter() - t)
    return {name: statistics.median(ts) for name, ts in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000, help="import k8s --apply runs (default 10,000)")
    parser.add_argument("--flap", type=int, default=24, help="nodes NotReady or cordoned in each run (default 24)")
    parser.add_argument("--every", type=int, default=0, help="record sizes every N runs (default runs/20)")
    parser.add_argument("--repeat", type=int, default=21, help="status repetitions (median)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    every = args.every or max(1, args.runs // 20)
    sys.path.insert(0, str(ROOT))
    print(f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f} at the start", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        soaked, fresh, once = f"{tmp}/soaked", f"{tmp}/fresh", f"{tmp}/once"
        nodes = Path(tmp) / "nodes.json"
        for state in (soaked, fresh, once):
            cli("--state", state, "init")
        cli("--state", once, "import", "k8s", str(NODES), "--apply")
        state_json, journal = Path(soaked) / "state.json", Path(soaked) / "journal.jsonl"
        baseline = size(Path(once) / "state.json")
        print(
            f"state.json: fresh init {size(Path(fresh) / 'state.json'):,} B, after one import {baseline:,} B"
            f" (the baseline); {args.runs:,} runs, {args.flap} nodes flapping a run",
            flush=True,
        )
        flapper = Flapper(args.flap, args.seed)
        largest, block, blocks = 0, [], []
        start = time.perf_counter()
        for run in range(1, args.runs + 1):
            flapper.next(nodes)
            t = time.perf_counter()
            cli("--state", soaked, "import", "k8s", str(nodes), "--apply")
            block.append(time.perf_counter() - t)
            largest = max(largest, size(state_json))
            if run % every == 0 or run == args.runs:
                open_, cleared = faults_in(state_json)
                blocks.append(statistics.median(block))
                print(
                    f"run {run:>6,}: state.json {size(state_json):>9,} B ({size(state_json) / baseline:.2f}x),"
                    f" journal {size(journal):>12,} B, faults open {open_:>3} cleared kept {cleared:>3},"
                    f" median run {blocks[-1] * 1e3:.0f} ms, {time.perf_counter() - start:.0f} s so far",
                    flush=True,
                )
                block = []
        print(
            f"bound reached: state.json at most {largest:,} B over {args.runs:,} runs, {largest / baseline:.2f}x"
            f" the one-import state ({baseline:,} B); at the end {size(state_json):,} B; journal {size(journal):,} B",
            flush=True,
        )
        print(
            f"import run, median of the last block {blocks[-1] * 1e3:.0f} ms vs the first {blocks[0] * 1e3:.0f} ms:"
            f" ratio {blocks[-1] / blocks[0]:.2f}x",
            flush=True,
        )
        medians = status_times({"fresh": fresh, "once": once, "soaked": soaked}, args.repeat)
        print(
            f"status (in-process, median of {args.repeat}): soaked {medians['soaked'] * 1e3:.1f} ms,"
            f" fresh init {medians['fresh'] * 1e3:.1f} ms: ratio {medians['soaked'] / medians['fresh']:.2f}x;"
            f" after one import {medians['once'] * 1e3:.1f} ms: ratio {medians['soaked'] / medians['once']:.2f}x"
            f"  (load {os.getloadavg()[0]:.1f})",
            flush=True,
        )


if __name__ == "__main__":
    main()
