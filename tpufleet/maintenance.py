"""Maintenance notices taken in waves: which cubes go down together, in what order, and the commands (pure).

The planner of `plan-maintenance`:

1. A notice is a cube and its maintenance window (RFC 3339 start and end; an end may be unknown for a drain
   imported without one). Notices are ordered by window start, then by cube, and cut into waves of at most K.
2. A wave's window runs from its earliest start to its latest end (an unknown end: open until the last wave).
3. A wave's cubes are cleared after its window, once every wave that starts before that end has been drained:
   the clear of wave i goes at the end of wave j, the last wave with start_j < end_i (j >= i). Replaying the
   waves' commands in order therefore replays the windows as they overlap in time.
4. For each wave, in order: drain each cube (`inject-fault cube:cNN --planned`), then for each slice the drains
   evicted, `reschedule`, `plan-xconnect --apply` and `routes`; then the clears that fall there (step 3).

Whether the moves exist is the use case's part (`tpufleet.ops.maintenance`): it replays these steps on a copy of
the fleet state through the same code `inject-fault` and `reschedule` run.

>>> ns = [Notice("c02", "2026-06-16T09:00:00Z", "2026-06-16T13:00:00Z"),
...       Notice("c01", "2026-06-16T09:00:00Z", "2026-06-16T13:00:00Z"),
...       Notice("c03", "2026-06-18T09:00:00Z", "2026-06-18T13:00:00Z")]
>>> [[n.cube for n in w] for w in waves(ns, 2)], clear_positions(waves(ns, 2))
([['c01', 'c02'], ['c03']], [0, 1])
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from tpufleet.errors import BadInput, shown
from tpufleet.timeparse import parse_stamp, stamp_text, utc_stamp

__all__ = [
    "KIND",
    "MAX_NOTICES",
    "Notice",
    "clear_command",
    "clear_positions",
    "drain_command",
    "move_commands",
    "notices_from_document",
    "wave_reason",
    "waves",
    "window",
]

KIND: Final = "tpufleet-maintenance-plan"
MAX_NOTICES: Final = 10_000
_FIELDS: Final = ("target", "window_start", "window_end")


@dataclass(frozen=True)
class Notice:
    """One cube's maintenance: its window, the planned drain already open for it (imported), if any, and the
    reservation sub-block the notice named the cube by, if it did."""

    cube: str
    window_start: str
    window_end: str | None
    fault_id: str | None = None
    sub_block: str | None = field(default=None, compare=False)

    @property
    def target(self) -> str:
        return f"cube:{self.cube}"

    def record(self) -> dict[str, Any]:
        named = {"sub_block": self.sub_block} if self.sub_block is not None else {}
        return {
            "target": self.target,
            **named,
            "window_start": self.window_start,
            "window_end": self.window_end,
            "open_drain": self.fault_id,
        }


def _typed(value: object) -> str:
    """A value for a message, a NaN or infinity as YAML writes it (`.nan`, `.inf`, `-.inf`), not as Python does.

    >>> _typed(float("nan")), _typed(float("-inf")), _typed(12), _typed("soon")
    ('.nan', '-.inf', '12', "'soon'")
    """
    if isinstance(value, float) and not math.isfinite(value):
        return ".nan" if math.isnan(value) else f"{'-' if value < 0 else ''}.inf"
    return shown(value)


def _when(item: Mapping[str, Any], key: str, where: str) -> datetime:
    _required(item, key, where)
    value = item[key]  # text, quoted or not: the YAML reader leaves times as text (`inputfiles.load_yaml`)
    moment = parse_stamp(value) if isinstance(value, str) else None
    if moment is None:
        if isinstance(value, str) and _written_as_time(value):  # 0001-01-01T00:00:00+01:00 is the year 0 in UTC
            raise BadInput(f"{where}: field {key}: {shown(value)} lies outside the years 1 to 9999 once in UTC")
        raise BadInput(f"{where}: field {key}: {_typed(value)} is not an RFC 3339 time such as 2026-06-16T09:00:00Z")
    if datetime.fromisoformat(str(value)).tzinfo is None:  # read as UTC, a local time would drain hours off
        raise BadInput(
            f"{where}: field {key}: {shown(value)} has no UTC offset (RFC 3339: 2026-06-16T09:00:00Z, or +02:00)"
        )
    return moment


def _written_as_time(text: str) -> bool:
    """Whether `text` reads as a time with an offset whose UTC moment falls outside the calendar."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return False
    if moment.tzinfo is None:
        return False
    try:
        moment.astimezone(UTC)
    except OverflowError:
        return True
    return False


