"""Saved maintenance plans (`plan-maintenance --out PLAN`): their schema and validated reading for
`apply-maintenance PLAN --wave N`.

A plan records the state serial it was made at, each wave's cubes and notices, the slices it moves (from which
cubes to which), the clears that fall at its end, and which slices held the cubes it touches before it
(`holders_before`): what `apply-maintenance` checks the state against before it changes anything. Its
identity (`plan_id`) is a digest of its content, whatever the file's layout: the journal records each applied
wave under it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from tpufleet.doccheck import check
from tpufleet.errors import BadStateFile
from tpufleet.jsontext import MAX_SPEC_BYTES
from tpufleet.maintenance import KIND, Notice
from tpufleet.state.inputfiles import load_json_file
from tpufleet.timeparse import utc_stamp

__all__ = ["SCHEMA", "SavedMaintenancePlan", "SavedMove", "SavedWave", "read"]

_NAME: Final = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z"
_CUBE: Final = r"^c[0-9]{1,6}\Z"
_TARGET: Final = r"^cube:c[0-9]{1,6}\Z"
_STAMP: Final = {"type": "string", "pattern": r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z\Z"}
_CUBES: Final = {"type": "array", "items": {"type": "string", "pattern": _CUBE}}

_MOVE: Final = {
    "type": "object",
    "required": ["slice", "status"],
    "properties": {
        "slice": {"type": "string", "pattern": _NAME},
        "status": {"enum": ["moved", "unserved"]},
        "cubes_out": _CUBES,
        "cubes_in": _CUBES,
        "to_pod": {"type": "string"},
        "reason": {"type": "string"},
    },
}

_WAVE: Final = {
    "type": "object",
    "required": ["wave", "cubes", "moves", "cleared_after", "holders_before", "commands"],
    "properties": {
        "wave": {"type": "integer", "minimum": 1},
        "cubes": {**_CUBES, "minItems": 1, "uniqueItems": True},
        "already_drained": {"type": "array", "items": {"type": "string", "pattern": _TARGET}},
        "moves": {"type": "array", "items": _MOVE},
        "cleared_after": {"type": "array", "items": {"type": "string", "pattern": _TARGET}},
        "kept_down": {"type": "array", "items": {"type": "string", "pattern": _TARGET}},
        "holders_before": {
            "type": "object",
            "propertyNames": {"pattern": _CUBE},
            "additionalProperties": {"type": "array", "items": {"type": "string", "pattern": _NAME}},
        },
        "commands": {"type": "array", "items": {"type": "string"}},
    },
}

SCHEMA: Final = {
    "type": "object",
    "required": ["kind", "serial", "notices", "waves"],
    "properties": {
        "kind": {"const": KIND},
        "serial": {"type": "integer", "minimum": 0},
        "notices": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["target", "window_start", "window_end"],
                "properties": {
                    "target": {"type": "string", "pattern": _TARGET},
                    "window_start": _STAMP,
                    "window_end": {"anyOf": [_STAMP, {"type": "null"}]},
                    "open_drain": {"type": ["string", "null"]},
                },
            },
        },
        "waves": {"type": "array", "items": _WAVE},  # none: no notices (the plan says so; no wave to apply)
    },
}


@dataclass(frozen=True)
class SavedMove:
    slice: str
    status: str  # moved | unserved
    cubes_out: tuple[str, ...] = ()
    cubes_in: tuple[str, ...] = ()
    to_pod: str = ""
    reason: str = ""


@dataclass(frozen=True)
class SavedWave:
    number: int
    notices: tuple[Notice, ...]  # the wave's cubes, with their windows
    already_drained: tuple[str, ...]  # targets whose drain was open when the plan was made
    moves: tuple[SavedMove, ...]
    cleared_after: tuple[Notice, ...]  # the notices whose cubes come back at the end of this wave
    holders_before: dict[str, tuple[str, ...]]  # cube the wave touches -> the slices holding it before the wave
    commands: tuple[str, ...]


@dataclass(frozen=True)
class SavedMaintenancePlan:
    path: str
    plan_id: str  # digest of the plan's content: the journal records applied waves under it
    serial: int
    waves: tuple[SavedWave, ...]


def read(path: Path) -> SavedMaintenancePlan:
    """A saved maintenance plan, checked against the schema and for consistency (waves numbered 1, 2, ... in
    order, each cube and clear one of its notices); BadStateFile naming the file, field and value otherwise."""
    doc = load_json_file(path, "maintenance plan", MAX_SPEC_BYTES, written_by_us=True)
    where = str(path)
    check(SCHEMA, doc, where)
    notices: dict[str, Notice] = {}
    for i, n in enumerate(doc["notices"]):
        for key in ("window_start", "window_end"):
            if n[key] is not None and utc_stamp(n[key]) != n[key]:
                raise BadStateFile(where, f"notices.{i}.{key}", n[key], "not a time of the calendar")
        if n["window_end"] is not None and n["window_end"] < n["window_start"]:  # equal: a reservation may say so
            raise BadStateFile(where, f"notices.{i}.window_end", n["window_end"], "it must not be before window_start")
        notices[n["target"]] = Notice(n["target"][5:], n["window_start"], n["window_end"], n.get("open_drain"))
    if notices and not doc["waves"]:
        raise BadStateFile(where, "waves", doc["waves"], f"no wave for {len(notices)} notice(s)")
    waves = tuple(_wave(w, i, notices, where) for i, w in enumerate(doc["waves"]))
    _drained_before_cleared(waves, where)
    canonical = json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
    return SavedMaintenancePlan(where, hashlib.sha256(canonical).hexdigest()[:16], doc["serial"], waves)


def _notice(notices: dict[str, Notice], target: str, where: str, field: str) -> Notice:
    if target not in notices:
        raise BadStateFile(where, field, target, "it is not one of the plan's notices")
    return notices[target]


def _wave(w: dict[str, Any], i: int, notices: dict[str, Notice], where: str) -> SavedWave:
    if w["wave"] != i + 1:
        raise BadStateFile(where, f"waves.{i}.wave", w["wave"], f"waves must be numbered in order (expected {i + 1})")
    own = tuple(_notice(notices, f"cube:{c}", where, f"waves.{i}.cubes.{j}") for j, c in enumerate(w["cubes"]))
    cleared = tuple(
        _notice(notices, t, where, f"waves.{i}.cleared_after.{j}") for j, t in enumerate(w["cleared_after"])
    )
    moves = tuple(
        SavedMove(
            m["slice"],
            m["status"],
            tuple(m.get("cubes_out", ())),
            tuple(m.get("cubes_in", ())),
            m.get("to_pod", ""),
            m.get("reason", ""),
        )
        for m in w["moves"]
    )
    holders = {c: tuple(names) for c, names in w["holders_before"].items()}
    return SavedWave(w["wave"], own, tuple(w.get("already_drained", ())), moves, cleared, holders, tuple(w["commands"]))


def _drained_before_cleared(waves: tuple[SavedWave, ...], where: str) -> None:
    """Each notice drained by one wave only, and cleared only at or after that wave (an edited plan otherwise
    clears what it has not drained, or drains a cube twice)."""
    drained_in: dict[str, int] = {}
    for i, w in enumerate(waves):
        for j, n in enumerate(w.notices):
            if n.target in drained_in:
                raise BadStateFile(
                    where, f"waves.{i}.cubes.{j}", n.cube, f"also drained in wave {drained_in[n.target]}"
                )
            drained_in[n.target] = w.number
        for j, n in enumerate(w.cleared_after):
            if n.target not in drained_in:
                raise BadStateFile(where, f"waves.{i}.cleared_after.{j}", n.target, "cleared before a wave drains it")
