"""A Compute Engine reservation's sub-blocks as cubes: planning the import of `gcloud compute reservations sub-blocks
list --format=json` against the state (pure: typed values in, a plan out; `reservation_document` decodes the list).

In All-Capacity mode a TPU7x reservation comes as blocks and sub-blocks, one sub-block a 4x4x4 cube of 16 hosts
(the fields read: `reservation_document`).

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
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tpufleet.fleetstate import Fault, FleetState
from tpufleet.gkerecords import MaintenanceWindow, SubBlockRecord
from tpufleet.ids import CubeId, natural_key
from tpufleet.integrations.k8s_plan import CLOSING_IMPORT as K8S_CLOSING_IMPORT
from tpufleet.integrations.k8s_plan import REASON_PREFIX as K8S_PREFIX
from tpufleet.integrations.reservation_document import ReservationInput
from tpufleet.model import known_pod
from tpufleet.text import bounded

__all__ = ["CLOSING_IMPORT", "REASON_PREFIX", "Drain", "ReservationPlan", "awaited", "clear_step", "plan"]

REASON_PREFIX = "reservation: "  # marks the drains an import opened: the only faults a later import may clear
CLOSING_IMPORT = "tpufleet import reservation SUB-BLOCKS.json --apply"  # gcloud's sub-block list, once it is over


def clear_step(fault_id: str, reason: str) -> str:
    """The command that closes a fault: a reservation's maintenance drain is closed by the import that no longer
    finds the maintenance announced, and a fault `import k8s` opened by the import whose node list no longer
    reports it; cleared by hand while its source still reports it, the next import opens it again (and the cube,
    back in the pool meanwhile, can take a slice that fault then stops)."""
    if reason.startswith(REASON_PREFIX):
        return CLOSING_IMPORT
    return K8S_CLOSING_IMPORT if reason.startswith(K8S_PREFIX) else f"tpufleet clear-fault {fault_id}"


def awaited(faults: list[Fault]) -> tuple[str, str]:
    """What a move waits for, in words (`it waits for ...`) and as a condition (`it moves once ...`): a fault's
    repair, but a maintenance drain is never repaired: the maintenance ends, and the import closes a reservation's
    (a maintenance plan's is cleared then)."""
    from tpufleet.maintenance import a_plans_drain

    planned = [f.id for f in faults if a_plans_drain(f.reason)]  # a plan's wave: over when its window is
    repairs = [f.id for f in faults if not f.reason.startswith(REASON_PREFIX) and f.id not in planned]
    drains = [f.id for f in faults if f.reason.startswith(REASON_PREFIX)]
    one, plural = len(drains) == 1, "" if len(drains) == 1 else "s"
    words, once = [], []
    if repairs:
        words.append(f"{repairs[0]}'s repair" if len(repairs) == 1 else f"the repair of {', '.join(repairs)}")
        once.append(f"{', '.join(repairs)} {'is' if len(repairs) == 1 else 'are'} repaired and cleared")
    if planned:
        behind = f"the maintenance behind drain{'' if len(planned) == 1 else 's'} {', '.join(planned)}"
        words.append(f"the end of {behind} (a maintenance plan's, cleared then)")
        once.append(f"{behind} is over and {'it is' if len(planned) == 1 else 'they are'} cleared")
    if drains:
        behind = f"the maintenance behind drain{plural} {', '.join(drains)}"
        closed = f"`tpufleet import reservation SUB-BLOCKS.json --apply` closes {'it' if one else 'them'}"
        words.append(f"the end of {behind} (the reservation's, {closed} then)")
        once.append(f"{behind} is over and {closed}")
    return " and ".join(words), " and ".join(once)


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
    updated: list[str] = field(default_factory=list)  # known sub-blocks whose health or maintenance changed, or
    # whose physical position (`physicalTopology.subBlock`) is given for the first time
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
            why = f"unknown block {bounded(block, 60)!r}: " + _no_pod(state, target, held | nodes_on.keys(), pod_of)
        if why:
            pod_of.pop(block, None)
            out.unplaced += [(sb.name, why) for sb in given.sub_blocks if sb.block == block]
    return pod_of


def _no_pod(state: FleetState, target: str | None, taken: set[str], planned: dict[str, str]) -> str:
    """Why a new block has no pod, naming the pods it could be (those no block holds yet) and the block that holds
    its pod: known to the state, or placed there by this same input (`planned`)."""
    free = [p.name for p in state.fleet.pods if p.name not in taken]
    could = f"pods no block holds: {', '.join(free)}" if free else "every pod holds a block already"
    if target is None:
        return f"give --pod POD to place it ({could})"
    blocks = sorted(b for b, p in {**state.k8s.blocks, **state.reservation.blocks, **planned}.items() if p == target)
    return f"{target} already holds block {bounded(', '.join(blocks), 60) or 'another'} ({could})"


def _place_sub_blocks(state: FleetState, given: ReservationInput, pod_of: dict[str, str], out: ReservationPlan) -> None:
    """Known names keep their cube, as do the partitions `import k8s` learnt (a sub-block's name is its nodes'
    partition id), and a sub-block at a partition's physical sub-block (its nodes' `gce-topology-subblock`);
    new ones take the pod's cubes neither import holds, in physical order."""
    known, learnt = state.reservation.sub_blocks, state.k8s.partitions
    taken = {r.cube for r in known.values()} | set(learnt.values())
    free = {p.name: [c for c in p.cubes if c not in taken] for p in state.fleet.pods}
    at = _partitions_at(state, given, pod_of)
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
        elif sb.name in at:
            cube = at[sb.name]
            out.new.append(sb.name)
        elif free[pod]:
            cube = free[pod].pop(0)
            out.new.append(sb.name)
        else:
            out.unplaced.append((sb.name, _no_cube_left(state, pod, out)))
            continue
        out.mapped[sb.name], out.pods[sb.name] = sb.record(cube), pod
        was = known.get(sb.name)  # a record of an older version has no position: one given now is learnt
        if was is not None and (was != out.mapped[sb.name] or (was.position is None and sb.position is not None)):
            out.updated.append(sb.name)
    out.unplaced.sort()


def _partitions_at(state: FleetState, given: ReservationInput, pod_of: dict[str, str]) -> dict[str, str]:
    """New sub-block -> the cube of the partition `import k8s` learnt at its physical position (`physicalTopology.
    subBlock` = its nodes' `gce-topology-subblock`), when that cube is of its block's pod and no sub-block's yet."""
    known, learnt = state.reservation.sub_blocks, state.k8s.partitions
    held = {r.cube for r in known.values()} | {learnt[sb.name] for sb in given.sub_blocks if sb.name in learnt}
    # (pod, position): a position names a sub-block within its block, and two blocks may use the same ones
    at = {(state.fleet.cube_pod.get(cube), position): cube for cube, position in state.k8s.sub_blocks.items()}
    out: dict[str, str] = {}
    for sb in given.sub_blocks:
        cube = at.get((pod_of.get(sb.block), sb.position)) if sb.position is not None else None
        if sb.name in known or cube is None or cube in held:
            continue
        out[sb.name] = cube
        held.add(cube)
    return out


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
    for name, record in sorted(out.mapped.items(), key=lambda kv: natural_key(kv[1].cube)):
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
