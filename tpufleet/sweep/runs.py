"""One run of a sweep: what a task and a result hold, the simulation inputs of a point and its figures.

A task is a dict of JSON values: the simulation, the point's parameters, the contents of the input files it
names (and of the shipped ones the runs default to), its seed, and whether to send the events back. A result
holds the run's figures as a flat mapping of name -> number (or None), or the error that stopped it: the runner
(`tpufleet.ops.sweep.run_task`, which the executors are given) never raises, so an error travels back as data,
whichever executor ran it (exceptions with their own constructors do not always survive pickling).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from tpufleet.constants import CUBES_PER_POD
from tpufleet.generations import Generation
from tpufleet.goodput.events import DISRUPTIONS
from tpufleet.shapes import parse_shape
from tpufleet.simulation import FaultRates, Options, Workload
from tpufleet.simulation.inputs import FAULT_KINDS
from tpufleet.simulation.log import RESERVATION_COUNTS

Task = dict[str, Any]
Result = dict[str, Any]
# The figures a run gives (`fleet_metrics`, `_availability`): these names, and FAMILY.VALUE for each family below
# with VALUE a size class (fleet) or a slice size in cubes (availability).
FLEET_FIGURES = (
    "sg", "rg", "pg", "mpg", "jobs_submitted", "jobs_finished", "disruptions",
    *(f"disruptions.{kind}" for kind in DISRUPTIONS), "reroutes",
)  # fmt: skip
FLEET_BY_SIZE = ("sg", "rg", "wait_hours", "restart_wait_hours")
# a run under a reserving scheduler (`reserve`, `extra-large-first-reserve`) also counts its reservations
RESERVATION_FIGURES = tuple(f"reservations.{count}" for count in RESERVATION_COUNTS)
AVAILABILITY_BY_SIZE = ("reconfigurable_ft", "reconfigurable", "reconfigurable_ft_exact", "static")


def generation_of(params: Mapping[str, Any], shipped: Mapping[str, Any]) -> Generation | None:
    """The generation a point names (its profile document travels in `shipped["generations"]`, read by the
    state layer), None for the built-in TPU v4 pod."""
    from tpufleet.generations_document import from_document

    name = params.get("generation")
    if name is None:
        return None
    return from_document(shipped["generations"][name], f"{name}.yaml")


def fleet_inputs(
    params: Mapping[str, Any], inputs: Mapping[str, Any], seed: int, shipped: Mapping[str, Any]
) -> tuple[Workload, FaultRates, Options]:
    """The workload, fault rates and options of a fleet point (BadInput if they do not make a valid run).
    `inputs`: the input files' mappings by name; `shipped`: the shipped ones (`state.siminputs.shipped_inputs`).
    On pods of a generation (``generation``): its pod size, its profile's fault rates where the point's rates
    file leaves them out, its shape rule and step-time figures."""
    from tpufleet.simulation.inputs import generation_rates, rates_from_doc, workload_from_doc
    from tpufleet.simulation.scale import scale_rates

    generation = generation_of(params, shipped)
    name = params.get("workload")
    doc = inputs[name] if name is not None else shipped["workload"]
    workload = workload_from_doc(doc, name or shipped["workload_file"], shipped.get("reroute_costs"))
    if params.get("arrival_rate_per_hour") is not None:
        workload = replace(workload, arrival_rate_per_hour=float(params["arrival_rate_per_hour"]))
    if params.get("size_mix") is not None:
        workload = replace(workload, shapes=_size_mix(params["size_mix"]))
    rates_name = params.get("fault_rates")
    rates_doc = inputs[rates_name] if rates_name is not None else None
    rates = rates_from_doc(rates_doc, generation_rates(shipped["rates"], generation), rates_name or "fault-rate file")
    scale = params.get("fault_scale")
    if scale is not None:
        rates = scale_rates(rates, scale if isinstance(scale, dict) else dict.fromkeys(FAULT_KINDS, scale))
    options = Options(
        generation=generation,
        cubes_per_pod=CUBES_PER_POD if generation is None else generation.pod_cubes,
        days=float(params["days"]),
        seed=seed,
        pods=int(params["pods"]),
        mode=params["mode"],
        checkpoint_interval_s=float(params["checkpoint_interval_min"]) * 60.0,
        restart_overhead_s=float(params["restart_overhead_min"]) * 60.0,
        load_per_pod=float(params["load_per_pod"]),
        spare_cubes=int(params["spare_cubes"]),
        scheduler=params["scheduler"],
    )
    return workload, rates, options


def _size_mix(mix: Mapping[str, float]) -> tuple[Any, ...]:
    """{"4x4x8 twisted": 2, "8x8x8": 1} -> the workload's weighted shapes; BadInput on a bad shape, a shape named
    twice or a zero total."""
    from tpufleet.errors import BadInput, shown
    from tpufleet.shapes import allocatable

    shapes = []
    named: dict[Any, str] = {}  # shape -> the name it was first given by
    for text, weight in mix.items():
        words = text.split()
        bad = BadInput(f"bad size_mix shape {shown(text)}: give an allocatable shape, optionally 'twisted'")
        if not words or words[1:] not in ([], ["twisted"]):  # a blank name has no shape to parse
            raise bad
        shape = parse_shape(words[0], twisted=words[1:] == ["twisted"])
        if not allocatable(shape):
            raise bad
        first = named.setdefault(shape, text)
        if first != text:  # two names of one shape ("4x4x8", "8x4x4 "): one weight was meant, or another shape
            raise BadInput(f"bad size_mix: {shown(first)} and {shown(text)} are one shape, {shape}: give it once")
        shapes.append((shape, float(weight)))
    if not sum(w for _, w in shapes) > 0:
        raise BadInput("bad size_mix: the weights add up to zero")
    return tuple(shapes)


def check_point(
    simulation: str, params: Mapping[str, Any], inputs: Mapping[str, Any], shipped: Mapping[str, Any]
) -> None:
    """Refuse (BadInput) a point whose run could not start: inputs that do not combine, or over the budget."""
    if simulation != "fleet":
        from tpufleet.availability import check_work

        cubes = pod_cubes(params, shipped)
        check_work(sizes_of(params), params["trials"], cubes or CUBES_PER_POD)
        return
    from tpufleet.model import default_fleet
    from tpufleet.simulation.draws import components
    from tpufleet.simulation.scale import check_budget

    workload, rates, options = fleet_inputs(params, inputs, 0, shipped)
    fleet = default_fleet(options.pods, options.cubes_per_pod, options.generation)
    check_budget(workload, rates, options, components(fleet))


def pod_cubes(params: Mapping[str, Any], shipped: Mapping[str, Any]) -> int | None:
    """The cubes of an availability point's pod: its generation's, None for the built-in TPU v4 pod (64);
    BadInput for a slice size over the pod."""
    from tpufleet.errors import BadInput

    generation = generation_of(params, shipped)
    cubes = CUBES_PER_POD if generation is None else generation.pod_cubes
    over = [k for k in sizes_of(params) if k > cubes]
    if over:
        where = "a TPU v4 pod" if generation is None else f"a {generation.name} pod"
        raise BadInput(f"bad cubes {over[0]}: {where} has {cubes} cubes")
    return None if generation is None else cubes


def fleet_metrics(summary: Mapping[str, Any]) -> dict[str, float | None]:
    """The figures of a simulate-fleet summary, flat: sg, rg, pg, mpg, counts, and by size."""
    metrics: dict[str, float | None] = {k: summary[k] for k in ("sg", "rg", "pg", "mpg")}
    metrics["jobs_submitted"] = summary["jobs_submitted"]
    metrics["jobs_finished"] = summary["jobs_finished"]
    metrics["disruptions"] = sum(summary["disruptions"].values())
    for kind in DISRUPTIONS:
        metrics[f"disruptions.{kind}"] = summary["disruptions"][kind]
    metrics["reroutes"] = summary["reroutes"]
    for name, count in (summary.get("reservations") or {}).items():
        metrics[f"reservations.{name}"] = count
    for segment in summary["segments"]:
        metrics[f"sg.{segment['value']}"] = segment["sg"]
        metrics[f"rg.{segment['value']}"] = segment["rg"]
    for figure in ("wait_hours", "restart_wait_hours"):
        for size, hours in summary[figure].items():
            metrics[f"{figure}.{size}"] = hours
    return metrics


def figure_names(
    simulation: str, points: Sequence[Mapping[str, Any]], shipped: Mapping[str, Any] | None = None
) -> set[str]:
    """Every figure a run of these points can give (a fleet run gives a size class's figures only when a job of
    that class ran; an availability run gives `static` figures only on a pod with a static twin, a 4x4x4 grid of
    cubes). `shipped`: what the runs are sent, with the profiles of the generations the points name."""
    if simulation == "fleet":
        from tpufleet.goodput.metrics import SIZE_CLASSES
        from tpufleet.simulation.policy import reserves

        sizes = [name for _, name in SIZE_CLASSES]
        reserving = any(reserves(p.get("scheduler", "priority")) for p in points)
        return {
            *FLEET_FIGURES,
            *(f"{family}.{size}" for family in FLEET_BY_SIZE for size in sizes),
            *(RESERVATION_FIGURES if reserving else ()),
        }
    names = set()
    for params in points:
        static = _static_twin(params, shipped or {})
        families = [f for f in AVAILABILITY_BY_SIZE if f != "static" or static]
        names |= {f"{family}.{k}" for family in families for k in sizes_of(params)}
    return names


def _static_twin(params: Mapping[str, Any], shipped: Mapping[str, Any]) -> bool:
    """Whether an availability point's pod has a static twin to compare with: the built-in TPU v4 pod, or a
    generation's pod of as many cubes (a 4x4x4 grid)."""
    import math

    from tpufleet.constants import STATIC_CUBE_GRID

    generation = generation_of(params, shipped)
    return generation is None or generation.pod_cubes == math.prod(STATIC_CUBE_GRID)


def sizes_of(params: Mapping[str, Any]) -> list[int]:
    """The slice sizes (cubes) an availability point simulates."""
    cubes = params["cubes"]
    return list(cubes) if isinstance(cubes, list) else [cubes]
