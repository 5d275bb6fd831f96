"""How much a run simulates: the fleet's job stream at a load per pod, fault rates scaled per kind, and the
budget a run must fit in (`check_budget`, refused before it starts): the events it logs and the scheduler's
work on its queue of waiting jobs."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace

from tpufleet.constants import CHIPS_PER_CUBE, HOUR
from tpufleet.errors import BadInput, shown
from tpufleet.generations import Generation
from tpufleet.shapes import check_generation
from tpufleet.simulation.inputs import (
    FAULT_KINDS,
    MAX_ARRIVALS_PER_HOUR,
    MAX_HOURS,
    MAX_RATE_PER_DAY,
    FaultRates,
    Options,
    Workload,
)
from tpufleet.text import plain_float, underflows

MAX_EVENTS = 3_000_000  # expected events logged by one run (about 270 MB of JSONL, 1.5 GB in memory; 30 days of one pod: 120,000, of 16 pods: 1.9 M)
# Expected waiting-job visits of the scheduler (`expected_queue_work`): about a microsecond each, so about a
# minute of scheduling on one core (1,000 arrivals an hour on one pod: 10 hours; the shipped workload at
# --load-per-pod 2 on one pod for 30 days: 0.8 M).
MAX_QUEUE_WORK = 50_000_000
RATE_OF_KIND = {"host": "host_per_day", "link": "link_per_day", "ocs": "ocs_per_day", "drain": "drain_per_day"}


def fleet_workload(workload: Workload, options: Options) -> Workload:
    """The workload the whole fleet sees: its arrival rate is per pod, times the pods and `load_per_pod`, so
    each pod of a larger fleet is as busy as one pod on its own (listed jobs are kept as listed)."""
    workload = _fitting(workload, options)
    factor = options.pods * options.load_per_pod
    if factor == 1.0:
        return workload
    rate = workload.arrival_rate_per_hour * factor
    if rate > MAX_ARRIVALS_PER_HOUR * options.pods:
        raise BadInput(f"bad load per pod {options.load_per_pod:g}: over {MAX_ARRIVALS_PER_HOUR:g} arrivals per hour")
    return replace(workload, arrival_rate_per_hour=rate)


def check_shapes(workload: Workload, generation: Generation | None) -> None:
    """Refuse (BadInput naming the job, the shape and the generation) a workload asking for a shape the pods'
    generation refuses: a listed job's, or one of the random arrivals' shape mix. The built-in TPU v4 pod's rule
    was applied when the workload was read."""
    if generation is None:
        return
    asked = [(f"listed job {i} ({spec.id or 'no id'})", spec.shape) for i, spec in enumerate(workload.jobs)]
    asked += [(f"shape mix entry {i} ({shape})", shape) for i, (shape, _) in enumerate(workload.shapes)]
    for what, shape in asked:
        try:
            check_generation(shape, generation)
        except BadInput as exc:
            raise BadInput(f"bad workload: {what}: {exc}") from None


def _fitting(workload: Workload, options: Options) -> Workload:
    """The workload with the fleet's size given to its multislice mix (a drawn job takes only slice counts the
    fleet can hold); BadInput for a shape the pods' generation refuses and for a listed job the fleet could
    never hold."""
    check_shapes(workload, options.generation)
    cubes, pod = options.pods * options.cubes_per_pod, options.cubes_per_pod
    # a slice is wired by one pod's OCS: a shape over a pod's cubes would wait for ever
    asked = [(f"listed job {i} ({spec.id or 'no id'})", spec.shape) for i, spec in enumerate(workload.jobs)]
    asked += [(f"shape mix entry {i}", shape) for i, (shape, _) in enumerate(workload.shapes)]
    for what, shape in asked:
        if shape.cubes > pod:
            raise BadInput(f"bad workload: {what}: a {shape} needs {shape.cubes} cubes, and a pod has {pod}")
    for i, spec in enumerate(workload.jobs):
        need = spec.slices * spec.shape.cubes
        if need > cubes:
            raise BadInput(
                f"bad workload: listed job {i} ({spec.id or 'no id'}): {spec.slices} slice(s) of {spec.shape} need "
                f"{need} cubes, and {options.pods} pod(s) of {options.cubes_per_pod} have {cubes}"
            )
    if workload.multislice is None:
        return workload
    return replace(workload, multislice=replace(workload.multislice, max_cubes=cubes))


def scale_rates(rates: FaultRates, factors: Mapping[str, float]) -> FaultRates:
    """The rates with each named kind's failures (or drains) per day multiplied by its factor."""
    changed = {}
    for kind, factor in factors.items():
        if kind not in RATE_OF_KIND:
            raise BadInput(f"bad fault kind {shown(kind)}: not one of {', '.join(FAULT_KINDS)}")
        if not 0 <= factor <= 1000:  # also refuses NaN
            raise BadInput(f"bad fault-rate factor {factor:g} for {kind}: must be a number from 0 to 1000")
        name = RATE_OF_KIND[kind]
        value = getattr(rates, name) * factor
        if value > MAX_RATE_PER_DAY:
            raise BadInput(
                f"bad fault-rate factor {factor:g} for {kind}: {value:g} per day is over {MAX_RATE_PER_DAY:g}"
            )
        changed[name] = value
    return replace(rates, **changed)


