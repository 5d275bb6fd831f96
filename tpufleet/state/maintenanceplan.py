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
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from tpufleet.doccheck import check
from tpufleet.errors import NO_VALUE, BadStateFile
from tpufleet.jsontext import MAX_SPEC_BYTES
from tpufleet.maintenance import KIND, Notice, window
from tpufleet.model import Fleet
from tpufleet.state.inputfiles import MissingFile, decode_utf8, load_json_file, parse_yaml, read_bytes
from tpufleet.state.planfile import JOB_PLAN_KIND, PLAN_KIND
from tpufleet.timeparse import utc_stamp

__all__ = ["SCHEMA", "SavedMaintenancePlan", "SavedMove", "SavedWave", "check_fleet", "read"]

_NAME: Final = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z"
_CUBE: Final = r"^c[0-9]{1,6}\Z"
_TARGET: Final = r"^cube:c[0-9]{1,6}\Z"
_STAMP: Final = {"type": "string", "maxLength": 64}  # as the tool writes times: `_check_window` says which are
_END: Final = {"type": ["string", "null"], "maxLength": 64}  # an end may be unknown
_CUBES: Final = {"type": "array", "items": {"type": "string", "pattern": _CUBE}, "uniqueItems": True}
_POD: Final = {"type": "string", "pattern": r"^pod[0-9]+\Z"}
_COUNT: Final = {"type": "integer", "minimum": 0}

_MOVE: Final = {
    "type": "object",
    "required": ["slice", "status"],
    "properties": {
        "slice": {"type": "string", "pattern": _NAME},
        "status": {"enum": ["moved", "unserved"]},
        "cubes_out": _CUBES,
        "cubes_in": _CUBES,
        "pod": _POD,
        "to_pod": _POD,
        "reason": {"type": "string"},
    },
}

