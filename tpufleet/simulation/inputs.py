"""What a simulation is given: the workload, the fault rates and the run's options; their file schemas and loaders.

The files are YAML, validated against the schemas below; every error names the file, the field and the value.
`load_workload(None)` and `load_rates(None)` read the files shipped in `tpufleet/data/` (linked from fixtures/).

Fault rates have one source of defaults, the shipped `fault-rates.yaml`: `FaultRates` has no field defaults, and a
rates file that leaves a key out takes that key's value from the shipped file. A workload file that leaves a key
out gets the `Workload` field default (a minimal workload: one 4x4x4 training job class); one that lists `jobs`
and no `arrival_rate_per_hour` or `shapes` has no random arrivals.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from tpufleet.constants import CUBES_PER_POD
from tpufleet.errors import BadInput, BadStateFile
from tpufleet.shapes import Shape, allocatable, parse_shape

SHIPPED = Path(__file__).resolve().parent.parent / "data"
SHIPPED_WORKLOAD = SHIPPED / "workload.yaml"
SHIPPED_RATES = SHIPPED / "fault-rates.yaml"

Mode = Literal["static", "reconfigurable", "reconfigurable-ft"]
MODES: tuple[Mode, ...] = get_args(Mode)
Phase = Literal["training", "serving", "bulk_inference"]
PHASES: tuple[Phase, ...] = get_args(Phase)
FaultKind = Literal["host", "link", "ocs", "drain"]  # drain: planned maintenance of a machine, with notice
FAULT_KINDS: tuple[FaultKind, ...] = get_args(FaultKind)
RATE_FIELDS = ("host_per_day", "link_per_day", "ocs_per_day", "drain_per_day", "rerouted_slowdown")


@dataclass(frozen=True)
class JobSpec:
    """One job listed in the workload file; what it leaves out is drawn like a random arrival's."""

    shape: Shape
    duration_hours: float
    arrival_hours: float = 0.0
    id: str | None = None
    phase: Phase | None = None
    fault_tolerant: bool = True
    priority_rank: int = 0


@dataclass(frozen=True)
class Workload:
    arrival_rate_per_hour: float = 1.6
    duration_median_h: float = 5.0
    duration_sigma: float = 1.0
    duration_max_h: float = 96.0
    shapes: tuple[tuple[Shape, float], ...] = ((parse_shape("4x4x4"), 1.0),)  # (shape, weight)
    phases: Mapping[str, float] = field(default_factory=lambda: {"training": 1.0})
    frameworks: Mapping[str, float] = field(default_factory=lambda: {"jax": 1.0})
    priorities: tuple[str, ...] = ("batch",)  # highest first
    priority_weights: tuple[float, ...] = (1.0,)
    ideal_step_fraction: float = 0.6
    checkpoint_write_s: float = 60.0
    fault_tolerant_share: float = 0.95
    jobs: tuple[JobSpec, ...] = ()


@dataclass
class FaultRates:
    """Failures per component per day, planned drains per machine per day, hours to repair each kind, and the
    step-time factor of a job running on rerouted tables. No defaults here: see `default_rates()`."""

    host_per_day: float
    link_per_day: float  # per optical link: OPTICAL_LINKS_PER_CUBE of them per cube
    ocs_per_day: float
    drain_per_day: float
    repair_hours: dict[str, float]
    rerouted_slowdown: float


@dataclass(frozen=True)
class Options:
    days: float
    seed: int = 0
    pods: int = 1
    mode: Mode = "reconfigurable-ft"
    checkpoint_interval_s: float = 3600.0
    restart_overhead_s: float = 600.0
    macro_steps: int = 10  # logged steps per checkpoint interval
    cubes_per_pod: int = CUBES_PER_POD

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise BadInput(f"bad mode {self.mode!r}: not one of {', '.join(MODES)}")
        if self.macro_steps < 1:
            raise BadInput(f"bad macro_steps {self.macro_steps}: must be at least 1")

    @property
    def step_s(self) -> float:
        """Seconds of compute in one logged (macro) step."""
        return self.checkpoint_interval_s / self.macro_steps

    @property
    def static(self) -> bool:
        return self.mode == "static"

    @property
    def fault_tolerant_routing(self) -> bool:
        """Whether jobs that opt in have their traffic rerouted around a failed OCS or optical link."""
        return self.mode == "reconfigurable-ft"


