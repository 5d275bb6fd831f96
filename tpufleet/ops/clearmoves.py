"""What `clear-fault` says of the evicted slices (pure): which ones `reschedule` can move now, and why the ones the
cleared faults had evicted still wait.

Judged without routing a landing (a 4096-chip slice's takes seconds, and the clear holds the state's lock): the
proposal `reschedule` would take, then `movesteps.bounded_landing`, a cut of the slice's rings that settles most
landings among network faults. A landing the bound does not settle counts as movable: `reschedule` works it out,
and its refusal says why. Only the slices whose answer the clear can change are judged after it: those it evicted
and those that could not move before it (the bound taken before it only for moves landing in a cleared fault's
pod)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from tpufleet import moves, movesteps
from tpufleet.fleetparts import Fault
from tpufleet.fleetstate import FleetState, Slice, SliceState
from tpufleet.ids import OcsId, natural_key


def before(state: FleetState, cleared: Collection[Fault]) -> dict[str, str | None]:
    """Before the clear: each evicted slice -> why `reschedule` could not move it (None: it could); the bound is
    taken only for moves landing in a pod of a cleared fault, the only landings the clear can change."""
    pods = {_pod(state, f) for f in cleared}
    return {name: _wait(state, name, why, pod in pods) for name, (why, pod) in _proposals(state).items()}


def moves_now(state: FleetState, waited: Mapping[str, str | None], cleared: Collection[Fault]) -> dict[str, Any]:
    """`reschedule`: the evicted slices `reschedule` can move now that a cleared fault had evicted or that could
    not move before (`waited`, from `before`); `reschedule_waits`: those a cleared fault had evicted that still
    wait, and why."""
    ids = {f.id for f in cleared}
    ours = {n for n, s in state.slices.items() if s.state is SliceState.EVICTED and s.evicted_by in ids}
    waits = {
        name: _wait(state, name, why, True)
        for name, (why, _) in _proposals(state).items()
        if name in ours or waited.get(name) is not None
    }
    return {
        "reschedule": [n for n, why in waits.items() if why is None],
        "reschedule_waits": {n: why for n, why in waits.items() if why and n in ours},
    }


def _proposals(state: FleetState) -> dict[str, tuple[str | None, str | None]]:
    """Each evicted slice -> (why no move is proposed for it, None if one is; the pod it would land in)."""
    out = {}
    for name in sorted((n for n, s in state.slices.items() if s.state is SliceState.EVICTED), key=natural_key):
        proposal = moves.propose_move(state, state.slices[name], frozenset())
        ready = proposal.ready and proposal.alloc is not None and proposal.plan is not None
        out[name] = (None if ready else proposal.to_dict()["why"], proposal.alloc.pod if proposal.alloc else None)
    return out


def _wait(state: FleetState, name: str, why: str | None, bound: bool) -> str | None:
    return why if why is not None or not bound else _bounded(state, state.slices[name])


def _bounded(state: FleetState, sl: Slice) -> str | None:
    """Why the proposed move is refused, as far as the bound tells without routing (None: it is not)."""
    proposal = moves.propose_move(state, sl, frozenset())
    return movesteps.bounded_landing(state, sl, proposal)


def _pod(state: FleetState, fault: Fault) -> str:
    target = fault.target
    return target.pod if isinstance(target, OcsId) else state.fleet.pod_of(target.cube).name
