"""How much slower a job runs on tables routed around network faults, from the collective cost model.

A job that declares its step (`StepModel`: model FLOPs per step, gradient bytes per chip, its measured step time
on a healthy slice) spends longer in its gradient all-reduce while rerouted; the rest of the step is unchanged:

    slowdown = 1 + (all-reduce rerouted - all-reduce healthy) / step_time_s

with both all-reduce times from `tpufleet collective`'s model (the fastest algorithm that runs) on the job's own
slice shape and faults. A single OCS or optical-link fault is looked up in the shipped table of representatives
(`tpufleet.collectives.reroute_table`: one fault per shape, kind and dimension stands for the others, which the
model puts within about 12% of it); a shape the table lacks or another hardware profile is modelled once per
(shape, kind, dimension) and remembered. Several faults at once add what each adds on its own (see
`allreduce_seconds`). A job without a step model keeps the
fault-rate file's constant `rerouted_slowdown`. Infinite when the faults leave some pair of chips unroutable.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from tpufleet.collectives.profile import Profile, default_profile
from tpufleet.constants import DAY
from tpufleet.ids import LinkId, OcsId
from tpufleet.shapes import Shape

TABLE = Path(__file__).resolve().parents[1] / "data" / "reroute-costs.json"

NetworkFault = LinkId | OcsId


@dataclass(frozen=True)
class StepModel:
    """What a workload declares about a training job's step instead of a fixed ideal fraction."""

    model_flops_per_step: float  # all chips together
    gradient_bytes: float  # per chip, all-reduced every step
    step_time_s: float  # measured on a healthy slice

    def ideal_step_s(self, shape: Shape, profile: Profile | None = None) -> float:
        """Compute at every chip's peak plus the modelled all-reduce (`tpufleet.collectives.cost`)."""
        compute = self.model_flops_per_step / (shape.chips * (profile or default_profile()).peak_flops)
        return compute + allreduce_seconds(shape, self.gradient_bytes, (), profile)


MAX_MODEL_FLOPS = 1e27  # per step, all chips: far beyond any model trained today
MAX_STEP_S = float(DAY)
STEP_MODEL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["model_flops_per_step", "gradient_bytes", "step_time_s"],
    "additionalProperties": False,
    "properties": {
        "model_flops_per_step": {"type": "number", "minimum": 0, "maximum": MAX_MODEL_FLOPS},
        "gradient_bytes": {"type": "number", "minimum": 0, "maximum": 2**50},
        "step_time_s": {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_STEP_S},
    },
}


def step_model_at(path: Path | str, where: str, doc: Mapping[str, Any], shape: Shape) -> StepModel:
    """The step model of a workload entry (already checked against STEP_MODEL_SCHEMA); BadStateFile naming the
    field when the model's ideal step is longer than the step time it declares (nothing could reach it)."""
    from tpufleet.errors import BadStateFile

    model = StepModel(float(doc["model_flops_per_step"]), float(doc["gradient_bytes"]), float(doc["step_time_s"]))
    ideal = model.ideal_step_s(shape)
    if ideal > model.step_time_s:
        raise BadStateFile(
            str(path),
            f"{where}.step_time_s",
            model.step_time_s,
            f"shorter than the model's ideal step on {shape} ({ideal:.6g} s: compute at peak plus the all-reduce)",
        )
    return model


def step_models(path: Path, doc: Mapping[str, Any], shapes: Sequence[tuple[Shape, float]]) -> dict[Shape, StepModel]:
    """The step model declared for each shape of the mix; one shape declared twice must declare it alike."""
    from tpufleet.errors import BadStateFile

    models: dict[Shape, StepModel] = {}
    for i, (item, (shape, _weight)) in enumerate(zip(doc.get("shapes", []), shapes, strict=True)):
        if "model" not in item:
            continue
        model = step_model_at(path, f"shapes.{i}.model", item["model"], shape)
        if models.setdefault(shape, model) != model:
            raise BadStateFile(
                str(path), f"shapes.{i}.model", item["model"], f"another entry of {shape} declares another"
            )
    return models


@cache
def _shipped() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(TABLE.read_text())
    return doc


def _table_terms(shape: Shape, pattern: str, profile: Profile) -> tuple[tuple[float, float], ...] | None:
    """The shipped terms, when the table was made for this shape under these profile figures."""
    from tpufleet.collectives.reroute_table import profile_key, shape_key, terms_of

    doc = _shipped()
    entry = doc["shapes"].get(shape_key(shape))
    if entry is None or doc["profile"] != profile_key(profile) or pattern not in entry:
        return None
    return terms_of(entry[pattern])


def _single_terms(shape: Shape, pattern: str, profile: Profile) -> tuple[tuple[float, float], ...]:
    """The terms of 'healthy' or of one fault's representative ('ocs:x', 'link:y'...): from the shipped table,
    else modelled once and remembered by `collective_terms`."""
    from tpufleet.collectives.cost import collective_terms
    from tpufleet.collectives.reroute_table import representative

    terms = _table_terms(shape, pattern, profile)
    if terms is not None:
        return terms
    alive = None if pattern == "healthy" else representative(shape, *pattern.split(":"))
    return collective_terms(shape, "all-reduce", profile, alive)


def allreduce_seconds(
    shape: Shape, nbytes: float, faults: Sequence[NetworkFault], profile: Profile | None = None
) -> float:
    """The modelled all-reduce of `nbytes` per chip on the slice with `faults` open. One fault: its kind and
    dimension's representative. Several: the healthy time plus the sum of what each adds on its own (routing
    each compound pattern exactly costs 2-20 s on the larger slices, and patterns seldom repeat, so a run with
    many overlapping faults would take hours)."""
    from tpufleet.collectives.cost import time_from_terms

    profile = profile or default_profile()
    healthy = time_from_terms(_single_terms(shape, "healthy", profile), nbytes)
    extra = sum(time_from_terms(_single_terms(shape, f"{f.kind}:{f.dim}", profile), nbytes) - healthy for f in faults)
    return healthy + extra


def slowdown(shape: Shape, model: StepModel, faults: Sequence[NetworkFault], profile: Profile | None = None) -> float:
    """The job's step-time factor while rerouted around `faults` (1 with none; inf if some pair is unroutable)."""
    if not faults or not shape.wraps:
        return 1.0
    before = allreduce_seconds(shape, model.gradient_bytes, (), profile)
    after = allreduce_seconds(shape, model.gradient_bytes, faults, profile)
    return max(1.0, 1.0 + (after - before) / model.step_time_s)
