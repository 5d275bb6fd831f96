"""Use cases of `plan-spares` (spare cubes for the running slices at a confidence) and `suspects` (hosts and cubes
that fail far more often than the fleet). The model is `tpufleet.spares`' docstring; this module gathers its inputs
from the fleet state: each pod's rates, each cube's probability, the slices' cubes, the free healthy cubes."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from tpufleet import spares
from tpufleet.constants import MACHINES_PER_CUBE, OCS_PER_POD, OPTICAL_LINKS_PER_CUBE
from tpufleet.errors import BadInput
from tpufleet.fleetstate import Fault, FleetState, Slice, SliceState
from tpufleet.ids import ChipId, HostId, IciId, OcsId, TargetId, natural_key, parse_target
from tpufleet.model import Pod, check_known, known_pod
from tpufleet.ops.history import CLOCK_SKEW, older_than
from tpufleet.ops.outcome import Outcome
from tpufleet.ops.spares_jobs import Spares, job_pods, jobs_across_pods, joint_figures, runs_on
from tpufleet.ops.spares_notes import caps_text, pod_note
from tpufleet.ops.views import JournalRead, of_scan
from tpufleet.state.journal import whole_from_first
from tpufleet.state.store import Store
from tpufleet.timeparse import back_from, parse_stamp
from tpufleet.views import reservation_maintenance

MODEL = (  # every cube is judged as up now (no repair under way) or down now: failures before now do not count
    "a cube up now is fully healthy over the horizon when none of its hosts and optical links fails in [0, horizon] "
    "(Poisson failures); cubes independent; a cube with an open fault is down now; h past faults multiply its "
    "intensity by 1 + h; slices without fault-tolerant routing also need every OCS of their pod"
)


class RateFile(Protocol):
    """Fault rates as `tpufleet.state.siminputs.load_rates` gives them."""

    host_per_day: float
    link_per_day: float
    ocs_per_day: float
    repair_hours: dict[str, float]


@dataclass(frozen=True)
class RatesChoice:
    """Where each pod's rates come from: the --fault-rates file (`override_name`) for every pod, a key it leaves
    out (every key, for `shipped`) taken from the pod's generation profile; without it the pod's generation
    profile, else the shipped TPU v4 file. `override` gives the file's rates on pods of a generation (None: the
    built-in TPU v4), as `tpufleet.state.siminputs.rates_by_generation` does."""

    shipped: RateFile
    override: Callable[[Any], RateFile] | None = None
    override_name: str = ""


def component_rates(rates: Any) -> spares.ComponentRates:
    """A rate file's or a generation profile's `faults` (FaultDefaults: repair hours as a RepairHours) as the
    core's rates."""
    hours = rates.repair_hours
    host, link, ocs = (
        (float(hours[k]) if isinstance(hours, Mapping) else float(getattr(hours, k))) for k in ("host", "link", "ocs")
    )
    return spares.ComponentRates(rates.host_per_day, rates.link_per_day, rates.ocs_per_day, host, link, ocs)


def _pod_rates(pod: Pod, choice: RatesChoice) -> tuple[spares.ComponentRates, str, Any]:
    gen = getattr(pod, "generation", None)  # a tpufleet.generations.Generation, or None: the built-in TPU v4
    if choice.override is not None:
        defaults = "" if gen is None else f", defaults of the {gen.name} profile"
        return component_rates(choice.override(gen)), f"fault rates ({choice.override_name}{defaults})", gen
    if gen is not None:
        return component_rates(gen.faults), f"generation {gen.name}", gen
    return component_rates(choice.shipped), "shipped fault-rates.yaml (TPU v4)", gen


def _history(state: FleetState) -> dict[str, int]:
    """cube -> cleared unplanned faults on its hosts, chips, electrical or optical links (the state's list, and
    the count of those moved to the journal)."""
    out = dict(state.pruned_history)
    for f in state.faults:
        cube = f.history_cube
        if not f.is_open and cube is not None:
            out[cube] = out.get(cube, 0) + 1
    return out


def _down_now(state: FleetState) -> set[str]:
    health = state.health()
    return set(health.cubes_out) | {link.cube for link in health.links_down}


def maintenance_within(state: FleetState, now: str | None, horizon_days: float) -> frozenset[str]:
    """The cubes up now whose maintenance, announced by the reservation for a later window, starts within the
    horizon: they will be drained in it, so they count as lost (none without `now`)."""
    start = parse_stamp(now) if now is not None else None
    if start is None:
        return frozenset()
    try:
        end = start + timedelta(days=horizon_days)
    except OverflowError:  # a horizon past the calendar's end: every announced window is within it
        end = datetime.max.replace(tzinfo=start.tzinfo)
    down = _down_now(state)  # a cube that failed is lost already: counted once, as down now
    return frozenset(
        row["cube"]
        for row in reservation_maintenance(state)
        if not row["drained"]
        and row["cube"] not in down
        and (when := parse_stamp(row["window_start"] or "")) is not None
        and when <= end
    )


