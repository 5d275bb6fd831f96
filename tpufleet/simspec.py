"""Reading the workload and fault-rate files of `simulate-fleet` (YAML, validated, errors name file and field)."""

from __future__ import annotations

from pathlib import Path

from tpufleet.errors import BadInput, BadStateFile
from tpufleet.simulation import Rates, Workload

DEFAULTS = Path(__file__).resolve().parent / "data"  # also linked from fixtures/
_POS = {"type": "number", "exclusiveMinimum": 0}
_WEIGHTS = {"type": "object", "minProperties": 1, "additionalProperties": {"type": "number", "minimum": 0}}

WORKLOAD_SCHEMA = {
    "type": "object",
    "required": ["schema_version"],
    "additionalProperties": False,
    "properties": {
        "schema_version": {"const": 1},
        "arrival_rate_per_hour": {"type": "number", "minimum": 0},
        "duration_hours": {
            "type": "object", "additionalProperties": False,
            "properties": {"median": _POS, "sigma": {"type": "number", "minimum": 0}, "max": _POS},
        },
        "shapes": {"type": "array", "items": {
            "type": "object", "required": ["shape"], "additionalProperties": False,
            "properties": {"shape": {"type": "string"}, "twisted": {"type": "boolean"}, "weight": {"type": "number", "minimum": 0}},
        }},
        "phases": {**_WEIGHTS, "propertyNames": {"enum": ["training", "serving", "bulk_inference"]}},
        "frameworks": _WEIGHTS,
        "priorities": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "priority_weights": {"type": "array", "items": {"type": "number", "minimum": 0}, "minItems": 1},
        "ideal_step_fraction": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
        "checkpoint_write_s": {"type": "number", "minimum": 0},
        "fault_tolerant_share": {"type": "number", "minimum": 0, "maximum": 1},
        "jobs": {"type": "array", "items": {
            "type": "object", "required": ["shape", "duration_hours"], "additionalProperties": False,
            "properties": {"id": {"type": "string"}, "shape": {"type": "string"}, "twisted": {"type": "boolean"},
                           "duration_hours": _POS, "arrival_hours": {"type": "number", "minimum": 0},
                           "phase": {"enum": ["training", "serving", "bulk_inference"]},
                           "fault_tolerant": {"type": "boolean"}, "priority_rank": {"type": "integer", "minimum": 0}},
        }},
    },
}

RATES_SCHEMA = {
    "type": "object",
    "required": ["schema_version"],
    "additionalProperties": False,
    "properties": {
        "schema_version": {"const": 1},
        "host_per_day": {"type": "number", "minimum": 0},
        "link_per_day": {"type": "number", "minimum": 0},
        "ocs_per_day": {"type": "number", "minimum": 0},
        "drain_per_day": {"type": "number", "minimum": 0},
        "repair_hours": {"type": "object", "additionalProperties": False,
                         "properties": {"host": _POS, "link": _POS, "ocs": _POS, "drain": _POS}},
        "rerouted_slowdown": {"type": "number", "minimum": 1},
    },
}


def _load(path: Path, schema: dict) -> dict:
    import yaml

    from tpufleet.state.schema import check

    try:
        data = yaml.safe_load(Path(path).read_text())
    except OSError as exc:
        raise BadStateFile(str(path), "", None, f"cannot be read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise BadStateFile(str(path), "", None, f"not valid YAML ({str(exc).splitlines()[0]})") from None
    check(schema, data, str(path))
    return data


def load_workload(path: Path | None) -> Workload:
    from tpufleet.shapes import allocatable, parse_shape

    path = Path(path) if path else DEFAULTS / "workload.yaml"
    d = _load(path, WORKLOAD_SCHEMA)
    w = Workload()
    w.arrival_rate_per_hour = d.get("arrival_rate_per_hour", 0.0 if "jobs" in d else w.arrival_rate_per_hour)
    dur = d.get("duration_hours", {})
    w.duration_median_h = dur.get("median", w.duration_median_h)
    w.duration_sigma = dur.get("sigma", w.duration_sigma)
    w.duration_max_h = dur.get("max", w.duration_max_h)
    shapes = []
    for i, s in enumerate(d.get("shapes", [])):
        try:
            shape = parse_shape(s["shape"], s.get("twisted", False))
        except BadInput as exc:
            raise BadStateFile(str(path), f"shapes.{i}.shape", s["shape"], str(exc)) from None
        if not allocatable(shape):
            raise BadStateFile(str(path), f"shapes.{i}.shape", s["shape"], "not an allocatable sub-cube shape")
        shapes.append((shape, float(s.get("weight", 1.0))))
    if shapes:
        w.shapes = shapes
    elif "jobs" in d:
        w.shapes = []
    for key in ("phases", "frameworks"):
        if key in d:
            setattr(w, key, d[key])
    if "priorities" in d:
        w.priorities = d["priorities"]
        w.priority_weights = d.get("priority_weights", [1.0] * len(w.priorities))
        if len(w.priority_weights) != len(w.priorities):
            raise BadStateFile(str(path), "priority_weights", d.get("priority_weights"), "needs one weight per priority")
    for key in ("ideal_step_fraction", "checkpoint_write_s", "fault_tolerant_share"):
        if key in d:
            setattr(w, key, float(d[key]))
    for i, job in enumerate(d.get("jobs", [])):
        try:
            parse_shape(job["shape"], job.get("twisted", False))
        except BadInput as exc:
            raise BadStateFile(str(path), f"jobs.{i}.shape", job["shape"], str(exc)) from None
    w.jobs = d.get("jobs", [])
    return w


def load_rates(path: Path | None) -> Rates:
    path = Path(path) if path else DEFAULTS / "fault-rates.yaml"
    d = _load(path, RATES_SCHEMA)
    r = Rates()
    for key in ("host_per_day", "link_per_day", "ocs_per_day", "drain_per_day", "rerouted_slowdown"):
        if key in d:
            setattr(r, key, float(d[key]))
    r.repair_hours = {**r.repair_hours, **d.get("repair_hours", {})}
    return r
