"""How much slower a job runs on tables routed around network faults, from the collective cost model.

A job that declares its step (`StepModel`: model FLOPs per step, gradient bytes per chip, its measured step time
on a healthy slice) spends longer in its gradient all-reduce while rerouted; the rest of the step is unchanged:

    slowdown = 1 + (all-reduce rerouted - all-reduce healthy) / step_time_s

with both all-reduce times from `tpufleet collective`'s model (the fastest algorithm that runs) on the job's own
slice shape and faults. A single OCS or optical-link fault is looked up in the shipped table of representatives
(`tpufleet.collectives.reroute_table`: one fault per shape, kind and dimension stands for the others, which the
model puts within about 12% of it); a shape the table lacks, another hardware profile (another generation's) or
no table at all is modelled once per (shape, kind, dimension) and remembered. The table is handed in (`table`,
read by `tpufleet.state.reroutecosts`): nothing here opens a file. Several faults at once add what each adds on its own (see
`allreduce_seconds`). A job without a step model keeps the
fault-rate file's constant `rerouted_slowdown`. Infinite when the faults leave some pair of chips unroutable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tpufleet.collectives.profile import Profile, default_profile
from tpufleet.constants import DAY
from tpufleet.ids import LinkId, OcsId
from tpufleet.shapes import Shape

TABLE = Path(__file__).resolve().parents[1] / "data" / "reroute-costs.json"  # named, never opened here

NetworkFault = LinkId | OcsId
RerouteCosts = Mapping[str, Any]  # the table's document, as `costs_from_doc` checked it


@dataclass(frozen=True)
class StepModel:
    """What a workload declares about a training job's step instead of a fixed ideal fraction."""

    model_flops_per_step: float  # all chips together
    gradient_bytes: float  # per chip, all-reduced every step
    step_time_s: float  # measured on a healthy slice

    def ideal_step_s(self, shape: Shape, profile: Profile | None = None, table: RerouteCosts | None = None) -> float:
        """Compute at every chip's peak plus the modelled all-reduce (`tpufleet.collectives.cost`)."""
        compute = self.model_flops_per_step / (shape.chips * (profile or default_profile()).peak_flops)
        return compute + allreduce_seconds(shape, self.gradient_bytes, (), profile, table)


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


def step_model_at(
    path: Path | str, where: str, doc: Mapping[str, Any], shape: Shape, table: RerouteCosts | None = None
) -> StepModel:
    """The step model of a workload entry (already checked against STEP_MODEL_SCHEMA); BadStateFile naming the
    field when the model's ideal step is longer than the step time it declares (nothing could reach it)."""
    from tpufleet.errors import BadStateFile

    model = StepModel(float(doc["model_flops_per_step"]), float(doc["gradient_bytes"]), float(doc["step_time_s"]))
    ideal = model.ideal_step_s(shape, None, table)
    if ideal > model.step_time_s:
        raise BadStateFile(
            str(path),
            f"{where}.step_time_s",
            model.step_time_s,
            f"shorter than the model's ideal step on {shape} ({ideal:.6g} s: compute at peak plus the all-reduce)",
        )
    return model


def step_models(
    path: Path, doc: Mapping[str, Any], shapes: Sequence[tuple[Shape, float]], table: RerouteCosts | None = None
) -> dict[Shape, StepModel]:
    """The step model declared for each shape of the mix; one shape declared twice must declare it alike."""
    from tpufleet.errors import BadStateFile

    models: dict[Shape, StepModel] = {}
    for i, (item, (shape, _weight)) in enumerate(zip(doc.get("shapes", []), shapes, strict=True)):
        if "model" not in item:
            continue
        model = step_model_at(path, f"shapes.{i}.model", item["model"], shape, table)
        if models.setdefault(shape, model) != model:
            raise BadStateFile(
                str(path), f"shapes.{i}.model", item["model"], f"another entry of {shape} declares another"
            )
    return models