def _selected(state: FleetState, names: Sequence[str] | None) -> list[Slice]:
    """The slices asked for (a job's name: its slices), each once; all but the evicted ones by default."""
    if names is None:  # an evicted slice runs on none of its cubes: a spare would stand in for nothing
        return [sl for sl in state.slices.values() if sl.state is not SliceState.EVICTED]
    chosen: dict[str, Slice] = {}
    for n in names:  # an unknown one: Refused, as every command says it
        for sl in state.slices_named(n):
            if sl.name in chosen:
                raise BadInput(
                    f"bad option --slices: slice {sl.name!r} given twice (once as a slice of job {sl.job!r})"
                )
            chosen[sl.name] = sl
    return list(chosen.values())


def plan(
    state: FleetState,
    choice: RatesChoice,
    confidence: float,
    horizon_days: float,
    slice_names: Sequence[str] | None = None,
    pod_name: str | None = None,
    now: str | None = None,
) -> Outcome:
    """Per pod: each cube's probability of staying fully healthy, the healthy cubes at the confidence, the spares
    the chosen slices need and the cubes to hold back (read only: no change). At `now`, a cube whose announced
    maintenance starts within the horizon counts as lost (its drain will take it)."""
    if pod_name is not None:
        pod_name = known_pod(state.fleet, pod_name)
    chosen = _selected(state, slice_names)
    spanning = {
        job: pods for job, pods in jobs_across_pods(state, chosen).items() if pod_name in (None, *pods)
    }  # with --pod, the jobs with a slice there: their other pods are planned too, for the joint figure only
    needed = {pod for pods in spanning.values() for pod in pods}
    maintenance = maintenance_within(state, now, horizon_days)
    context = _Context(
        state, _history(state), _down_now(state), state.machine_usage(), maintenance, slice_names is not None
    )
    planned_pods = {
        pod.name: _pod_plan(
            context, pod, [s for s in chosen if runs_on(s)[0] == pod.name], choice, confidence, horizon_days
        )
        for pod in state.fleet.pods
        if pod_name in (None, pod.name) or pod.name in needed
    }
    rows = {name: row for name, (row, _) in planned_pods.items()}

    def plan_for(pod: str, slices: list[Slice]) -> tuple[dict[str, Any], Spares]:
        return _pod_plan(context, state.fleet.pod_by_name[pod], slices, choice, confidence, horizon_days)

    jobs = [
        joint_figures(job, job_pods(job, pods, chosen, planned_pods, plan_for), confidence)
        for job, pods in spanning.items()
    ]
    planned = [rows[p.name] for p in state.fleet.pods if pod_name in (None, p.name)]
    return Outcome(
        {"confidence": confidence, "horizon_days": horizon_days, "model": MODEL, "pods": planned, "jobs": jobs}
    )


@dataclass(frozen=True)
class _Context:
    state: FleetState
    history: dict[str, int]
    down: set[str]
    usage: dict[str, set[int]]
    maintenance: frozenset[str] = frozenset()  # up now, drained for announced maintenance within the horizon
    named: bool = False  # the slices are those `--slices` names, not every running one


