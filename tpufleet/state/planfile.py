"""Saved cross-connect plans (`plan-xconnect --out`): their JSON form, schema and reading.

A plan is a file an operator reviews before `apply-xconnect` (like Terraform's plan file); it records the
state serial it was made at, so a plan made before the fleet changed is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tpufleet.errors import BadStateFile
from tpufleet.fleetstate import Slice
from tpufleet.ids import OcsId
from tpufleet.state.inputfiles import MAX_SPEC_BYTES, load_json_file
from tpufleet.state.schema import check
from tpufleet.xconnect import OcsChange, Pair, Plan

PLAN_KIND = "tpufleet-xconnect-plan"
PLAN_VERSION = 1

_PAIRS = {
    "type": "array",
    "items": {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 2, "maxItems": 2},
}

PLAN_SCHEMA = {
    "type": "object",
    "required": ["kind", "schema_version", "slice", "serial", "shape", "twisted", "cubes", "ocs", "summary"],
    "properties": {
        "kind": {"const": PLAN_KIND},
        "schema_version": {"const": PLAN_VERSION},
        "slice": {"type": "string", "pattern": r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z"},
        "serial": {"type": "integer", "minimum": 0},
        "shape": {"type": "string"},
        "twisted": {"type": "boolean"},
        "cubes": {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "integer"}}},
        "ocs": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id", "add", "remove", "keep"],
                "properties": {
                    "id": {"type": "string", "pattern": r"^ocs:pod[0-9]+/[xyz]/[0-9]+\Z"},
                    "add": _PAIRS,
                    "remove": _PAIRS,
                    "keep": {"type": "integer", "minimum": 0},
                },
            },
        },
        "summary": {"type": "object"},
    },
}


def plan_doc(sl: Slice, serial: int, plan: Plan, made: str) -> dict[str, Any]:
    return {
        "kind": PLAN_KIND,
        "schema_version": PLAN_VERSION,
        "slice": sl.name,
        "serial": serial,
        "made": made,
        "shape": sl.shape.text,
        "twisted": sl.shape.twisted,
        "cubes": {c: list(sl.coords[c]) for c in sl.cubes},
        "ocs": [
            {"id": str(c.ocs), "add": [list(p) for p in c.add], "remove": [list(p) for p in c.remove], "keep": c.keep}
            for c in plan.changes
        ],
        "summary": plan.summary,
        "blocked": plan.blocked,
        "deferred": [str(o) for o in plan.deferred],
    }


@dataclass(frozen=True)
class SavedPlan:
    """A plan file as read back: which slice, made at which serial, and its per-OCS changes."""

    path: str
    slice: str
    serial: int
    changes: list[OcsChange]
    shape: str = ""
    twisted: bool = False
    cubes: tuple[str, ...] = ()
    made: str = ""
    coords: dict[str, tuple[int, ...]] | None = None  # cube -> its place in the cube grid, as reviewed
    summary: dict[str, Any] | None = None  # the counts the operator reviewed


def _pairs(items: list[list[int]]) -> list[Pair]:
    return [(int(a), int(b)) for a, b in items]


def read(path: Path) -> SavedPlan:
    """A saved plan, checked against the schema; BadStateFile naming the file, field and value otherwise."""
    doc = load_json_file(path, "plan file", MAX_SPEC_BYTES)
    check(PLAN_SCHEMA, doc, str(path))
    changes = []
    for i, o in enumerate(doc["ocs"]):
        try:
            ocs = OcsId.from_key(o["id"].split(":", 1)[1])
        except ValueError:  # digits the pattern admits but int() does not take (thousands of them)
            raise BadStateFile(str(path), f"ocs.{i}.id", o["id"], "not an OCS id") from None
        changes.append(OcsChange(ocs, _pairs(o["add"]), _pairs(o["remove"]), o["keep"]))
    made = doc.get("made", "")
    coords = {cube: tuple(xyz) for cube, xyz in doc["cubes"].items()}
    return SavedPlan(
        str(path),
        doc["slice"],
        doc["serial"],
        changes,
        doc["shape"],
        doc["twisted"],
        tuple(doc["cubes"]),
        made,
        coords,
        doc["summary"],
    )
