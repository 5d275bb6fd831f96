"""What a simulation is given: the workload, the fault rates and the run's options; their file schemas and loaders.

The files are YAML, validated against the schemas below; every error names the file, the field and the value.
The files are read by `tpufleet.state.siminputs` (`load_workload(None)` and `load_rates(None)` read the ones
shipped in `tpufleet/data/`, linked from fixtures/); this module turns their mappings into typed values.

Fault rates have one source of defaults, the shipped `fault-rates.yaml`: `FaultRates` has no field defaults, and a
rates file that leaves a key out takes that key's value from the shipped file. A workload file that leaves a key
out gets the `Workload` field default (a minimal workload: one 4x4x4 training job class); one that lists `jobs`
and no `arrival_rate_per_hour` or `shapes` has no random arrivals.

Files are read through the bounded reader (at most 1 MiB of UTF-8, no YAML anchors or aliases, at most
64 levels of nesting, no NaN or infinite numbers). Every number has a documented range (the schemas below:
fault rates at most MAX_RATE_PER_DAY per component per day, arrivals at most MAX_ARRIVALS_PER_HOUR, durations
at most MAX_HOURS, lognormal sigma at most MAX_SIGMA, weights at most MAX_WEIGHT with a positive total), and a
run whose expected number of logged events exceeds MAX_EVENTS is refused before it starts (`scale.check_budget`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

from tpufleet.constants import CUBES_PER_POD, DAY, HOUR, MAX_SIM_DAYS, MIN_SIM_DAYS, STATIC_CUBE_GRID, WEEK
from tpufleet.doccheck import check
from tpufleet.errors import BadInput, BadStateFile
from tpufleet.generations import Generation
from tpufleet.shapes import Shape, allocatable, parse_shape
from tpufleet.simulation.multislice import SECTION_SCHEMA, SLICES_SCHEMA, MultisliceMix, check_listed, mix_from_doc
from tpufleet.simulation.policy import SCHEDULER_POLICIES, SchedulerPolicy
from tpufleet.simulation.reroute import STEP_MODEL_SCHEMA, RerouteCosts, StepModel, step_model_at, step_models

if TYPE_CHECKING:
    from tpufleet.collectives.profile import Profile

Mode = Literal["static", "reconfigurable", "reconfigurable-ft"]
MODES: tuple[Mode, ...] = get_args(Mode)
Phase = Literal["training", "serving", "bulk_inference"]
PHASES: tuple[Phase, ...] = get_args(Phase)
FaultKind = Literal["host", "link", "ocs", "drain"]  # drain: planned maintenance of a machine, with notice
FAULT_KINDS: tuple[FaultKind, ...] = get_args(FaultKind)
RATE_FIELDS = ("host_per_day", "link_per_day", "ocs_per_day", "drain_per_day", "rerouted_slowdown")

# Limits on what a simulation is given (README "Safety"); each refused with exit 2 naming the value.
MAX_RATE_PER_DAY = 1.0  # failures (or drains) per component per day, each kind
MAX_REPAIR_HOURS = 8760.0  # a year
MAX_SLOWDOWN = 100.0  # step-time factor of a rerouted job
MAX_ARRIVALS_PER_HOUR = 1000.0
MAX_HOURS = 1_000_000.0  # durations (median, max, listed jobs) and listed arrival times, in hours
MAX_SIGMA = 10.0  # lognormal sigma of durations
MAX_WEIGHT = 1_000_000.0  # any mix weight; a mix also needs a positive total
MAX_CHECKPOINT_WRITE_S = float(DAY)
MAX_LISTED_JOBS = 100_000
MIN_CHECKPOINT_INTERVAL_S = 60.0  # --checkpoint-interval >= 1 minute (10 logged steps per interval)
MAX_CHECKPOINT_INTERVAL_S = float(WEEK)
MAX_RESTART_OVERHEAD_S = float(DAY)
MAX_SEED = 2**63 - 1
MAX_LOAD_PER_POD = 100.0  # multiple of the workload's arrival rate each pod gets
GENERATED_ID = re.compile(r"job[0-9]+")  # the ids of jobs the workload does not list (draws.JobMaker)
CONTROL = re.compile(r"[\x00-\x1f\x7f]")  # never in a listed job's id


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
    model: StepModel | None = None
    slices: int = 1  # a multislice job: this many slices of `shape`
    elastic_min: int | None = None  # runs on while it keeps this many slices (None: stops with any)


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
    models: Mapping[Shape, StepModel] = field(default_factory=dict)  # step models of random arrivals, by shape
    multislice: MultisliceMix | None = None  # the share of random arrivals that are multislice, and how


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


# A job's last logged step is cut short by its end (or a stop) yet counted whole by the goodput accounting: steps
# of a checkpoint interval of days would credit a job more ideal step time than it ran (PG above 1). At most the
# default's 6 minutes (an hour's 10 steps), a cut step is a small share of a job of hours.
MAX_LOGGED_STEP_S = 360.0


@dataclass(frozen=True)
class Options:
    days: float
    seed: int = 0
    pods: int = 1
    mode: Mode = "reconfigurable-ft"
    checkpoint_interval_s: float = float(HOUR)
    restart_overhead_s: float = 600.0
    macro_steps: int = 10  # logged steps per checkpoint interval
    cubes_per_pod: int = CUBES_PER_POD
    load_per_pod: float = 1.0  # each pod gets this multiple of the workload's arrival rate
    spare_cubes: int = 0  # healthy free cubes per pod kept for jobs a fault displaced
    generation: Generation | None = None  # the pods' generation (None: the built-in TPU v4 model)
    scheduler: SchedulerPolicy = "priority"  # how the wait queue ranks jobs and whom they may preempt (`policy`)

    def __post_init__(self) -> None:
        for key, choice, choices in (("mode", self.mode, MODES), ("scheduler", self.scheduler, SCHEDULER_POLICIES)):
            if choice not in choices:
                raise BadInput(f"bad {key} {choice!r}: not one of {', '.join(choices)}")
        if self.macro_steps < 1:
            raise BadInput(f"bad macro_steps {self.macro_steps}: must be at least 1")
        for name, value, lo, hi in (
            ("days", self.days, MIN_SIM_DAYS, MAX_SIM_DAYS),
            (
                "checkpoint interval (s)",
                self.checkpoint_interval_s,
                MIN_CHECKPOINT_INTERVAL_S,
                MAX_CHECKPOINT_INTERVAL_S,
            ),
            ("restart overhead (s)", self.restart_overhead_s, 0.0, MAX_RESTART_OVERHEAD_S),
            ("load per pod", self.load_per_pod, 0.0, MAX_LOAD_PER_POD),
            ("spare cubes", self.spare_cubes, 0, self.cubes_per_pod - 1),
        ):
            if not lo <= value <= hi:  # also refuses NaN
                raise BadInput(f"bad {name} {value!r}: must be a number from {lo:g} to {hi:g}")
        if not 0 <= self.seed <= MAX_SEED:
            raise BadInput(f"bad seed {self.seed}: must be from 0 to {MAX_SEED}")
        if self.static and self.generation is not None and self.cubes_per_pod != math.prod(STATIC_CUBE_GRID):
            raise BadInput(
                f"bad mode static: a static pod is a 4x4x4 grid of cubes, a {self.generation.name} pod has "
                f"{self.cubes_per_pod}"
            )

    @cached_property
    def profile(self) -> Profile | None:
        """The step-time model's hardware figures: the shipped TPU v4 profile with the generation's ICI link
        bandwidth, peak FLOP/s, HBM and DCN (`collectives.profile.for_generation`); None (the shipped profile
        itself) for the built-in TPU v4 pod."""
        if self.generation is None:
            return None
        from tpufleet.collectives.profile import default_profile, for_generation

        return for_generation(default_profile(), self.generation)

    @property
    def step_s(self) -> float:
        """Seconds of compute in one logged (macro) step: `macro_steps` a checkpoint interval, and more where
        that would make them longer than the default's (`MAX_LOGGED_STEP_S`)."""
        return self.checkpoint_interval_s / max(
            self.macro_steps, math.ceil(self.checkpoint_interval_s / MAX_LOGGED_STEP_S)
        )

    @property
    def static(self) -> bool:
        return self.mode == "static"

    @property
    def fault_tolerant_routing(self) -> bool:
        """Whether jobs that opt in have their traffic rerouted around a failed OCS or optical link."""
        return self.mode == "reconfigurable-ft"


