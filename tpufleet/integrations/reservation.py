"""A Compute Engine reservation's sub-blocks as cubes: decoding `gcloud compute reservations sub-blocks list
--format=json` and planning its import against the state (pure: documents in, typed values out).

In All-Capacity mode a TPU7x reservation comes as blocks and sub-blocks, one sub-block a 4x4x4 cube of 16 hosts.
The fields read are those of the Compute Engine API's `ReservationSubBlock` resource (REST reference,
`compute/docs/reference/rest/v1/reservationSubBlocks`): `name`, `count`, `inUseCount`, `physicalTopology`
{`cluster`, `block`, `subBlock`}, `healthInfo` {`healthStatus`, `healthyHostCount`, `degradedHostCount`} and
`reservationSubBlockMaintenance.upcomingGroupMaintenance` {`type`, `maintenanceStatus`, `windowStartTime`,
`windowEndTime`}. Items of kind `compute#reservationBlock` (`reservations blocks list`) may be given in the same
list: their `physicalTopology.block` is then the set of blocks a sub-block may name. Anything else is ignored.

The plan, in steps:

1. Each physical block is a pod: the one the state already knows for it, else `--pod`, else the pod `import k8s`
   learnt for that `gce-topology-block`, else the fleet's only pod, never a pod whose nodes are on another
   `gce-topology-block`; a block no pod can take is not placed (named, with why).
2. Each sub-block is a cube of its block's pod: the cube the state already knows for its name, else the next
   cube no sub-block holds, in the order of `physicalTopology.subBlock` (the list order where absent). Sub-blocks
   beyond the pod's cubes are not placed.
3. DEGRADED is the cube's own state (it still serves); ongoing maintenance, or pending maintenance whose window
   has started, is a planned drain of the cube, its fault reason prefixed `reservation: ` and carrying the window.
   Pending maintenance whose window starts later is announced: kept with the sub-block, the cube serving until
   then (`plan-maintenance` moves its slices first). Only faults with that prefix are ever cleared, and only on
   cubes of sub-blocks in the input (a sub-block missing says nothing).

>>> doc = [{"name": "sb-a", "physicalTopology": {"block": "b1", "subBlock": "s0"},
...         "healthInfo": {"healthStatus": "DEGRADED", "healthyHostCount": 15, "degradedHostCount": 1}}]
>>> sb = decode_reservation(doc, "list.json").sub_blocks[0]
>>> sb.name, sb.block, sb.health, sb.degraded_hosts
('sb-a', 'b1', 'DEGRADED', 1)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tpufleet.errors import NO_VALUE, BadStateFile
from tpufleet.fleetstate import Fault, FleetState
from tpufleet.gkerecords import MaintenanceWindow, SubBlockRecord
from tpufleet.ids import CubeId, natural_key
from tpufleet.model import known_pod
from tpufleet.text import bounded
from tpufleet.timeparse import RFC3339, real_time, utc_stamp

__all__ = [
    "HEALTH_STATUSES",
    "MAINTENANCE_STATUSES",
    "MAINTENANCE_TYPES",
    "REASON_PREFIX",
    "Drain",
    "ReservationInput",
    "ReservationPlan",
    "SubBlock",
    "decode_reservation",
    "plan",
]

# The enums, as the Compute Engine reference gives them (ReservationSubBlockHealthInfo.HealthStatus,
# UpcomingMaintenance.MaintenanceStatus and .Type).
HEALTH_STATUSES = ("HEALTHY", "DEGRADED", "HEALTH_STATUS_UNSPECIFIED")
MAINTENANCE_STATUSES = ("PENDING", "ONGOING", "UNKNOWN")
MAINTENANCE_TYPES = ("SCHEDULED", "UNSCHEDULED", "MULTIPLE", "UNKNOWN_TYPE")
KIND_SUB_BLOCK, KIND_BLOCK = "compute#reservationSubBlock", "compute#reservationBlock"
# the fields of the API's list response besides `items` (its `kind` is its items' kind): with only these, no items
_LIST_FIELDS = frozenset({"kind", "id", "selfLink", "nextPageToken", "warning"})
REASON_PREFIX = "reservation: "  # marks the drains an import opened: the only faults a later import may clear
CLOSING_IMPORT = "tpufleet import reservation SUB-BLOCKS.json --apply"  # gcloud's sub-block list, once it is over


def clear_step(fault_id: str, reason: str) -> str:
    """The command that closes a fault: a reservation's maintenance drain is closed by the import that no longer
    finds the maintenance announced; cleared by hand while it is, the next import opens it again (and the cube,
    back in the pool meanwhile, can take a slice that drain then stops)."""
    return CLOSING_IMPORT if reason.startswith(REASON_PREFIX) else f"tpufleet clear-fault {fault_id}"


def awaited(faults: list[Fault]) -> tuple[str, str]:
    """What a move waits for, in words (`it waits for ...`) and as a condition (`it moves once ...`): a fault's
    repair, but a reservation's maintenance drain is never repaired: the maintenance ends and the import closes it."""
    repairs = [f.id for f in faults if not f.reason.startswith(REASON_PREFIX)]
    drains = [f.id for f in faults if f.reason.startswith(REASON_PREFIX)]
    one, plural = len(drains) == 1, "" if len(drains) == 1 else "s"
    words, once = [], []
    if repairs:
        words.append(f"{repairs[0]}'s repair" if len(repairs) == 1 else f"the repair of {', '.join(repairs)}")
        once.append(f"{', '.join(repairs)} {'is' if len(repairs) == 1 else 'are'} repaired and cleared")
    if drains:
        behind = f"the maintenance behind drain{plural} {', '.join(drains)}"
        closed = f"`tpufleet import reservation` closes {'it' if one else 'them'}"
        words.append(f"the end of {behind} (the reservation's, {closed} then)")
        once.append(f"{behind} is over and {closed}")
    return " and ".join(words), " and ".join(once)