def _pod_plan(
    ctx: _Context, pod: Pod, slices: list[Slice], choice: RatesChoice, confidence: float, horizon: float
) -> tuple[dict[str, Any], Spares]:
    rates, source, gen = _pod_rates(pod, choice)
    hosts = gen.hosts_per_cube if gen is not None else MACHINES_PER_CUBE
    clean = spares.cube_healthy(rates, horizon, hosts, OPTICAL_LINKS_PER_CUBE, up_now=True)
    odds = _odds(ctx, pod, rates, hosts, horizon)
    own = list(dict.fromkeys(c for s in slices for c in runs_on(s)[1]))  # sub-cube slices sharing a cube: once
    # a cube up now is free however small its odds (they underflow to 0 over a long horizon): only down is not
    lost = ctx.down | ctx.maintenance
    free = [c for c in pod.cubes if c not in own and not ctx.usage.get(c) and c not in lost]
    position = {c: i for i, c in enumerate(pod.cubes)}
    degraded = ctx.state.degraded_cubes()  # at the same odds a DEGRADED cube (still serving) after the others
    free.sort(key=lambda c: (-odds[c], c in degraded, position[c]))
    # node pools tpufleet has not placed hold some (which, unknown): as many are no spares, off the least reliable end
    held = min(ctx.state.health().held.get(pod.name, 0), len(free))
    free = free[: len(free) - held]
    ocs = _ocs_term(ctx.state, pod, slices, rates, horizon, gen)
    curve = spares.spare_curve([odds[c] for c in own], [odds[c] for c in free], len(own), ocs, confidence)
    shown_to = min(len(free), curve.best + 2)
    row = {
        "pod": pod.name,
        "generation": gen.name if gen is not None else None,
        "rates_source": source,
        "cubes": len(pod.cubes),
        "hosts_per_cube": hosts,
        "p_cube": clean,
        "cubes_down_now": [c for c in pod.cubes if c in ctx.down],  # in the pod's order (c99 before c100)
        "cubes_maintenance_in_horizon": [c for c in pod.cubes if c in ctx.maintenance],
        "cubes_with_history": {c: ctx.history[c] for c in pod.cubes if ctx.history.get(c) and c not in ctx.down},
        "expected_healthy": sum(odds.values()),
        "healthy_cubes_at_confidence": spares.cubes_at_confidence(list(odds.values()), confidence),
        "slices": [s.name for s in slices],
        "needed_cubes": len(own),
        "ocs_all_up": ocs,
        "free_healthy_cubes": len(free),
        "held_by_node_pools": held,
        "spares": curve.spares,
        "probability": curve.probability,
        "best_spares": curve.best,
        "hold_back": free[: curve.best],
        "curve": [{"spares": s, "probability": p} for s, p in enumerate(curve.probabilities[: shown_to + 1])],
        "note": pod_note(
            slices,
            curve,
            len(free),
            confidence,
            caps_text(ocs, lost.intersection(own), _ocs_down_now(ctx, pod, slices)),
            ctx.named,
            held,
        ),
    }
    return row, Spares(curve.probabilities, free)


def _odds(ctx: _Context, pod: Pod, rates: spares.ComponentRates, hosts: int, horizon: float) -> dict[str, float]:
    """Each cube's probability of staying fully healthy over the horizon (0 for a cube down now, or drained for
    announced maintenance within the horizon)."""
    return {
        c: 0.0
        if c in ctx.down or c in ctx.maintenance
        else spares.cube_healthy(rates, horizon, hosts, OPTICAL_LINKS_PER_CUBE, ctx.history.get(c, 0), up_now=True)
        for c in pod.cubes
    }


def cube_odds(
    state: FleetState, pod: Pod, choice: RatesChoice, horizon: float, now: str | None = None
) -> tuple[dict[str, float], str]:
    """Each cube up now with its probability of staying fully healthy over the horizon as `plan-spares` works it
    out (which may underflow to 0 over a long horizon: such a cube is up, and sure to fail; 0 too for a cube whose
    announced maintenance starts within the horizon from `now`), and where the pod's rates came from."""
    rates, source, gen = _pod_rates(pod, choice)
    hosts = gen.hosts_per_cube if gen is not None else MACHINES_PER_CUBE
    ctx = _Context(state, _history(state), _down_now(state), {}, maintenance_within(state, now, horizon))
    odds = _odds(ctx, pod, rates, hosts, horizon)
    return {c: p for c, p in odds.items() if c not in ctx.down}, source


def _ocs_term(
    state: FleetState, pod: Pod, slices: list[Slice], rates: spares.ComponentRates, horizon: float, gen: Any
) -> float:
    """1 when every slice rides through OCS failures; else P(every OCS of the pod up), 0 if one is down now."""
    if all(s.fault_tolerant_routing for s in slices):
        return 1.0
    if any(o.pod == pod.name for o in state.health().ocs_down):
        return 0.0
    return spares.ocs_all_up(rates, horizon, gen.ocs_count if gen is not None else OCS_PER_POD, up_now=True)


def _ocs_down_now(ctx: _Context, pod: Pod, slices: Sequence[Slice]) -> str:
    """The pod's OCS with an open fault or drain and the slices that cannot ride through it (what makes the OCS
    term 0), as the note names them; empty when none is down."""
    down = sorted((str(o) for o in ctx.state.health().ocs_down if o.pod == pod.name), key=natural_key)
    rigid = [s.name for s in slices if not s.fault_tolerant_routing]
    if not down or not rigid:
        return ""
    return f"{', '.join(down)} down now, which {', '.join(rigid)} (no fault-tolerant routing) cannot run without"


# ---- suspects ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Event:
    id: str
    target: TargetId
    opened: datetime


