"""A generation profile document read into a `Generation` (pure): every figure checked by hand against
`generations.FIGURES` (its type, its range, no key unknown or missing), then the figures against each other (chips =
64 x cubes, one OCS per dimension and face position, enough OCS ports, a slice no larger than the pod). Errors are
BadStateFile naming the file, the field and the value.

Apart from `generations`, which holds what a generation is (its typed figures and its slice-shape rule), because
reading and checking a document is a concern of its own: the core takes a `Generation` and never a document.
`_EXAMPLE` is a TPU7x document for the doctests.
"""

from __future__ import annotations

import math
import re
from dataclasses import fields
from typing import Any, Final

from tpufleet.constants import CHIPS_PER_CUBE, CUBE_EDGE, DIMS, FACE_LINKS
from tpufleet.errors import NO_VALUE, BadStateFile
from tpufleet.generations import (
    FIGURES,
    LABEL_PATTERN,
    MAX_SOURCE_CHARS,
    NAME_PATTERN,
    REPAIR_KINDS,
    SCHEMA_VERSION,
    SECTIONS,
    SIDE_ORDERS,
    TOP_KEYS,
    TWIST_FAMILIES,
    FaultDefaults,
    Figure,
    Generation,
    RepairHours,
    Vec,
    shape_text,
)

__all__ = ["from_document"]


def from_document(doc: object, file: str) -> Generation:
    """The Generation a profile document describes; BadStateFile naming file, field and value if it is malformed.

    The document is a mapping: `schema_version`, `name`, `title` and, for every path of FIGURES, a mapping
    {value, source}. Checked here by hand (types, ranges, unknown keys) and across figures (chips = 64 x cubes,
    one OCS per dimension and face position, enough OCS ports for every cube, a slice no larger than the pod).
    """
    top = _mapping(doc, "", file, TOP_KEYS)
    if type(top.get("schema_version")) is not int or top["schema_version"] != SCHEMA_VERSION:  # not true nor 1.0
        raise BadStateFile(file, "schema_version", top.get("schema_version"), f"must be {SCHEMA_VERSION}")
    for section in SECTIONS:
        keys = tuple(p.split(".", 1)[1] for p in FIGURES if p.startswith(section + "."))
        _mapping(top[section], section, file, keys)
    values = {path: _figure(top, path, spec, file) for path, spec in FIGURES.items()}
    gen = _build(top, values, file)
    _check_consistent(gen, file)
    return gen


def _mapping(value: object, where: str, file: str, keys: tuple[str, ...]) -> dict[str, Any]:
    """`value` as a mapping holding exactly `keys`."""
    if not isinstance(value, dict):
        raise BadStateFile(file, where, value, "must be a mapping")
    for key in value:
        if key not in keys:
            raise BadStateFile(file, _at(where, str(key)), value[key], f"unknown key; known: {', '.join(keys)}")
    for key in keys:
        if key not in value:
            raise BadStateFile(file, _at(where, key), NO_VALUE, "is required")
    return value


