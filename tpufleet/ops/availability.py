"""Use case of `simulate-availability`: job availability against slice size, from availabilities or fault rates."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from tpufleet.constants import HOURS_PER_DAY


class RepairableRates(Protocol):
    host_per_day: float
    ocs_per_day: float
    repair_hours: dict[str, float]


def steady_state_availability(failures_per_day: float, repair_hours: float) -> float:
    """Long-run share of time a component is up when it fails at a constant rate and takes a fixed time to repair:
    MTBF / (MTBF + MTTR).

    >>> round(steady_state_availability(0.0008, 8.0), 6)  # a TPUv4 machine at 0.08 %/day, 8 h to repair
    0.999733
    """
    down = failures_per_day * repair_hours / HOURS_PER_DAY
    return 1.0 / (1.0 + down)


def availabilities_from_rates(rates: RepairableRates) -> tuple[float, float]:
    """(per-host p, per-OCS q) implied by the fault rates and repair times."""
    return (
        steady_state_availability(rates.host_per_day, rates.repair_hours["host"]),
        steady_state_availability(rates.ocs_per_day, rates.repair_hours["ocs"]),
    )


def report(
    sizes: Sequence[int],
    p: float,
    q: float,
    trials: int,
    seed: int,
    source: str,
    on_progress: Callable[[int], None] | None = None,
    pod_cubes: int | None = None,
    static_pod: str | None = None,
) -> dict[str, Any]:
    """The report for pods of `pod_cubes` cubes (None: the built-in TPU v4 pod of 64, with its static twin; a pod
    of any other size has no static twin, a 4x4x4 grid of cubes, to compare with), beside `static_pod` (a name of
    `static_torus.STATIC_PODS`, such as tpu-v3) instead of the twin."""
    from tpufleet import availability
    from tpufleet.constants import CUBES_PER_POD
    from tpufleet.static_torus import STATIC_PODS

    cubes = CUBES_PER_POD if pod_cubes is None else pod_cubes
    other = None if static_pod is None else STATIC_PODS[static_pod]
    availability.check_work(list(sizes), trials, cubes, other)
    result = availability.report(list(sizes), p, q, trials, seed, cubes, on_progress=on_progress, static_pod=other)
    result["availability_source"] = source
    if pod_cubes is not None:
        result["pod_cubes"] = pod_cubes
    return result
