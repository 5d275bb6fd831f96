"""Reading a Kubernetes node list (`kubectl get nodes -o json`) as typed values (pure); the mapping file is read
by `k8s_mapping`.

Only the fields the import uses are read: `metadata.name`, `metadata.labels`, `spec.unschedulable`,
`spec.taints[].key/effect` and the `Ready` entry of `status.conditions`. Anything malformed in those is
`BadStateFile` (exit 2) naming the file, the node and the field; everything else in a node is ignored, so
output of any kubectl version is accepted. `decode_node_list` reads JSON bytes with a typed decoder that skips
the other fields unread, so a node list costs about its own size in memory, not 6-26x (see its docstring).

Label keys are GKE's (see `LabelKeys`); a fleet that names things its own way says so in the mapping file.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from functools import cache, cached_property
from typing import Annotated, Any

from tpufleet.constants import MiB
from tpufleet.errors import NO_VALUE, BadStateFile, json_found
from tpufleet.ids import HostId
from tpufleet.text import bounded

# Values of `cloud.google.com/gke-tpu-partition-4x4x4-state`, as GKE documents them.
PARTITION_STATES = ("HEALTHY", "DEGRADED", "UNHEALTHY", "UNSET", "INCOMPLETE")
# Of those, the ones that take the cube out of the pool: a partition that is not whole cannot form its 4x4x4.
# DEGRADED is not one of them: GKE documents a DEGRADED sub-block as still usable (a degraded cube that serves).
BAD_PARTITION_STATES = frozenset({"UNHEALTHY", "INCOMPLETE"})
DEGRADED_PARTITION = "DEGRADED"
HEALTHY_PARTITION = "HEALTHY"
DEFAULT_ACCELERATORS = ("tpu-v4-podslice", "tpu-v5p-slice", "tpu7x")  # pods built of 4x4x4 cubes
# Taints that announce planned work on a node (a cordon adds the first); NoSchedule or NoExecute only.
CORDON_TAINT = "node.kubernetes.io/unschedulable"  # what any cordon adds, `kubectl cordon` or GKE's upgrade alike
DEFAULT_DRAIN_TAINTS = (
    CORDON_TAINT,
    "cloud.google.com/impending-node-termination",  # GKE: graceful termination for maintenance (GPU/TPU nodes)
    "ToBeDeletedByClusterAutoscaler",  # the cluster autoscaler is removing the node
)
DRAIN_EFFECTS = ("NoSchedule", "NoExecute")
# The value GKE gives `cloud.google.com/active-node-maintenance` (`LabelKeys.node_maintenance`) while it services
# the node's host ("Manage GKE node disruption for GPUs and TPUs")
MAINTENANCE_ONGOING = "ONGOING"
NODE_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")  # a DNS subdomain
LABEL_VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?")
LABEL_KEY = re.compile(r"([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")
TOPOLOGY = re.compile(r"[1-9][0-9]{0,2}x[1-9][0-9]{0,2}(x[1-9][0-9]{0,2})?")
MAX_LABELS = 512  # per node; real nodes carry a few dozen
MAX_TAINTS = 64
# GKE's largest clusters (65,000 nodes) and tpufleet's largest fleet (64 pods of 1,024 machines)
MAX_NODES = 65_536
SPLIT_THE_LIST = "import the cluster in parts (kubectl get nodes -l LABEL -o json per node pool)"
MAX_CONDITIONS = 64  # per node; the kubelet and node-problem-detector report about ten
NODE_REASON_CHARS = 128  # of a node's Ready reason, kept in the fault it opens


@dataclass(frozen=True)
class LabelKeys:
    """The node labels the import reads and `export node-labels` writes."""

    accelerator: str = "cloud.google.com/gke-tpu-accelerator"
    topology: str = "cloud.google.com/gke-tpu-topology"
    block: str = "cloud.google.com/gce-topology-block"
    subblock: str = "cloud.google.com/gce-topology-subblock"
    host: str = "cloud.google.com/gce-topology-host"
    partition: str = "cloud.google.com/gke-tpu-partition-4x4x4-id"
    partition_state: str = "cloud.google.com/gke-tpu-partition-4x4x4-state"
    hostname: str = "kubernetes.io/hostname"
    node_pool: str = "cloud.google.com/gke-nodepool"  # a TPU node pool is one slice of its topology
    # tpufleet's own: where `export node-labels` put the node; they win over the GKE labels on import
    pod: str = "tpufleet.io/pod"
    cube: str = "tpufleet.io/cube"
    machine: str = "tpufleet.io/machine"
    # the reservation sub-block whose maintenance a node's NotReady (or its partition's failure) is, as `export
    # node-labels` writes it for a drain `import k8s` opened during that maintenance: read back as that drain
    maintenance: str = "tpufleet.io/maintenance"
    # GKE's own: ONGOING while GKE services the node (host maintenance of a GPU/TPU node): its NotReady is planned
    node_maintenance: str = "cloud.google.com/active-node-maintenance"

    @cached_property
    def read(self) -> tuple[str, ...]:
        return tuple(getattr(self, f.name) for f in fields(self))


@dataclass(frozen=True)
class K8sMapping:
    """How this fleet's nodes map onto pods, cubes and machines (all optional: GKE's labels by default)."""

    labels: LabelKeys = field(default_factory=LabelKeys)
    accelerators: frozenset[str] = frozenset(DEFAULT_ACCELERATORS)
    pods: Mapping[str, str] = field(default_factory=dict)  # block label value -> pod
    cubes: Mapping[str, str] = field(default_factory=dict)  # partition id -> cube
    nodes: Mapping[str, HostId] = field(default_factory=dict)  # node name -> machine
    drain_taints: frozenset[str] = frozenset(DEFAULT_DRAIN_TAINTS)
    source: str = "<no mapping file>"  # the file it was read from, named by the checks against the fleet

    def not_listed(self, accelerator: str) -> str:
        """Why a node of another accelerator is no TPU node: the accelerators taken, and whose list they are."""
        taken = ", ".join(sorted(self.accelerators))
        if self.accelerators == frozenset(DEFAULT_ACCELERATORS):
            return f"accelerator {accelerator} is not a TPU accelerator tpufleet models ({taken})"
        return f"accelerator {accelerator} is not in the accelerators of {self.source} ({taken})"


@dataclass(frozen=True)
class Node:
    name: str
    labels: Mapping[str, str]
    ready: str | None  # status of the Ready condition: "True", "False", "Unknown"; None when not reported
    ready_reason: str
    unschedulable: bool
    taints: tuple[tuple[str, str], ...]  # (key, effect)
    # its place in the list, as the messages name a field: `items.3 (node NAME)` (not part of what the node is)
    item: str = field(default="items", compare=False)


class Where:
    """Builds the messages of one input file: file, field path, value."""

    def __init__(self, file: str) -> None:
        self.file = file

    def bad(self, path: str, value: object, problem: str) -> BadStateFile:
        return BadStateFile(self.file, path, value, problem)


def k_text(key: object) -> str:
    """A key of the input as part of a field path: one line, cut to 60 characters like the values quoted."""
    return bounded(str(key), 60)


_MISSING: Any = object()
_KIND: dict[type, str] = {dict: "an object", list: "a list", str: "a string"}


def _get(obj: Mapping[str, Any], key: str, kind: type, where: Where, path: str, default: Any = _MISSING) -> Any:
    """obj[key], of type `kind`; `default` when absent, if one is given."""
    value = obj.get(key, _MISSING)
    field_path = f"{path}.{key}" if path else key  # a top-level field is named as itself, not `.items`
    if value is _MISSING:
        if default is not _MISSING:
            return default
        raise where.bad(field_path, NO_VALUE, f"missing (must be {_KIND[kind]})")
    if type(value) is not kind:
        raise where.bad(field_path, value, f"must be {_KIND[kind]}")
    return value


def parse_nodes(doc: object, file: str, keys: LabelKeys | None = None) -> list[Node]:
    """The nodes of a `kubectl get nodes -o json` document (a `List` or `NodeList` of `Node`)."""
    where, keys = Where(file), keys or LabelKeys()
    if not isinstance(doc, dict):
        raise where.bad(
            "", NO_VALUE, f"must be a JSON object of kind List (kubectl get nodes -o json), not {json_found(doc)}"
        )
    if doc.get("kind") not in ("List", "NodeList"):
        raise where.bad("kind", doc.get("kind", NO_VALUE), "must be List or NodeList (kubectl get nodes -o json)")
    items = _get(doc, "items", list, where, "")
    if len(items) > MAX_NODES:
        raise where.bad("items", len(items), f"more than {MAX_NODES:,} nodes: {SPLIT_THE_LIST}")
    return _read_items(items, where, keys)


def _read_items(items: Iterable[object], where: Where, keys: LabelKeys) -> list[Node]:
    nodes, seen = [], set()
    for i, item in enumerate(items):
        node = _parse_node(item, f"items.{i}", where, keys)
        if node.name in seen:
            raise where.bad(f"items.{i}.metadata.name", node.name, "node listed twice")
        seen.add(node.name)
        nodes.append(node)
    return nodes


def _parse_node(item: object, path: str, where: Where, keys: LabelKeys) -> Node:
    if not isinstance(item, dict):
        raise where.bad(path, NO_VALUE, f"must be a Node object, not {json_found(item)}")
    if item.get("kind", "Node") != "Node":
        raise where.bad(f"{path}.kind", item.get("kind"), "must be Node")
    meta = _get(item, "metadata", dict, where, path)
    name = _get(meta, "name", str, where, f"{path}.metadata")
    if not NODE_NAME.fullmatch(name):
        raise where.bad(f"{path}.metadata.name", name, "not a Kubernetes node name (lower-case DNS name)")
    path = f"{path} (node {name})"
    # the API server leaves out an empty map, so a node with no labels has no `labels` (a non-TPU node, then)
    labels = _get(meta, "labels", dict, where, f"{path}.metadata", {})
    _check_labels(labels, f"{path}.metadata.labels", where, keys)
    spec = _get(item, "spec", dict, where, path, {})
    status = _get(item, "status", dict, where, path, {})
    ready, reason = _ready(status, f"{path}.status", where)
    unschedulable = spec.get("unschedulable", False)
    if type(unschedulable) is not bool:
        raise where.bad(f"{path}.spec.unschedulable", unschedulable, "must be true or false")
    return Node(name, labels, ready, reason, unschedulable, _taints(spec, f"{path}.spec", where), path)


def _check_labels(labels: dict[str, Any], path: str, where: Where, keys: LabelKeys) -> None:
    if len(labels) > MAX_LABELS:
        raise where.bad(path, len(labels), f"more than {MAX_LABELS} labels")
    if not all(type(v) is str for v in labels.values()):
        key = next(k for k, v in labels.items() if type(v) is not str)
        raise where.bad(f"{path}.{k_text(key)}", labels[key], "a label value must be a string")
    for key in keys.read:  # only the labels the import reads are checked in full (a node carries dozens)
        value = labels.get(key)
        if value is not None and not LABEL_VALUE.fullmatch(value):
            raise where.bad(
                f"{path}.{k_text(key)}", value, "not a label value (at most 63 letters, digits, '-', '_', '.')"
            )
    for key, what in ((keys.block, "its pod"), (keys.partition, "its cube")):
        if labels.get(key) == "":  # Kubernetes allows it, but an empty value names nothing the state could keep
            raise where.bad(f"{path}.{k_text(key)}", "", f"empty: this label names {what} (remove it or give a value)")
    topology = labels.get(keys.topology)
    if topology is not None and not TOPOLOGY.fullmatch(topology):
        raise where.bad(f"{path}.{keys.topology}", topology, "not a TPU topology such as 4x4x8 or 2x4")
    state = labels.get(keys.partition_state)
    if state is not None and state not in PARTITION_STATES:
        raise where.bad(f"{path}.{keys.partition_state}", state, f"not one of {', '.join(PARTITION_STATES)}")
    machine = labels.get(keys.machine)
    if machine is not None and not (machine.isascii() and machine.isdigit() and int(machine) < 16):
        raise where.bad(f"{path}.{keys.machine}", machine, "not a machine number 0-15")
    cube = labels.get(keys.cube)
    if cube is not None and not re.fullmatch(r"c[0-9]{2,6}", cube):
        raise where.bad(f"{path}.{keys.cube}", cube, "not a cube id of the form cNN")


def _ready(status: dict[str, Any], path: str, where: Where) -> tuple[str | None, str]:
    conditions = _get(status, "conditions", list, where, path, [])
    if len(conditions) > MAX_CONDITIONS:
        raise where.bad(f"{path}.conditions", len(conditions), f"more than {MAX_CONDITIONS} conditions")
    found: tuple[str | None, str] = (None, "")
    seen: dict[str, int] = {}
    for j, cond in enumerate(conditions):
        if not isinstance(cond, dict):
            raise where.bad(f"{path}.conditions.{j}", cond, "must be an object")
        kind = cond.get("type")
        # conditions are keyed by their type: of two Ready conditions, which says the node's state is not known
        if isinstance(kind, str) and seen.setdefault(kind, j) != j:
            raise where.bad(f"{path}.conditions.{j}.type", kind, f"also the type of condition {seen[kind]}")
        if kind == "Ready":
            state = cond.get("status")
            if state not in ("True", "False", "Unknown"):
                raise where.bad(f"{path}.conditions.{j}.status", state, "must be True, False or Unknown")
            reason = cond.get("reason", "")
            # kept with the fault it opens: one line, cut short (Kubernetes' own limit is 1,024 characters)
            found = state, bounded(reason, NODE_REASON_CHARS) if isinstance(reason, str) else ""
    return found


def _taints(spec: dict[str, Any], path: str, where: Where) -> tuple[tuple[str, str], ...]:
    taints = _get(spec, "taints", list, where, path, [])
    if len(taints) > MAX_TAINTS:
        raise where.bad(f"{path}.taints", len(taints), f"more than {MAX_TAINTS} taints")
    out = []
    for j, taint in enumerate(taints):
        if not isinstance(taint, dict):
            raise where.bad(f"{path}.taints.{j}", taint, "must be an object")
        key = _get(taint, "key", str, where, f"{path}.taints.{j}")
        effect = _get(taint, "effect", str, where, f"{path}.taints.{j}")
        out.append((key, effect))
    return tuple(out)


# ---- JSON bytes, read typed ----------------------------------------------------------------------------------
# Below this size a list the typed decoder refuses is decoded again in full, so the message names the node and
# the field as `parse_nodes` words it (at most ~26x of 16 MiB); above it the decoder's own path and reason are given.
PRECISE_MESSAGE_BYTES = 16 * MiB
_BOM = b"\xef\xbb\xbf"


def decode_node_list(data: bytes, file: str, keys: LabelKeys | None = None) -> list[Node]:
    """The nodes of `kubectl get nodes -o json` given as JSON bytes (already checked to be UTF-8).

    A plain `json.loads` builds every field of every node (images, annotations, capacity: 6x the file's size
    for kubectl's output, ~26x for a list of empty objects). Here msgspec decodes only the fields the import
    reads into typed records, skips the rest unread, and refuses at the first item that lacks a field the import
    needs, so what is built stays a small part of the input; each node is then checked as by `parse_nodes`."""
    import msgspec

    where, keys = Where(file), keys or LabelKeys()
    # each node has one "metadata" key (the list one more); elsewhere the text is only the end of a string that
    # ends in '"metadata', so the count bounds the nodes before any is built (~250 bytes a record, 40 a node)
    if data.count(b'"metadata"') > MAX_NODES + 1:
        raise where.bad("items", NO_VALUE, f"more than {MAX_NODES:,} nodes: {SPLIT_THE_LIST}")
    body = memoryview(data)[len(_BOM) :] if data.startswith(_BOM) else data
    try:
        doc = _typed_decoder(keys).decode(body)
    except (msgspec.DecodeError, RecursionError) as exc:  # ValidationError is a DecodeError
        if len(data) > PRECISE_MESSAGE_BYTES:
            raise _decoder_problem(where, exc) from None
        return parse_nodes(_plain_json(data, file), file, keys)  # its message, or its nodes if it accepts them
    if doc.kind not in ("List", "NodeList"):
        kind = NO_VALUE if doc.kind is msgspec.UNSET else doc.kind  # absent: no value to show
        raise where.bad("kind", kind, "must be List or NodeList (kubectl get nodes -o json)")
    items: list[Any] = doc.items
    del doc
    if len(items) > MAX_NODES:  # refused before a node is built: the plan costs ~1.4 KB a node
        raise where.bad("items", len(items), f"more than {MAX_NODES:,} nodes: {SPLIT_THE_LIST}")

    def one_at_a_time() -> Iterable[object]:
        for i, item in enumerate(items):
            items[i] = None  # the record goes once its node is read: peak memory is one copy of the kept fields
            yield msgspec.to_builtins(item)

    return _read_items(one_at_a_time(), where, keys)


def _decoder_problem(where: Where, exc: Exception) -> BadStateFile:
    """The typed decoder's reason, at its path (`$.items[3].metadata` -> `items.3.metadata`)."""
    if isinstance(exc, RecursionError):
        return where.bad("", NO_VALUE, "nested too deeply")
    text = str(exc)
    reason, _, at = text.rpartition(" - at `")
    path = re.sub(r"\[(\d+)\]", r".\1", at.rstrip("`").removeprefix("$").lstrip("."))
    return where.bad(path if reason else "", NO_VALUE, f"not as kubectl writes a node list: {reason or text}")


def _plain_json(data: bytes, file: str) -> Any:
    from tpufleet.jsontext import JsonProblem, parse_json_line

    try:
        return parse_json_line(data.decode("utf-8-sig"))
    except JsonProblem as exc:
        raise BadStateFile(file, "", exc.value, exc.problem) from None


@cache
def _typed_decoder(keys: LabelKeys) -> Any:
    """A msgspec decoder of the fields `_parse_node` reads (built on first use: msgspec takes 27 ms to import).
    Fields `_parse_node` requires are required here too, so a list of empty objects is refused at its first; of
    the labels only those `keys` name are read (the others, dozens a node, are skipped unread)."""
    import msgspec
    from msgspec import UNSET, Meta, UnsetType

    def record(name: str, *fields: tuple[str, Any] | tuple[str, Any, Any]) -> Any:
        # gc=False: records hold no cycles, so the collector never walks a million of them
        return msgspec.defstruct(name, list(fields), gc=False, omit_defaults=True)

    def at_most(n: int, kind: Any) -> Any:
        return Annotated[kind, Meta(max_length=n)]

    optional = UnsetType  # absent: UNSET, left out of the record's dict
    condition = record("Condition", ("type", str), ("status", str | optional, UNSET), ("reason", str | optional, UNSET))
    taint = record("Taint", ("key", str), ("effect", str))
    spec = record(
        "Spec",
        ("unschedulable", bool | optional, UNSET),
        ("taints", at_most(MAX_TAINTS, list[taint]) | optional, UNSET),  # type: ignore[valid-type]
    )
    status = record("Status", ("conditions", at_most(MAX_CONDITIONS, list[condition]) | optional, UNSET))  # type: ignore[valid-type]
    wanted = sorted(set(keys.read))
    labels = msgspec.defstruct(
        "Labels",
        [(f"label{i}", str | optional, UNSET) for i in range(len(wanted))],
        rename={f"label{i}": key for i, key in enumerate(wanted)},
        gc=False,
        omit_defaults=True,
    )
    metadata = record("Metadata", ("name", str), ("labels", labels | optional, UNSET))
    item = record(
        "Item",
        ("metadata", metadata),
        ("kind", str | optional, UNSET),
        ("spec", spec | optional, UNSET),
        ("status", status | optional, UNSET),
    )
    node_list = record("NodeList", ("items", list[item]), ("kind", str | None | optional, UNSET))  # type: ignore[valid-type]
    return msgspec.json.Decoder(node_list)
