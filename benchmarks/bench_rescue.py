"""Order pairs above their size limit, made where no default candidate serves every pair (`routing/rescue.py`).

A TPU v5p 16x16x16 with an OCS down in each of x, y and z (x/0, y/5, z/10): every single dimension order leaves
16 pairs unroutable, so without the rescue the blast radius evicts the slice. Measured in one process, each beside
its baseline: the verdict the fault path reads (`verdict_summary`: reach checks, then the rescued tables) against
the same slice routed `--thorough` (every candidate made), and the reach checks that find the case against one
repair. CPU seconds, since the shared machine's wall time moves with its load.

    python benchmarks/bench_rescue.py      # about two minutes
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_routing_fast import one_ocs_failure

FAULTS = ((0, 0), (1, 5), (2, 10))  # (dimension, OCS index)


def _graph() -> tuple[Any, Any, Any]:
    import numpy as np

    from tpufleet.shapes import parse_shape

    shape = parse_shape("16x16x16")
    exp, alive = None, None
    for dim, index in FAULTS:
        exp, down = one_ocs_failure(shape, dim, index)
        alive = down if alive is None else np.where(down < 0, -1, alive)
    return shape, exp, alive


def _cpu(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.process_time()
    out = fn()
    return time.process_time() - start, out


def main() -> None:
    from tpufleet.routing.reach import defaults_left
    from tpufleet.routing.report import evaluate, verdict_summary

    shape, exp, alive = _graph()
    checks, left = _cpu(lambda: defaults_left(shape, exp, alive, 3))
    rescued, s = _cpu(lambda: verdict_summary(shape, exp, alive, ("all-to-all",), 3))
    thorough, t = _cpu(lambda: evaluate(shape, exp, alive, "auto", ("all-to-all",), max_vcs=3, thorough=True).summary)
    kept, kept_thorough = s["throughput_retained"]["all-to-all"], t["throughput_retained"]["all-to-all"]
    print(f"reach checks of the default candidates: {left} pairs left by the best, {checks:.1f} s CPU")
    print(
        f"fault-path verdict, rescued: {rescued:.1f} s CPU, unroutable {s['unroutable_pairs']}, {s['vcs']} VCs, "
        f"kept {kept}   baseline --thorough: {thorough:.1f} s CPU, kept {kept_thorough}   "
        f"ratio {thorough / rescued:.2f}x faster"
    )


if __name__ == "__main__":
    main()