# ---- schemas ------------------------------------------------------------------------------------------------
def _closed(required: list[str], properties: dict[str, Any]) -> dict[str, Any]:
    """The JSON Schema of an object that needs `required` and takes nothing but `properties`."""
    return {"type": "object", "required": required, "additionalProperties": False, "properties": properties}


_HOURS = {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_HOURS}
_AT_HOURS = {"type": "number", "minimum": 0, "maximum": MAX_HOURS}
_WEIGHT = {"type": "number", "minimum": 0, "maximum": MAX_WEIGHT}
_NAME = {"type": "string", "minLength": 1, "maxLength": 64}
_WEIGHTS = {"type": "object", "minProperties": 1, "maxProperties": 100, "additionalProperties": _WEIGHT}
_SHAPE_ENTRY = _closed(
    ["shape"],
    {
        "shape": {"type": "string", "maxLength": 64},
        "twisted": {"type": "boolean"},
        "weight": _WEIGHT,
        "model": STEP_MODEL_SCHEMA,
    },
)
_JOB_ENTRY = _closed(
    ["shape", "duration_hours"],
    {
        "id": {"type": "string", "minLength": 1, "maxLength": 256},
        "shape": {"type": "string", "maxLength": 64},
        "twisted": {"type": "boolean"},
        "duration_hours": _HOURS,
        "arrival_hours": _AT_HOURS,
        "phase": {"enum": list(PHASES)},
        "fault_tolerant": {"type": "boolean"},
        "priority_rank": {"type": "integer", "minimum": 0, "maximum": 99},
        "model": STEP_MODEL_SCHEMA,
        "slices": SLICES_SCHEMA,
        "elastic_min": SLICES_SCHEMA,
    },
)
WORKLOAD_SCHEMA = _closed(
    ["schema_version"],
    {
        "schema_version": {"const": 1},
        "arrival_rate_per_hour": {"type": "number", "minimum": 0, "maximum": MAX_ARRIVALS_PER_HOUR},
        "duration_hours": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "median": _HOURS,
                "sigma": {"type": "number", "minimum": 0, "maximum": MAX_SIGMA},
                "max": _HOURS,
            },
        },
        "shapes": {"type": "array", "items": _SHAPE_ENTRY, "maxItems": 1000},
        "phases": {**_WEIGHTS, "propertyNames": {"enum": list(PHASES)}},
        "frameworks": {**_WEIGHTS, "propertyNames": {"minLength": 1, "maxLength": 64}},
        "priorities": {"type": "array", "items": _NAME, "minItems": 1, "maxItems": 100},
        "priority_weights": {"type": "array", "items": _WEIGHT, "minItems": 1, "maxItems": 100},
        "ideal_step_fraction": {"type": "number", "minimum": 0.001, "maximum": 1},
        "checkpoint_write_s": {"type": "number", "minimum": 0, "maximum": MAX_CHECKPOINT_WRITE_S},
        "fault_tolerant_share": {"type": "number", "minimum": 0, "maximum": 1},
        "jobs": {"type": "array", "items": _JOB_ENTRY, "maxItems": MAX_LISTED_JOBS},
        "multislice": SECTION_SCHEMA,
    },
)
_REPAIR_HOURS = {
    "type": "object",
    "additionalProperties": False,
    "properties": {k: {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_REPAIR_HOURS} for k in FAULT_KINDS},
}
RATES_SCHEMA = _closed(
    ["schema_version"],
    {
        "schema_version": {"const": 1},
        **{
            key: {"type": "number", "minimum": 0, "maximum": MAX_RATE_PER_DAY}
            for key in RATE_FIELDS
            if key != "rerouted_slowdown"
        },
        "repair_hours": _REPAIR_HOURS,
        "rerouted_slowdown": {"type": "number", "minimum": 1, "maximum": MAX_SLOWDOWN},
    },
)
# The shipped file is every rate's default, so it must give every one.
SHIPPED_RATES_SCHEMA: dict[str, Any] = {
    **RATES_SCHEMA,
    "required": ["schema_version", *RATE_FIELDS, "repair_hours"],
    "properties": {**RATES_SCHEMA["properties"], "repair_hours": {**_REPAIR_HOURS, "required": list(FAULT_KINDS)}},
}