def costs_from_doc(doc: object, file: str) -> RerouteCosts:
    """The reroute-cost table's document (`tpufleet.collectives.reroute_table.make_table` wrote it), checked for
    its form: BadStateFile naming the file, the field and the value."""
    from tpufleet.collectives.reroute_table import OP, SCHEMA_VERSION
    from tpufleet.errors import NO_VALUE, BadStateFile

    if not isinstance(doc, dict):
        raise BadStateFile(file, "<root>", doc, "must be a mapping")
    checks = (
        (
            "schema_version",
            type(doc.get("schema_version")) is int and doc["schema_version"] == SCHEMA_VERSION,
            f"must be {SCHEMA_VERSION}",
        ),
        ("op", doc.get("op") == OP, f"must be {OP}"),
        ("profile", isinstance(doc.get("profile"), dict), "must be a mapping of the profile's ICI figures"),
        ("shapes", isinstance(doc.get("shapes"), dict), "must be a mapping of shapes to their terms"),
    )
    for field, ok, problem in checks:
        if not ok:
            raise BadStateFile(file, field, doc.get(field, NO_VALUE), problem)
    return doc


def _table_terms(
    shape: Shape, pattern: str, profile: Profile, table: RerouteCosts | None
) -> tuple[tuple[float, float], ...] | None:
    """The table's terms, when it was made for this shape under these profile figures, or under figures that
    differ only in a uniform ICI link bandwidth (another generation's): then the seconds per byte scaled by the
    ratio of the bandwidths. The model's per-byte terms are the links' loads over their bandwidth and its
    latency terms hops times the hop latency, so a uniform bandwidth scales the one and leaves the other (the
    routes, which take the time, do not depend on either)."""
    from tpufleet.collectives.reroute_table import profile_key, shape_key, terms_of

    if table is None:
        return None
    entry = table["shapes"].get(shape_key(shape))
    if entry is None or pattern not in entry:
        return None
    made, wanted = table["profile"], profile_key(profile)
    if made == wanted:
        return terms_of(entry[pattern])
    uniform = not made.get("dimension_bandwidth") and not wanted["dimension_bandwidth"]
    if not uniform or made.get("hop_latency") != wanted["hop_latency"]:
        return None
    scale = float(made["link_bandwidth"]) / wanted["link_bandwidth"]
    return tuple((latency, per_byte * scale) for latency, per_byte in terms_of(entry[pattern]))


def _single_terms(
    shape: Shape, pattern: str, profile: Profile, table: RerouteCosts | None
) -> tuple[tuple[float, float], ...]:
    """The terms of 'healthy' or of one fault's representative ('ocs:x', 'link:y'...): from the table, else
    modelled once and remembered by `collective_terms`."""
    from tpufleet.collectives.cost import collective_terms
    from tpufleet.collectives.reroute_table import representative

    terms = _table_terms(shape, pattern, profile, table)
    if terms is not None:
        return terms
    alive = None if pattern == "healthy" else representative(shape, *pattern.split(":"))
    return collective_terms(shape, "all-reduce", profile, alive)


def allreduce_seconds(
    shape: Shape,
    nbytes: float,
    faults: Sequence[NetworkFault],
    profile: Profile | None = None,
    table: RerouteCosts | None = None,
) -> float:
    """The modelled all-reduce of `nbytes` per chip on the slice with `faults` open. One fault: its kind and
    dimension's representative. Several: the healthy time plus the sum of what each adds on its own (routing
    each compound pattern exactly costs 2-20 s on the larger slices, and patterns seldom repeat, so a run with
    many overlapping faults would take hours). `table`: the shipped terms (None: every term modelled)."""
    from tpufleet.collectives.cost import time_from_terms

    profile = profile or default_profile()
    healthy = time_from_terms(_single_terms(shape, "healthy", profile, table), nbytes)
    extra = sum(
        time_from_terms(_single_terms(shape, f"{f.kind}:{f.dim}", profile, table), nbytes) - healthy for f in faults
    )
    return healthy + extra


