"""Saved cross-connect plans (`plan-xconnect --out`): their JSON form, schema, writing and reading.

A plan is a file an operator reviews before `apply-xconnect` (like Terraform's plan file); it records the
state serial it was made at, so a plan made before the fleet changed is refused. A job's plan
(`plan-xconnect JOB --out`, kind `JOB_PLAN_KIND`) holds one slice's plan per slice of the job, each checked as a
slice's plan file is.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tpufleet.constants import OCS_PER_DIM
from tpufleet.doccheck import check
from tpufleet.errors import BadStateFile
from tpufleet.fleetstate import Slice
from tpufleet.ids import OcsId
from tpufleet.jsontext import MAX_SPEC_BYTES, dumps_indented
from tpufleet.maintenance import KIND as MAINTENANCE_KIND
from tpufleet.model import Fleet
from tpufleet.state.inputfiles import load_json_file
from tpufleet.timeparse import utc_stamp
from tpufleet.xconnect import OcsChange, Pair, Plan

PLAN_KIND = "tpufleet-xconnect-plan"
JOB_PLAN_KIND = "tpufleet-xconnect-job-plan"
PLAN_VERSION = 1

_PAIRS = {
    "type": "array",
    "items": {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 2, "maxItems": 2},
}
_OCS_ID = r"^ocs:pod[0-9]+/[xyz]/[0-9]+\Z"
_COORD = {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 3, "maxItems": 3}

_COUNT = {"type": "integer", "minimum": 0}
# the counts the operator reviewed (`apply-xconnect` checks them against the plan's changes)
_SUMMARY = {
    "type": "object",
    "required": ["add", "remove", "keep"],
    "properties": dict.fromkeys(("add", "remove", "keep"), _COUNT),
}

PLAN_SCHEMA = {
    "type": "object",
    "required": ["kind", "schema_version", "slice", "serial", "shape", "twisted", "cubes", "ocs", "summary"],
    "properties": {
        "kind": {"const": PLAN_KIND},
        "schema_version": {"const": PLAN_VERSION},
        "slice": {"type": "string", "pattern": r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z"},
        "serial": {"type": "integer", "minimum": 0},
        "made": {"type": "string", "maxLength": 64},
        "shape": {"type": "string", "pattern": r"^[0-9]{1,4}x[0-9]{1,4}x[0-9]{1,4}\Z"},  # as `plan-xconnect` writes it
        "twisted": {"type": "boolean"},
        "cubes": {
            "type": "object",
            "minProperties": 1,
            "propertyNames": {"pattern": r"^c[0-9]{1,6}\Z"},
            "additionalProperties": _COORD,  # the cube's place (a, b, c) in the slice's cube grid
        },
        "ocs": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id", "add", "remove", "keep"],
                "properties": {
                    "id": {"type": "string", "pattern": _OCS_ID},
                    "add": _PAIRS,
                    "remove": _PAIRS,
                    "keep": {"type": "integer", "minimum": 0},
                },
            },
        },
        "summary": _SUMMARY,
        "blocked": {"type": "array", "items": {"type": "string"}},
        "deferred": {"type": "array", "items": {"type": "string", "pattern": _OCS_ID}},
    },
}


JOB_PLAN_SCHEMA = {
    "type": "object",
    "required": ["kind", "schema_version", "job", "serial", "plans"],
    "properties": {
        "schema_version": {"const": 1},
        "job": {"type": "string", "pattern": r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z"},
        "serial": {"type": "integer", "minimum": 0},
        "made": {"type": "string", "maxLength": 64},
        "plans": {"type": "array", "minItems": 1},
        "summary": _SUMMARY,  # the parts' counts added up
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


def job_plan_doc(job: str, serial: int, plans: list[dict[str, Any]], made: str) -> dict[str, Any]:
    """A job's plan: each slice's plan document (`plan_doc`) and their summed counts."""
    total = {k: sum(p["summary"][k] for p in plans) for k in ("add", "remove", "keep")}
    return {
        "kind": JOB_PLAN_KIND,
        "schema_version": 1,
        "job": job,
        "serial": serial,
        "made": made,
        "plans": plans,
        "summary": total,
    }


def write(path: Path, doc: dict[str, Any]) -> None:
    """Save a plan document (a slice's or a job's) where `--out` asked (`state.outputs.write_output`)."""
    from tpufleet.state.outputs import write_output

    write_output(path, (dumps_indented(doc, 1) + "\n").encode())


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
    fields: str = ""  # where its fields are in the file: "" (a slice's plan) or "plans.N." (a part of a job's)
    deferred: tuple[str, ...] = ()  # the OCS whose pairs it left for routing to bridge (down when it was made)


def _pairs(items: list[list[int]]) -> list[Pair]:
    return [(int(a), int(b)) for a, b in items]


def read(path: Path) -> SavedPlan:
    """A saved plan, checked against the schema; BadStateFile naming the file, field and value otherwise."""
    return _slice_plan(load_json_file(path, "plan file", MAX_SPEC_BYTES, written_by_us=True), path)


def _slice_plan(doc: Any, path: Path) -> SavedPlan:
    check(PLAN_SCHEMA, doc, str(path))
    return _saved(doc, str(path), "")


def _saved(doc: dict[str, Any], path: str, where: str) -> SavedPlan:
    """A slice's plan (a file's, or one part of a job's at `where`, e.g. `plans.0.`), with every reviewed field
    (cube places, summary) kept for `apply-xconnect` to compare: a job's parts are checked as a slice's plan is."""
    changes = []
    for i, o in enumerate(doc["ocs"]):
        try:
            ocs = OcsId.from_key(o["id"].split(":", 1)[1])
        except ValueError:  # digits the pattern admits but int() does not take (thousands of them)
            raise BadStateFile(path, f"{where}ocs.{i}.id", o["id"], "not an OCS id") from None
        if ocs.index >= OCS_PER_DIM:
            raise BadStateFile(path, f"{where}ocs.{i}.id", o["id"], f"no such OCS (index 0-{OCS_PER_DIM - 1})")
        changes.append(OcsChange(ocs, _pairs(o["add"]), _pairs(o["remove"]), o["keep"]))
    coords = {cube: tuple(xyz) for cube, xyz in doc["cubes"].items()}
    _check_made(doc, path, where)
    return SavedPlan(
        path,
        doc["slice"],
        doc["serial"],
        changes,
        doc["shape"],
        doc["twisted"],
        tuple(doc["cubes"]),
        doc.get("made", ""),
        coords,
        doc["summary"],
        where,
        tuple(doc.get("deferred", ())),
    )


def _check_made(doc: dict[str, Any], path: str, where: str) -> None:
    """When the plan was made (compared with when faults were cleared and slices allocated) is a time as the tool
    writes it; BadStateFile naming the field and value otherwise."""
    made = doc.get("made")
    if made is not None and utc_stamp(made) != made:
        raise BadStateFile(path, f"{where}made", made, "not a UTC time of the calendar such as 2026-07-01T09:00:00Z")


def check_fleet(saved: SavedPlan, fleet: Fleet) -> None:
    """The checks of a saved plan that need the fleet it is applied to: its cubes are cubes of the fleet, its OCS
    are of a pod the fleet has, and every port it adds or removes is one of that pod's cabled ports (one a cube);
    BadStateFile (exit 2) naming the file, field and value otherwise."""
    at = saved.fields
    for cube in saved.cubes:
        if cube not in fleet.cube_pod:
            raise BadStateFile(
                saved.path, f"{at}cubes.{cube}", cube, f"no such cube in this fleet ({len(fleet.cube_pod)} cubes)"
            )
    for i, change in enumerate(saved.changes):
        pod = fleet.pod_by_name.get(change.ocs.pod)
        if pod is None:
            raise BadStateFile(saved.path, f"{at}ocs.{i}.id", str(change.ocs), f"no pod {change.ocs.pod} in this fleet")
        limit = len(pod.cubes)
        for key, pairs in (("add", change.add), ("remove", change.remove)):
            for j, pair in enumerate(pairs):
                if max(pair) >= limit:
                    problem = f"port outside the {limit} cabled ports of {change.ocs} (0-{limit - 1})"
                    raise BadStateFile(saved.path, f"{at}ocs.{i}.{key}.{j}", list(pair), problem)


@dataclass(frozen=True)
class SavedJobPlan:
    """A job's plan file as read back: the job and each slice's part."""

    path: str
    job: str
    plans: list[SavedPlan]
    serial: int | None = None  # the serial the job's plan says it was made at (each part says its own too)
    summary: dict[str, Any] | None = None  # the job's counts the operator reviewed (the parts' summed)


def read_any(path: Path) -> SavedPlan | SavedJobPlan:
    """A saved plan of a slice or of a job (by its `kind`), checked against its schema; BadStateFile naming the
    file, field and value otherwise."""
    doc = load_json_file(path, "plan file", MAX_SPEC_BYTES, written_by_us=True)
    if isinstance(doc, dict) and doc.get("kind") == MAINTENANCE_KIND:  # the other command's plan
        run = f"tpufleet apply-maintenance {shlex.quote(str(path))} --wave N"
        raise BadStateFile(str(path), "kind", doc["kind"], f"a maintenance plan, not a cross-connect plan: run `{run}`")
    if isinstance(doc, dict) and doc.get("kind") == JOB_PLAN_KIND:
        return _job_plan(doc, str(path))
    return _slice_plan(doc, path)


def _job_plan(doc: dict[str, Any], path: str) -> SavedJobPlan:
    check(JOB_PLAN_SCHEMA, doc, path)
    _check_made(doc, path, "")
    saved = []
    for i, part in enumerate(doc["plans"]):
        check(PLAN_SCHEMA, part, path, f"plans.{i}")
        saved.append(_saved(part, path, f"plans.{i}."))
    return SavedJobPlan(path, doc["job"], saved, doc["serial"], doc.get("summary"))
