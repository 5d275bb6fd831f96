"""GKE `Slice` objects (`kubectl get slices -o json`) against tpufleet's slices: planning their import (pure:
documents in, typed values out).

The list is decoded by `tpufleet.integrations.gke_slice_list`.

The plan, in steps:

1. Each partition id is a cube: the one `import k8s` learnt for that 4x4x4 partition id, else the cube of the
   reservation sub-block of that name (`import reservation`), else the cube of that id (`c05`). A partition
   nothing names, cubes of two pods, a pod of another accelerator, or a topology the pod's generation does not
   take is bad input (the list does not describe this fleet). A `v6e` Slice is left aside (no tpufleet
   generation is v6e) unless a pod is v6e.
2. A Slice is tpufleet's slice named in its `tpufleet.io/slice` annotation (as `export slices` writes it), else
   the slice of its name, else the one slice on exactly its cubes. Slices being deleted are left aside.
3. Drift, by kind: `not_in_tpufleet` (a Slice on cubes tpufleet holds free: `--apply` makes it a slice of its
   shape on those cubes), `conflict` (a Slice on cubes tpufleet cannot give it: held by another slice, out of
   the pool, another Slice's), `not_in_cluster` (a slice a Slice could describe, and none does), `shape` and
   `cubes` (the two disagree on what the slice is), `state` (not running, FAILED or not Ready, while tpufleet
   runs it, but ACTIVATING within ACTIVATION_GRACE of its last change: GKE bringing up what tpufleet wired;
   running while tpufleet evicted it; degraded on one side only). A Slice runs only when Ready (its
   `Ready` condition True) and ACTIVE or ACTIVE_DEGRADED. A FAILED, SliceCreationFailed or DEACTIVATING Slice with
   no slice in tpufleet holds nothing: it is listed as ignored, not drift.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import timedelta

from tpufleet import allocation
from tpufleet.constants import MACHINES_PER_CUBE
from tpufleet.errors import BadInput, Refused
from tpufleet.fleetstate import FleetState, Slice, SliceState
from tpufleet.ids import natural_key
from tpufleet.integrations.exports import CRD_SLICE_TYPES, accelerator
from tpufleet.integrations.gke_slice_list import GkeSlice, SliceListInput, bad_slice
from tpufleet.shapes import Shape, generation_shape, validate_dims
from tpufleet.timeparse import parse_stamp
from tpufleet.views import cube_holders

__all__ = [
    "DRIFT_KINDS",
    "IGNORED_STATES",
    "Drift",
    "NewSlice",
    "SlicePlan",
    "plan",
]

FAILED = frozenset({"FAILED", "SliceCreationFailed"})
IGNORED_STATES = FAILED | {"DEACTIVATING"}  # a Slice in these states with no tpufleet slice holds nothing
DRIFT_KINDS = ("not_in_tpufleet", "conflict", "not_in_cluster", "shape", "cubes", "state")
# How long a Slice may stay ACTIVATING after tpufleet wired its slice before they disagree: GKE's controller brings
# it up (programs the OCS, starts the hosts) after the twin's `plan-xconnect --apply`; longer, it is stuck.
ACTIVATION_GRACE = timedelta(minutes=30)
UNMODELLED = frozenset({"v6e"})  # Slice types of no tpufleet generation: such Slices are left aside


# ---- the plan -----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Drift:
    kind: str  # one of DRIFT_KINDS
    slice: str | None  # the Slice's name
    tpufleet_slice: str | None
    reason: str

    def record(self) -> dict[str, object]:
        return {"kind": self.kind, "slice": self.slice, "tpufleet_slice": self.tpufleet_slice, "reason": self.reason}


@dataclass(frozen=True)
class NewSlice:
    """A Slice the import makes a tpufleet slice: its name, shape and cubes (in partition order)."""

    name: str
    shape: Shape
    pod: str
    cubes: tuple[str, ...]
    state: str  # the Slice's
    ready: str | None  # its Ready condition's status

    def record(self) -> dict[str, object]:
        return {"slice": self.name, "topology": self.shape.text, "state": self.state, "ready": self.ready,
                "pod": self.pod, "cubes": list(self.cubes)}  # fmt: skip


@dataclass
class SlicePlan:
    new: list[NewSlice] = field(default_factory=list)
    drift: list[Drift] = field(default_factory=list)
    ignored: list[tuple[str, str, str]] = field(default_factory=list)  # (Slice, state, why)
    matched: dict[str, str] = field(default_factory=dict)  # Slice -> tpufleet slice
    in_sync: int = 0
    activating: list[tuple[str, str, str | None]] = field(default_factory=list)  # (Slice, slice, since): in sync

    def counts(self) -> dict[str, int]:
        return {kind: sum(1 for d in self.drift if d.kind == kind) for kind in DRIFT_KINDS}


@dataclass(frozen=True)
class _Placed:
    """A Slice with its cubes resolved and its shape checked against their pod."""

    gke: GkeSlice
    pod: str
    cubes: tuple[str, ...]
    shape: Shape


def plan(state: FleetState, given: SliceListInput, now: str | None = None) -> SlicePlan:
    """The import of `given` against `state` at `now` (steps 1-3 of the module docstring); BadStateFile for a Slice
    that does not describe this fleet."""
    out = SlicePlan()
    placed = _resolve_all(state, given, out)
    unmatched = _match(state, placed, out, now)
    _new_or_conflict(state, unmatched, out)
    described = set(out.matched.values())
    for name in sorted(state.slices, key=natural_key):
        sl = state.slices[name]
        if name not in described and _describable(state, sl):
            why = f"{sl.shape.text} on {_cube_text(sl.cubes)}: no Slice (export slices writes it)"
            out.drift.append(Drift("not_in_cluster", None, name, why))
    out.drift.sort(key=lambda d: (DRIFT_KINDS.index(d.kind), d.slice or "", d.tpufleet_slice or ""))
    return out


def _lookup(state: FleetState) -> dict[str, str]:
    """partition id -> cube: cube ids, then reservation sub-blocks, then the partition ids import k8s learnt."""
    ids = {cube: cube for cube in state.fleet.cubes}
    ids.update({name: r.cube for name, r in state.reservation.sub_blocks.items()})
    ids.update(state.k8s.partitions)
    return ids


def _resolve_all(state: FleetState, given: SliceListInput, out: SlicePlan) -> list[_Placed]:
    ids, pods_of = _lookup(state), dict[str, list[str]]()
    for pod in state.fleet.pods:
        pods_of.setdefault(accelerator(pod), []).append(pod.name)
    # a pod without a generation stands for whatever reservation `export slices --type` named: any type's Slice
    generic = any(pod.generation is None for pod in state.fleet.pods)
    placed = []
    for s in given.slices:
        if s.deleting:
            out.ignored.append((s.name, s.state, "being deleted (metadata.deletionTimestamp)"))
        elif s.kind not in pods_of and s.kind in UNMODELLED:
            out.ignored.append((s.name, s.state, f"type {s.kind}: tpufleet models no pod of that accelerator"))
        elif s.kind not in pods_of and not generic:
            raise bad_slice(given.file, f"{s.path}.spec.type", s.kind, f"no pod of this fleet is {s.kind}", s.name)
        else:
            placed.append(_resolve(state, s, ids, given.file))
    return placed


def _resolve(state: FleetState, s: GkeSlice, ids: dict[str, str], file: str) -> _Placed:
    cubes = []
    for j, pid in enumerate(s.partitions):
        if pid not in ids:
            problem = "no such partition: not a partition id import k8s learnt, a reservation sub-block, nor a cube"
            raise bad_slice(file, f"{s.path}.spec.partitionIds.{j}", pid, problem, s.name)
        cubes.append(ids[pid])
    if len(set(cubes)) != len(cubes):
        raise bad_slice(file, f"{s.path}.spec.partitionIds", list(s.partitions), "two partitions are one cube", s.name)
    pods = sorted({state.fleet.cube_pod[c] for c in cubes}, key=natural_key)
    if len(pods) > 1:
        raise bad_slice(
            file, f"{s.path}.spec.partitionIds", ",".join(cubes), f"cubes of pods {', '.join(pods)}", s.name
        )
    pod = state.fleet.pod_by_name[pods[0]]
    if pod.generation is not None and accelerator(pod) != s.kind:
        problem = f"its partitions are cubes of {pod.name}, a {accelerator(pod)} pod"
        raise bad_slice(file, f"{s.path}.spec.type", s.kind, problem, s.name)
    if s.dims is None:  # a 2-D topology (v6e's): tpufleet's pods are 3-D tori
        raise bad_slice(file, f"{s.path}.spec.topology", s.topology, "not a 3-D shape (AxBxC) of this fleet", s.name)
    try:
        shape = generation_shape(s.dims, False, pod.generation) if pod.generation else validate_dims(s.dims)
    except BadInput as exc:
        raise bad_slice(file, f"{s.path}.spec.topology", s.topology, str(exc), s.name) from None
    return _Placed(s, pod.name, tuple(cubes), shape)


def _match(state: FleetState, placed: list[_Placed], out: SlicePlan, now: str | None) -> list[_Placed]:
    """Pair Slices with tpufleet slices (annotation, name, then exactly the same cubes); compare each pair."""
    by_cubes = {frozenset(sl.cubes): sl.name for sl in state.slices.values()}
    unmatched = []
    for p in placed:
        s = p.gke
        name = next((n for n in (s.tpufleet_name, s.name) if n in state.slices), None)
        if name is None:
            name = by_cubes.get(frozenset(p.cubes))
        if name is None or name in out.matched.values():
            unmatched.append(p)
            continue
        out.matched[s.name] = name
        sl = state.slices[name]
        activating = sl.state.wired and _activating(s, now)  # GKE bringing up what tpufleet wired: in sync
        if activating:
            out.activating.append((s.name, name, s.since))
        found = _compare(p, sl, activating)
        out.drift += found
        out.in_sync += not found
    return unmatched


def _compare(p: _Placed, sl: Slice, activating: bool) -> list[Drift]:
    s, found = p.gke, []
    if p.shape.dims != sl.shape.dims:
        why = f"the Slice is {p.shape.text}, tpufleet's slice {sl.shape.text}"
        found.append(Drift("shape", s.name, sl.name, why))
    elif set(p.cubes) != set(sl.cubes):
        why = f"the Slice is on {_cube_text(p.cubes)}, tpufleet's slice on {_cube_text(sl.cubes)}"
        found.append(Drift("cubes", s.name, sl.name, why))
    disagree = None if activating else _state_drift(s, sl)
    if disagree is not None:
        found.append(Drift("state", s.name, sl.name, disagree))
    return found


def _activating(gke: GkeSlice, now: str | None) -> bool:
    """Whether the Slice is being brought up, within ACTIVATION_GRACE of its Ready condition's last change (no
    time given, or no `now`: taken as within)."""
    if gke.state != "ACTIVATING" or gke.ready == "True":
        return False
    since, at = parse_stamp(gke.since or ""), parse_stamp(now or "")
    return since is None or at is None or at - since <= ACTIVATION_GRACE


def _state_drift(gke: GkeSlice, sl: Slice) -> str | None:
    """Why the Slice's state and the slice's disagree; None when they do not (an allocated slice, not yet
    wired in tpufleet's twin, agrees with any: GKE's controller wires it). A Slice not Ready is not running,
    whatever its reason says."""
    if sl.state.wired and gke.state in FAILED:
        return f"GKE reports {gke.state}; tpufleet runs it ({sl.state})"
    if sl.state.wired and not gke.running:
        grace = int(ACTIVATION_GRACE.total_seconds() // 60)
        stuck = f" since {gke.since}, over {grace} minutes: stuck" if gke.state == "ACTIVATING" and gke.since else ""
        return f"GKE reports {gke.said}{stuck}: not running; tpufleet runs it ({sl.state})"
    if not gke.running:
        return None
    if sl.state is SliceState.EVICTED:
        return f"GKE reports {gke.state}; tpufleet evicted it (fault {sl.evicted_by})"
    if sl.state is SliceState.CONNECTED and gke.state == "ACTIVE_DEGRADED":
        return "GKE reports ACTIVE_DEGRADED; tpufleet knows no fault on it (connected)"
    if sl.state is SliceState.DEGRADED and gke.state == "ACTIVE":
        faults = ", ".join(sl.reroute.faults) if sl.reroute else "?"
        return f"GKE reports ACTIVE; tpufleet runs it degraded around faults {faults}"
    return None


def _new_or_conflict(state: FleetState, unmatched: list[_Placed], out: SlicePlan) -> None:
    """Slices tpufleet does not know: running ones first, each on its cubes if tpufleet can give them."""
    used, holders = state.machine_usage(), cube_holders(state)
    health = state.health()
    rank = {st: i for i, st in enumerate(("ACTIVE", "ACTIVE_DEGRADED"))}
    for p in sorted(unmatched, key=lambda p: (rank.get(p.gke.state, 2) if p.gke.running else 2, p.gke.name)):
        s = p.gke
        if s.state in IGNORED_STATES:
            out.ignored.append((s.name, s.state, f"{s.state} and not a tpufleet slice: holds no cubes"))
            continue
        why = _name_taken(state, s.name)
        try:
            if why is None:
                # the cluster runs it there: the room unplaced node pools hold is no reason to refuse it
                free = replace(health, held={})
                alloc = allocation.allocate(p.shape, state.fleet, used, free, p.pod, p.cubes, holders=holders)
        except (Refused, BadInput) as exc:
            why = _in_full(exc)
        if why is not None:
            out.drift.append(Drift("conflict", s.name, None, f"{s.said} on {_cube_text(p.cubes)}: {why}"))
            continue
        for cube in alloc.cubes:
            used.setdefault(cube, set()).update(alloc.machines or range(MACHINES_PER_CUBE))
            holders[cube] = f"taken by Slice {s.name} of this list"
        out.new.append(NewSlice(s.name, p.shape, p.pod, p.cubes, s.state, s.ready))
        why = f"{s.said} {p.shape.text} on cubes tpufleet holds free: {_cube_text(p.cubes)}"
        out.drift.append(Drift("not_in_tpufleet", s.name, None, why))
    out.ignored.sort()


def _in_full(exc: Refused | BadInput, most: int = 8) -> str:
    """A refusal with the problems it lists one a line on the command line (`7 problems`), in the one line a drift
    item has: each cube's problem named, the first `most` of them."""
    details = [str(d) for d in exc.details] if isinstance(exc, Refused) else []
    if not details:
        return str(exc)
    more = f"; and {len(details) - most} more" if len(details) > most else ""
    return f"{exc}: {'; '.join(details[:most])}{more}"


def _name_taken(state: FleetState, name: str) -> str | None:
    folded = name.casefold()
    for kind, names in (("slice", state.slices), ("multislice job", state.jobs)):
        other = next((n for n in names if n.casefold() == folded), None)
        if other is not None:
            return f"its name is tpufleet's {kind} {other!r}"
    return None


def _describable(state: FleetState, sl: Slice) -> bool:
    """A slice a Slice could describe: whole cubes, on a pod of an accelerator the Slice CRD takes."""
    return not sl.machines and accelerator(state.fleet.pod_by_name[sl.pod]) in CRD_SLICE_TYPES


def _cube_text(cubes: tuple[str, ...] | list[str]) -> str:
    shown = list(cubes[:8])
    return ",".join(shown) + (f",... ({len(cubes)} cubes)" if len(cubes) > 8 else "")