def slowdown(
    shape: Shape,
    model: StepModel,
    faults: Sequence[NetworkFault],
    profile: Profile | None = None,
    table: RerouteCosts | None = None,
) -> float:
    """The job's step-time factor while rerouted around `faults` (1 with none; inf if some pair is unroutable)."""
    if not faults or not shape.wraps:
        return 1.0
    before = allreduce_seconds(shape, model.gradient_bytes, (), profile, table)
    after = allreduce_seconds(shape, model.gradient_bytes, faults, profile, table)
    return max(1.0, 1.0 + (after - before) / model.step_time_s)


# The "Resiliency at Scale" paper (NSDI 2024) reports production step times +0.5% to +8.6% longer on tables
# routed around one OCS failure. The copy of the paper followed here stops before its section 4 and names no workload's
# step mix, so the range is checked through what it pins down: the all-reduce share of the step.
PAPER_RANGE = (0.005, 0.086)


@dataclass(frozen=True)
class StepMix:
    """How a training step divides: the share of the healthy step spent in the exposed (not overlapped) gradient
    all-reduce; the rest (compute, input, other collectives) is unchanged by rerouting."""

    name: str
    all_reduce_share: float
    source: str


# Step mixes with a source among the seeds. "Exploring the limits of concurrency in ML training on Google TPUs"
# (MLSys 2021), section 5: at 4,096 TPU-v3 chips the all-reduce takes 22% of ResNet-50's device step time and
# 27.3% of BERT's (data parallel, a mini-batch of 2 per chip for BERT).
SEED_MIXES = (
    StepMix("ResNet-50, 4,096 TPU-v3 chips", 0.22, "MLSys 2021, section 5 (Figure 6)"),
    StepMix("BERT, 4,096 TPU-v3 chips", 0.273, "MLSys 2021, section 5 (Figure 8)"),
)


def allreduce_factor(
    shape: Shape, pattern: str, nbytes: float, profile: Profile | None = None, table: RerouteCosts | None = None
) -> float:
    """How many times as long the all-reduce of `nbytes` per chip takes around one fault ('ocs:x', 'link:z'...),
    from the table's terms (or modelled)."""
    from tpufleet.collectives.cost import time_from_terms

    profile = profile or default_profile()
    healthy = time_from_terms(_single_terms(shape, "healthy", profile, table), nbytes)
    return time_from_terms(_single_terms(shape, pattern, profile, table), nbytes) / healthy


def mix_slowdown(factor: float, share: float) -> float:
    """The step-time factor of a mix spending `share` of its healthy step in an all-reduce `factor` times slower."""
    return 1.0 + share * (factor - 1.0)


def share_for(slowdown_fraction: float, factor: float) -> float:
    """The all-reduce share of the step at which an all-reduce `factor` times slower lengthens the step by
    `slowdown_fraction` (0.086 for +8.6%)."""
    return slowdown_fraction / (factor - 1.0) if factor > 1.0 else float("inf")


def slowdown_rows(
    models: Mapping[Shape, StepModel], profile: Profile | None = None, table: RerouteCosts | None = None
) -> list[dict[str, Any]]:
    """Per shape and fault kind (one OCS, one optical link; the range over the three dimensions): the all-reduce's
    factor, the step slowdown of the shape's declared step model and of the seeds' mixes, and the all-reduce
    shares that give the paper's +0.5% and +8.6%."""
    rows = []
    for shape, model in models.items():
        healthy = allreduce_seconds(shape, model.gradient_bytes, (), profile, table)
        share = healthy / model.step_time_s
        for kind in ("ocs", "link"):
            factors = [allreduce_factor(shape, f"{kind}:{d}", model.gradient_bytes, profile, table) for d in "xyz"]
            lo, hi = min(factors), max(factors)
            rows.append(
                {
                    "shape": str(shape),
                    "fault": kind,
                    "all_reduce_factor": (lo, hi),
                    "workload_share": share,
                    "workload": (mix_slowdown(lo, share) - 1, mix_slowdown(hi, share) - 1),
                    "seed_mixes": {
                        m.name: (mix_slowdown(lo, m.all_reduce_share) - 1, mix_slowdown(hi, m.all_reduce_share) - 1)
                        for m in SEED_MIXES
                    },
                    "paper_shares": (share_for(PAPER_RANGE[0], hi), share_for(PAPER_RANGE[1], lo)),
                }
            )
    return rows
