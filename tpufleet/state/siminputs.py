"""A simulation's input files, read: workloads, fault rates and the files shipped in `tpufleet/data/`.

Each file goes through the bounded reader (`inputfiles.load_yaml`: at most 1 MiB of UTF-8, no anchors or
aliases, at most 64 levels of nesting, no NaN or infinite numbers) and is checked against its schema in
`tpufleet.simulation.inputs`, which turns the mappings into typed values. The shipped `fault-rates.yaml` is every
rate's default (a rates file that leaves a key out takes the shipped value), read once per process; on pods of
a generation, its profile's fault rates and repair times take the place of the file's (`generation_rates`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tpufleet.doccheck import Schema, check
from tpufleet.generations import Generation
from tpufleet.simulation.inputs import (
    RATES_SCHEMA,
    SHIPPED_RATES_SCHEMA,
    WORKLOAD_SCHEMA,
    FaultRates,
    Workload,
    generation_rates,
    rates_from_doc,
    workload_from_doc,
)
from tpufleet.state.inputfiles import load_yaml
from tpufleet.state.reroutecosts import shipped_costs

__all__ = [
    "SHIPPED_RATES",
    "SHIPPED_WORKLOAD",
    "default_rates",
    "load_rates",
    "load_workload",
    "rates_by_generation",
    "read_rates",
    "read_workload",
    "read_yaml",
    "shipped_inputs",
    "shipped_rates",
]

SHIPPED = Path(__file__).resolve().parent.parent / "data"
SHIPPED_WORKLOAD = SHIPPED / "workload.yaml"
SHIPPED_RATES = SHIPPED / "fault-rates.yaml"


def read_yaml(path: Path, schema: Schema, what: str = "YAML file") -> dict[str, Any]:
    """The file's mapping, checked against the schema; BadStateFile naming file, field and value if not."""
    data = load_yaml(Path(path), what)
    check(schema, data, str(path))  # the validator is compiled once per schema object
    if not isinstance(data, dict):
        raise AssertionError("the schema admits only a mapping")
    return data


@functools.lru_cache(maxsize=1)
def shipped_rates() -> dict[str, Any]:
    """The shipped fault-rate file's mapping: every rate's default."""
    return read_yaml(SHIPPED_RATES, SHIPPED_RATES_SCHEMA, "fault-rate file")


def shipped_inputs() -> dict[str, Any]:
    """What a sweep's runs take from the shipped files, as plain data a worker anywhere can use: the workload's
    mapping and name, the fault rates' mapping and the reroute-cost table."""
    return {
        "workload": read_workload(None),
        "workload_file": str(SHIPPED_WORKLOAD),
        "rates": shipped_rates(),
        "reroute_costs": dict(shipped_costs()),
    }


def default_rates() -> FaultRates:
    """The shipped fault rates (tpufleet/data/fault-rates.yaml)."""
    return load_rates(None)


def read_rates(path: Path) -> dict[str, Any]:
    """A fault-rate file's mapping, checked against the schema."""
    return read_yaml(path, RATES_SCHEMA, "fault-rate file")


def load_rates(path: Path | None, generation: Generation | None = None) -> FaultRates:
    """Fault rates from a file (None: the shipped one); a key it leaves out keeps the shipped file's value, or on
    pods of `generation` the value of its profile."""
    return rates_by_generation(path)(generation)


def rates_by_generation(path: Path | None) -> Callable[[Generation | None], FaultRates]:
    """The fault rates of a file (None: the shipped one), read and checked now, on pods of a generation: a key the
    file leaves out (every key, for the shipped one) takes that generation profile's value, the shipped file's on
    the built-in TPU v4 pod (None). For commands whose pods may be of different generations."""
    doc = read_rates(Path(path)) if path else None
    return lambda generation: rates_from_doc(doc, generation_rates(shipped_rates(), generation))


def load_workload(path: Path | None) -> Workload:
    """The workload of a file (None: the shipped one)."""
    path = Path(path) if path else SHIPPED_WORKLOAD
    return workload_from_doc(read_yaml(path, WORKLOAD_SCHEMA, "workload file"), path, shipped_costs())


def read_workload(path: Path | None) -> dict[str, Any]:
    """A workload file's mapping, checked against the schema and built once (so it can be sent elsewhere)."""
    doc = read_yaml(Path(path) if path else SHIPPED_WORKLOAD, WORKLOAD_SCHEMA, "workload file")
    workload_from_doc(doc, path or SHIPPED_WORKLOAD, shipped_costs())
    return doc
