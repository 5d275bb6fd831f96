"""Work done once per process, each figure beside the same work redone in the same process, printed as a ratio.

- commands in one process (the server, the suite): 40 `inject-fault` + `clear-fault` pairs through `main`, with
  the Click command tree built once, against rebuilding it for every call (as `main` did);
- routing in canonical forms: every x OCS of an 8x8x8 failed in turn, the canonical form's tables kept for the
  process, against the same faults with the kept tables forgotten before each.

Run alone with `python benchmarks/bench_inprocess.py` (about a minute); `make bench` runs it too.
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_routing_fast import one_ocs_failure  # noqa: E402

PAIRS = 40  # inject-fault + clear-fault
OCS_PER_DIM = 16


def _commands(rebuild: bool) -> float:
    """Seconds for PAIRS inject/clear pairs in this process (`rebuild`: the command tree built for each call)."""
    import tpufleet.cli as cli

    state = Path(tempfile.mkdtemp()) / "state"

    def run(*args: str) -> None:
        if rebuild:
            cli._click_command.cache_clear()
        with contextlib.suppress(SystemExit):  # main exits with the command's code
            cli.main(["--state", str(state), *args])

    run("init")
    t = time.perf_counter()
    for i in range(PAIRS):
        run("inject-fault", f"host:c{i % 60:02d}/{i % 16}", "--reason", f"r{i}")
        run("clear-fault", f"f{i + 1}")
    return time.perf_counter() - t


def _routing(forget: bool) -> float:
    """Seconds to route every x OCS failure of an 8x8x8 (`forget`: no canonical form's tables kept)."""
    from tpufleet.routing import report
    from tpufleet.shapes import parse_shape

    shape = parse_shape("8x8x8")
    report._forms_made.cache_clear()
    t = time.perf_counter()
    for index in range(OCS_PER_DIM):
        if forget:
            report._forms_made.cache_clear()
        expected, alive = one_ocs_failure(shape, 0, index)
        report.evaluate(shape, expected, alive, "auto", ("all-to-all",), max_vcs=3)
    return time.perf_counter() - t


def _row(name: str, measure: Callable[[bool], float]) -> None:
    import io

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        baseline, value = measure(True), measure(False)
    print(f"{name:<58} {value:7.2f} s   redone each time {baseline:7.2f} s   {baseline / value:5.1f}x")


def main() -> None:
    _row(f"{PAIRS} inject-fault + clear-fault pairs in one process", _commands)
    _row(f"8x8x8, each of the {OCS_PER_DIM} x OCS failed, routed in one process", _routing)


if __name__ == "__main__":
    main()