def _at(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _figure(top: dict[str, Any], path: str, spec: Figure, file: str) -> Any:
    """The value of one figure, checked against `spec`; its source must be a non-empty text."""
    section, _, key = path.rpartition(".")
    holder = top[section] if section else top
    fig = _mapping(holder[key], path, file, ("value", "source"))
    source = fig["source"]
    if not isinstance(source, str) or not source.strip() or len(source) > MAX_SOURCE_CHARS:
        raise BadStateFile(file, f"{path}.source", source, f"must be a text of 1-{MAX_SOURCE_CHARS} characters")
    return _value(fig["value"], spec, f"{path}.value", file)


def _value(value: object, spec: Figure, where: str, file: str) -> Any:
    """One value of kind `spec.kind`, in range; BadStateFile naming the field otherwise."""
    match spec.kind:
        case "int" | "number":
            return _number(value, spec, where, file)
        case "label":
            if not isinstance(value, str) or not re.match(LABEL_PATTERN, value):
                raise BadStateFile(file, where, value, "must be a lower-case label value (a-z, 0-9, -, .)")
            return value
        case "shape":
            return _shape(value, where, file)
        case "shapes":
            return _listed(value, where, file, lambda v, at: _shape(v, at, file))
        case "side_order":
            return _choice(value, SIDE_ORDERS, where, file)
        case "twists":
            return _listed(value, where, file, lambda v, at: _choice(v, TWIST_FAMILIES, at, file), empty=True)
        case "hours":
            hours = _mapping(value, where, file, REPAIR_KINDS)
            return RepairHours(*(_number(hours[k], spec, f"{where}.{k}", file) for k in REPAIR_KINDS))
    raise AssertionError(spec.kind)  # pragma: no cover - FIGURES holds only the kinds above


def _number(value: object, spec: Figure, where: str, file: str) -> float:
    """An integer (kind "int") or a number in [low, high]; NaN and infinities fail the range."""
    whole = spec.kind == "int"
    if isinstance(value, bool) or not isinstance(value, int if whole else (int, float)):
        raise BadStateFile(file, where, value, "must be an integer" if whole else "must be a number")
    if not spec.low <= value <= spec.high:
        raise BadStateFile(file, where, value, f"must be between {spec.low:g} and {spec.high:g}")
    return value


def _shape(value: object, where: str, file: str) -> Vec:
    if isinstance(value, list) and len(value) == 3 and all(_side(d) for d in value):
        return (value[0], value[1], value[2])
    raise BadStateFile(file, where, value, f"must be [A, B, C], each side 1-{CUBE_EDGE} (inside one cube)")


def _side(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= CUBE_EDGE


def _choice(value: object, options: tuple[str, ...], where: str, file: str) -> Any:
    if value not in options:
        raise BadStateFile(file, where, value, f"must be one of {', '.join(options)}")
    return value


def _listed(value: object, where: str, file: str, item: Any, empty: bool = False) -> tuple[Any, ...]:
    """A list of distinct items, each checked by `item(value, field)`."""
    if not isinstance(value, list) or (not value and not empty) or len(value) > 64:
        raise BadStateFile(file, where, value, "must be a list" + ("" if empty else " of 1-64 items"))
    items = tuple(item(v, f"{where}.{i}") for i, v in enumerate(value))
    if len(set(items)) != len(items):
        raise BadStateFile(file, where, value, "items must be distinct")
    return items


# The Generation field each figure fills; the `faults.*` figures fill FaultDefaults, each its field of that key.
_GENERATION_FIELDS: Final = {
    "gke_accelerator": "gke_accelerator",
    "machine_type": "machine_type",
    "host_shape": "host_shape",
    "pod.chips": "pod_chips",
    "pod.cubes": "pod_cubes",
    "pod.ocs": "ocs_count",
    "pod.ocs_ports": "ocs_ports",
    "slices.max_cubes": "max_slice_cubes",
    "slices.max_side": "max_side",
    "slices.side_order": "side_order",
    "slices.subcube_shapes": "subcube_shapes",
    "slices.twisted": "twist_families",
    "ici.links_per_chip": "ici_links_per_chip",
    "ici.link_bandwidth": "ici_link_bandwidth",
    "chip.peak_bf16_flops": "peak_bf16_flops",
    "chip.hbm_bytes": "hbm_bytes",
    "chip.hbm_bandwidth": "hbm_bandwidth",
    "dcn.chip_bandwidth": "dcn_chip_bandwidth",
}


def _build(top: dict[str, Any], v: dict[str, Any], file: str) -> Generation:
    name, title = top["name"], top["title"]
    if not isinstance(name, str) or not re.match(NAME_PATTERN, name):
        raise BadStateFile(file, "name", name, "must be a lower-case name (a-z, 0-9, -), at most 32 characters")
    if not isinstance(title, str) or not 1 <= len(title) <= 64:
        raise BadStateFile(file, "title", title, "must be a text of 1-64 characters")
    # A "number" figure may be written as an integer (2e11 as 200000000000); its typed field is a float.
    typed: dict[str, Any] = {
        path: float(value) if FIGURES[path].kind == "number" else value for path, value in v.items()
    }
    faults = FaultDefaults(**{f.name: typed[f"faults.{f.name}"] for f in fields(FaultDefaults)})
    return Generation(
        name=name,
        title=title,
        **{field: typed[path] for path, field in _GENERATION_FIELDS.items()},
        faults=faults,
        sources=tuple((path, _source_of(top, path)) for path in FIGURES),
    )


def _source_of(top: dict[str, Any], path: str) -> str:
    section, _, key = path.rpartition(".")
    return str((top[section] if section else top)[key]["source"])


def _check_consistent(gen: Generation, file: str) -> None:
    """What one figure says about another: BadStateFile naming the later field."""
    wiring = len(DIMS) * FACE_LINKS  # OCS {d, i}: one per dimension and face position
    checks = (
        (
            "pod.chips",
            gen.pod_chips,
            gen.pod_chips == gen.pod_cubes * CHIPS_PER_CUBE,
            f"must be pod.cubes x {CHIPS_PER_CUBE} = {gen.pod_cubes * CHIPS_PER_CUBE}",
        ),
        (
            "pod.ocs",
            gen.ocs_count,
            gen.ocs_count == wiring,
            f"must be {wiring}: one OCS per dimension and face position",
        ),
        (
            "pod.ocs_ports",
            gen.ocs_ports,
            gen.ocs_ports % 2 == 0 and gen.ports_per_side >= gen.pod_cubes,
            f"must be even and at least 2 x pod.cubes = {2 * gen.pod_cubes} (an out and an in link per cube)",
        ),
        (
            "slices.max_cubes",
            gen.max_slice_cubes,
            gen.max_slice_cubes <= gen.pod_cubes,
            f"must be at most pod.cubes ({gen.pod_cubes})",
        ),
        ("slices.max_side", gen.max_side, gen.max_side % CUBE_EDGE == 0, f"must be a multiple of {CUBE_EDGE}"),
        (
            "host_shape",
            list(gen.host_shape),
            CHIPS_PER_CUBE % gen.chips_per_host == 0,
            f"must divide a cube of {CHIPS_PER_CUBE} chips",
        ),
    )
    for field, value, ok, problem in checks:
        if not ok:
            raise BadStateFile(file, f"{field}.value", value, problem)
    for i, dims in enumerate(gen.subcube_shapes):
        if math.prod(dims) % gen.chips_per_host or math.prod(dims) >= CHIPS_PER_CUBE:
            raise BadStateFile(
                file,
                f"slices.subcube_shapes.value.{i}",
                list(dims),
                f"must be whole hosts of {shape_text(gen.host_shape)}, smaller than a cube",
            )


def _example() -> dict[str, Any]:
    """A TPU7x profile document (for the doctests; the shipped one is tpufleet/data/generations/tpu7x.yaml)."""
    figures: dict[str, Any] = {
        "gke_accelerator": "tpu7x",
        "machine_type": "tpu7x-standard-4t",
        "host_shape": [2, 2, 1],
        "pod.chips": 9216,
        "pod.cubes": 144,
        "pod.ocs": 48,
        "pod.ocs_ports": 288,
        "slices.max_cubes": 144,
        "slices.max_side": 256,
        "slices.side_order": "non-decreasing",
        "slices.subcube_shapes": [[2, 2, 1], [2, 2, 2], [2, 2, 4], [2, 4, 4]],
        "slices.twisted": ["4k,4k,8k", "4k,8k,8k"],
        "ici.links_per_chip": 6,
        "ici.link_bandwidth": 100.0e9,
        "chip.peak_bf16_flops": 2307.0e12,
        "chip.hbm_bytes": 192 * 2**30,
        "chip.hbm_bandwidth": 7380.0e9,
        "dcn.chip_bandwidth": 12.5e9,
        "faults.host_per_day": 0.0008,
        "faults.link_per_day": 0.00005,
        "faults.ocs_per_day": 0.0004,
        "faults.drain_per_day": 0.0002,
        "faults.repair_hours": {"host": 8.0, "link": 4.0, "ocs": 2.0, "drain": 4.0},
    }
    doc: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "name": "tpu7x", "title": "TPU7x (Ironwood)"}
    for path, value in figures.items():
        section, _, key = path.rpartition(".")
        (doc.setdefault(section, {}) if section else doc)[key] = {"value": value, "source": "example"}
    return doc


_EXAMPLE: Final = _example()
