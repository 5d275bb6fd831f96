"""GKE `Slice` objects (`kubectl get slices -o json`) decoded into typed values (pure); `gke_slices` plans their
import against tpufleet's slices.

A Slice (group `accelerator.gke.io`, GKE's "Slice" custom resource reference; the CRD of xpk's slice
controller) has `spec.type` (`tpu7x`, or `v6e`), `spec.topology` (`AxBxC` chips) and `spec.partitionIds` (one
4x4x4 partition per 64 chips); its state is the `reason` of its `Ready` condition: ACTIVATING, ACTIVE,
ACTIVE_DEGRADED, FAILED, and in the controller also INCOMPLETE, DEACTIVATING, UNKNOWN and SliceCreationFailed;
no `Ready` condition yet is CREATED, and a `metadata.deletionTimestamp` means it is being deleted. A Slice runs
when its `Ready` condition's status is True and its reason ACTIVE or ACTIVE_DEGRADED: a Slice not Ready is not
running, whatever the reason says. Conditions are keyed by their type, so a type given twice is malformed.

>>> doc = {"items": [{"metadata": {"name": "a"}, "spec": {"type": "tpu7x", "topology": "4x4x8",
...         "partitionIds": ["p1", "p2"]}, "status": {"conditions": [{"type": "Ready", "status": "True",
...         "reason": "ACTIVE"}]}}]}
>>> s = decode_slice_list(doc, "slices.json").slices[0]
>>> s.name, s.dims, s.partitions, s.state, s.running
('a', (4, 4, 8), ('p1', 'p2'), 'ACTIVE', True)
>>> doc["items"][0]["status"]["conditions"][0]["status"] = "False"
>>> s = decode_slice_list(doc, "slices.json").slices[0]
>>> s.state, s.ready, s.running, s.said
('ACTIVE', 'False', False, 'ACTIVE (Ready False)')
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tpufleet.constants import CHIPS_PER_CUBE, CUBE_EDGE
from tpufleet.errors import NO_VALUE, BadStateFile, json_found
from tpufleet.integrations.exports import CRD_SLICE_TYPES, MAX_SLICE_NAME
from tpufleet.shapes import Vec, parse_dims
from tpufleet.text import bounded
from tpufleet.timeparse import utc_stamp

# The Ready condition's reasons: GKE's Slice reference, and xpk's slice controller (internal/core/constants.go,
# MMIGHealthStatus and SliceCreationFailed); CREATED is a Slice without a Ready condition yet.
SLICE_STATES = (
    "CREATED",
    "INCOMPLETE",
    "ACTIVATING",
    "ACTIVE",
    "ACTIVE_DEGRADED",
    "DEACTIVATING",
    "FAILED",
    "UNKNOWN",
    "SliceCreationFailed",
)
RUNNING = frozenset({"ACTIVE", "ACTIVE_DEGRADED"})  # with Ready True


ANNOTATION = "tpufleet.io/slice"


MAX_ITEMS = 65_536


NAME = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")  # the Slice reference: ^[a-z]([-a-z0-9]*[a-z0-9])?$
# ... and at most MAX_SLICE_NAME characters: one read with a longer name could not be exported under it


TOPOLOGY = re.compile(r"[0-9]{1,5}x[0-9]{1,5}(x[0-9]{1,5})?")  # the CRD's pattern, bounded


PARTITION = re.compile(r"[\x21-\x7e]{1,128}")


API_GROUP = "accelerator.gke.io/"


@dataclass(frozen=True)
class GkeSlice:
    """One Slice of the list, as read."""

    name: str
    index: int  # its position in the list
    kind: str  # spec.type
    topology: str
    dims: Vec | None  # the sides of a 3-D topology, in canonical order (None for a 2-D v6e one)
    partitions: tuple[str, ...]
    state: str  # the Ready condition's reason, or CREATED
    ready: str | None  # the Ready condition's status (True, False, Unknown), None without one
    deleting: bool
    tpufleet_name: str | None  # the tpufleet.io/slice annotation
    since: str | None = None  # the Ready condition's lastTransitionTime (UTC, as the tool writes times)

    @property
    def path(self) -> str:
        return f"items.{self.index}"

    @property
    def running(self) -> bool:
        """Ready, and ACTIVE or ACTIVE_DEGRADED: a Slice whose Ready condition is not True is not running."""
        return self.ready == "True" and self.state in RUNNING

    @property
    def said(self) -> str:
        """Its state as the plan says it: the reason, with the Ready status unless the Slice is running."""
        if self.running:
            return self.state
        return f"{self.state} (no Ready condition)" if self.ready is None else f"{self.state} (Ready {self.ready})"


@dataclass(frozen=True)
class SliceListInput:
    slices: tuple[GkeSlice, ...]
    file: str


def bad_slice(file: str, path: str, value: object, problem: str, name: str | None = None) -> BadStateFile:
    return BadStateFile(file, path, value, (f"Slice {bounded(name, 60)}: " if name else "") + problem)


def decode_slice_list(doc: object, file: str) -> SliceListInput:
    """The Slices of `kubectl get slices -o json` (a List with `items`). BadStateFile (exit 2) names the file,
    the Slice, the field and the value."""
    if not isinstance(doc, dict):
        raise bad_slice(
            file,
            "",
            NO_VALUE,
            f"must be a list of Slices with `items` (kubectl get slices -o json), not {json_found(doc)}",
        )
    items = doc.get("items", NO_VALUE)  # its own value named, not the document's type (`{"items": {}}`: 'dict')
    if not isinstance(items, list):
        problem = "missing (must be a list of Slices, " if items is NO_VALUE else "must be a list of Slices ("
        raise bad_slice(file, "items", items, problem + "kubectl get slices -o json)")
    kind = doc.get("kind", "List")
    if kind not in ("List", "SliceList"):  # another kind's list (NodeList, PodList...): a wrong file
        raise bad_slice(file, "kind", kind, "must be List or SliceList (kubectl get slices -o json)")
    if len(items) > MAX_ITEMS:
        raise bad_slice(file, "items", len(items), f"more than {MAX_ITEMS:,} Slices")
    slices = tuple(_slice(item, i, file) for i, item in enumerate(items))
    seen: dict[str, int] = {}
    for s in slices:
        if seen.setdefault(s.name, s.index) != s.index:
            raise bad_slice(file, f"{s.path}.metadata.name", s.name, f"also the name of item {seen[s.name]}", s.name)
    return SliceListInput(slices, file)


def _not_a_slice(kind: object) -> str:
    """What is wrong with an item of another kind; a node list has its own import."""
    if kind == "Node":
        return "a Node, not a Slice: this is a node list (kubectl get nodes -o json), which `tpufleet import k8s` reads"
    return "must be Slice (kubectl get slices -o json)"


def _slice(item: object, i: int, file: str) -> GkeSlice:
    path = f"items.{i}"
    if not isinstance(item, dict):
        raise bad_slice(file, path, NO_VALUE, f"must be an object (a Slice), not {json_found(item)}")
    meta = _object(item, "metadata", path, file, None)
    name = meta.get("name", NO_VALUE)
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise bad_slice(file, f"{path}.metadata.name", name, "missing or not a Slice name ([a-z]([-a-z0-9]*[a-z0-9])?)")
    if len(name) > MAX_SLICE_NAME:
        raise bad_slice(
            file, f"{path}.metadata.name", name, f"{len(name)} characters, over a Slice name's {MAX_SLICE_NAME}"
        )
    if item.get("kind", "Slice") != "Slice":
        kind = item.get("kind")
        raise bad_slice(file, f"{path}.kind", kind, _not_a_slice(kind), None if kind == "Node" else name)
    api = item.get("apiVersion", API_GROUP)
    if not isinstance(api, str) or not api.startswith(API_GROUP):
        raise bad_slice(file, f"{path}.apiVersion", api, f"must be of the group {API_GROUP.rstrip('/')}", name)
    annotations = _object(meta, "annotations", f"{path}.metadata", file, name)
    own = annotations.get(ANNOTATION)
    if own is not None and not isinstance(own, str):
        raise bad_slice(file, f"{path}.metadata.annotations.{ANNOTATION}", own, "must be a string", name)
    spec = _object(item, "spec", path, file, name)
    kind, topology, dims, partitions = _spec(spec, f"{path}.spec", file, name)
    status = _object(item, "status", path, file, name)
    state, ready, since = _state(status, f"{path}.status", file, name)
    deleting = meta.get("deletionTimestamp")
    if deleting is not None and (not isinstance(deleting, str) or utc_stamp(deleting) is None):
        raise bad_slice(file, f"{path}.metadata.deletionTimestamp", deleting, "must be a time (RFC 3339 text)", name)
    return GkeSlice(name, i, kind, topology, dims, partitions, state, ready, deleting is not None, own, since)


def _object(obj: Mapping[str, Any], key: str, path: str, file: str, name: str | None) -> dict[str, Any]:
    value = obj.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise bad_slice(file, f"{path}.{key}", NO_VALUE, f"must be an object, not {json_found(value)}", name)
    return value


def _spec(spec: dict[str, Any], path: str, file: str, name: str) -> tuple[str, str, Vec | None, tuple[str, ...]]:
    kind = spec.get("type")
    if not isinstance(kind, str) or kind not in CRD_SLICE_TYPES:  # (a list or object is no type, and unhashable)
        raise bad_slice(file, f"{path}.type", kind, f"must be {' or '.join(sorted(CRD_SLICE_TYPES))}", name)
    topology = spec.get("topology")
    if not isinstance(topology, str) or not TOPOLOGY.fullmatch(topology):
        raise bad_slice(file, f"{path}.topology", topology, "not a topology (AxBxC chips, e.g. 4x4x8)", name)
    dims: Vec | None = None
    if topology.count("x") == 2:
        dims = parse_dims(topology)
        chips = dims[0] * dims[1] * dims[2]
        if not chips:
            raise bad_slice(file, f"{path}.topology", topology, "a side of 0 chips", name)
        if min(dims) < CUBE_EDGE and kind == "tpu7x":  # as `export slices` skips sub-cube slices
            problem = "smaller than a 4x4x4 partition: a Slice is made of whole partitions"
            raise bad_slice(file, f"{path}.topology", topology, problem, name)
    elif kind == "tpu7x":
        raise bad_slice(file, f"{path}.topology", topology, "a tpu7x topology has three sides (AxBxC)", name)
    ids = spec.get("partitionIds")
    if not isinstance(ids, list) or not ids:
        found = f"not {json_found(ids)}" if "partitionIds" in spec else "missing"
        raise bad_slice(file, f"{path}.partitionIds", NO_VALUE, f"must be a non-empty list of strings, {found}", name)
    for j, pid in enumerate(ids):
        if not isinstance(pid, str) or not PARTITION.fullmatch(pid):
            problem = "must be a partition id (1-128 visible ASCII characters)"
            raise bad_slice(file, f"{path}.partitionIds.{j}", pid, problem, name)
        if ids.index(pid) != j:
            raise bad_slice(file, f"{path}.partitionIds.{j}", pid, f"also partition {ids.index(pid)}", name)
    # (a topology of no whole number of partitions is no shape of the generation: that rule names it, not a count)
    if dims is not None and not (any(d % CUBE_EDGE for d in dims) and min(dims) >= CUBE_EDGE):
        need = max(1, dims[0] * dims[1] * dims[2] // CHIPS_PER_CUBE)
        if len(ids) != need:
            problem = f"{topology} is {need} partition(s) of 64 chips, {len(ids)} given"
            raise bad_slice(file, f"{path}.partitionIds", len(ids), problem, name)
    return kind, topology, dims, tuple(ids)


def _state(status: dict[str, Any], path: str, file: str, name: str) -> tuple[str, str | None, str | None]:
    """The Ready condition's reason, status and time (CREATED, None and None without one). A condition type given
    twice is malformed: conditions are keyed by their type, and two Ready conditions leave the Slice's state
    unknown."""
    conditions = status.get("conditions", [])
    if not isinstance(conditions, list):
        raise bad_slice(file, f"{path}.conditions", NO_VALUE, f"must be a list, not {json_found(conditions)}", name)
    found: tuple[str, str | None, str | None] = ("CREATED", None, None)
    seen: dict[str, int] = {}
    for j, cond in enumerate(conditions):
        if not isinstance(cond, dict):
            raise bad_slice(
                file, f"{path}.conditions.{j}", NO_VALUE, f"must be an object, not {json_found(cond)}", name
            )
        kind = cond.get("type")
        if isinstance(kind, str) and seen.setdefault(kind, j) != j:
            problem = f"also the type of condition {seen[kind]} (one condition of a type)"
            raise bad_slice(file, f"{path}.conditions.{j}.type", kind, problem, name)
        if kind == "Ready":
            found = _ready(cond, f"{path}.conditions.{j}", file, name)
    return found


def _ready(cond: dict[str, Any], path: str, file: str, name: str) -> tuple[str, str, str | None]:
    """The Ready condition's reason (a Slice state), status and lastTransitionTime (None when not given)."""
    reason = cond.get("reason")
    if reason not in SLICE_STATES:
        problem = "not a Slice state (" + ", ".join(SLICE_STATES[1:]) + ")"
        raise bad_slice(file, f"{path}.reason", reason, problem, name)
    status = cond.get("status")
    if status not in ("True", "False", "Unknown"):
        raise bad_slice(file, f"{path}.status", cond.get("status", NO_VALUE), "must be True, False or Unknown", name)
    since = cond.get("lastTransitionTime")
    stamp = utc_stamp(since) if isinstance(since, str) else None
    if since is not None and stamp is None:
        raise bad_slice(file, f"{path}.lastTransitionTime", since, "must be a time (RFC 3339 text)", name)
    return str(reason), str(status), stamp