# ---- schemas ------------------------------------------------------------------------------------------------
_POSITIVE = {"type": "number", "exclusiveMinimum": 0}
_NON_NEGATIVE = {"type": "number", "minimum": 0}
_WEIGHTS = {"type": "object", "minProperties": 1, "additionalProperties": _NON_NEGATIVE}
_SHAPE_ENTRY = {
    "type": "object",
    "required": ["shape"],
    "additionalProperties": False,
    "properties": {"shape": {"type": "string"}, "twisted": {"type": "boolean"}, "weight": _NON_NEGATIVE},
}
_JOB_ENTRY = {
    "type": "object",
    "required": ["shape", "duration_hours"],
    "additionalProperties": False,
    "properties": {
        "id": {"type": "string"},
        "shape": {"type": "string"},
        "twisted": {"type": "boolean"},
        "duration_hours": _POSITIVE,
        "arrival_hours": _NON_NEGATIVE,
        "phase": {"enum": list(PHASES)},
        "fault_tolerant": {"type": "boolean"},
        "priority_rank": {"type": "integer", "minimum": 0},
    },
}
WORKLOAD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["schema_version"],
    "additionalProperties": False,
    "properties": {
        "schema_version": {"const": 1},
        "arrival_rate_per_hour": _NON_NEGATIVE,
        "duration_hours": {
            "type": "object",
            "additionalProperties": False,
            "properties": {"median": _POSITIVE, "sigma": _NON_NEGATIVE, "max": _POSITIVE},
        },
        "shapes": {"type": "array", "items": _SHAPE_ENTRY},
        "phases": {**_WEIGHTS, "propertyNames": {"enum": list(PHASES)}},
        "frameworks": _WEIGHTS,
        "priorities": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "priority_weights": {"type": "array", "items": _NON_NEGATIVE, "minItems": 1},
        "ideal_step_fraction": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
        "checkpoint_write_s": _NON_NEGATIVE,
        "fault_tolerant_share": {"type": "number", "minimum": 0, "maximum": 1},
        "jobs": {"type": "array", "items": _JOB_ENTRY},
    },
}
_REPAIR_HOURS = {"type": "object", "additionalProperties": False, "properties": {k: _POSITIVE for k in FAULT_KINDS}}
RATES_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["schema_version"],
    "additionalProperties": False,
    "properties": {
        "schema_version": {"const": 1},
        **{key: _NON_NEGATIVE for key in RATE_FIELDS if key != "rerouted_slowdown"},
        "repair_hours": _REPAIR_HOURS,
        "rerouted_slowdown": {"type": "number", "minimum": 1},
    },
}
# The shipped file is every rate's default, so it must give every one.
SHIPPED_RATES_SCHEMA: dict[str, Any] = {
    **RATES_SCHEMA,
    "required": ["schema_version", *RATE_FIELDS, "repair_hours"],
    "properties": {**RATES_SCHEMA["properties"], "repair_hours": {**_REPAIR_HOURS, "required": list(FAULT_KINDS)}},
}


