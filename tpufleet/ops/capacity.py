"""Use case of `tpufleet capacity`: the shapes each pod can place now and after K cube failures, K given (the
worst case) or the failures `plan-spares`' model expects at a confidence over a horizon (the expected case)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tpufleet import capacity, spares
from tpufleet.constants import MAX_AFTER
from tpufleet.errors import BadInput, shown
from tpufleet.fleetstate import FleetState
from tpufleet.model import Pod, known_pod
from tpufleet.ops.outcome import Outcome
from tpufleet.ops.spares import RatesChoice, cube_odds


@dataclass(frozen=True)
class Expected:
    """The expected case: K is the smallest number of cube failures that is not exceeded with this confidence
    over the horizon, each cube failing with `plan-spares`' probability (Poisson-binomial over the cubes up)."""

    confidence: float
    horizon_days: float
    rates: RatesChoice
    now: str | None = None  # a cube whose announced maintenance starts within the horizon from it fails for sure


def _expected_failures(state: FleetState, pod: Pod, expected: Expected) -> dict[str, Any]:
    odds, source = cube_odds(state, pod, expected.rates, expected.horizon_days, expected.now)
    up = list(odds.values())  # the cubes up now
    k = spares.failures_at_confidence(up, expected.confidence)
    return {
        "failures": k,
        "cubes_up": len(up),
        "probability": spares.at_least(up, len(up) - k),  # P(at most K of them fail)
        "rates_source": source,
    }


def report(state: FleetState, after: int, pod: str | None = None, expected: Expected | None = None) -> Outcome:
    """Per pod (or the one asked for): every shape of its generation, whether the allocator places it now, and
    whether it still fits after the `after` cube failures that hurt it most (with `expected`: after the pod's
    expected failures at the confidence). Reads the state, changes nothing."""
    if not 0 <= after <= MAX_AFTER:
        raise BadInput(f"bad option --after: {shown(str(after))} is outside 0-{MAX_AFTER}")
    if pod is not None:
        pod = known_pod(state.fleet, pod)
    used, health = state.machine_usage(), state.health()
    pods = []
    for p in state.fleet.pods:
        if pod is not None and p.name != pod:
            continue
        expect = _expected_failures(state, p, expected) if expected is not None else None
        k = expect["failures"] if expect is not None else after
        rows = capacity.verdicts(p, state.fleet, used, health, k)
        pods.append(
            {
                "pod": p.name,
                "generation": p.generation.name if p.generation is not None else None,
                "after": k,
                "expected_failures": expect,
                "free_healthy_cubes": health.free_room(p.name, p.cubes, used),
                "shapes": len(rows),
                "fit_now": sum(r.now for r in rows),
                "fit_after": sum(r.after for r in rows),
                "largest_now": _largest(rows, now=True),
                "largest_after": _largest(rows, now=False),
                "verdicts": [r.record() for r in rows],
            }
        )
    top: dict[str, Any] = {"after": after if expected is None else None}
    if expected is not None:
        top.update(confidence=expected.confidence, horizon_days=expected.horizon_days)
    return Outcome({"serial": state.serial, **top, "pods": pods})


def _largest(rows: list[capacity.Verdict], now: bool) -> str | None:
    """The fitting shape with the most cubes (the last such: shapes are sorted by size)."""
    fitting = [r for r in rows if (r.now if now else r.after)]
    if not fitting:
        return None
    top = fitting[-1]
    return top.shape + (" twisted" if top.twisted else "")