# ---- from documents to values ---------------------------------------------------------------------------
def generation_rates(shipped: Mapping[str, Any], generation: Generation | None) -> Mapping[str, Any]:
    """The defaults of a run on pods of `generation`: the shipped fault-rate file's mapping with the generation
    profile's fault rates and repair times (its ``faults`` section; figures inherited from TPU v4 say so in the
    profile); the step-time factor of a rerouted job without a step model stays the shipped file's. The shipped
    mapping itself for the built-in TPU v4 pod (None)."""
    if generation is None:
        return shipped
    return {**shipped, **asdict(generation.faults)}  # its fields are the fault-rate file's keys


def rates_from_doc(
    doc: Mapping[str, Any] | None, shipped: Mapping[str, Any], name: str = "fault-rate file"
) -> FaultRates:
    """Fault rates from a fault-rate file's mapping, already read (None: the shipped rates); a key it leaves out
    keeps the value of `shipped`, the shipped file's mapping (checked against SHIPPED_RATES_SCHEMA)."""
    if doc is None:
        doc = shipped
    else:
        check(RATES_SCHEMA, doc, name)
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
        _positive_total(path, "shapes", [w for _, w in shapes])
        return shapes
    return () if "jobs" in doc else None


def _no_empty_lists(path: Path, doc: Mapping[str, Any]) -> None:
    """Refuse `shapes: []` (it took the default shape mix) and `jobs: []` (it turned the random arrivals off)."""
    for key in ("shapes", "jobs"):
        if doc.get(key) == []:
            raise BadStateFile(str(path), key, [], f"an empty list: list at least one, or leave {key} out")


