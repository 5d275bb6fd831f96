"""What a sweep writes: the JSON document (also the -o json output), the CSV rows and the plot.

The plot has one panel per swept parameter: the spec's figure (mean, with its 95% interval as a band) against
that parameter, one line per combination of the other swept parameters. When the spec names a shape
(`plot.young_daly_for`), the checkpoint-interval panel marks the Young and Daly intervals of a job of that
shape: sqrt(2 w M) and Daly's refinement, with w the blocking checkpoint write and M the job's mean time between
machine failures (machines x host failure rate x fault_scale).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from tpufleet.constants import DAY
from tpufleet.sweep.driver import Outcome
from tpufleet.sweep.spec import SweepSpec

HEADLINE = ("sg", "rg", "pg", "mpg", "jobs_finished", "disruptions")


def document(outcome: Outcome) -> dict[str, Any]:
    """The sweep's JSON: the spec in brief, every finished point, every failed one, and counts."""
    spec = outcome.spec
    return {
        "spec": spec.path,
        "name": spec.name,
        "simulation": spec.simulation,
        "seed": spec.base_seed,
        "seeds": list(spec.seeds),
        "swept": list(spec.swept),
        "metric": spec.metric,
        "points_total": len(spec.points),
        "points_finished": len(outcome.points),
        "points_failed": len(outcome.failed),
        "points": [outcome.points[i] for i in sorted(outcome.points)],
        "failed": [outcome.failed[i] for i in sorted(outcome.failed)],
    }


def label(value: Any) -> str:
    """A parameter value as a table cell, legend entry or CSV field."""
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return f"{value:g}" if isinstance(value, float) else str(value)


def _order(name: str) -> tuple[int, str]:
    """The headline figures first, in their order, then the rest by name."""
    return (HEADLINE.index(name) if name in HEADLINE else len(HEADLINE), name)


def rows(outcome: Outcome) -> list[dict[str, Any]]:
    """One flat row per finished point: its swept parameters, then mean, low and high of every figure."""
    spec = outcome.spec
    names = sorted({n for p in outcome.points.values() for n in p["metrics"]}, key=_order)
    out = []
    for index in sorted(outcome.points):
        point = outcome.points[index]
        row: dict[str, Any] = {"point": index}
        row.update({name: label(point["params"][name]) for name in spec.swept})
        for name in names:
            figure = point["metrics"].get(name, {})
            for part in ("mean", "low", "high"):
                row[f"{name}_{part}"] = figure.get(part)
        out.append(row)
    return out


def young_daly_minutes(spec: SweepSpec, params: Mapping[str, Any]) -> tuple[float, float] | None:
    """(Young, Daly) checkpoint intervals in minutes for a job of the spec's `young_daly_for` shape."""
    from tpufleet.shapes import parse_shape
    from tpufleet.sweep.runs import fleet_inputs

    if spec.young_daly_for is None or spec.simulation != "fleet":
        return None
    words = spec.young_daly_for.split()
    machines = parse_shape(words[0], twisted=words[1:] == ["twisted"]).machines
    workload, rates, _ = fleet_inputs(params, spec.inputs, 0, spec.shipped)
    if rates.host_per_day <= 0:
        return None
    mtbf = DAY / (machines * rates.host_per_day)
    w = workload.checkpoint_write_s
    young = math.sqrt(2 * w * mtbf)
    daly = young * (1 + math.sqrt(w / (2 * mtbf)) / 3 + (w / (2 * mtbf)) / 9) - w
    return young / 60.0, daly / 60.0
