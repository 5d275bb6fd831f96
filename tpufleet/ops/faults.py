"""Use cases of faults: inject (one, a scenario or a random draw), clear, and reschedule an evicted slice."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from tpufleet import fault_clearing, faults, moves, movesteps
from tpufleet.constants import MOVED_TABLES_REASON
from tpufleet.errors import BadInput, Refused
from tpufleet.fleetstate import Change, FleetState, Reroute, Slice, SliceState
from tpufleet.ids import OcsId, TargetId, meant, natural_key
from tpufleet.jobs import job_status, jobs_hit
from tpufleet.journalentry import fault_number
from tpufleet.model import check_known, cubes_held
from tpufleet.ops import clearmoves
from tpufleet.ops.explain import job_wire_steps
from tpufleet.ops.outcome import Outcome
from tpufleet.ops.xconnect import make_plan, wire
from tpufleet.state.store import Store
from tpufleet.tableneeds import degraded_without_tables, needs_tables
from tpufleet.text import around as around_text
from tpufleet.timeparse import parse_stamp
from tpufleet.views import missing_xconnects, wiring_wait

LISTED = ("id", "target", "planned", "opened", "cleared", "reason")
WINDOW = ("window_start", "window_end")  # a drain of announced maintenance only (import reservation)


@dataclass(frozen=True)
class FaultRequest:
    target: TargetId
    planned: bool = False
    reason: str = ""


def inject(
    state: FleetState,
    requests: Sequence[FaultRequest],
    now: str,
    dry_run: bool = False,
    linked_tables: Mapping[str, str] | None = None,
) -> Outcome:
    """Record the faults in order, each with its blast radius; the slices that must move are evicted and the
    tables of every slice a fault touches go stale. A dry run works out the same and commits nothing.
    `linked_tables`: a symbolic link standing where a slice's tables belong, by slice (the jobs' steps remove it).

    The targets are checked against this state's fleet: the command checked them against the state it read
    before taking the lock, and another writer (`init --force`) may have changed the fleet since."""
    for request in requests:
        check_known(state.fleet, request.target)
    radii = []
    for request in requests:
        radius = faults.inject(state, request.target, request.planned, request.reason, now)
        stale = state.mark_routes_stale(
            [s.slice for s in radius.slices if s.action != "none"], f"fault {radius.fault_id}"
        )
        entry = radius.to_dict()
        if not radius.duplicate_of:  # stale before this fault or by it: either way they cross it
            entry["routes_stale"] = stale
            rerouted = {s.slice for s in radius.slices if s.action == "reroute"}
            entry["routes_none"] = [n for n in degraded_without_tables(state) if n in rerouted]  # cross it too
        hit = jobs_hit(state, entry, now)  # after this fault's evictions and reroutes: the job-level verdict
        for job in hit:
            job["next"] = job_wire_steps(state, job["job"], job["next"], now, linked_tables=linked_tables)
        if hit:
            entry["jobs"] = hit
        _evicted_steps(state, entry["slices"])
        radii.append(entry)
    new = [r for r in radii if not r.get("duplicate_of")]
    if not new or dry_run:
        return Outcome(radii)
    summary = "inject-fault " + ", ".join(f"{r['fault_id']} {r['target']}" for r in new)
    return Outcome(radii, Change(summary, {"faults": [r["fault_id"] for r in new]}))


def _evicted_steps(state: FleetState, hit: list[dict[str, Any]]) -> None:
    """Each evicted slice of no job (a job's come with the job's verdict): `next`, `tpufleet reschedule SLICE` when
    cubes are reserved for it, else `tpufleet explain SLICE`, which says what it waits for."""
    for s in hit:
        if s["action"] == "reschedule" and state.slices[s["slice"]].job is None:
            ready = (s.get("replacement") or {}).get("status") == "proposed"
            s["next"] = [f"tpufleet {'reschedule' if ready else 'explain'} {s['slice']}"]


def clear(state: FleetState, key: str, now: str, moves: bool = True) -> Outcome:
    """Close a fault (by id) or every open fault on a target; network faults make the touched slices' tables stale.
    `moves`: judge which evicted slices `reschedule` can move now (a move proposed for each evicted slice, before and
    after: the command's answer; the imports, alerts and maintenance waves that clear in bulk read none of it)."""
    cleared = fault_clearing.faults_to_clear(state, key)
    waited = _wiring_waits(state)  # before the repair: what it changes is what this clear names
    movable = clearmoves.before(state, cleared) if moves else None
    unwired = _unwired_refused(state)
    for fault in cleared:
        state.clear_fault(fault, now)
    gone = {f.id for f in cleared}
    for sl in state.slices.values():
        if sl.reroute is not None and gone & set(sl.reroute.faults):
            left = tuple(f for f in sl.reroute.faults if f not in gone)
            if left:  # still routing around others: the figures stand until `routes` is run again
                state.degrade(sl.name, replace(sl.reroute, faults=left))
            else:
                state.recover(sl.name)
    hits = [(sl.name, how) for f in cleared for sl, how in faults.touched_slices(state, f.target)]
    touched = {name for name, how in hits if how == "network"}
    dropped = _foreign_pairs_dropped(state, [f.target for f in cleared if isinstance(f.target, OcsId)])
    stale = [n for n in state.mark_routes_stale(touched, "fault cleared") if state.slices[n].state.wired]
    rewire, waits = _rewiring(waited, _wiring_waits(state), {name for name, _ in hits})
    rewire = sorted({*rewire, *(unwired - _unwired_refused(state))}, key=natural_key)
    data: dict[str, Any] = {
        "cleared": [f.record() for f in cleared],
        **(
            clearmoves.moves_now(state, movable, cleared)
            if movable is not None
            else {"reschedule": [], "reschedule_waits": {}}
        ),
        "routes_stale": stale,
        "rewire": rewire,  # `plan-xconnect --apply` programs them now
        "rewire_waits": waits,
        "xconnects_dropped": dropped,
        "serial": state.next_serial,
    }
    return Outcome(data, Change("clear-fault " + ", ".join(f"{f.id} {f.target}" for f in cleared)))


def _wiring_waits(state: FleetState) -> dict[str, str | None]:
    """Each wired slice missing cross-connects -> why `plan-xconnect --apply` cannot program them yet (None: it can
    now), in natural order."""
    missing = sorted((name for name, sl in state.slices.items() if missing_xconnects(state, sl)), key=natural_key)
    return {name: wiring_wait(state, state.slices[name]) for name in missing}


def _unwired_refused(state: FleetState) -> set[str]:
    """The slices allocated and never wired whose `plan-xconnect --apply` is refused now (an OCS or port down, a
    cube out of the pool): a repair that lifts the refusal names them in `rewire`, as it names wired slices."""
    refused = set()
    for name, sl in state.slices.items():
        if sl.state is SliceState.ALLOCATED:
            try:
                make_plan(state, name, "")
            except Refused:
                refused.add(name)
    return refused


def reopen_note(fault: Mapping[str, Any]) -> str | None:
    """Of a fault an import opened and `clear-fault` closed by hand: the next import opens it again while its
    source still reports it (the import's own run closes it once the source no longer does). None for another."""
    from tpufleet.integrations.k8s_plan import REASON_PREFIX as K8S_PREFIX
    from tpufleet.integrations.reservation import REASON_PREFIX as RESERVATION_PREFIX

    if fault["reason"].startswith(RESERVATION_PREFIX):
        return (
            f"{fault['id']} was the reservation's drain for maintenance: the next `tpufleet import reservation SUB-BLOCKS.json --apply` "
            "opens it again while the reservation announces that maintenance"
        )
    if fault["reason"].startswith(K8S_PREFIX):
        return (
            f"{fault['id']} was opened by `tpufleet import k8s`: the next import opens it again while the node list "
            "still reports it"
        )
    return None


def _rewiring(
    before: Mapping[str, str | None], after: Mapping[str, str | None], concerned: set[str]
) -> tuple[list[str], dict[str, str]]:
    """What a clear says of the slices missing cross-connects: `rewire`, those it lets `plan-xconnect --apply`
    program now (they waited before it, or miss pairs since: pairs it dropped); `rewire_waits`, those still waiting
    that it concerns or whose wait it changed. A slice that could be wired before it, or waits for the same
    elsewhere, is no news of this repair (`status` keeps listing it)."""
    changed = {name for name, why in after.items() if name not in before or before[name] != why}
    rewire = [name for name, why in after.items() if why is None and name in changed]
    waits = {name: why for name, why in after.items() if why and (name in changed or name in concerned)}
    return rewire, waits


def _foreign_pairs_dropped(state: FleetState, repaired: Sequence[OcsId]) -> list[dict[str, Any]]:
    """An OCS back from repair keeps no cross-connect on a slice's port that the slice does not want there.

    While it was down, slices wired through it deferred their pairs there (`xconnect.plan`), so the pairs an
    earlier tenant left on their ports were never removed: live again, they would join two slices (or a slice and
    a free cube), or two cubes of one slice that are not neighbours in its grid (a cube that was a 4x4x4 joined to
    itself, now in a larger slice: `routes` then refuses it as miswired). Those pairs are dropped with the repair;
    the slices missing theirs are listed in `rewire`."""
    owners = state.owner_of_ports()
    dropped = []
    for ocs in repaired:
        if state.open_fault_on(ocs) is not None:
            continue  # another fault on it is still open: nothing is live yet
        wanted = _pairs_wanted_on(state, ocs)
        pairs = state.ocs.get(ocs, frozenset())
        unwanted = sorted(
            (a, b)
            for a, b in pairs
            if (owner := owners.get((ocs.pod, a)) or owners.get((ocs.pod, b))) is not None
            and (a, b) not in wanted.get(owner, set())
        )
        if unwanted:
            state.set_ocs({**state.ocs, ocs: pairs - set(unwanted)})
            dropped.append({"ocs": str(ocs), "pairs": [list(p) for p in unwanted]})
    return dropped


def _pairs_wanted_on(state: FleetState, ocs: OcsId) -> dict[str, set[tuple[int, int]]]:
    """slice -> the pairs its own grid wants on this OCS (a pair joins two cubes of one slice only)."""
    from tpufleet.xconnect import wanted_pairs

    return {
        sl.name: set(wanted_pairs(sl.shape, state.fleet, sl.coords).get(ocs, []))
        for sl in state.slices.values()
        if sl.pod == ocs.pod and not sl.machines and not sl.shape.is_subcube
    }


def listing(
    store: Store,
    all_faults: bool = False,
    moved: list[dict[str, Any]] | None = None,
    state: FleetState | None = None,
) -> list[dict[str, Any]]:
    """`tpufleet faults`: the open faults (with `all_faults`, the cleared ones too, older ones from the journal:
    `moved`, when the caller has read them against `state`)."""
    state = store.load() if state is None else state
    records: list[dict[str, Any]] = [f.record() for f in state.faults if all_faults or f.is_open]
    if all_faults:
        moved = store.moved_faults() if moved is None else moved
        # a journal line's records are read as written: one whose id is damaged sorts first, not exit 70
        records = sorted([*_once(moved, records), *records], key=lambda r: fault_number(r.get("id")))
    return [{k: r.get(k) for k in LISTED} | {k: r[k] for k in WINDOW if k in r} for r in records]


def opened_between(rows: list[dict[str, Any]], start: datetime | None, end: datetime | None) -> list[dict[str, Any]]:
    """`faults --since/--until`: the rows of faults opened at `start` or later and at `end` or before (a bound None
    is open; a row whose time is unreadable, a damaged journal record's, is left out)."""
    opened = [(row, parse_stamp(row["opened"]) if isinstance(row.get("opened"), str) else None) for row in rows]
    return [
        row
        for row, when in opened
        if when is not None and (start is None or when >= start) and (end is None or when <= end)
    ]


def _once(moved: list[dict[str, Any]], kept: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The journal's records of faults not listed yet: a journal line copied by hand repeats its records, and
    the state's own record of a fault comes first."""
    seen = {str(r.get("id")) for r in kept}
    out = []
    for record in moved:
        if (key := str(record.get("id"))) not in seen:
            seen.add(key)
            out.append(record)
    return out


def apply_import(
    state: FleetState,
    plan: dict[str, Any],
    clear_ids: Sequence[str],
    requests: Sequence[FaultRequest],
    opened: Sequence[dict[str, Any]],
    now: str,
    summary: str,
) -> Outcome:
    """An import's health changes applied, through the same transitions as `clear-fault` and `inject-fault`: the
    faults `clear_ids` cleared, then `requests` opened. Each of the plan's entries `opened` gets its fault's id
    (None: its target has that fault open already), and a drain of announced maintenance its window; the plan
    gets the analysis errors of the blast radii and the serial of the change, marked applied."""
    for fault_id in clear_ids:
        clear(state, fault_id, now, moves=False)
    radii = inject(state, requests, now).data if requests else []
    ids = {r["target"]: r["fault_id"] for r in radii if not r.get("duplicate_of")}
    plan["analysis_errors"] = [e for r in radii for e in r.get("analysis_errors", [])]
    plan["slices_hit"] = _slices_hit(radii)
    for entry in opened:
        entry["id"] = ids.get(entry["target"])
        if entry["id"] is not None and WINDOW[0] in entry:
            state.set_fault_window(entry["id"], *(entry[k] for k in WINDOW))
    plan["applied"], plan["serial"] = True, state.next_serial
    return Outcome(plan, Change(summary, {"faults": sorted(filter(None, ids.values()), key=natural_key)}))


def reschedule(state: FleetState, name: str, avoid: Sequence[str] = ()) -> Outcome:
    """Move an evicted slice onto its proposed replacement and wire it there; the cubes `avoid` names (a
    maintenance plan's later drains) are taken only when no other fits, as cubes under announced maintenance."""
    unknown = next((c for c in avoid if c not in state.fleet.cube_pod), None)
    if unknown is not None:  # checked against this state's fleet: the one the command read may be older
        said = meant(unknown, state.fleet.cube_pod) or f" ({cubes_held(state.fleet)})"
        raise BadInput(f"bad option --avoid: unknown cube {unknown!r}{said}")
    sl = state.slice(name)
    if sl.state is not SliceState.EVICTED:
        raise Refused(
            f"slice {name!r} is {sl.state}, not evicted; nothing to reschedule (`tpufleet explain {name}` says what it "
            "needs, if anything)"
        )
    landing = _landing(state, sl, avoid)
    if isinstance(landing, str):
        raise Refused(f"cannot reschedule {name!r} yet: {landing}")
    proposal, figures, around = landing
    assert proposal.alloc is not None and proposal.plan is not None
    alloc, plan = proposal.alloc, proposal.plan
    home = alloc.pod == sl.pod and tuple(alloc.cubes) == tuple(sl.cubes)  # back on its own cubes
    state.move(name, alloc)
    wire(state, sl, plan.changes, "rescheduled")
    if figures is not None:  # it runs on, degraded, as it would had the faults struck it there
        state.degrade(name, Reroute(figures["all_to_all_retained"], figures["vcs"], tuple(around)))
    if home:  # its tables are of these cubes: stale only as they were (the fault that evicted it made them so)
        stale = [name] if (record := state.routes.get(name)) is not None and record.stale else []
    else:
        stale = state.mark_routes_stale({name}, MOVED_TABLES_REASON, moved=True)  # of the cubes it left
    data = {"slice": name, "serial": state.next_serial, **proposal.to_dict(), "status": "moved", "routes_stale": stale}
    data["in_place"] = home
    data["routes_none"] = [name] if name not in state.routes and needs_tables(state, sl) else []
    if figures is not None:
        data["reroute"] = {**{k: v for k, v in figures.items() if k != "all_to_all_kept_exactly"}, "faults": around}
    if sl.job is not None:  # the job runs again only when every slice is back
        data["job"] = job_status(state, sl.job).record()
    s = plan.summary
    return Outcome(data, Change(f"reschedule {name}: {','.join(sl.cubes)} (+{s['add']} -{s['remove']})"))


def _landing(state: FleetState, sl: Slice, avoid: Sequence[str] = ()) -> tuple[Any, Any, list[str]] | str:
    """Where `reschedule` would move the evicted slice now: its proposal, the reroute figures of its landing (None
    on healthy cubes) and the faults it lands around; else why it cannot move yet."""
    proposal = moves.propose_move(state, sl, frozenset(avoid))
    if not proposal.ready or proposal.alloc is None or proposal.plan is None:
        why: str = proposal.to_dict()["why"]
        return why
    alloc = proposal.alloc
    figures, why_not = movesteps.landing(state, sl, proposal)  # judged as the fault path judges a wired slice
    around = [f.id for f in movesteps.landing_faults(state, alloc.pod, alloc.cubes)]
    if why_not is not None:
        floor = f", or lower its floor (`tpufleet policy {sl.name} --min-throughput F`)" if "floor" in why_not else ""
        return (
            f"moved to {alloc.pod} {','.join(alloc.cubes)} around {around_text(around)}, {why_not}; it moves once "
            f"{around_text(around)} {'is' if len(around) == 1 else 'are'} cleared{floor}"
        )
    return proposal, figures, around


def import_preview(
    state: FleetState, clear_ids: Sequence[str], requests: Sequence[FaultRequest], now: str
) -> list[dict[str, Any]]:
    """What an import's plan would do to the slices once applied (`slices_hit`), worked out on a copy of the state:
    a drain of maintenance announced weeks ahead, or one NotReady node, stops a running slice at `--apply`, and the
    plan says so before it is applied. Nothing to open: nothing hit (a clear only gives cubes back)."""
    import copy

    if not requests:
        return []
    sim = copy.deepcopy(state)
    for fault_id in clear_ids:
        clear(sim, fault_id, now)
    return _slices_hit(inject(sim, requests, now, dry_run=True).data)


def _slices_hit(radii: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The slices the opened faults stop (`reschedule`) or make route around them (`reroute`), with the fault's
    target and why, in the order the faults were opened; a slice of a multislice job with the job's state after
    that fault (one evicted slice stops a job that is not elastic: every slice of it, not this one alone)."""
    rows = []
    for r in radii:
        if r.get("duplicate_of"):
            continue
        verdicts = {name: j for j in r.get("jobs", []) for name in j["slices_hit"]}
        for hit in r.get("slices", []):
            if hit["action"] == "none":
                continue
            job = verdicts.get(hit["slice"])
            rows.append(
                {
                    "slice": hit["slice"],
                    "target": r["target"],
                    "action": hit["action"],
                    "reason": hit["reason"],
                    "job": None if job is None else job["job"],
                    "job_state": None if job is None else job["state"],
                    "job_active_slices": None if job is None else job["active_slices"],
                    "job_total_slices": None if job is None else job["total_slices"],
                }
            )
    return rows
