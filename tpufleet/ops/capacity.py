"""Use case of `tpufleet capacity`: the shapes each pod can place now and after the worst K cube failures."""

from __future__ import annotations

from tpufleet import capacity
from tpufleet.errors import BadInput
from tpufleet.fleetstate import FleetState
from tpufleet.ops.outcome import Outcome

MAX_AFTER = 1000  # cube failures to plan for: more than any pod has cubes


def report(state: FleetState, after: int, pod: str | None = None) -> Outcome:
    """Per pod (or the one asked for): every shape of its generation, whether the allocator places it now, and
    whether it still fits after the `after` cube failures that hurt it most. Reads the state, changes nothing."""
    if not 0 <= after <= MAX_AFTER:
        raise BadInput(f"bad option --after: {after} is outside 0-{MAX_AFTER}")
    if pod is not None and pod not in state.fleet.pod_by_name:
        raise BadInput(f"bad option --pod: unknown pod {pod!r} (fleet has {', '.join(state.fleet.pod_by_name)})")
    used, health = state.machine_usage(), state.health()
    pods = []
    for p in state.fleet.pods:
        if pod is not None and p.name != pod:
            continue
        rows = capacity.verdicts(p, state.fleet, used, health, after)
        pods.append(
            {
                "pod": p.name,
                "generation": p.generation.name if p.generation is not None else None,
                "free_healthy_cubes": sum(1 for c in p.cubes if c not in used and health.cube_ok(c)),
                "shapes": len(rows),
                "fit_now": sum(r.now for r in rows),
                "fit_after": sum(r.after for r in rows),
                "largest_now": _largest(rows, now=True),
                "largest_after": _largest(rows, now=False),
                "verdicts": [r.record() for r in rows],
            }
        )
    return Outcome({"serial": state.serial, "after": after, "pods": pods})


def _largest(rows: list[capacity.Verdict], now: bool) -> str | None:
    """The fitting shape with the most cubes (the last such: shapes are sorted by size)."""
    fitting = [r for r in rows if (r.now if now else r.after)]
    if not fitting:
        return None
    top = fitting[-1]
    return top.shape + (" twisted" if top.twisted else "")