def parse_factors(text: str) -> dict[str, float]:
    """`--fault-scale` text: one factor for every kind ("2") or per kind ("host=2,ocs=1.5"), each kind once."""
    bad = BadInput(
        f"bad option --fault-scale {shown(text)}: give a factor (2) or kind=factor pairs (host=2,ocs=1.5), in ASCII "
        "digits"
    )
    if "=" not in text:
        factor = plain_float(text)
        if factor is None:
            raise bad
        _told_from_zero(text, text)
        return dict.fromkeys(RATE_OF_KIND, factor)
    out: dict[str, float] = {}
    for item in text.split(","):
        if not item.strip():
            continue
        kind, sep, value = item.partition("=")
        number = plain_float(value) if sep else None
        if number is None:
            raise bad
        _told_from_zero(value, text)
        if kind.strip() in out:
            raise BadInput(f"bad option --fault-scale {shown(text)}: kind {shown(kind.strip())} is given twice")
        out[kind.strip()] = number
    return out


def _told_from_zero(number: str, text: str) -> None:
    """Refuse a factor too small to be told from 0 (`1e-400`), which would be read as 0: no faults of the kind."""
    if underflows(number):
        raise BadInput(
            f"bad option --fault-scale {shown(text)}: {number.strip()} is too small to be told from 0 (give a larger "
            "number)"
        )


# ---- the run's size -----------------------------------------------------------------------------------------
def expected_events(workload: Workload, rates: FaultRates, options: Options, components: Mapping[str, int]) -> float:
    """About how many records a run will log (an estimate from the means, good to a small factor).

    Steps dominate: each job logs ``macro_steps`` steps and a checkpoint (2 events) per checkpoint interval of
    compute, so about 1.2 events per step of its work; every job adds about 15 records (its record, submission,
    allocation, start-up stages, end), every fault strike about 25 (the redone steps and a restart of the job it
    hits). `components` counts the fleet's hosts, optical links and OCS (`model.component_counts`).
    """
    hours = options.days * 24.0
    work_h = sum(min(spec.duration_hours, hours) for spec in workload.jobs)
    arrivals = float(len(workload.jobs))
    if workload.arrival_rate_per_hour > 0 and workload.shapes:
        random_arrivals = workload.arrival_rate_per_hour * hours
        log_mean = math.log(workload.duration_median_h) + workload.duration_sigma**2 / 2  # lognormal mean, in logs
        mean_h = min(workload.duration_max_h, math.exp(min(log_mean, math.log(MAX_HOURS))), hours)
        arrivals += random_arrivals
        work_h += random_arrivals * mean_h
    steps = work_h * HOUR / options.step_s
    strikes = options.days * (
        components["host"] * (rates.host_per_day + rates.drain_per_day)
        + components["link"] * rates.link_per_day
        + components["ocs"] * rates.ocs_per_day
    )
    return 1.2 * steps + 15.0 * arrivals + 25.0 * strikes