def _events(state: FleetState, moved: Sequence[Mapping[str, Any]], since: datetime) -> list[_Event]:
    """Unplanned faults opened in the window on the fleet's hardware: the state's (open and cleared) and the
    journal's moved records (a fleet `init --force` replaced may have had cubes this one lacks)."""
    records: dict[str, tuple[str, bool, str]] = {
        str(r["id"]): (str(r["target"]), bool(r.get("planned")), str(r.get("opened"))) for r in moved
    }
    records.update({f.id: (str(f.target), f.planned, f.opened) for f in state.faults})
    out = []
    for fid, (target, planned, opened) in records.items():
        stamp = parse_stamp(opened)
        if not planned and stamp is not None and stamp >= since and _known(state, parsed := parse_target(target)):
            out.append(_Event(fid, parsed, stamp))
    return sorted(out, key=lambda e: int(e.id[1:]) if e.id[1:].isdigit() else 0)


def _known(state: FleetState, target: TargetId) -> bool:
    try:
        check_known(state.fleet, target)
    except BadInput:
        return False
    return True


def _host_of(target: TargetId) -> str | None:
    """The host a fault is charged to: the machine itself, a chip's, an electrical link's source chip's."""
    if isinstance(target, HostId):
        return str(target)
    if isinstance(target, (ChipId, IciId)):
        return str(HostId(target.cube, ChipId(target.cube, target.x, target.y, target.z).machine))
    return None


def suspects_in(store: Store, window_days: float, p_value: float, now: datetime) -> tuple[Outcome, JournalRead]:
    """`suspects` on the stored fleet, and the journal read (its damaged or lost lines' faults not counted): back
    from its end to a day before the window (`history.CLOCK_SKEW`), where every fault opened in it was moved."""
    state = store.load()
    edge = window_start(now, window_days, CLOCK_SKEW)
    found = store.journal_back(lambda es: older_than(es[0].time, edge) and whole_from_first(es), state.serial)
    # faults a fleet `init --force` replaced were another fleet's, whatever its cubes are called
    since = max((i for i, entry in enumerate(found.entries) if entry.new_fleet), default=-1) + 1
    moved = [f for entry in found.entries[since:] for f in entry.moved_faults]
    return find_suspects(state, moved, window_days, p_value, now), of_scan(found, state.serial, store)


def window_start(now: datetime, window_days: float, skew: timedelta = timedelta(0)) -> datetime:
    """When a window of `window_days` ending now starts (`skew` earlier); a window reaching before the calendar
    (`--window 999999w`) starts at its beginning: every fault is in it."""
    return back_from(now, timedelta(days=window_days) + skew)


def find_suspects(
    state: FleetState, moved: Sequence[Mapping[str, Any]], window_days: float, p_value: float, now: datetime
) -> Outcome:
    """Hosts and cubes whose unplanned faults in the window fail a one-sided exact test given the fleet's count
    (`spares.suspects`), each with the `inject-fault --planned` that quarantines it (read only: no change)."""
    events = _events(state, moved, window_start(now, window_days))
    ids: dict[str, list[str]] = {}
    for e in events:
        host = _host_of(e.target)
        for unit in ([host] if host else []) + ([] if isinstance(e.target, OcsId) else [f"cube:{e.target.cube}"]):
            ids.setdefault(unit, []).append(e.id)
    cubes = len(state.fleet.cubes)
    hosts = sum(len(p.cubes) * _hosts_per_cube(p) for p in state.fleet.pods)
    found = [
        *spares.suspects({u: len(v) for u, v in ids.items() if u.startswith("host:")}, hosts, p_value),
        *spares.suspects({u: len(v) for u, v in ids.items() if u.startswith("cube:")}, cubes, p_value),
    ]
    window = f"{window_days:g}d"
    ranked = sorted(found, key=lambda s: (s.p_value, natural_key(s.unit)))  # ties as counted: c01/2 before c01/10
    rows = [_suspect_row(state, s, ids[s.unit], window) for s in ranked]
    return Outcome(
        {
            "window_days": window_days,
            "p_value": p_value,
            "faults_in_window": len(events),
            "hosts": hosts,
            "cubes": cubes,
            "suspects": rows,
        }
    )


def _hosts_per_cube(pod: Pod) -> int:
    gen = getattr(pod, "generation", None)
    return int(gen.hosts_per_cube) if gen is not None else MACHINES_PER_CUBE


def _suspect_row(state: FleetState, s: spares.Suspect, fault_ids: list[str], window: str) -> dict[str, Any]:
    target = parse_target(s.unit)
    reason = f"suspect: {s.faults} faults in {window}, fleet rate {s.expected:.3g}, p={s.p_value:.3g}"
    open_fault: Fault | None = state.open_fault_on(target)
    return {
        "target": s.unit,
        "kind": target.kind,
        "faults": s.faults,
        "expected": s.expected,
        "p_value": s.p_value,
        "fault_ids": fault_ids,
        "quarantined": open_fault is not None and open_fault.planned,
        "quarantine": f"tpufleet inject-fault {s.unit} --planned --reason {shlex.quote(reason)}",
    }
