"""Saved cross-connect plans: their JSON form and its schema (a plan is a file an operator can review)."""

from __future__ import annotations

from tpufleet.xconnect import OcsChange, Plan

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
        "slice": {"type": "string", "pattern": r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"},
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
                    "id": {"type": "string", "pattern": r"^ocs:pod\d+/[xyz]/\d+$"},
                    "add": _PAIRS,
                    "remove": _PAIRS,
                    "keep": {"type": "integer", "minimum": 0},
                },
            },
        },
        "summary": {"type": "object"},
    },
}


def plan_doc(name: str, serial: int, sl: dict, plan: Plan, made: str) -> dict:
    return {
        "kind": PLAN_KIND,
        "schema_version": PLAN_VERSION,
        "slice": name,
        "serial": serial,
        "made": made,
        "shape": sl["shape"],
        "twisted": sl["twisted"],
        "cubes": {c: sl["coords"][c] for c in sl["cubes"]},
        "ocs": [{"id": c.id, "add": [list(p) for p in c.add], "remove": [list(p) for p in c.remove], "keep": c.keep} for c in plan.changes],
        "summary": plan.summary,
        "blocked": plan.blocked,
        "deferred": plan.deferred,
    }


def changes_of(doc: dict) -> list[OcsChange]:
    return [OcsChange(o["id"], [tuple(p) for p in o["add"]], [tuple(p) for p in o["remove"]], o["keep"]) for o in doc["ocs"]]