# ---- loaders ------------------------------------------------------------------------------------------------
def read_yaml(path: Path, schema: dict[str, Any]) -> dict[str, Any]:
    """The file's mapping, checked against the schema; BadStateFile naming file, field and value if not."""
    import yaml

    from tpufleet.state.schema import check

    try:
        data = yaml.safe_load(Path(path).read_text())
    except OSError as exc:
        raise BadStateFile(str(path), "", None, f"cannot be read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise BadStateFile(str(path), "", None, f"not valid YAML ({str(exc).splitlines()[0]})") from None
    check(schema, data, str(path))  # the validator is compiled once per schema object
    if not isinstance(data, dict):
        raise AssertionError("the schema admits only a mapping")
    return data


@functools.lru_cache(maxsize=1)
def _shipped_rates() -> dict[str, Any]:
    return read_yaml(SHIPPED_RATES, SHIPPED_RATES_SCHEMA)


def default_rates() -> FaultRates:
    """The shipped fault rates (tpufleet/data/fault-rates.yaml)."""
    return load_rates(None)


def load_rates(path: Path | None) -> FaultRates:
    """Fault rates from a file (None: the shipped one); a key it leaves out keeps the shipped file's value."""
    shipped = _shipped_rates()
    doc = read_yaml(Path(path), RATES_SCHEMA) if path else shipped
    merged = {**shipped, **doc}
    repair_hours = {**shipped["repair_hours"], **doc.get("repair_hours", {})}
    return FaultRates(
        **{key: float(merged[key]) for key in RATE_FIELDS},
        repair_hours={kind: float(hours) for kind, hours in repair_hours.items()},
    )


def _shape_at(path: Path, where: str, text: str, twisted: bool) -> Shape:
    """The shape, allocatable, or BadStateFile naming the field."""
    try:
        shape = parse_shape(text, twisted)
    except BadInput as exc:
        raise BadStateFile(str(path), where, text, str(exc)) from None
    if not allocatable(shape):
        raise BadStateFile(str(path), where, text, "not an allocatable sub-cube shape")
    return shape


def _shape_mix(path: Path, doc: Mapping[str, Any]) -> tuple[tuple[Shape, float], ...] | None:
    """The weighted shapes of random arrivals; None if the file does not say."""
    shapes = tuple(
        (
            _shape_at(path, f"shapes.{i}.shape", item["shape"], item.get("twisted", False)),
            float(item.get("weight", 1.0)),
        )
        for i, item in enumerate(doc.get("shapes", []))
    )
    if shapes:
        return shapes
    return () if "jobs" in doc else None


def _priorities(path: Path, doc: Mapping[str, Any]) -> tuple[tuple[str, ...], tuple[float, ...]] | None:
    if "priorities" not in doc:
        return None
    names = tuple(doc["priorities"])
    weights = tuple(float(x) for x in doc.get("priority_weights", [1.0] * len(names)))
    if len(weights) != len(names):
        raise BadStateFile(str(path), "priority_weights", doc.get("priority_weights"), "needs one weight per priority")
    return names, weights


def _job_specs(path: Path, doc: Mapping[str, Any], priorities: int) -> tuple[JobSpec, ...]:
    specs = []
    for i, job in enumerate(doc.get("jobs", [])):
        rank = int(job.get("priority_rank", 0))
        if rank >= priorities:
            raise BadStateFile(str(path), f"jobs.{i}.priority_rank", rank, f"there are only {priorities} priorities")
        shape = _shape_at(path, f"jobs.{i}.shape", job["shape"], job.get("twisted", False))
        specs.append(
            JobSpec(
                shape,
                float(job["duration_hours"]),
                float(job.get("arrival_hours", 0.0)),
                id=job.get("id"),
                phase=job.get("phase"),
                fault_tolerant=job.get("fault_tolerant", True),
                priority_rank=rank,
            )
        )
    return tuple(specs)


def load_workload(path: Path | None) -> Workload:
    """The workload of a file (None: the shipped one)."""
    path = Path(path) if path else SHIPPED_WORKLOAD
    doc = read_yaml(path, WORKLOAD_SCHEMA)
    given: dict[str, Any] = {}
    if "arrival_rate_per_hour" in doc or "jobs" in doc:
        given["arrival_rate_per_hour"] = float(doc.get("arrival_rate_per_hour", 0.0))
    for key, name in (("median", "duration_median_h"), ("sigma", "duration_sigma"), ("max", "duration_max_h")):
        if key in doc.get("duration_hours", {}):
            given[name] = float(doc["duration_hours"][key])
    shapes = _shape_mix(path, doc)
    if shapes is not None:
        given["shapes"] = shapes
    for key in ("phases", "frameworks"):
        if key in doc:
            given[key] = {name: float(weight) for name, weight in doc[key].items()}
    priorities = _priorities(path, doc)
    if priorities is not None:
        given["priorities"], given["priority_weights"] = priorities
    for key in ("ideal_step_fraction", "checkpoint_write_s", "fault_tolerant_share"):
        if key in doc:
            given[key] = float(doc[key])
    given["jobs"] = _job_specs(path, doc, len(given.get("priorities", Workload.priorities)))
    return Workload(**given)