MAX_ITEMS = 65_536  # 455 TPU7x superpods; a reservation of 16 holds 2,304 sub-blocks
MAX_COUNT = 1_000_000
# A sub-block's name: RFC 1035, 1-63 characters (the reference's pattern). Physical ids: documented only as strings.
NAME = re.compile(r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?")
PHYSICAL_ID = re.compile(r"[\x21-\x7e]{1,128}")


@dataclass(frozen=True)
class SubBlock:
    """One sub-block of the list, as read."""

    name: str
    index: int  # its position in the list
    block: str  # physicalTopology.block ("" when absent)
    position: str | None  # physicalTopology.subBlock
    health: str
    healthy_hosts: int | None
    degraded_hosts: int | None
    count: int | None
    in_use: int | None
    maintenance: MaintenanceWindow | None

    def record(self, cube: str) -> SubBlockRecord:
        return SubBlockRecord(cube, self.block, self.health, self.healthy_hosts, self.degraded_hosts, self.maintenance)


@dataclass(frozen=True)
class ReservationInput:
    sub_blocks: tuple[SubBlock, ...]
    blocks: frozenset[str] | None  # physical blocks of the block items given; None: no block item in the list


class _Where:
    """Builds the messages of one input file: file, field path (list position first), object, value."""

    def __init__(self, file: str, items_at: str = "") -> None:
        self.file, self.items_at = file, items_at  # items_at: the list's own field (`items` in the API's response)

    def bad(self, path: str, value: object, problem: str, name: str | None = None) -> BadStateFile:
        who = f"sub-block {bounded(name, 60)}: " if name else ""
        at = ".".join(p for p in (self.items_at, path) if p)
        return BadStateFile(self.file, at, value, who + problem)


def decode_reservation(doc: object, file: str) -> ReservationInput:
    """The sub-blocks (and blocks) of a `sub-blocks list --format=json` document: a JSON list, or the REST list
    response (an object with `items`). BadStateFile (exit 2) names the file, the item, the field and the value."""
    where, items = _items(doc, file)
    if len(items) > MAX_ITEMS:
        raise where.bad("", len(items), f"more than {MAX_ITEMS:,} items: import the reservation block by block")
    subs: list[SubBlock] = []
    blocks: set[str] | None = None
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise where.bad(str(i), item, "must be an object (a reservation sub-block)")
        if item.get("kind") == KIND_BLOCK:
            blocks = (blocks or set()) | {_block_of(item, str(i), where)}
        else:
            subs.append(_sub_block(item, i, where))
    _check_unique(subs, where)
    _check_blocks_named(subs, where)
    return ReservationInput(tuple(subs), None if blocks is None else frozenset(blocks))


def _items(doc: object, file: str) -> tuple[_Where, list[Any]]:
    """The list of items: the document itself (gcloud's list), or the `items` of the API's list response, whose
    fields are then named from `items` (`items.0.name`)."""
    where = _Where(file)
    if isinstance(doc, list):
        return where, doc
    if not isinstance(doc, dict):
        problem = (
            "must be a JSON list (gcloud compute reservations sub-blocks list --format=json) or an object with items"
        )
        raise where.bad("", doc, problem)
    if "items" not in doc and doc.get("kind") in (KIND_SUB_BLOCK, KIND_BLOCK) and doc.keys() <= _LIST_FIELDS:
        return _Where(file, "items"), []  # the API leaves an empty list's `items` out of its response
    if "items" not in doc:
        raise where.bad(
            "items", NO_VALUE, "missing (must be the list of sub-blocks, as the API's list response holds them)"
        )
    if not isinstance(doc["items"], list):
        raise where.bad("items", doc["items"], "must be a list of sub-blocks")
    return _Where(file, "items"), doc["items"]


def _check_blocks_named(subs: list[SubBlock], where: _Where) -> None:
    """Either every sub-block names its block or none does (one block): a sub-block without one among named ones
    would make a block of its own, with no name, that could take a pod for good."""
    unnamed = next((sb for sb in subs if not sb.block), None)
    named = next((sb for sb in subs if sb.block), None)
    if unnamed is not None and named is not None:
        problem = f"names no block, while sub-block {bounded(named.name, 60)} names {bounded(named.block, 60)}"
        raise where.bad(f"{unnamed.index}.physicalTopology.block", NO_VALUE, problem, unnamed.name)


def _sub_block(item: dict[str, Any], i: int, where: _Where) -> SubBlock:
    path = str(i)
    kind = item.get("kind", KIND_SUB_BLOCK)
    if kind != KIND_SUB_BLOCK:
        raise where.bad(f"{path}.kind", kind, f"must be {KIND_SUB_BLOCK} or {KIND_BLOCK}")
    name = item.get("name", NO_VALUE)
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise where.bad(f"{path}.name", name, "missing or not a sub-block name (RFC 1035, 1-63 characters)")
    topo = _object(item, "physicalTopology", path, where, name)
    health = _object(item, "healthInfo", path, where, name)
    status = health.get("healthStatus", "HEALTH_STATUS_UNSPECIFIED")
    if status not in HEALTH_STATUSES:
        raise where.bad(f"{path}.healthInfo.healthStatus", status, f"must be {_or(HEALTH_STATUSES)}", name)
    healthy = _count(health, "healthyHostCount", f"{path}.healthInfo", where, name)
    degraded = _count(health, "degradedHostCount", f"{path}.healthInfo", where, name)
    count = _count(item, "count", path, where, name)
    if count is not None and (healthy or 0) + (degraded or 0) > count:
        problem = f"with {healthy or 0} healthy, more hosts than the sub-block's count of {count}"
        raise where.bad(f"{path}.healthInfo.degradedHostCount", degraded, problem, name)
    return SubBlock(
        name=name,
        index=i,
        block=_physical(topo, "block", f"{path}.physicalTopology", where, name) or "",
        position=_physical(topo, "subBlock", f"{path}.physicalTopology", where, name),
        health=status,
        healthy_hosts=healthy,
        degraded_hosts=degraded,
        count=count,
        in_use=_count(item, "inUseCount", path, where, name),
        maintenance=_maintenance(item, path, where, name),
    )


def _block_of(item: dict[str, Any], path: str, where: _Where) -> str:
    name = item.get("name", NO_VALUE)
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise where.bad(f"{path}.name", name, "missing or not a block name (RFC 1035, 1-63 characters)")
    topo = _object(item, "physicalTopology", path, where, None)
    return _physical(topo, "block", f"{path}.physicalTopology", where, None) or ""


def _object(item: Mapping[str, Any], key: str, path: str, where: _Where, name: str | None) -> dict[str, Any]:
    value = item.get(key, {})
    if not isinstance(value, dict):
        raise where.bad(f"{path}.{key}", value, "must be an object", name)
    return value


def _physical(topo: Mapping[str, Any], key: str, path: str, where: _Where, name: str | None) -> str | None:
    value = topo.get(key)
    if value is not None and (not isinstance(value, str) or not PHYSICAL_ID.fullmatch(value)):
        raise where.bad(f"{path}.{key}", value, "must be a string of 1-128 visible ASCII characters", name)
    return value


def _count(obj: Mapping[str, Any], key: str, path: str, where: _Where, name: str) -> int | None:
    value = obj.get(key)
    if value is not None and (type(value) is not int or not 0 <= value <= MAX_COUNT):
        raise where.bad(f"{path}.{key}", value, f"must be an integer from 0 to {MAX_COUNT:,}", name)
    return value


def _maintenance(item: Mapping[str, Any], path: str, where: _Where, name: str) -> MaintenanceWindow | None:
    group = _object(item, "reservationSubBlockMaintenance", path, where, name)
    path = f"{path}.reservationSubBlockMaintenance"
    upcoming = _object(group, "upcomingGroupMaintenance", path, where, name)
    if not upcoming:
        return None
    path = f"{path}.upcomingGroupMaintenance"
    status = upcoming.get("maintenanceStatus", "UNKNOWN")
    if status not in MAINTENANCE_STATUSES:
        raise where.bad(f"{path}.maintenanceStatus", status, f"must be {_or(MAINTENANCE_STATUSES)}", name)
    kind = upcoming.get("type")
    if kind is not None and kind not in MAINTENANCE_TYPES:
        raise where.bad(f"{path}.type", kind, f"must be {_or(MAINTENANCE_TYPES)}", name)
    start, end = (_time(upcoming, k, path, where, name) for k in ("windowStartTime", "windowEndTime"))
    if start is not None and end is not None and end < start:
        raise where.bad(f"{path}.windowEndTime", end, f"before the window's start {start}", name)
    return MaintenanceWindow(status, kind, start, end)


def _time(obj: Mapping[str, Any], key: str, path: str, where: _Where, name: str) -> str | None:
    """The time as the tool writes times (UTC, whole seconds: the waves of a plan are ordered by it)."""
    value = obj.get(key)
    if value is None:
        return None
    written = isinstance(value, str) and RFC3339.fullmatch(value)
    stamp = utc_stamp(value) if written else None
    if stamp is None:
        raise where.bad(f"{path}.{key}", value, _time_problem(value if written else None), name)
    return stamp


def _time_problem(written: str | None) -> str:
    """Why a time is refused: RFC 3339 allows a leap second and offsets that leave year 9999 in UTC, which are
    times all the same, but none the tool can keep (`real_time` checks the calendar; a real time `utc_stamp`
    refuses can only be past year 9999 once in UTC)."""
    if written is not None and written[17:19] == "60" and real_time(f"{written[:17]}59{written[19:]}"):
        return "is a leap second (:60), which the tool cannot keep: give the second before or after"
    if written is not None and real_time(written):
        return "is past year 9999 in UTC, which the tool cannot keep"
    return "must be an RFC 3339 time of the calendar (2026-06-16T09:00:00Z)"


def _check_unique(subs: list[SubBlock], where: _Where) -> None:
    """No two sub-blocks with one name, nor at one physical position (else two would be one cube)."""
    names: dict[str, int] = {}
    positions: dict[tuple[str, str], SubBlock] = {}
    for sb in subs:
        if sb.name in names:
            raise where.bad(f"{sb.index}.name", sb.name, f"also the name of item {names[sb.name]}", sb.name)
        names[sb.name] = sb.index
        if sb.position is None:
            continue
        other = positions.setdefault((sb.block, sb.position), sb)
        if other is not sb:
            problem = f"the same position (block {bounded(sb.block, 60)}) as sub-block {other.name}"
            raise where.bad(f"{sb.index}.physicalTopology.subBlock", sb.position, problem, sb.name)


def _or(options: tuple[str, ...]) -> str:
    return ", ".join(options[:-1]) + " or " + options[-1]


# ---- the plan -----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Drain:
    """A planned drain the import wants open: a cube under announced maintenance."""

    cube: str
    sub_block: str
    window: MaintenanceWindow

    @property
    def reason(self) -> str:
        w = self.window
        when = f" {w.start or '?'} to {w.end or '?'}" if w.start or w.end else ""
        return f"{REASON_PREFIX}sub-block {self.sub_block} maintenance {w.kind or 'UNKNOWN_TYPE'} {w.status}{when}"

    def record(self) -> dict[str, object]:
        return {
            "target": f"cube:{self.cube}",
            "sub_block": self.sub_block,
            "planned": True,
            "reason": self.reason,
            "window_start": self.window.start,
            "window_end": self.window.end,
        }


@dataclass
class ReservationPlan:
    blocks: dict[str, str] = field(default_factory=dict)  # newly placed physical block -> pod
    mapped: dict[str, SubBlockRecord] = field(default_factory=dict)  # every placed sub-block -> its record now
    pods: dict[str, str] = field(default_factory=dict)  # placed sub-block -> pod
    new: list[str] = field(default_factory=list)  # sub-blocks mapped for the first time
    updated: list[str] = field(default_factory=list)  # known sub-blocks whose health or maintenance changed
    unplaced: list[tuple[str, str]] = field(default_factory=list)  # (sub-block, why)
    degraded_new: list[str] = field(default_factory=list)
    degraded_cleared: list[str] = field(default_factory=list)
    open: list[Drain] = field(default_factory=list)
    announced: list[Drain] = field(default_factory=list)  # maintenance whose window starts later: no drain yet
    clear: list[Fault] = field(default_factory=list)
    moved: list[tuple[Fault, Drain]] = field(default_factory=list)  # open drains whose maintenance was rescheduled
    kept: int = 0  # drains wanted that are already open (by an earlier import or by hand)

    @property
    def changes(self) -> dict[str, SubBlockRecord]:
        """The records to write: new and updated sub-blocks."""
        return {name: self.mapped[name] for name in (*self.new, *self.updated)}


def plan(state: FleetState, given: ReservationInput, pod: str | None, now: str) -> ReservationPlan:
    """The import of `given` against `state` (steps 1-3 of the module docstring); BadInput for an unknown pod."""
    if pod is not None:
        pod = known_pod(state.fleet, pod)
    out = ReservationPlan()
    pod_of = _place_blocks(state, given, pod, out)
    _place_sub_blocks(state, given, pod_of, out)
    _health_diff(state, out)
    _drain_diff(state, out, now)
    return out


def _place_blocks(state: FleetState, given: ReservationInput, pod: str | None, out: ReservationPlan) -> dict[str, str]:
    """physical block -> pod for the blocks that can be placed; the sub-blocks of the others go unplaced."""
    known, learnt = state.reservation.blocks, state.k8s.blocks
    held = set(known.values())
    only = state.fleet.pods[0].name if len(state.fleet.pods) == 1 else None
    pod_of: dict[str, str] = {}
    for block in sorted({sb.block for sb in given.sub_blocks}):
        # a pod whose nodes `import k8s` found on another physical block is that block's, as much as the ones
        # an earlier import reservation placed
        nodes_on = {p: b for b, p in learnt.items() if b != block and b not in known}
        target = pod or only
        if given.blocks is not None and block not in given.blocks:
            why = f"unknown block {bounded(block, 60)!r}: no block item of the list has it"
        elif block in known:
            pod_of[block] = known[block]
            why = "" if pod in (None, known[block]) else f"block {block} is {known[block]}, not --pod {pod}"
        elif learnt.get(block) in state.fleet.pod_by_name.keys() - held and pod in (None, learnt[block]):
            # the pod `import k8s` learnt for this block from its nodes' gce-topology-block label
            pod_of[block] = out.blocks[block] = learnt[block]
            held.add(pod_of[block])
            why = ""
        elif block in learnt and pod is not None and pod != learnt[block]:
            why = f"block {block} is {learnt[block]} (its nodes' gce-topology-block, import k8s), not --pod {pod}"
        elif target is not None and target not in held and target not in nodes_on:
            pod_of[block] = out.blocks[block] = target
            held.add(target)
            why = ""
        elif target in nodes_on:
            why = f"unknown block {bounded(block, 60)!r}: {target} is block {bounded(nodes_on[target], 60)} (its "
            why += "nodes' gce-topology-block, import k8s)"
        else:
            why = f"unknown block {bounded(block, 60)!r}: " + (
                f"{target} already holds another block" if target else "give --pod to place it"
            )
        if why:
            pod_of.pop(block, None)
            out.unplaced += [(sb.name, why) for sb in given.sub_blocks if sb.block == block]
    return pod_of


def _place_sub_blocks(state: FleetState, given: ReservationInput, pod_of: dict[str, str], out: ReservationPlan) -> None:
    """Known names keep their cube, as do the partitions `import k8s` learnt (a sub-block's name is its nodes'
    partition id); new ones take the pod's cubes neither import holds, in physical order."""
    known, learnt = state.reservation.sub_blocks, state.k8s.partitions
    taken = {r.cube for r in known.values()} | set(learnt.values())
    free = {p.name: [c for c in p.cubes if c not in taken] for p in state.fleet.pods}
    order = sorted(given.sub_blocks, key=lambda sb: (sb.position is None, natural_key(sb.position or ""), sb.index))
    for sb in order:
        pod = pod_of.get(sb.block)
        if pod is None:
            continue
        if sb.name in known or sb.name in learnt:
            cube = known[sb.name].cube if sb.name in known else learnt[sb.name]
            if state.fleet.cube_pod.get(cube) != pod:
                source = "the last import reservation" if sb.name in known else "its nodes' partition, import k8s"
                out.unplaced.append((sb.name, f"it is cube {cube} ({source}), not a cube of {pod}, its block's pod"))
                continue
            if sb.name not in known:
                out.new.append(sb.name)
        elif free[pod]:
            cube = free[pod].pop(0)
            out.new.append(sb.name)
        else:
            out.unplaced.append((sb.name, _no_cube_left(state, pod, out)))
            continue
        out.mapped[sb.name], out.pods[sb.name] = sb.record(cube), pod
        if sb.name in known and known[sb.name] != out.mapped[sb.name]:
            out.updated.append(sb.name)
    out.unplaced.sort()


def _no_cube_left(state: FleetState, pod: str, out: ReservationPlan) -> str:
    """Why a new sub-block finds no cube: the pod's cubes are sub-blocks, or partitions `import k8s` learnt that
    no sub-block of the list is named after (GKE names a TPU7x partition after its sub-block)."""
    cubes = state.fleet.pod_by_name[pod].cubes
    subs = {r.cube for r in state.reservation.sub_blocks.values()} | {r.cube for r in out.mapped.values()}
    partitions = set(state.k8s.partitions.values()) - subs
    held = sum(c in partitions for c in cubes)
    if not held:
        return f"no cube left: {pod} has {len(cubes)} cubes, each already a sub-block"
    return (
        f"no cube left: of {pod}'s {len(cubes)} cubes, {len(cubes) - held} are sub-blocks and {held} partitions "
        "import k8s learnt whose names are no sub-block's"
    )


def _health_diff(state: FleetState, out: ReservationPlan) -> None:
    """Sub-blocks newly DEGRADED, and no longer. A cube the node list already holds degraded is no news: one fact,
    whichever source said it first (as `import k8s` takes a reservation's degraded cube); the sub-block's health is
    still recorded as read, and each source clears its own word."""
    known, held = state.reservation.sub_blocks, state.k8s.degraded
    for name, record in sorted(out.mapped.items()):
        was = known[name].degraded if name in known else False
        if record.degraded and not was:
            if record.cube not in held:
                out.degraded_new.append(name)
        elif was and not record.degraded:
            out.degraded_cleared.append(name)


def _rescheduled(existing: Fault, drain: Drain) -> bool:
    """Whether `existing`, a drain an import opened, stands for maintenance whose window has moved since."""
    if not (existing.planned and existing.reason.startswith(REASON_PREFIX)):
        return False  # a drain or failure opened by hand is the operator's
    return (existing.window_start, existing.window_end) != (drain.window.start, drain.window.end)


def _drain_diff(state: FleetState, out: ReservationPlan, now: str) -> None:
    """Drains to open for maintenance due at `now`, and drains an import opened whose maintenance is gone or
    moved to a later window (the cube serves until then)."""
    wanted: set[str] = set()
    for name, record in sorted(out.mapped.items(), key=lambda kv: natural_key(kv[1].cube)):
        if record.maintenance is None or not record.maintenance.drains:
            continue
        drain, existing = Drain(record.cube, name, record.maintenance), state.open_fault_on(CubeId(record.cube))
        if not record.maintenance.due(now):
            out.announced.append(drain)  # an import's own drain on it is cleared below: it serves until the window
            continue
        wanted.add(record.cube)
        if existing is None:
            out.open.append(drain)
        elif _rescheduled(existing, drain):
            out.moved.append((existing, drain))
        else:
            out.kept += 1
    scope = {r.cube for r in out.mapped.values()}
    for fault in state.open_faults():
        target = fault.target
        if (
            isinstance(target, CubeId)
            and fault.reason.startswith(REASON_PREFIX)
            and target.cube in scope
            and target.cube not in wanted
        ):
            out.clear.append(fault)