def _required(item: Mapping[str, Any], key: str, where: str) -> None:
    """A field left out is named as required, as every input file's is; one holding null shows its value."""
    if key not in item:
        raise BadInput(f"{where}: field {key}: is required")


def _cube_of(item: Mapping[str, Any], where: str, cubes: Sequence[str], sub_blocks: Mapping[str, str]) -> str:
    """The cube a notice's target names: `cube:cNN`, or a reservation sub-block's name (as Compute Engine's
    maintenance notices name it) that the state's reservation maps to a cube."""
    _required(item, "target", where)
    target = item["target"]
    if isinstance(target, str) and target in sub_blocks:
        return sub_blocks[target]
    cube = target[5:] if isinstance(target, str) and target.startswith("cube:") else None
    if cube is None or cube not in cubes:
        known = (
            "nor a reservation sub-block the state maps to a cube"
            if sub_blocks
            else "(a sub-block's name needs `tpufleet import reservation --apply` first)"
        )
        raise BadInput(
            f"{where}: field target: {_typed(target)} is not a cube of the fleet (cube:cNN) {known}"
            f"{_meant_cube(target, cubes)}"
        )
    return cube


def _meant_cube(target: object, cubes: Sequence[str]) -> str:
    """For a refused notice target: `; did you mean cube:c05?` when it names a cube of the fleet another way (`c05`,
    `cube:c5`, `CUBE:C05`) or a part of one (`host:c05/3`: a notice drains the whole cube); else nothing.

    >>> _meant_cube("c05", ["c05"]), _meant_cube("host:c05/3", ["c05"]), _meant_cube("c99", ["c05"])
    ('; did you mean cube:c05?', '; did you mean cube:c05? (a notice drains a whole cube)', '')
    """
    from tpufleet.ids import CubeId, OcsId, near_id, parse_target

    near = near_id(target) if isinstance(target, str) else None
    meant = parse_target(near) if near is not None else None
    if meant is None or isinstance(meant, OcsId) or meant.cube not in cubes:
        return ""
    whole = "" if isinstance(meant, CubeId) else " (a notice drains a whole cube)"
    return f"; did you mean cube:{meant.cube}?{whole}"


def _notice(item: Any, where: str, cubes: Sequence[str], sub_blocks: Mapping[str, str]) -> Notice:
    if not isinstance(item, Mapping):
        raise BadInput(f"{where}: {shown(item)} is not a mapping with target, window_start and window_end")
    extra = sorted(str(k) for k in item if k not in _FIELDS)
    if extra:
        raise BadInput(f"{where}: field {shown(extra[0])} is not one of {', '.join(_FIELDS)}")
    cube = _cube_of(item, where, cubes, sub_blocks)
    start, end = _when(item, "window_start", where), _when(item, "window_end", where)
    if end <= start:  # the times as given (kept as whole seconds, they may be equal): named as written
        raise BadInput(
            f"{where}: field window_end: {shown(item['window_end'])} is not after window_start "
            f"{shown(item['window_start'])}"
        )
    sub_block = item["target"] if item["target"] in sub_blocks else None
    return Notice(cube, stamp_text(start), stamp_text(end), sub_block=sub_block)


def notices_from_document(
    doc: Any, source: str, cubes: Sequence[str], sub_blocks: Mapping[str, str] | None = None
) -> list[Notice]:
    """The notices of a parsed YAML/JSON document: a list (or ``{notices: [...]}``) of
    ``{target: cube:cNN, window_start, window_end}``, a target also a reservation sub-block's name that
    `sub_blocks` (name -> cube) maps; BadInput naming the source, item, field and value.

    >>> notices_from_document([{"target": "cube:c01", "window_start": "2026-06-16T09:00:00+00:00",
    ...     "window_end": "2026-06-16T13:00:00Z"}], "n.yaml", ["c01"])[0].window_start
    '2026-06-16T09:00:00Z'
    """
    items = doc.get("notices") if isinstance(doc, Mapping) else doc
    if not isinstance(items, list) or not items:
        raise BadInput(f"{source}: expected a non-empty list of notices (target, window_start, window_end)")
    if len(items) > MAX_NOTICES:
        raise BadInput(f"{source}: {len(items)} notices, at most {MAX_NOTICES}")
    out = [_notice(item, f"{source}: notice {i + 1}", cubes, sub_blocks or {}) for i, item in enumerate(items)]
    seen: set[str] = set()
    for i, n in enumerate(out):
        if n.cube in seen:
            raise BadInput(f"{source}: notice {i + 1}: field target: {n.target} is given twice")
        seen.add(n.cube)
    return out


