"""One native goodput record checked and added to a Log: a job record (its ideal step declared, from FLOPs or
modelled), an event, a capacity step or the schema line, each field range-checked and a bad one a BadRecord naming
file, line, field and value; per-slice allocations folded into the job's. Kept apart from the schema and the Log that
holds what is read (`events`) and from how lines become records (`eventlines`, `csvlog`, the ml-goodput readers,
the simulator): every reader of every form comes here, so a record means the same whichever file it is in.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tpufleet.errors import NO_VALUE, shown
from tpufleet.goodput.events import (
    CODE,
    MAX_CHIPS,
    MAX_IDEAL_STEP_S,
    MAX_SLICES,
    MAX_STEP,
    MAX_TEXT,
    PHASES,
    SCHEMA_VERSION,
    Job,
    Log,
    record_of,
)
from tpufleet.goodput.times import BadRecord, parse_time
from tpufleet.text import plain_float

if TYPE_CHECKING:
    from tpufleet.collectives.profile import Profile

UNKNOWN = "unknown"  # the accelerator (and framework) of a record that names none


def check_allocation(log: Log, job: str, chips: int, part: int, file: str, line: int) -> None:
    """An allocation against the job's record read before it: at most the record's chips, and (a slice's) a slice
    the record's slices number, when it says more than one. BadRecord naming the line if not (a bad line:
    `--skip-bad` skips it); an allocation read before the record is judged when the record comes (`Log.add_job`)."""
    known = record_of(log, job)
    if known is None:
        return
    if chips > known.chips:
        raise BadRecord(
            file,
            line,
            "chips",
            chips,
            f"more than the {known.chips:,} chips job {shown(job)} has (its record at {known.where})",
        )
    if part >= known.slices > 1:
        raise BadRecord(
            file,
            line,
            "slice",
            part,
            f"job {shown(job)} has {known.slices:,} slices, 0 to {known.slices - 1:,} (its record at {known.where})",
        )


_WHOLE_NUMBER = re.compile(r"[+-]?[0-9]+")


def _int(
    rec: Mapping[str, Any], key: str, file: str, line: int, required: bool = False, minimum: int = 0, maximum: int = 0
) -> int:
    value = rec.get(key)
    if value is None or value == "":
        if required:
            raise BadRecord(file, line, key, rec.get(key, NO_VALUE), "is required")
        return -1
    maximum = maximum or (MAX_STEP if key == "step" else MAX_CHIPS)
    if type(value) is int and minimum <= value <= maximum:  # the common case first
        return value
    # text in ASCII digits only, as every number tpufleet reads: int() takes "2_56", Arabic-Indic and full-width ones
    text_ok = not isinstance(value, str) or _WHOLE_NUMBER.fullmatch(value.strip()) is not None
    try:
        number = (
            int(value) if text_ok and isinstance(value, (int, float, str)) and not isinstance(value, bool) else None
        )
    except (ValueError, OverflowError):  # a 5,000-digit string, infinity
        number = None
    if number is None or (isinstance(value, float) and not value.is_integer()) or not minimum <= number <= maximum:
        raise BadRecord(file, line, key, value, f"must be a whole number from {minimum} to {maximum:,}")
    return number


def _modelled_step(rec: Mapping[str, Any], chips: int, file: str, line: int, profile: Profile | None) -> float:
    """The ideal step of a job that declares its model instead of a measured step: compute at the profile's peak
    plus the modelled all-reduce of its gradients on its slice shape (tpufleet.collectives.cost.ideal_step_time);
    `profile`: its accelerator's figures (None: the shipped TPU v4 profile)."""
    from tpufleet.collectives.cost import ideal_step_time
    from tpufleet.errors import BadInput
    from tpufleet.shapes import parse_shape

    flops = _float(rec, "model_flops_per_step", file, line) or 0.0
    grads = 0.0 if rec.get("gradient_bytes") in (None, 0, "") else _float(rec, "gradient_bytes", file, line) or 0.0
    topology = rec.get("topology")
    try:
        shape = parse_shape(topology if isinstance(topology, str) else "")
    except BadInput:
        raise BadRecord(
            file, line, "topology", topology, "a slice shape such as 4x4x8 is needed with model_flops_per_step"
        ) from None
    if shape.chips != chips:
        raise BadRecord(file, line, "chips", chips, f"differs from the {shape.chips} chips of topology {shape}")
    return ideal_step_time(shape, flops, grads, profile)


