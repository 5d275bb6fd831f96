"""Faults and their blast radius (seed 002 §3.3, §3.6), pure.

What a fault takes away, and what happens to each slice it touches:

* a chip, machine (host), electrical link or whole cube: the cube leaves the pool until repaired; the slices
  running on the failed machines are evicted (``reschedule``), with the replacement cubes that would be chosen
  and the cross-connect changes, or ``pending`` when none are free; other slices in the cube keep running
  (``none``).
* an OCS or optical link: the cubes stay in the pool. Slices with fault-tolerant routing keep running on new
  routing tables (``reroute``) if every pair is still routable and the tables are deadlock-free; slices that
  opted out, or that the router cannot fully serve, are rescheduled: an optical link by replacing the cube that
  owns the failed port, an OCS (which every cube of the pod uses) by moving to another pod.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tpufleet import allocation, xconnect
from tpufleet.errors import BadInput, Refused
from tpufleet.health import health_of
from tpufleet.ids import ChipId, CubeId, HostId, IciId, LinkId, OcsId, TargetId, machine_of, parse_target
from tpufleet.model import Fleet, check_known
from tpufleet.shapes import parse_shape

COMPUTE_KINDS = ("chip", "host", "ici", "cube")
NETWORK_KINDS = ("link", "ocs")
# Daily failure rates from the brief, per component.
DAILY_RATES = {"host": 0.0008, "link": 0.00005, "ocs": 0.0004}


def normalize(fleet: Fleet, text: str) -> TargetId:
    return check_known(fleet, parse_target(text))


def _machines_hit(target: TargetId) -> set[int] | None:
    """Machines of the cube a compute fault stops (None: the whole cube)."""
    if isinstance(target, HostId):
        return {target.machine}
    if isinstance(target, ChipId):
        return {machine_of(target.x, target.y, target.z)}
    if isinstance(target, IciId):
        d = "xyz".index(target.direction[1])
        step = 1 if target.direction[0] == "+" else -1
        other = [target.x, target.y, target.z]
        other[d] += step
        return {machine_of(target.x, target.y, target.z), machine_of(*other)}
    return None


def touched_slices(doc: dict, fleet: Fleet, target: TargetId) -> list[tuple[str, str]]:
    """(slice, "compute" | "network" | "bystander") for every slice the fault concerns."""
    out = []
    for name in sorted(doc["slices"]):
        sl = doc["slices"][name]
        machines = set(sl.get("machines") or range(16))
        shape = parse_shape(sl["shape"], sl["twisted"])
        if isinstance(target, (ChipId, HostId, IciId, CubeId)):
            if target.cube not in sl["cubes"]:
                continue
            hit = _machines_hit(target)
            out.append((name, "compute" if hit is None or hit & machines else "bystander"))
        elif isinstance(target, OcsId):
            if sl["pod"] == target.pod and not shape.is_subcube:
                out.append((name, "network"))
        elif isinstance(target, LinkId):
            if target.cube in sl["cubes"] and not shape.is_subcube:
                out.append((name, "network"))
    return out


@dataclass
class SliceImpact:
    slice: str
    action: str  # reschedule | reroute | none
    reason: str
    replacement: dict | None = None
    reroute: dict | None = None

    def to_dict(self) -> dict:
        out = {"slice": self.slice, "action": self.action, "reason": self.reason}
        if self.replacement is not None:
            out["replacement"] = self.replacement
        if self.reroute is not None:
            out["reroute"] = self.reroute
        return out


@dataclass
class BlastRadius:
    fault_id: str
    target: str
    planned: bool
    cubes_out: list[str]
    slices: list[SliceImpact] = field(default_factory=list)
    duplicate_of: str | None = None

    def to_dict(self) -> dict:
        out = {
            "fault_id": self.fault_id,
            "target": self.target,
            "planned": self.planned,
            "cubes_out": self.cubes_out,
            "slices": [s.to_dict() for s in self.slices],
        }
        if self.duplicate_of:
            out["duplicate_of"] = self.duplicate_of
        return out


def open_fault(doc: dict, target: str, planned: bool, reason: str, now: str) -> dict:
    fid = f"f{doc['next_fault']}"
    doc["next_fault"] += 1
    fault = {"id": fid, "target": target, "planned": planned, "reason": reason, "opened": now, "cleared": None,
             "opened_serial": doc["serial"] + 1}
    doc["faults"].append(fault)
    return fault


def propose_replacement(doc: dict, fleet: Fleet, name: str, cause: TargetId | None = None) -> dict:
    """The cubes (or machines) a rescheduled slice would get, and the cross-connect changes; `pending` if none.

    An open OCS fault as the cause means another pod (every cube of this one uses that OCS); an optical link
    means replacing the cube that owns the failed port.
    """
    avoid_pod = cause.pod if isinstance(cause, OcsId) else None
    avoid_cube = cause.cube if isinstance(cause, LinkId) else None
    sl = doc["slices"][name]
    shape = parse_shape(sl["shape"], sl["twisted"])
    health = health_of(doc)
    others = {k: v for k, v in doc["slices"].items() if k != name}
    keep = [c for c in sl["cubes"] if health.cube_ok(c) and c != avoid_cube]
    try:
        if avoid_pod is not None:
            pods = [p.name for p in fleet.pods if p.name != avoid_pod]
            last = None
            for pod in pods:
                try:
                    alloc = allocation.allocate(shape, fleet, others, health, pod=pod)
                    break
                except Refused as exc:
                    last = exc
            else:
                raise last or Refused(f"no other pod than {avoid_pod} to move to")
            coords = alloc.coords
        elif shape.is_subcube:
            blocked = dict(others)
            if avoid_cube or not health.cube_ok(sl["cubes"][0]):
                blocked["__failed__"] = {"cubes": [sl["cubes"][0]], "machines": list(range(16))}
            alloc = allocation.allocate(shape, fleet, blocked, health, pod=sl["pod"])
            coords = alloc.coords
        else:
            lost = [c for c in sl["cubes"] if c not in keep]
            used = allocation.machine_usage(others)
            used.update({c: set(range(16)) for c in sl["cubes"]})
            free = [c for c in fleet.pod_by_name[sl["pod"]].cubes if c not in used and health.cube_ok(c)]
            if len(free) < len(lost):
                raise Refused(f"need {len(lost)} healthy free cube(s) in {sl['pod']}, {len(free)} available")
            swap = dict(zip(lost, free))
            cubes = [swap.get(c, c) for c in sl["cubes"]]
            coords = {swap.get(c, c): v for c, v in sl["coords"].items()}
            alloc = allocation.Allocation(sl["pod"], cubes, coords)
    except Refused as exc:
        return {"status": "pending", "why": str(exc)}
    plan = xconnect.plan(shape, fleet, coords, doc["ocs"], health, sl["fault_tolerant_routing"])
    out = {
        "status": "proposed" if not plan.blocked else "pending",
        "pod": alloc.pod,
        "cubes": alloc.cubes,
        "coords": coords,
        "xconnect_changes": plan.summary,
    }
    if alloc.machines:
        out["machines"], out["origin"] = alloc.machines, alloc.origin
    if plan.blocked:
        out["why"] = "; ".join(plan.blocked[:5])
    if plan.deferred:
        out["deferred"] = plan.deferred
    return out


def reroute_figures(doc: dict, fleet: Fleet, name: str) -> dict:
    """What the slice's router achieves with the faults as they now stand."""
    from tpufleet import wiring
    from tpufleet.routing.report import evaluate

    sl = doc["slices"][name]
    graph = wiring.build(sl, fleet, doc["ocs"], health_of(doc))
    if sl["state"] != "connected":
        return {"fully_routable": False, "why": f"slice is {sl['state']}, not wired"}
    report = evaluate(wiring.slice_shape(sl), graph.expected, graph.nbr, "auto", ("all-to-all",))
    s = report.summary
    return {
        "fully_routable": s["unroutable_pairs"] == 0 and not graph.miswired,
        "unroutable_pairs": s["unroutable_pairs"],
        "deadlock_free": s["deadlock_free"],
        "vcs": s["vcs"],
        "all_to_all_retained": s["throughput_retained"]["all-to-all"],
        "missing_links": len(graph.missing),
    }