_WAVE: Final = {
    "type": "object",
    "required": ["wave", "window_start", "window_end", "cubes", "moves", "cleared_after", "holders_before", "commands"],
    "properties": {
        "wave": {"type": "integer", "minimum": 1},
        "window_start": _STAMP,  # its notices' earliest start and latest end (null: one end unknown)
        "window_end": _END,
        "cubes": {**_CUBES, "minItems": 1},
        "free_healthy_cubes": _COUNT,  # (informational: `apply-maintenance` counts again)
        "free_healthy_pod": {**_POD, "type": ["string", "null"]},
        "already_drained": {"type": "array", "items": {"type": "string", "pattern": _TARGET}},
        "moves": {"type": "array", "items": _MOVE},
        "cleared_after": {"type": "array", "items": {"type": "string", "pattern": _TARGET}},
        "kept_down": {"type": "array", "items": {"type": "string", "pattern": _TARGET}},  # (of `cleared_after`)
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
        "max_parallel": {"type": "integer", "minimum": 1},
        "spares": _COUNT,
        "notices": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["target", "window_start", "window_end"],
                "properties": {
                    "target": {"type": "string", "pattern": _TARGET},
                    "window_start": _STAMP,
                    "window_end": _END,
                    "open_drain": {"type": ["string", "null"], "pattern": r"^f[0-9]+\Z"},
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
    # the cubes its moves were made avoiding, as its `reschedule NAME --avoid CUBES` commands say (none: a plan made
    # before the option, whose commands carry none); None when the wave has no reschedule command to say it
    avoid: tuple[str, ...] | None = None


@dataclass(frozen=True)
class SavedMaintenancePlan:
    path: str
    plan_id: str  # digest of the plan's content: the journal records applied waves under it
    serial: int
    waves: tuple[SavedWave, ...]
    notices: tuple[Notice, ...] = ()  # in the file's order (`notices.N`)


# a `target:` key at a line's start, in block or flow style (`- {target: cube:c00, ...}`, as the README writes
# notices), quoted or not
_NOTICE_KEY = re.compile(rb"""^\s*-?\s*\{?\s*["']?target["']?\s*:""", re.MULTILINE)


def _yaml_instead(path: Path) -> str | None:
    """What a file that is no JSON holds read as YAML: "notices" (a list of `target:` entries, the file a plan is
    made from), "plan" (a plan as `plan-maintenance -o yaml` prints it), or None (a plan cut short, or anything
    else: the JSON error says where it breaks)."""
    try:
        data = read_bytes(path, "maintenance plan", MAX_SPEC_BYTES)
        if not _NOTICE_KEY.search(data):
            return None
        doc = parse_yaml(decode_utf8(data, str(path)), str(path))
    except BadStateFile:  # too large, unreadable, or no YAML either: the JSON error stands
        return None
    if isinstance(doc, dict) and doc.get("kind") == KIND and "waves" in doc:
        return "plan"
    entries = doc.get("notices") if isinstance(doc, dict) else doc  # a list, or one under `notices:`
    return "notices" if isinstance(entries, list) and entries and all(isinstance(n, dict) for n in entries) else None


def _notices_not_plan(where: str) -> BadStateFile:
    run = f"tpufleet plan-maintenance --notices {shlex.quote(where)} --out plan.json"
    return BadStateFile(where, "<root>", NO_VALUE, f"maintenance notices, not a maintenance plan: run `{run}` first")


def read(path: Path) -> SavedMaintenancePlan:
    """A saved maintenance plan, checked against the schema and for consistency (waves numbered 1, 2, ... in
    order, each cube and clear one of its notices, each notice given once and drained by a wave, each slice
    moved once a wave, `holders_before` naming every cube a wave touches); BadStateFile naming the file, field and
    value otherwise."""
    where = str(path)
    try:
        doc = load_json_file(path, "maintenance plan", MAX_SPEC_BYTES, written_by_us=True)
    except MissingFile:
        raise
    except BadStateFile:
        instead = _yaml_instead(path)
        if instead == "notices":  # the file the plan is made from, in YAML
            raise _notices_not_plan(where) from None
        if instead == "plan":
            problem = (
                "a maintenance plan in YAML: apply-maintenance reads the JSON file `plan-maintenance --out` writes"
            )
            raise BadStateFile(where, "<root>", NO_VALUE, problem) from None
        raise
    if isinstance(doc, list) and doc and all(isinstance(n, dict) and "target" in n for n in doc):
        raise _notices_not_plan(where)  # the file the plan is made from, in JSON
    if isinstance(doc, dict) and doc.get("kind") in (PLAN_KIND, JOB_PLAN_KIND):  # the other command's plan
        run = f"tpufleet apply-xconnect {shlex.quote(where)}"
        raise BadStateFile(where, "kind", doc["kind"], f"a cross-connect plan, not a maintenance plan: run `{run}`")
    check(SCHEMA, doc, where)
    notices = _notices(doc["notices"], where)
    if notices and not doc["waves"]:
        raise BadStateFile(where, "waves", doc["waves"], f"no wave for {len(notices)} notice(s)")
    undrained = _undrained(doc)
    waves = tuple(_wave(w, i, notices, where, undrained) for i, w in enumerate(doc["waves"]))
    _drained_before_cleared(waves, where)
    _every_notice_drained(doc["notices"], waves, where)
    for i, (w, wave) in enumerate(zip(doc["waves"], waves, strict=True)):
        _holders_cover(w["holders_before"], wave, f"waves.{i}.holders_before", where)
        _kept_down_cleared(w, f"waves.{i}.kept_down", where)
    _windows_of_notices(doc["waves"], waves, where)
    canonical = json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
    digest = hashlib.sha256(canonical).hexdigest()[:16]
    return SavedMaintenancePlan(where, digest, doc["serial"], waves, tuple(notices.values()))


def _notices(docs: list[dict[str, Any]], where: str) -> dict[str, Notice]:
    """The plan's notices by target: each cube's once (an edited plan otherwise keeps one window of two)."""
    notices: dict[str, Notice] = {}
    first: dict[str, int] = {}
    for i, n in enumerate(docs):
        _check_window(n, f"notices.{i}.", where)
        target = n["target"]
        if target in first:
            raise BadStateFile(
                where,
                f"notices.{i}.target",
                target,
                f"a second notice for the cube (the first: notices.{first[target]})",
            )
        first[target] = i
        notices[target] = Notice(target[5:], n["window_start"], n["window_end"], n.get("open_drain"))
    return notices


def _every_notice_drained(docs: list[dict[str, Any]], waves: tuple[SavedWave, ...], where: str) -> None:
    """Each notice is one wave's cubes: a notice in no wave would be in the plan and never drained."""
    drained = {n.target for w in waves for n in w.notices}
    for i, n in enumerate(docs):
        if n["target"] not in drained:
            raise BadStateFile(
                where, f"notices.{i}.target", n["target"], "in no wave's cubes: a notice the plan never drains"
            )


def _check_window(record: dict[str, Any], at: str, where: str) -> None:
    """A notice's or a wave's window_start and window_end (the schema has checked they are text): times of the
    calendar as the tool writes them, the end (if known) not before the start."""
    for key in ("window_start", "window_end"):
        if record[key] is not None and utc_stamp(record[key]) != record[key]:
            raise BadStateFile(
                where, f"{at}{key}", record[key], "not a UTC time of the calendar such as 2026-07-01T09:00:00Z"
            )
    end = record["window_end"]
    if end is not None and end < record["window_start"]:  # equal: a reservation may say so
        raise BadStateFile(where, f"{at}window_end", end, "it must not be before window_start")


def _notice(
    notices: dict[str, Notice], target: str, where: str, field: str, undrained: str = "", written: str | None = None
) -> Notice:
    """The notice of `target`; BadStateFile naming `field` and its value (`written`, as the file has it: a wave's
    cube `c140`, where the notice's target is `cube:c140`) when the plan has none."""
    if target not in notices:
        value = target if written is None else written
        raise BadStateFile(where, field, value, f"it is not one of the plan's notices{undrained}")
    return notices[target]


def _undrained(doc: dict[str, Any]) -> str:
    """The notices no wave's cubes name, for the message of a wave's cube with no notice: an edit of either side
    leaves both, and which one was edited cannot be told."""
    drained = {f"cube:{c}" for w in doc["waves"] for c in w["cubes"]}
    alone = [f"notices.{i}.target {n['target']}" for i, n in enumerate(doc["notices"]) if n["target"] not in drained]
    return f" (and no wave's cubes name {', '.join(alone)}: was one of them edited?)" if alone else ""


def _wave(w: dict[str, Any], i: int, notices: dict[str, Notice], where: str, undrained: str = "") -> SavedWave:
    if w["wave"] != i + 1:
        raise BadStateFile(where, f"waves.{i}.wave", w["wave"], f"waves must be numbered in order (expected {i + 1})")
    own = tuple(
        _notice(notices, f"cube:{c}", where, f"waves.{i}.cubes.{j}", undrained, c) for j, c in enumerate(w["cubes"])
    )
    _check_window(w, f"waves.{i}.", where)
    cleared = tuple(
        _notice(notices, t, where, f"waves.{i}.cleared_after.{j}") for j, t in enumerate(w["cleared_after"])
    )
    moves = _moves(w["moves"], f"waves.{i}.moves", where)
    holders = {c: tuple(names) for c, names in w["holders_before"].items()}
    drained = tuple(w.get("already_drained", ()))
    mine = {n.target for n in own if n.fault_id is not None}  # a notice whose drain the plan found open
    stray = next((j for j, t in enumerate(drained) if t not in mine), None)
    if stray is not None:
        field, problem = f"waves.{i}.already_drained.{stray}", "not a notice of the wave with an open_drain"
        raise BadStateFile(where, field, drained[stray], problem)
    avoid = _avoided(w["commands"], f"waves.{i}.commands", where)
    return SavedWave(w["wave"], own, drained, moves, cleared, holders, tuple(w["commands"]), avoid)


def _avoided(commands: list[str], at: str, where: str) -> tuple[str, ...] | None:
    """The cubes the wave's `reschedule NAME [--avoid CUBES]` commands name (each the same): what its moves were
    made with, an empty tuple for a plan written before `--avoid`; None when the wave has no reschedule command."""
    found: tuple[str, ...] | None = None
    for j, command in enumerate(commands):
        try:
            words = shlex.split(command)
        except ValueError:
            continue  # not a command the wave runs: only its moves' are read here
        if words[:2] != ["tpufleet", "reschedule"]:
            continue
        given = words[words.index("--avoid") + 1 :][:1] if "--avoid" in words else []
        cubes = tuple(given[0].split(",")) if given else ()
        if any(not re.match(_CUBE, c) for c in cubes) or (given == [] and "--avoid" in words):
            raise BadStateFile(where, f"{at}.{j}", command, "its --avoid is not a list of cubes (c120,c121)")
        if len(set(cubes)) < len(cubes):  # as `reschedule --avoid` refuses it
            raise BadStateFile(where, f"{at}.{j}", command, "its --avoid names a cube twice")
        if found is not None and cubes != found:
            raise BadStateFile(where, f"{at}.{j}", command, f"the wave's moves avoid {','.join(found) or 'no cube'}")
        found = cubes
    return found


def _moves(docs: list[dict[str, Any]], at: str, where: str) -> tuple[SavedMove, ...]:
    """A wave's moves: each slice once, an unserved one saying why."""
    moves: list[SavedMove] = []
    for j, m in enumerate(docs):
        move = SavedMove(
            m["slice"],
            m["status"],
            tuple(m.get("cubes_out", ())),
            tuple(m.get("cubes_in", ())),
            m.get("to_pod", ""),
            m.get("reason", ""),
        )
        earlier = next((k for k, other in enumerate(moves) if other.slice == move.slice), None)
        if earlier is not None:
            raise BadStateFile(
                where, f"{at}.{j}.slice", move.slice, f"the slice moves twice in the wave (the first: {at}.{earlier})"
            )
        if move.status == "unserved" and not move.reason.strip():
            raise BadStateFile(where, f"{at}.{j}.reason", m.get("reason", NO_VALUE), "an unserved move must say why")
        moves.append(move)
    return tuple(moves)


def _kept_down_cleared(w: dict[str, Any], at: str, where: str) -> None:
    """`kept_down` names notices of the wave's `cleared_after` (those whose cube applying it leaves down)."""
    stray = next((j for j, t in enumerate(w.get("kept_down", ())) if t not in w["cleared_after"]), None)
    if stray is not None:
        raise BadStateFile(where, f"{at}.{stray}", w["kept_down"][stray], "not one of the wave's cleared_after")


def _holders_cover(holders: dict[str, list[str]], wave: SavedWave, at: str, where: str) -> None:
    """`holders_before` names every cube the wave touches (its cubes, the cubes its moves leave and take): the
    check that the fleet has not changed under the wave (`changed_since`) starts from them."""
    touched = [n.cube for n in wave.notices] + [c for m in wave.moves for c in (*m.cubes_out, *m.cubes_in)]
    missing = next((c for c in touched if c not in holders), None)
    if missing is not None:
        raise BadStateFile(where, at, holders, f"no entry for cube {missing}, which the wave touches")


def _windows_of_notices(docs: list[dict[str, Any]], waves: tuple[SavedWave, ...], where: str) -> None:
    """Each wave's window is its notices' (`maintenance.window`): the earliest start, the latest end."""
    for i, (w, wave) in enumerate(zip(docs, waves, strict=True)):
        for key, given in zip(("window_start", "window_end"), window(wave.notices), strict=True):
            if w[key] != given:
                raise BadStateFile(where, f"waves.{i}.{key}", w[key], f"the wave's notices give {given or 'null'}")


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


def check_fleet(saved: SavedMaintenancePlan, fleet: Fleet, fault_targets: Mapping[str, str] | None = None) -> None:
    """The checks of a saved plan that need the fleet it is applied to: each move's `to_pod` is a pod of the
    fleet, and the pod of the cubes it moves into; each notice's `open_drain` a fault of the state
    (`fault_targets`: every fault's id -> its target) on that cube. BadStateFile (exit 2) naming the file, field
    and value."""
    for i, n in enumerate(saved.notices):
        if fault_targets is None or n.fault_id is None or fault_targets.get(n.fault_id) == n.target:
            continue
        on = fault_targets.get(n.fault_id)
        problem = "no such fault in the state" if on is None else f"a fault of {on}, not of {n.target}"
        raise BadStateFile(saved.path, f"notices.{i}.open_drain", n.fault_id, problem)
    for i, wave in enumerate(saved.waves):
        for j, move in enumerate(wave.moves):
            if not move.to_pod:
                continue
            field = f"waves.{i}.moves.{j}.to_pod"
            if move.to_pod not in fleet.pod_by_name:
                raise BadStateFile(
                    saved.path, field, move.to_pod, f"no such pod in this fleet ({', '.join(fleet.pod_by_name)})"
                )
            for k, cube in enumerate(move.cubes_in):
                pod = fleet.cube_pod.get(cube, move.to_pod)
                if pod != move.to_pod:
                    where = f"waves.{i}.moves.{j}.cubes_in.{k}"
                    raise BadStateFile(saved.path, where, cube, f"a cube of {pod}, not of to_pod {move.to_pod}")