def _float(rec: Mapping[str, Any], key: str, file: str, line: int) -> float | None:
    value = rec.get(key)
    if value is None or value == "":
        return None
    if isinstance(value, str):  # CSV fields are text: ASCII digits only, as every number tpufleet reads
        parsed = plain_float(value)
        if parsed is None:
            raise BadRecord(file, line, key, value, "must be a number")
        number = parsed
    else:
        try:
            number = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan
        except OverflowError:
            raise BadRecord(file, line, key, value, "must be a number") from None
    if not 0 < number < math.inf:
        raise BadRecord(file, line, key, value, "must be a positive finite number")
    return number


def _str(rec: Mapping[str, Any], key: str, file: str, line: int, default: str = "") -> str:
    value = rec.get(key, default)
    if value is None or value == "":
        return default
    if not isinstance(value, str):
        raise BadRecord(file, line, key, value, "must be a string")
    if len(value) > MAX_TEXT:
        raise BadRecord(file, line, key, value, f"longer than {MAX_TEXT} characters")
    return value


def add_record(log: Log, rec: object, file: str, line: int) -> None:
    """Check one record and add it; BadRecord (naming file, line, field and value) if it is bad."""
    if not isinstance(rec, dict):
        raise BadRecord(file, line, "<record>", rec, "must be an object")
    kind = rec.get("type")
    if kind == "event":
        _add_event(log, rec, file, line)
    elif kind == "job":
        log.add_job(_job(rec, file, line, log.step_profiles))
    elif kind == "capacity":
        when = parse_time(rec.get("time", NO_VALUE), file, line)
        if rec.get("accelerator") == "":  # as in a job record: "" is no name (a CSV cell's "" is no field)
            raise BadRecord(file, line, "accelerator", "", f"must not be empty (leave the field out: {UNKNOWN})")
        accelerator = _str(rec, "accelerator", file, line, UNKNOWN)
        log.capacity.append((when, accelerator, _int(rec, "chips", file, line, required=True), f"{file}:{line}"))
    elif kind == "schema":  # a whole number, as every count (a CSV cell is text: `1`)
        if _int(rec, "version", file, line, required=True) != SCHEMA_VERSION:
            problem = f"this reader knows schema version {SCHEMA_VERSION} only"
            raise BadRecord(file, line, "version", rec["version"], problem)
    else:
        # (absent: no value to show, as for any absent field; an ml-goodput-measurement entry says which --format)
        hint = "; an ml-goodput-measurement entry: give --format ml-goodput" if "job_name" in rec else ""
        raise BadRecord(file, line, "type", rec.get("type", NO_VALUE), f"must be job, event, capacity or schema{hint}")
    log.records += 1


def _add_event(log: Log, rec: Mapping[str, Any], file: str, line: int) -> None:
    job = _str(rec, "job", file, line)
    if not job:
        raise BadRecord(file, line, "job", rec.get("job", NO_VALUE), "is required")
    name = rec.get("event")
    if not isinstance(name, str) or name not in CODE:
        raise BadRecord(file, line, "event", name, "unknown event name")
    t = parse_time(rec.get("time", NO_VALUE), file, line)
    if name == "slice_counts":
        add_slice_counts(log, job, t, rec, file, line)
        return
    step = _int(rec, "step", file, line, required=name in ("step_start",))
    chips = _int(rec, "chips", file, line, required=name == "allocation")
    part = _int(rec, "slice", file, line, maximum=MAX_SLICES)  # which slice of a multislice job (else -1)
    if name == "allocation":
        check_allocation(log, job, chips, part, file, line)
    if name == "allocation" and part >= 0:
        log.columns(job)  # the job takes its place (and counts against the job limit) where it is first seen
        allocations = log.slice_allocations.setdefault(job, [])
        allocations.append((t, len(allocations), part, chips))
        return
    log.add_event(job, t, CODE[name], step, chips, _str(rec, "label", file, line))


def fold_slices(log: Log) -> None:
    """Per-slice allocations as the job's: from each, the chips of every slice's latest allocation added up (so
    the job is all-allocated exactly while every slice is held), in time order."""
    for job, allocations in log.slice_allocations.items():
        held: dict[int, int] = {}
        for t, _order, part, chips in sorted(allocations):
            held[part] = chips
            log.add_event(job, t, CODE["allocation"], -1, sum(held.values()))
        known = log.jobs.get(job)
        if known is not None and known.slices == 1:  # a job record that does not say: its slices do
            known.slices = max(len(held), 1)
    log.slice_allocations.clear()