def inject(doc: dict, target_text: str, planned: bool, reason: str, now: str) -> BlastRadius:
    """Record a fault in `doc` (mutated) and work out its blast radius; evicts the slices that must move."""
    fleet = Fleet.from_doc(doc["fleet"])
    target = normalize(fleet, target_text)
    text = str(target)
    for fault in doc["faults"]:
        if fault["target"] == text and not fault["cleared"]:
            return BlastRadius(fault["id"], text, fault["planned"], [], [], duplicate_of=fault["id"])
    before = health_of(doc)
    fault = open_fault(doc, text, planned, reason, now)
    after = health_of(doc)
    cubes_out = sorted(set(after.cubes_out) - set(before.cubes_out))
    radius = BlastRadius(fault["id"], text, planned, cubes_out)
    for name, how in touched_slices(doc, fleet, target):
        sl = doc["slices"][name]
        if how == "bystander":
            radius.slices.append(SliceImpact(name, "none", "runs on other machines of the cube"))
            continue
        if sl["state"] == "evicted":
            radius.slices.append(SliceImpact(name, "none", "already evicted"))
            continue
        if how == "network" and sl["fault_tolerant_routing"]:
            figures = reroute_figures(doc, fleet, name)
            if figures["fully_routable"] and figures.get("deadlock_free"):
                why = "link drained before repair; fault-tolerant routing carries its traffic" if planned else "fault-tolerant routing absorbs it"
                radius.slices.append(SliceImpact(name, "reroute", why, reroute=figures))
                continue
            why = "fault-tolerant routing cannot serve every pair"
        elif how == "network":
            why = "opted out of fault-tolerant routing"
        else:
            why = f"{target.kind} fault stops its machines"
        if planned:
            why = f"planned drain of its {target.kind}: the job is notified and checkpoints before it moves"
        proposal = propose_replacement(doc, fleet, name, target)
        radius.slices.append(SliceImpact(name, "reschedule", why, replacement=proposal))
        sl["state"] = "evicted"
        sl["evicted_by"] = fault["id"]
    return radius


