"""Use cases of `plan-xconnect NAME` and `apply-xconnect FILE`, for a slice or a multislice job alike: the name
(or the saved plan's kind) says which, and the slice's (`ops.xconnect`) or the job's (`ops.jobs`) use case runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tpufleet.fleetstate import FleetState
from tpufleet.ops import jobs, xconnect
from tpufleet.ops.outcome import Outcome
from tpufleet.state.planfile import SavedJobPlan, SavedPlan, check_fleet
from tpufleet.tableneeds import needs_tables


@dataclass
class Planned(Outcome):
    """A plan of a slice or a job (`data`: its document), with what its rendering needs."""

    job: bool = False
    # anything to add or remove, or a slice not wired yet that applying marks connected (False once applied)
    has_changes: bool = False
    port_cubes: dict[str, list[str]] = field(default_factory=dict)  # slice -> the cube at each OCS port of its pod


def plan(state: FleetState, name: str, now: str, apply: bool) -> Planned:
    """The cross-connect plan of slice or job `name`; with `apply`, made and applied in this transaction."""
    state.slices_named(name)  # an unknown name: Refused listing the slices and the jobs
    if name in state.jobs:
        if apply:
            done = jobs.plan_and_apply_job(state, name, now)
            doc, change, has_changes = done.data, done.change, False
        else:
            doc, has_changes = jobs.plan_job(state, name, now)
            change = None
        plans = doc["plans"]
    else:
        if apply:
            done = xconnect.plan_and_apply(state, name, now)
            doc, change, has_changes = done.data, done.change, False
        else:
            doc, made = xconnect.make_plan(state, name, now)
            change, has_changes = None, not xconnect.already_wired(state.slice(name), made.changes)
        plans = [doc]
    if apply:
        doc["routes_none"] = unrouted(state, [p["slice"] for p in plans])
    cubes = {p["slice"]: _port_cubes(state, p) for p in plans}
    return Planned(doc, change, name in state.jobs, has_changes, cubes)


def unrouted(state: FleetState, names: list[str]) -> list[str]:
    """Those of the slices `names` wired with no routing tables stored that need some (`routes` is their next step;
    `views.needs_tables`)."""
    return [
        n
        for n in names
        if state.slices[n].state.wired and n not in state.routes and needs_tables(state, state.slices[n])
    ]


def _port_cubes(state: FleetState, pdoc: dict[str, Any]) -> list[str]:
    """The cube at each OCS port of the slice's pod, to name the ports in `-v` output."""
    return list(state.fleet.pod_of(next(iter(pdoc["cubes"]))).cubes)


def apply(
    state: FleetState, saved: SavedPlan | SavedJobPlan, now: str, journal: xconnect.Journal | None = None
) -> Outcome:
    """`apply-xconnect FILE`: a slice's saved plan, or every part of a job's, checked against this state and
    applied (`xconnect.apply_saved`, `jobs.apply_saved_job`). First every part is checked against the fleet
    (`planfile.check_fleet`): a cube, OCS or port the fleet lacks is bad input, not a stale plan."""
    for part in saved.plans if isinstance(saved, SavedJobPlan) else [saved]:
        check_fleet(part, state.fleet)
    if isinstance(saved, SavedJobPlan):
        done = jobs.apply_saved_job(state, saved, now, journal)
        names = [p.slice for p in saved.plans]
    else:
        done, names = xconnect.apply_saved(state, saved, now, journal), [saved.slice]
    done.data["routes_none"] = unrouted(state, names)
    return done