# A job record's names and what leaving each out means (an empty CSV cell is left out).
NAMED_DEFAULTS = {
    "accelerator": UNKNOWN,
    "topology": "",
    "phase": "training",
    "framework": UNKNOWN,
    "priority": "",
}


def _job(rec: Mapping[str, Any], file: str, line: int, profiles: Mapping[str, Profile]) -> Job:
    job = _str(rec, "job", file, line)
    if not job:
        raise BadRecord(file, line, "job", rec.get("job", NO_VALUE), "is required")
    phase = _str(rec, "phase", file, line, "training") if rec.get("phase") != "" else ""
    if phase not in PHASES:
        raise BadRecord(file, line, "phase", phase, f"must be one of {', '.join(PHASES)}")
    chips = _int(rec, "chips", file, line, required=True, minimum=1)
    # judged before the other fields, as always (which error wins)
    ideal = _ideal_step(rec, chips, file, line, profiles)
    for key, absent in NAMED_DEFAULTS.items():  # "" is no name: read as the field left out, it hid a typo
        if rec.get(key) == "":
            raise BadRecord(file, line, key, "", f"must not be empty (leave the field out{absent and ': '}{absent})")
    return Job(
        job,
        _str(rec, "accelerator", file, line, UNKNOWN),
        chips,
        _str(rec, "topology", file, line),
        phase,
        _str(rec, "framework", file, line, UNKNOWN),
        _str(rec, "priority", file, line),
        ideal,
        max(1, _int(rec, "slices", file, line, minimum=1, maximum=MAX_SLICES)),
        f"{file}:{line}",
    )


FLOPS_PAIR = ("flops_per_step", "peak_flops_per_chip")  # the ideal step: flops / (peak x chips), both or neither


def _ideal_step(
    rec: Mapping[str, Any], chips: int, file: str, line: int, profiles: Mapping[str, Profile]
) -> float | None:
    """Declared (ideal_step_s), from FLOPs at the chips' peak, or modelled from the model and slice shape; each
    at most MAX_IDEAL_STEP_S (the field it comes from named when it is not)."""
    ideal = _float(rec, "ideal_step_s", file, line)
    source = "ideal_step_s"
    flops, peak = _float(rec, "flops_per_step", file, line), _float(rec, "peak_flops_per_chip", file, line)
    if ideal is None and (flops is None) != (peak is None):  # half the pair: it was ignored, PG then estimated
        missing, given = FLOPS_PAIR[::-1] if peak is None else FLOPS_PAIR
        raise BadRecord(file, line, missing, NO_VALUE, f"is required with {given} (or give ideal_step_s)")
    if ideal is None and flops is not None and peak is not None:
        ideal, source = flops / (peak * chips), "flops_per_step"
        if not 0 < ideal < math.inf:
            raise BadRecord(file, line, "flops_per_step", flops, "gives no finite ideal step time")
    if ideal is None and rec.get("model_flops_per_step") not in (None, ""):
        accelerator = rec.get("accelerator")
        profile = profiles.get(accelerator) if isinstance(accelerator, str) else None
        ideal, source = _modelled_step(rec, chips, file, line, profile), "model_flops_per_step"
    if ideal is not None and not ideal <= MAX_IDEAL_STEP_S:
        raise BadRecord(
            file,
            line,
            source,
            rec.get(source),
            f"the ideal step time must be at most {MAX_IDEAL_STEP_S:,.0f} s (a year)",
        )
    return ideal


def add_slice_counts(log: Log, job: str, t: float, rec: Mapping[str, Any], file: str, line: int) -> None:
    """An elastic job's slice counts from `t` on: active (stepping), available and total slices."""
    total = _int(rec, "total_slices", file, line, required=True, minimum=1)
    active = _int(rec, "active_slices", file, line, required=True, maximum=total)
    available = _int(rec, "available_slices", file, line, maximum=total)
    log.slices.setdefault(job, []).append((t, active, active if available < 0 else available, total))


def add_guarded(log: Log, skip_bad: bool, rec: object, file: str, line: int) -> None:
    """add_record, counting a bad record as skipped instead of raising when `skip_bad`."""
    try:
        add_record(log, rec, file, line)
    except BadRecord:
        if not skip_bad:
            raise
        log.skipped += 1
