"""The parameters a sweep may vary, per simulation, and the JSON Schema each value must meet.

Fleet parameters are those of `simulate-fleet` (times in minutes, as on its command line); availability
parameters those of `simulate-availability`. `workload` and `fault_rates` name YAML files (relative to the
spec's directory): the sweep reads them once, before any work, and sends their contents to the workers.
`generation` names a shipped generation (tpu-v4, tpu-v5p, tpu7x; a point without one has the built-in TPU v4
pod): its pod size bounds `spare_cubes` and `cubes`, its shape rule the shapes, its profile the fault rates a
rates file leaves out (the sweep reads the profile once and sends it along, as the input files).
"""

from __future__ import annotations

from typing import Any, Literal

from tpufleet.constants import MAX_SIM_DAYS, MIN_SIM_DAYS
from tpufleet.generations import MAX_POD_CUBES, NAME_PATTERN
from tpufleet.simulation.inputs import (
    FAULT_KINDS,
    MAX_ARRIVALS_PER_HOUR,
    MAX_CHECKPOINT_INTERVAL_S,
    MAX_LOAD_PER_POD,
    MAX_RESTART_OVERHEAD_S,
    MAX_WEIGHT,
    MODES,
)
from tpufleet.simulation.policy import SCHEDULER_POLICIES

Simulation = Literal["fleet", "availability"]
SIMULATIONS: tuple[Simulation, ...] = ("fleet", "availability")
FILE_PARAMS = ("workload", "fault_rates")  # values are file names, read by the driver
MAX_FAULT_FACTOR = 1000.0
MAX_SWEEP_PODS = 16  # pods of a sweep point's fleet (each point is simulated many times), not the fleet's MAX_PODS
MAX_TRIALS = 1_000_000

_NUMBER = {"type": "number"}
_FACTOR = {**_NUMBER, "minimum": 0, "maximum": MAX_FAULT_FACTOR}
_FILE = {"type": "string", "minLength": 1, "maxLength": 4096}
_SIZE = {"type": "integer", "minimum": 1, "maximum": MAX_POD_CUBES}  # at most the point's pod (`runs.pod_cubes`)
_GENERATION = {"type": "string", "pattern": NAME_PATTERN}

FLEET: dict[str, dict[str, Any]] = {
    "days": {**_NUMBER, "minimum": MIN_SIM_DAYS, "maximum": MAX_SIM_DAYS},
    "pods": {"type": "integer", "minimum": 1, "maximum": MAX_SWEEP_PODS},
    "mode": {"enum": list(MODES)},
    "scheduler": {"enum": list(SCHEDULER_POLICIES)},
    "checkpoint_interval_min": {**_NUMBER, "minimum": 1, "maximum": MAX_CHECKPOINT_INTERVAL_S / 60},
    "restart_overhead_min": {**_NUMBER, "minimum": 0, "maximum": MAX_RESTART_OVERHEAD_S / 60},
    "load_per_pod": {**_NUMBER, "minimum": 0, "maximum": MAX_LOAD_PER_POD},
    "arrival_rate_per_hour": {**_NUMBER, "minimum": 0, "maximum": MAX_ARRIVALS_PER_HOUR},
    "size_mix": {
        "type": "object",
        "minProperties": 1,
        "maxProperties": 100,
        "propertyNames": {"maxLength": 64},
        "additionalProperties": {**_NUMBER, "minimum": 0, "maximum": MAX_WEIGHT},
    },
    "spare_cubes": {"type": "integer", "minimum": 0, "maximum": MAX_POD_CUBES - 1},  # below the pod's (`Options`)
    "fault_scale": {
        "anyOf": [
            _FACTOR,
            {
                "type": "object",
                "minProperties": 1,
                "additionalProperties": False,
                "properties": {kind: _FACTOR for kind in FAULT_KINDS},
            },
        ]
    },
    "workload": _FILE,
    "fault_rates": _FILE,
    "generation": _GENERATION,
}
AVAILABILITY: dict[str, dict[str, Any]] = {
    "host_availability": {**_NUMBER, "minimum": 0, "maximum": 1},
    "ocs_availability": {**_NUMBER, "minimum": 0, "maximum": 1},
    "cubes": {
        "anyOf": [
            _SIZE,
            {"type": "array", "items": _SIZE, "minItems": 1, "maxItems": MAX_POD_CUBES, "uniqueItems": True},
        ]
    },
    "trials": {"type": "integer", "minimum": 1, "maximum": MAX_TRIALS},
    "generation": _GENERATION,
}
PARAMS: dict[Simulation, dict[str, dict[str, Any]]] = {"fleet": FLEET, "availability": AVAILABILITY}


def canonical(name: str, value: Any) -> Any:
    """A checked value as the runs read it: an availability point's slice sizes in ascending order. A run
    simulates its sizes as a set (`simulate-availability --cubes 50,8` runs 8 and 50), so `[50, 8]` and `[8, 50]`
    are one point, refused when given twice, never run twice under two resume files.

    >>> canonical("cubes", [50, 8]), canonical("cubes", 8), canonical("days", 3)
    ([8, 50], 8, 3)
    """
    return sorted(value) if name == "cubes" and isinstance(value, list) else value


# What a point does not say.
DEFAULTS: dict[Simulation, dict[str, Any]] = {
    "fleet": {
        "days": 30.0,
        "pods": 1,
        "mode": "reconfigurable-ft",
        "checkpoint_interval_min": 60.0,
        "restart_overhead_min": 10.0,
        "load_per_pod": 1.0,
        "spare_cubes": 0,
        "scheduler": "priority",
    },
    "availability": {
        "host_availability": 0.99,
        "ocs_availability": 0.999,
        "cubes": [1, 8, 16, 32, 50, 64],
        "trials": 20000,
    },
}
# The figure plotted when the spec does not name one: MPG, or the availability of a slice of 50 cubes with
# fault-tolerant routing (the operating point of Fig. 1 of "Resiliency at Scale") when the sweep has that size.
DEFAULT_METRIC: dict[Simulation, str] = {"fleet": "mpg", "availability": "reconfigurable_ft.50"}
DEFAULT_CUBES = 50


def default_metric(simulation: Simulation, sizes_per_point: list[set[int]]) -> str:
    """The figure plotted when the spec names none. An availability sweep plots reconfigurable_ft.K for K = 50
    when every point simulates 50 cubes, else the largest size every point simulates, else the largest any
    point simulates (`sizes_per_point`: the sizes of each point).

    >>> default_metric("availability", [{8, 64}, {8, 16}])
    'reconfigurable_ft.8'
    """
    if simulation == "fleet":
        return DEFAULT_METRIC["fleet"]
    common = set.intersection(*sizes_per_point) if sizes_per_point else set()
    if DEFAULT_CUBES in common:
        return DEFAULT_METRIC["availability"]
    size = max(common) if common else max(set().union(*sizes_per_point))
    return f"reconfigurable_ft.{size}"
