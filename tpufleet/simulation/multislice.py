"""Multislice jobs in the simulation: N identical slices joined by the data-centre network (Pathways' islands,
Cloud TPU multislice), gang-scheduled, data parallel.

A workload's `multislice` section makes a share of the random arrivals multislice (the drawn shape is the shape
of each slice, the slice count drawn from its own mix); listed jobs may say `slices` and `elastic_min`. The job
is placed only when every slice fits (in any pods, or spread over pods: each slice to the pod holding fewest of
its slices). A fault that stops one slice stops the whole job, unless the job is elastic and keeps its minimum:
then it runs on, a step of the same global batch taking total/active as long, and the scheduler puts the missing
slice back as soon as one fits (ml-goodput-measurement's elastic slice counts record both). A network fault on a
slice slows the whole job by that slice's modelled factor (the slices run in lockstep). A training job with a
step model adds the DCN all-reduce of its gradients between slices (`tpufleet.collectives.dcn`) to its ideal step.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tpufleet.shapes import Shape

if TYPE_CHECKING:
    from tpufleet.collectives.profile import Profile

MAX_SLICES = 64
SECTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["share", "slices"],
    "additionalProperties": False,
    "properties": {
        "share": {"type": "number", "minimum": 0, "maximum": 1},
        "slices": {
            "type": "object",
            "minProperties": 1,
            "maxProperties": MAX_SLICES,
            "propertyNames": {"pattern": "^[0-9]{1,2}$"},
            "additionalProperties": {"type": "number", "minimum": 0, "maximum": 1_000_000},
        },
        "elastic_share": {"type": "number", "minimum": 0, "maximum": 1},
        "elastic_min_fraction": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
        "spread": {"type": "boolean"},
    },
}
SLICES_SCHEMA = {"type": "integer", "minimum": 1, "maximum": MAX_SLICES}


@dataclass(frozen=True)
class MultisliceMix:
    """What share of random arrivals are multislice, their slice counts (weighted), the elastic share and
    minimum, and whether their slices are spread over pods."""

    share: float
    counts: tuple[tuple[int, float], ...]  # (slices, weight)
    elastic_share: float = 0.0
    elastic_min_fraction: float = 0.75  # an elastic job needs ceil(this x slices) slices
    spread: bool = True
    max_cubes: int | None = None  # the fleet's cubes (set for a run): counts that could never fit are not drawn

    def counts_for(self, shape: Shape) -> tuple[tuple[int, float], ...]:
        """The slice counts (and weights) a job of `shape` may draw: those whose slices the fleet can hold."""
        if self.max_cubes is None:
            return self.counts
        return tuple((n, w) for n, w in self.counts if n * shape.cubes <= self.max_cubes)

    def elastic_min(self, slices: int) -> int:
        import math

        return max(1, min(slices, math.ceil(self.elastic_min_fraction * slices - 1e-9)))


def mix_from_doc(path: Path | str, doc: Mapping[str, Any]) -> MultisliceMix:
    """The workload's `multislice` section (already checked against SECTION_SCHEMA); BadStateFile naming the
    field for a slice count of 0 or over MAX_SLICES, or weights that add up to zero."""
    from tpufleet.errors import BadStateFile

    counts: dict[int, tuple[str, float]] = {}  # slice count -> (its key, its weight)
    for key, weight in doc["slices"].items():
        n = int(key)
        if not 1 <= n <= MAX_SLICES:
            raise BadStateFile(str(path), f"multislice.slices.{key}", key, f"a slice count is 1 to {MAX_SLICES}")
        if n in counts:  # "2" and "02": one count, whose weight would be the last one's
            raise BadStateFile(
                str(path),
                f"multislice.slices.{key}",
                key,
                f"the slice count {n} is given twice (also as {counts[n][0]})",
            )
        counts[n] = (str(key), float(weight))
    if not sum(w for _, w in counts.values()) > 0:
        raise BadStateFile(str(path), "multislice.slices", doc["slices"], "the weights add up to zero")
    return MultisliceMix(
        float(doc["share"]),
        tuple(sorted((n, w) for n, (_, w) in counts.items())),
        float(doc.get("elastic_share", 0.0)),
        float(doc.get("elastic_min_fraction", 0.75)),
        bool(doc.get("spread", True)),
    )


def check_listed(path: Path | str, where: str, job: Mapping[str, Any]) -> tuple[int, int | None]:
    """A listed job's `slices` and `elastic_min`; BadStateFile naming the field when the minimum is above the
    slice count or given without slices."""
    from tpufleet.errors import BadStateFile

    slices = int(job.get("slices", 1))
    if "elastic_min" not in job:
        return slices, None
    minimum = int(job["elastic_min"])
    if slices < 2:
        raise BadStateFile(str(path), f"{where}.elastic_min", minimum, "applies to a job of 2 or more slices")
    if minimum > slices:
        raise BadStateFile(str(path), f"{where}.elastic_min", minimum, f"above the job's {slices} slice(s)")
    return slices, minimum


def dcn_seconds(
    shape: Shape,
    slices: int,
    gradient_bytes: float,
    across_pods: bool,
    profile: Profile | None = None,
    chips_per_host: int | None = None,
) -> float:
    """The DCN all-reduce of `gradient_bytes` per chip between `slices` slices of `shape` (0 for one slice), at
    the DCN bandwidth per host of `profile` (None: the shipped TPU v4 profile), over the slice's hosts of
    `chips_per_host` chips (None: TPU v4's 4)."""
    if slices < 2 or gradient_bytes <= 0:
        return 0.0
    from tpufleet.collectives.dcn import dcn_all_reduce, hosts
    from tpufleet.collectives.profile import default_profile

    dcn = (profile or default_profile()).dcn_link()
    count = hosts(shape) if chips_per_host is None else max(1, shape.chips // chips_per_host)
    return dcn_all_reduce(gradient_bytes, slices, count, dcn, across_pods).seconds