def waves(notices: Sequence[Notice], max_parallel: int, order: Sequence[str] = ()) -> list[list[Notice]]:
    """The notices by window start (then the cube's place in `order`, then name), cut into waves of at most
    `max_parallel` (step 1)."""
    place = {c: i for i, c in enumerate(order)}
    ranked = sorted(notices, key=lambda n: (n.window_start, place.get(n.cube, len(place)), n.cube))
    return [ranked[i : i + max_parallel] for i in range(0, len(ranked), max_parallel)]


def window(wave: Sequence[Notice]) -> tuple[str, str | None]:
    """A wave's window: its earliest start and latest end (None when one end is unknown)."""
    ends = [n.window_end for n in wave]
    return min(n.window_start for n in wave), None if None in ends else max(e for e in ends if e is not None)


def clear_positions(plan: Sequence[Sequence[Notice]]) -> list[int]:
    """For each wave, the wave at whose end its cubes are cleared (step 3)."""
    starts = [window(w)[0] for w in plan]
    out = []
    for i, w in enumerate(plan):
        end = window(w)[1]
        out.append(max(j for j in range(i, len(plan)) if j == i or end is None or starts[j] < end))
    return out


UNKNOWN_END = "done"  # a wave's window end in its reason when a notice gave none
WAVE_REASON = "maintenance wave "  # how a plan's drains begin: any plan's are a plan's to clear


def wave_reason(number: int, wave: Sequence[Notice]) -> str:
    start, end = window(wave)
    return f"{WAVE_REASON}{number}: {start} to {end or UNKNOWN_END}"


def a_plans_drain(reason: str) -> bool:
    """A drain a maintenance plan's wave opened (`wave_reason`), this plan's or one it replaces."""
    return reason.startswith(WAVE_REASON)


def plan_window_ahead(reason: str, now: str, own_end: str | None = None) -> str | None:
    """The end of the window a maintenance plan's drain (its `reason`, `wave_reason`) holds its cube for, while it
    is still ahead at `now`: cleared before, the cube goes back to the pool during the maintenance. A window with no
    known end (`UNKNOWN_END`) holds it until the operator knows the maintenance is done, as `apply-maintenance`
    leaves it open. `own_end`: the end of the cube's own maintenance where the state knows it (the reservation's
    announced window): a wave's reason carries its notices' latest end, and `apply-maintenance` clears each cube
    after its own, so that end is taken when it lies within the wave's window.

    >>> reason = "maintenance wave 1: 2099-06-16T09:00:00Z to 2099-06-16T14:00:00Z"
    >>> [plan_window_ahead(reason, "2099-06-16T13:30:00Z", own) for own in (None, "2099-06-16T13:00:00Z")]
    ['2099-06-16T14:00:00Z', None]
    """
    if not a_plans_drain(reason):
        return None
    head, to, end_text = reason.rpartition(" to ")
    start = utc_stamp(head.partition(": ")[2]) if to else None
    own, end = utc_stamp(own_end) if own_end is not None else None, utc_stamp(end_text)
    if start is not None and own is not None and start <= own and (end_text == UNKNOWN_END or own <= (end or "")):
        return own if own > now else None  # the cube's own end, within the wave's window (`window`)
    if to and end_text == UNKNOWN_END:  # a plan's when its start is a time, not `... soon to done` typed by hand
        return UNKNOWN_END if start is not None else None
    return end if end is not None and end > now else None  # end None: a reason typed by hand, not held


def plan_drain_held(fault_id: str, reason: str, now: str, own_end: str | None = None) -> str | None:
    """Why the `clear-fault` step of a maintenance plan's drain is held back at `now`, until when; None if not
    (`own_end` as for `plan_window_ahead`)."""
    end = plan_window_ahead(reason, now, own_end)
    if end is None:
        return None
    if end == UNKNOWN_END:
        unknown = "its window's end is unknown: clear it once the maintenance is done"
        return f"{fault_id} is a maintenance plan's drain, {unknown}"
    return f"{fault_id} is a maintenance plan's drain, its window until {end}: clear it once that has passed"


def drain_command(notice: Notice, reason: str) -> str:
    return f"tpufleet inject-fault {notice.target} --planned --reason {shlex.quote(reason)}"


def move_commands(slice_name: str, avoid: Sequence[str] = ()) -> list[str]:
    """A moved slice's commands; `avoid`, the cubes later waves drain, goes to `reschedule --avoid`."""
    name = shlex.quote(slice_name)
    move = f"tpufleet reschedule {name}" + (f" --avoid {','.join(avoid)}" if avoid else "")
    return [move, f"tpufleet plan-xconnect {name} --apply", f"tpufleet routes {name}"]


def clear_command(notice: Notice) -> str:
    return f"tpufleet clear-fault {notice.target}"
