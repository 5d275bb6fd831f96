"""The words `plan-spares` gives a pod beside its figures: what caps the probability when spares stop helping,
and why nothing is held back or the confidence is out of reach."""

from __future__ import annotations

from collections.abc import Collection

from tpufleet import spares
from tpufleet.fleetstate import Slice
from tpufleet.text import probability_text


def caps_text(ocs: float, own_lost: Collection[str], ocs_down: str = "") -> str:
    """What caps the probability when spares stop helping: an OCS down now (the OCS term is then 0: said by its
    id, since "the OCS term" alone reads as a small risk, not as a switch to repair), the OCS term, the slices'
    cubes lost (down now, or to announced maintenance within the horizon), or else the slices' own cubes' odds of
    staying healthy over the horizon (a long horizon)."""
    ocs_cause = (ocs_down if ocs == 0.0 and ocs_down else "the OCS term") if ocs < 1.0 else ""
    causes = [ocs_cause, "the cubes down now or under maintenance" if own_lost else ""]
    named = " and ".join(c for c in causes if c)
    return named or "the slices' own cubes, unlikely to stay healthy over the horizon"


def pod_note(
    slices: list[Slice],
    curve: spares.SpareCurve,
    free: int,
    confidence: float,
    caps: str,
    named: bool = False,
    pools: int = 0,
) -> str | None:
    """`caps`: what holds the probability down once more spares stop helping (`caps_text`); `named`: the slices are
    those `--slices` names (a pod with none of them may well run others); `pools`: the cubes node pools tpufleet
    has not placed hold in the pod (which ones unknown: their odds, so their spares, cannot be counted)."""
    if not slices:
        if named:
            return "none of the slices --slices names runs in this pod: nothing to hold back for them"
        if pools:
            return (
                f"no slice tpufleet placed runs in this pod: nothing to hold back (the {pools} cube(s) its node "
                "pools hold are not placed, so what they need is not counted)"
            )
        return "no running slices in this pod: nothing to hold back"
    if curve.spares is None:
        if curve.best >= free:
            why = "every free cube held back: the pod has no more"
        else:
            why = f"more do not help: limited by {caps}"
        return (
            f"the confidence is out of reach: at most {probability_text(curve.probability, confidence)}, with {curve.best} of the {free} free "
            f"healthy cubes held back ({why})"
        )
    return None