def _priorities(path: Path, doc: Mapping[str, Any]) -> tuple[tuple[str, ...], tuple[float, ...]] | None:
    """The priorities (highest first) and their weights; None if the file gives neither. Weights without the
    priorities they weigh are refused, not ignored."""
    if "priorities" not in doc:
        if "priority_weights" in doc:
            raise BadStateFile(
                str(path), "priority_weights", doc["priority_weights"], "given without the priorities they weigh"
            )
        return None
    names = tuple(doc["priorities"])
    twice = next((name for i, name in enumerate(names) if name in names[:i]), None)
    if twice is not None:  # two ranks of one name: the events could not tell them apart
        raise BadStateFile(str(path), "priorities", twice, "this priority is listed twice")
    weights = tuple(float(x) for x in doc.get("priority_weights", [1.0] * len(names)))
    if len(weights) != len(names):
        raise BadStateFile(str(path), "priority_weights", doc.get("priority_weights"), "needs one weight per priority")
    _positive_total(path, "priority_weights", weights)
    return names, weights


def _check_durations(path: Path, durations: Mapping[str, float]) -> None:
    """Refuse a maximum duration below the median (the file's `duration_hours`, or the default): most jobs
    would run the maximum (with sigma 0, every one)."""
    median = durations.get("median", Workload.duration_median_h)
    top = durations.get("max", Workload.duration_max_h)
    if top >= median:
        return
    if "max" in durations:
        said = "" if "median" in durations else ", the default"
        raise BadStateFile(str(path), "duration_hours.max", top, f"below the median ({median:g} h{said})")
    raise BadStateFile(str(path), "duration_hours.median", median, f"above the maximum ({top:g} h, the default)")


