"""Reading the mapping file of `import k8s --mapping` (YAML or JSON, already loaded) as a `K8sMapping` (pure):
the label keys a fleet names things by, the accelerators of its TPU nodes, its drain taints, and the pods, cubes
and machines its own names stand for. See the README for its fields; every problem names the file and field."""

from __future__ import annotations

import re
from dataclasses import fields, replace
from typing import Any

from tpufleet.errors import NO_VALUE, BadInput, json_found, shown
from tpufleet.ids import HostId, parse_target
from tpufleet.integrations.k8s import (
    DEFAULT_ACCELERATORS,
    DEFAULT_DRAIN_TAINTS,
    LABEL_KEY,
    LABEL_VALUE,
    NODE_NAME,
    K8sMapping,
    LabelKeys,
    Where,
    k_text,
)

_MAPPING_KEYS = {"kind", "version", "labels", "accelerators", "pods", "cubes", "nodes", "drain_taints"}


def parse_mapping(doc: object, file: str) -> K8sMapping:
    """A mapping file (YAML or JSON, already loaded by the bounded reader); see the README for its fields."""
    where = Where(file)
    if not isinstance(doc, dict):
        raise where.bad(
            "", NO_VALUE, f"must be a mapping of the fields kind, labels, pods, cubes, nodes..., not {json_found(doc)}"
        )
    unknown = sorted(set(map(str, doc)) - _MAPPING_KEYS)
    if unknown:
        raise where.bad(
            k_text(unknown[0]), doc.get(unknown[0]), f"unknown field (known: {', '.join(sorted(_MAPPING_KEYS))})"
        )
    if doc.get("kind", "tpufleet-k8s-mapping") != "tpufleet-k8s-mapping":
        raise where.bad("kind", doc.get("kind"), "must be tpufleet-k8s-mapping")
    if doc.get("version", 1) != 1:
        raise where.bad("version", doc.get("version"), "must be 1")
    return K8sMapping(
        labels=_label_keys(doc, where),
        accelerators=_accelerators(doc, where),
        pods=_ids(doc, "pods", where, r"pod[0-9]{1,6}", "a pod name such as pod0"),
        cubes=_ids(doc, "cubes", where, r"c[0-9]{2,6}", "a cube id such as c07"),
        nodes=_hosts(doc, where),
        drain_taints=_drain_taints(doc, where),
        source=file,
    )


def _accelerators(doc: dict[str, Any], where: Where) -> frozenset[str]:
    """The accelerators of TPU nodes: the defaults when absent; given, exactly those (none would be no TPU node,
    so an empty list is refused rather than read as the defaults)."""
    if "accelerators" not in doc:
        return frozenset(DEFAULT_ACCELERATORS)
    given = _str_list(doc, "accelerators", where)
    if not given:
        raise where.bad(
            "accelerators", given, "empty: no node would be a TPU node (leave the field out for the defaults)"
        )
    for i, value in enumerate(given):
        if not (value and LABEL_VALUE.fullmatch(value)):
            raise where.bad(f"accelerators.{i}", value, "not a label value (1-63 letters, digits, '-', '_', '.')")
    return frozenset(given)


def _drain_taints(doc: dict[str, Any], where: Where) -> frozenset[str]:
    """The taint keys that are drains: the defaults when absent; given, exactly those (`[]`: no taint is a drain,
    a cordon still is)."""
    if "drain_taints" not in doc:
        return frozenset(DEFAULT_DRAIN_TAINTS)
    given = _str_list(doc, "drain_taints", where)
    for i, key in enumerate(given):
        if not LABEL_KEY.fullmatch(key):
            raise where.bad(f"drain_taints.{i}", key, "not a taint key (such as example.com/maintenance)")
    return frozenset(given)


def _label_keys(doc: dict[str, Any], where: Where) -> LabelKeys:
    """The label keys of the mapping's `labels`: known roles, Kubernetes label keys, one role a key (two roles on
    one key would be one label in an export, and one level twice in a Kueue Topology)."""
    labels = _str_map(doc, "labels", where)
    names = {f.name for f in fields(LabelKeys)}
    for role, key in labels.items():
        if role not in names:
            raise where.bad(f"labels.{k_text(role)}", key, f"unknown label role (known: {', '.join(sorted(names))})")
        if not LABEL_KEY.fullmatch(key):
            raise where.bad(f"labels.{k_text(role)}", key, "not a Kubernetes label key (such as example.com/rack)")
    keys = replace(LabelKeys(), **labels)
    first: dict[str, str] = {}
    for f in fields(LabelKeys):
        key = getattr(keys, f.name)
        other = first.setdefault(key, f.name)
        if other != f.name:
            given, twin = (f.name, other) if f.name in labels else (other, f.name)
            raise where.bad(f"labels.{given}", key, f"also the key of role {twin}")
    return keys


def _str_map(doc: dict[str, Any], key: str, where: Where) -> dict[str, str]:
    value = doc.get(key, {})
    if not isinstance(value, dict):
        raise where.bad(key, value, "must be a mapping of names to names")
    for k, v in value.items():
        if type(k) is not str or type(v) is not str:
            raise where.bad(f"{key}.{k_text(k)}", v, "keys and values must be strings")
    return value


def _str_list(doc: dict[str, Any], key: str, where: Where) -> list[str]:
    value = doc.get(key, [])
    if not isinstance(value, list) or any(type(v) is not str for v in value):
        raise where.bad(key, value, "must be a list of strings")
    return value


def _ids(doc: dict[str, Any], key: str, where: Where, pattern: str, what: str) -> dict[str, str]:
    value = _str_map(doc, key, where)
    first: dict[str, str] = {}
    for k, v in value.items():
        if not (k and LABEL_VALUE.fullmatch(k)):  # the state keeps it as a name: an empty one names nothing
            raise where.bad(f"{key}.{k_text(k)}", k, "not a label value (1-63 letters, digits, '-', '_', '.')")
        if not re.fullmatch(pattern, v):
            raise where.bad(f"{key}.{k_text(k)}", v, f"not {what}")
        if v in first:  # two names for one part would make two nodes one machine
            raise where.bad(f"{key}.{k_text(k)}", v, f"{v} is also given to {shown(first[v])}")
        first[v] = k
    return value


def _host(text: str, path: str, where: Where) -> HostId:
    try:
        target = parse_target(text)
    except BadInput as exc:
        raise where.bad(path, text, str(exc)) from None
    if not isinstance(target, HostId):
        raise where.bad(path, text, "must name a machine (host:CUBE/M)")
    return target


def _hosts(doc: dict[str, Any], where: Where) -> dict[str, HostId]:
    out: dict[str, HostId] = {}
    first: dict[HostId, str] = {}
    for node, text in _str_map(doc, "nodes", where).items():
        if not NODE_NAME.fullmatch(node):
            raise where.bad(f"nodes.{k_text(node)}", node, "not a Kubernetes node name (lower-case DNS name)")
        host = _host(text, f"nodes.{node}", where)
        if host in first:
            raise where.bad(f"nodes.{node}", text, f"{host} is also given to {first[host]!r}")
        first[host], out[node] = node, host
    return out
