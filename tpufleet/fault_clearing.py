"""Which open faults `clear-fault ID|TARGET` closes, pure: the fault of an id, or every open fault on a target; a key
that names none is refused, saying what is open (the faults open at all, or those inside the target)."""

from __future__ import annotations

from tpufleet.constants import MAX_FAULT_ID_CHARS
from tpufleet.errors import BadInput, Refused
from tpufleet.faults import machines_hit, normalize
from tpufleet.fleetstate import Fault, FleetState
from tpufleet.ids import ChipId, CubeId, HostId, IciId, OcsId, TargetId, canonical, near_id


def faults_to_clear(state: FleetState, key: str) -> list[Fault]:
    """The fault with this id, or every open fault on this target; Refused if there is none; BadInput for an id
    whose number is not written as the tool writes it (ASCII digits, no leading zero)."""
    if key.startswith("f") and key[1:].isdigit() and not (key[1:].isascii() and key[1] != "0"):
        raise BadInput(f"bad fault id {key[:60]!r}: f and its number in ASCII digits, no leading zero (e.g. f3)")
    if key.startswith("f") and key[1:].isdigit():
        hit = state.fault(key)
        if (
            hit is None and len(key) <= MAX_FAULT_ID_CHARS and 0 < int(key[1:]) < state.next_fault
        ):  # ids go out in order: cleared
            raise Refused(f"fault {key} is not open (cleared earlier; `tpufleet faults --all` lists it)")
        if hit is None:
            raise Refused(f"unknown fault {key[:60]!r} (no fault has that id yet; {_open_ids(state)})")
        if hit.cleared:
            raise Refused(f"fault {key} was already cleared at {hit.cleared}")
        return [hit]
    if ":" not in key:  # neither a fault id nor a target (`F1`, `12`): say both forms, not only the target's
        refuse_a_slice(state, key)
        near = _open_fault_meant(state, key[1:] if key[:1] == "F" else key) or near_id(key)
        raise BadInput(
            f"bad fault id or target {key[:60]!r}: give a fault id as `tpufleet faults` lists it (f12) or a target"
            " id KIND:... (cube:c07, ocs:pod0/x/5)" + (f"; did you mean {near}?" if near else "")
        )
    target = canonical(normalize(state.fleet, key))
    hits = [f for f in state.faults if canonical(f.target) == target and f.is_open]
    if not hits:
        raise Refused(f"no open fault on {target}" + _open_inside(state, target))
    return hits


def _open_fault_meant(state: FleetState, number: str) -> str | None:
    """`f3` for `F3`, `3` or `003` when fault f3 is open, the one clear-fault could close; else None."""
    digits = number.lstrip("0") if number.isascii() and number.isdigit() else ""
    hit = state.fault(f"f{digits}") if digits and len(digits) < MAX_FAULT_ID_CHARS else None
    return hit.id if hit is not None and hit.is_open else None


def refuse_a_slice(state: FleetState, key: str) -> None:
    """BadInput when `key`, given where a component's id is taken (`inject-fault`, `clear-fault`), is the name of
    a slice or job: the operator meant its cubes, which `explain` names."""
    kind = "job" if key in state.jobs else "slice" if key in state.slices else None
    if kind is not None:
        raise BadInput(
            f"bad id {key[:60]!r}: the name of a {kind}, not a component's id (cube:c07, host:c07/3, ocs:pod0/x/5); "
            f"`tpufleet explain {key}` names its cubes and faults"
        )


def _open_ids(state: FleetState) -> str:
    """The open faults' ids, as `tpufleet faults` lists them (the first SHOWN_OPEN), or that none is open."""
    open_ids = [f.id for f in state.faults if f.is_open]
    if not open_ids:
        return "no fault is open"
    more = f" and {len(open_ids) - SHOWN_OPEN} more" if len(open_ids) > SHOWN_OPEN else ""
    return f"open: {', '.join(open_ids[:SHOWN_OPEN])}{more}"


SHOWN_OPEN = 8  # open fault ids named when an unknown one is given


SHOWN_INSIDE = 3  # open faults named when a target has none of its own


def _open_inside(state: FleetState, target: TargetId) -> str:
    """The open faults on components inside `target` (a cube's hosts, a host's chips), said with how to clear
    them: clearing a cube does not clear its hosts' faults, and the operator may not know one is open there."""
    inside = [f for f in state.faults if f.is_open and _contains(target, f.target)]
    if not inside:  # a mistyped target: say where the open ones are listed
        others = sum(1 for f in state.faults if f.is_open)
        return f"; open faults elsewhere: {others} (`tpufleet faults` lists them)" if others else "; no fault is open"
    named = ", ".join(f"{f.id} on {f.target}" for f in inside[:SHOWN_INSIDE])
    more = f" and {len(inside) - SHOWN_INSIDE} more" if len(inside) > SHOWN_INSIDE else ""
    return (
        f"; open inside it: {named}{more} (clear each by its id or target, e.g. `tpufleet clear-fault "
        f"{inside[0].id}`; `tpufleet faults` lists them)"
    )


def _contains(outer: TargetId, inner: TargetId) -> bool:
    """Whether `inner` is a part of `outer` (not the same component): a cube holds its hosts, chips, electrical
    and optical links; a host its chips and the electrical links between them."""
    if isinstance(outer, CubeId):
        return not isinstance(inner, (CubeId, OcsId)) and inner.cube == outer.cube
    if isinstance(outer, HostId) and isinstance(inner, (ChipId, IciId)) and inner.cube == outer.cube:
        return machines_hit(inner) == {outer.machine}
    return False