def _positive_total(path: Path, where: str, weights: Sequence[float]) -> None:
    """A weighted mix must be able to draw something."""
    if not sum(weights) > 0:
        raise BadStateFile(str(path), where, list(weights)[:8], "the weights add up to zero")


def _job_specs(path: Path, doc: Mapping[str, Any], priorities: int, table: RerouteCosts | None) -> tuple[JobSpec, ...]:
    specs = []
    ids: set[str] = set()
    for i, job in enumerate(doc.get("jobs", [])):
        if "id" in job:  # a job's events are keyed by its id: two jobs must not share one
            if job["id"] in ids:
                raise BadStateFile(str(path), f"jobs.{i}.id", job["id"], "another listed job has this id")
            if GENERATED_ID.fullmatch(job["id"]):
                raise BadStateFile(str(path), f"jobs.{i}.id", job["id"], "ids job<digits> are for random arrivals")
            if CONTROL.search(job["id"]):  # the simulator keys a multislice job's slices by id + "\x1f" + number
                raise BadStateFile(str(path), f"jobs.{i}.id", job["id"], "holds a control character")
            ids.add(job["id"])
        rank = int(job.get("priority_rank", 0))
        if rank >= priorities:
            raise BadStateFile(str(path), f"jobs.{i}.priority_rank", rank, f"there are only {priorities} priorities")
        shape = _shape_at(path, f"jobs.{i}.shape", job["shape"], job.get("twisted", False))
        slices, elastic_min = check_listed(path, f"jobs.{i}", job)
        if "model" in job and job.get("phase", "training") != "training":
            raise BadStateFile(str(path), f"jobs.{i}.model", job["phase"], "a step model is for training jobs")
        specs.append(
            JobSpec(
                shape,
                float(job["duration_hours"]),
                float(job.get("arrival_hours", 0.0)),
                id=job.get("id"),
                phase=job.get("phase", "training" if "model" in job else None),  # a model means training
                fault_tolerant=job.get("fault_tolerant", True),
                priority_rank=rank,
                model=step_model_at(path, f"jobs.{i}.model", job["model"], shape, table) if "model" in job else None,
                slices=slices,
                elastic_min=elastic_min,
            )
        )
    return tuple(specs)


def workload_from_doc(doc: Mapping[str, Any], path: Path | str, table: RerouteCosts | None = None) -> Workload:
    """The workload of a workload file's mapping; `path` names it in errors. `table`: the shipped reroute costs,
    which give the step models' healthy all-reduce without modelling it (None: modelled)."""
    path = Path(path)
    check(WORKLOAD_SCHEMA, doc, str(path))
    _no_empty_lists(path, doc)
    given: dict[str, Any] = {}
    if "arrival_rate_per_hour" in doc or "jobs" in doc:
        given["arrival_rate_per_hour"] = float(doc.get("arrival_rate_per_hour", 0.0))
    for key, name in (("median", "duration_median_h"), ("sigma", "duration_sigma"), ("max", "duration_max_h")):
        if key in doc.get("duration_hours", {}):
            given[name] = float(doc["duration_hours"][key])
    _check_durations(path, doc.get("duration_hours", {}))
    shapes = _shape_mix(path, doc)
    if shapes is not None:
        given["shapes"] = shapes
    for key in ("phases", "frameworks"):
        if key in doc:
            given[key] = {name: float(weight) for name, weight in doc[key].items()}
            _positive_total(path, key, list(given[key].values()))
    priorities = _priorities(path, doc)
    if priorities is not None:
        given["priorities"], given["priority_weights"] = priorities
    for key in ("ideal_step_fraction", "checkpoint_write_s", "fault_tolerant_share"):
        if key in doc:
            given[key] = float(doc[key])
    given["jobs"] = _job_specs(path, doc, len(given.get("priorities", Workload.priorities)), table)
    given["models"] = step_models(path, doc, shapes or (), table)
    if "multislice" in doc:
        given["multislice"] = mix_from_doc(path, doc["multislice"])
    return Workload(**given)