def _arrivals(workload: Workload, hours: float) -> tuple[float, float]:
    """(Jobs expected to arrive in `hours`, their expected cube-hours of work), the listed jobs included.

    A random arrival's work is its mean duration (lognormal, capped like the draws, and at the run's length)
    times the mean cubes of the shape mix (a sub-cube shape its share of a cube) times its mean slice count."""
    listed = sum(spec.slices * spec.shape.chips / CHIPS_PER_CUBE * min(spec.duration_hours, hours)
                 for spec in workload.jobs)  # fmt: skip
    if not (workload.arrival_rate_per_hour > 0 and workload.shapes):
        return float(len(workload.jobs)), listed
    random_arrivals = workload.arrival_rate_per_hour * hours
    log_mean = math.log(workload.duration_median_h) + workload.duration_sigma**2 / 2
    mean_h = min(workload.duration_max_h, math.exp(min(log_mean, math.log(MAX_HOURS))), hours)
    total_weight = sum(w for _, w in workload.shapes)
    mean_cubes = sum(shape.chips / CHIPS_PER_CUBE * w for shape, w in workload.shapes) / total_weight
    return len(workload.jobs) + random_arrivals, listed + random_arrivals * mean_h * mean_cubes * _mean_slices(workload)


def _mean_slices(workload: Workload) -> float:
    mix = workload.multislice
    if mix is None or not mix.counts:
        return 1.0
    mean = sum(n * w for n, w in mix.counts) / sum(w for _, w in mix.counts)
    return 1.0 + mix.share * (mean - 1.0)


def expected_queue_work(workload: Workload, options: Options) -> tuple[float, float, float]:
    """(Waiting-job visits the scheduler is expected to make, jobs expected to arrive, and to be waiting at the
    end), for the fleet's job stream (`fleet_workload`).

    Each arrival (and each end) makes the scheduler walk its queue of waiting jobs. While the fleet keeps up the
    queue stays short; when the work arriving is rho > 1 times the cube-hours the fleet has, about a share
    1 - 1/rho of the arrivals is still waiting at the end, the queue grows steadily to it, and the walks add up
    to arrivals x waiting / 2: quadratic in the run's length. An estimate, good to a small factor.
    """
    hours = options.days * 24.0
    arrivals, cube_hours = _arrivals(workload, hours)
    capacity = options.pods * options.cubes_per_pod * hours
    rho = cube_hours / capacity if capacity > 0 else 0.0
    waiting = arrivals * (1.0 - 1.0 / rho) if rho > 1.0 else 0.0
    return arrivals * waiting / 2.0, arrivals, waiting


def check_budget(workload: Workload, rates: FaultRates, options: Options, components: Mapping[str, int]) -> None:
    """Refuse (exit 2) a run expected to log more than MAX_EVENTS records, or to make the scheduler walk its queue
    more than MAX_QUEUE_WORK times, before it allocates anything. `workload` is the workload file's (per pod):
    the fleet's stream is worked out here."""
    fleet = fleet_workload(workload, options)
    expected = expected_events(fleet, rates, options, components)
    if expected > MAX_EVENTS:
        raise BadInput(
            f"simulation too large: about {expected:,.0f} events expected, over the limit of {MAX_EVENTS:,} "
            f"(fewer --days, a longer --checkpoint-interval, or lower arrival or fault rates)"
        )
    work, arrivals, waiting = expected_queue_work(fleet, options)
    if work > MAX_QUEUE_WORK:
        raise BadInput(
            f"simulation too large: about {arrivals:,.0f} jobs arrive for more work than the fleet can run, about "
            f"{waiting:,.0f} still waiting at the end: about {work:,.0f} visits of waiting jobs by the scheduler, "
            f"over the limit of {MAX_QUEUE_WORK:,} (fewer --days, or a lower arrival rate or "
            f"--load-per-pod)"
        )
