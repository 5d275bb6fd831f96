"""`plan-spares` of a multislice job across pods: its pods' joint figure and the spares per pod that reach the
confidence (pure)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tpufleet import spares
from tpufleet.fleetstate import FleetState, Slice, SliceState
from tpufleet.ids import natural_key


def jobs_across_pods(state: FleetState, chosen: Sequence[Slice]) -> dict[str, list[str]]:
    """Each multislice job whose chosen slices run in more than one pod -> those pods, in the fleet's order."""
    order = {p.name: i for i, p in enumerate(state.fleet.pods)}
    pods: dict[str, set[str]] = {}
    for sl in chosen:
        if sl.job is not None:
            pods.setdefault(sl.job, set()).add(runs_on(sl)[0])
    by_name = sorted(pods.items(), key=lambda kv: natural_key(kv[0]))  # as jobs are counted: j9 before j10
    return {job: sorted(ps, key=order.__getitem__) for job, ps in by_name if len(ps) > 1}


def job_pods(
    job: str,
    pods: Sequence[str],
    chosen: Sequence[Slice],
    planned: Mapping[str, tuple[dict[str, Any], Spares]],
    plan_for: Callable[[str, list[Slice]], tuple[dict[str, Any], Spares]],
) -> list[tuple[dict[str, Any], Spares]]:
    """Each of a job's pods planned (`plan_for`) for the job's slices alone, at the spares the pod holds back
    (`planned`: each pod's plan for all its slices): another slice there (one without fault-tolerant routing, whose
    OCS term is lower) is no part of whether the job keeps its placement, and made a job that `--slices JOB` finds
    reachable unreachable."""
    out = []
    for name in pods:
        row, curve = plan_for(name, [s for s in chosen if s.job == job and runs_on(s)[0] == name])
        held = planned[name][0]["hold_back"]
        at = curve.probabilities[min(len(held), len(curve.probabilities) - 1)]
        out.append(({**row, "hold_back": held, "probability": at}, curve))
    return out


def joint_figures(job: str, pods: Sequence[tuple[dict[str, Any], Spares]], confidence: float) -> dict[str, Any]:
    """A job across pods keeps a healthy placement only when every one of its pods does: pods are independent in
    the model, so its probability is the product of its pods' (each at the spares it holds back), and may fall
    below the confidence though each pod reaches it. Then the fewest spares per pod that lift the product to the
    confidence (`spares_for_job`, None when no number of the free cubes does) and the cubes to hold besides."""
    joint = math.prod(float(row["probability"]) for row, _ in pods)
    figures: dict[str, Any] = {
        "job": job,
        "pods": [row["pod"] for row, _ in pods],
        "probability": joint,
        "below_confidence": joint < confidence,
        "spares_for_job": None,
        "probability_at_spares_for_job": None,
        "hold_back_for_job": [],
    }
    held = spares.joint_spares([c.probabilities for _, c in pods], confidence)
    if held is not None:
        at = list(zip(pods, held, strict=True))
        figures["spares_for_job"] = {row["pod"]: n for (row, _), n in at}
        figures["probability_at_spares_for_job"] = math.prod(c.probabilities[n] for (_, c), n in at)
        figures["hold_back_for_job"] = [cube for (row, c), n in at for cube in c.free[len(row["hold_back"]) : n]]
    return figures


@dataclass(frozen=True)
class Spares:
    """A pod's spare curve (its probability at 0, 1, ... spares) and its free cubes in the order they are held."""

    probabilities: tuple[float, ...]
    free: list[str]


def runs_on(sl: Slice) -> tuple[str, tuple[str, ...]]:
    """The pod and cubes the slice is to run on: an evicted slice's reserved move (it runs on none of its old
    cubes, and the move's cubes, held for it, stand in for the broken one), else its own."""
    if sl.state is SliceState.EVICTED and sl.proposal is not None:
        return sl.proposal.pod, sl.proposal.cubes
    return sl.pod, sl.cubes