def clear(doc: dict, key: str, now: str) -> list[dict]:
    """Close the fault with this id, or every open fault on this target; Refused if there is none."""
    fleet = Fleet.from_doc(doc["fleet"])
    if key.startswith("f") and key[1:].isdigit():
        hits = [f for f in doc["faults"] if f["id"] == key]
        if not hits:
            raise Refused(f"unknown fault {key!r}")
        if hits[0]["cleared"]:
            raise Refused(f"fault {key} was already cleared at {hits[0]['cleared']}")
    else:
        text = str(normalize(fleet, key))
        hits = [f for f in doc["faults"] if f["target"] == text and not f["cleared"]]
        if not hits:
            raise Refused(f"no open fault on {text}")
    for f in hits:
        f["cleared"] = now
    return hits


def random_targets(fleet: Fleet, count: int, seed: int) -> list[str]:
    """Faults drawn with the brief's relative daily rates: machines 0.08%, ICI cables 0.005%, OCS 0.04% per day."""
    import numpy as np

    if count < 1:
        raise BadInput(f"bad option --random: {count} must be at least 1")
    rng = np.random.default_rng(seed)
    cubes = fleet.cubes
    pods = [p.name for p in fleet.pods]
    weights = np.array([
        DAILY_RATES["host"] * len(cubes) * 16,
        DAILY_RATES["link"] * len(cubes) * 96,
        DAILY_RATES["ocs"] * len(pods) * 48,
    ])
    kinds = rng.choice(3, size=count, p=weights / weights.sum())
    out = []
    for kind in kinds:
        if kind == 0:
            out.append(f"host:{cubes[rng.integers(len(cubes))]}/{rng.integers(16)}")
        elif kind == 1:
            out.append(f"link:{cubes[rng.integers(len(cubes))]}/{'xyz'[rng.integers(3)]}/{rng.integers(16)}/{('out', 'in')[rng.integers(2)]}")
        else:
            out.append(f"ocs:{pods[rng.integers(len(pods))]}/{'xyz'[rng.integers(3)]}/{rng.integers(16)}")
    return out


def apply_replacement(doc: dict, name: str, proposal: dict) -> None:
    sl = doc["slices"][name]
    sl.update(pod=proposal["pod"], cubes=proposal["cubes"], coords=proposal["coords"], state="allocated")
    if "machines" in proposal:
        sl["machines"], sl["origin"] = proposal["machines"], proposal["origin"]
    sl.pop("evicted_by", None)

