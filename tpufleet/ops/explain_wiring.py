"""`explain SLICE` for a wired slice missing cross-connects: how many, on which OCS, what their programming waits
for, and the steps that wire it (the clears, then `plan-xconnect --apply`)."""

from __future__ import annotations

from tpufleet.errors import Refused
from tpufleet.fleetstate import Fault, FleetState, Slice, SliceState
from tpufleet.ids import LinkId, OcsId
from tpufleet.ops.explain_faults import faults_under
from tpufleet.ops.fleet import counted
from tpufleet.views import missing_xconnects


def _missing_by_ocs(state: FleetState, sl: Slice) -> dict[OcsId, int]:
    """OCS -> how many of the cross-connects a wired slice needs there are not in place."""
    from tpufleet.xconnect import wanted_pairs

    if not missing_xconnects(state, sl):
        return {}
    wanted = wanted_pairs(sl.shape, state.fleet, sl.coords)
    return {o: n for o, pairs in wanted.items() if (n := len(set(pairs) - state.ocs.get(o, frozenset())))}


def _missing_why(state: FleetState, sl: Slice, by_ocs: dict[OcsId, int]) -> str:
    from tpufleet.xconnect import ocs_order

    down = {f.target for f in faults_under(state, sl) if isinstance(f.target, OcsId)}
    held = sorted((o for o in by_ocs if o in down), key=ocs_order)
    missing, deferred = sum(by_ocs.values()), sum(by_ocs[o] for o in held)
    if not held:
        return f"{counted(missing, 'cross_connects')} it needs {'is' if missing == 1 else 'are'} not in place"
    where = f"{', '.join(map(str, held))} {'is' if len(held) == 1 else 'are'} down"
    live = [str(o) for o in sorted(by_ocs, key=ocs_order) if o not in down]
    rest = missing - deferred
    more = f"; {rest} more, on {', '.join(live)}, {'is' if rest == 1 else 'are'} not in place" if live else ""
    return (
        f"{counted(deferred, 'cross_connects')} {'is' if deferred == 1 else 'are'} deferred while {where} (fault-tolerant routing bridges them){more}; "
        f"after the repair, `plan-xconnect {sl.name} --apply` programs them"
    )


def _wiring_waits(
    state: FleetState, sl: Slice, now: str, by_ocs: dict[OcsId, int], why: list[str]
) -> list[Fault] | None:
    """The faults whose clears a wired slice's missing cross-connects wait for: an OCS still down holding some of
    them; when `plan-xconnect --apply` refuses (said in `why`), the failed or drained ports and OCS under it (a
    slice without fault-tolerant routing needs every OCS up). Empty: it programs them all now; None: it refuses
    for something no clear of these mends."""
    from tpufleet.ops.xconnect import make_plan

    under = faults_under(state, sl)
    waits = [f for f in under if isinstance(f.target, OcsId) and f.target in by_ocs]
    try:
        make_plan(state, sl.name, now)
    except Refused as exc:
        blocked = "; ".join(map(str, exc.details[:5])) or str(exc)
        why.append(f"`plan-xconnect {sl.name} --apply` refuses them until repaired: {blocked}")
        network = [f for f in under if isinstance(f.target, (LinkId, OcsId))]
        waits += [f for f in network if f not in waits]
        return waits or None
    return waits


def wiring_steps(
    state: FleetState, sl: Slice, now: str, why: list[str], next_steps: list[str], unrouted: bool = False
) -> bool:
    """Adds to `next_steps` what programs a wired slice's missing cross-connects (the clears they wait for, then
    `plan-xconnect --apply`) and says whether it did. A degraded slice waits for those clears on its rerouted
    tables, so it is wired and routed once, after them (and routed first only when its tables predate a fault:
    `explain._degraded`). A connected one without current tables (`unrouted`) is routed now (its tables do not
    route around the faults), then wired and routed again after the clears."""
    by_ocs = _missing_by_ocs(state, sl)
    if not by_ocs:
        return False
    why.append(_missing_why(state, sl, by_ocs))
    waits = _wiring_waits(state, sl, now, by_ocs, why)
    if waits is None or (waits and sl.state is not SliceState.DEGRADED and not unrouted):
        return False
    if waits and sl.state is not SliceState.DEGRADED:
        next_steps.append(f"tpufleet routes {sl.name}")
    clears = [f"tpufleet clear-fault {f.id}" for f in waits]
    next_steps.extend(dict.fromkeys(step for step in clears if step not in next_steps))
    next_steps.append(f"tpufleet plan-xconnect {sl.name} --apply")  # wired first: tables made before go stale
    return True
