"""How much a run simulates: the fleet's job stream at a load per pod, fault rates scaled per kind, and the
event budget a run must fit in (`check_budget`, refused before it starts)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace

from tpufleet.errors import BadInput
from tpufleet.simulation.inputs import (
    FAULT_KINDS,
    MAX_ARRIVALS_PER_HOUR,
    MAX_HOURS,
    MAX_RATE_PER_DAY,
    FaultRates,
    Options,
    Workload,
)

MAX_EVENTS = 3_000_000  # expected events logged by one run (about 270 MB of JSONL, 1.5 GB in memory; 30 days of one pod: 120,000, of 16 pods: 1.9 M)
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


def _fitting(workload: Workload, options: Options) -> Workload:
    """The workload with the fleet's size given to its multislice mix (a drawn job takes only slice counts the
    fleet can hold); BadInput for a listed job the fleet could never hold."""
    cubes = options.pods * options.cubes_per_pod
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
            raise BadInput(f"bad fault kind {kind!r}: not one of {', '.join(FAULT_KINDS)}")
        if not 0 <= factor <= 1000:  # also refuses NaN
            raise BadInput(f"bad fault-rate factor {factor!r} for {kind}: must be a number from 0 to 1000")
        name = RATE_OF_KIND[kind]
        value = getattr(rates, name) * factor
        if value > MAX_RATE_PER_DAY:
            raise BadInput(
                f"bad fault-rate factor {factor:g} for {kind}: {value:g} per day is over {MAX_RATE_PER_DAY:g}"
            )
        changed[name] = value
    return replace(rates, **changed)


def parse_factors(text: str) -> dict[str, float]:
    """`--fault-scale` text: one factor for every kind ("2") or per kind ("host=2,ocs=1.5")."""
    try:
        if "=" not in text:
            return dict.fromkeys(RATE_OF_KIND, float(text))
        pairs = (item.split("=", 1) for item in text.split(",") if item.strip())
        return {kind.strip(): float(value) for kind, value in pairs}
    except ValueError:
        raise BadInput(
            f"bad option --fault-scale {text!r}: give a factor (2) or kind=factor pairs (host=2,ocs=1.5)"
        ) from None


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
    steps = work_h * 3600.0 / options.step_s
    strikes = options.days * (
        components["host"] * (rates.host_per_day + rates.drain_per_day)
        + components["link"] * rates.link_per_day
        + components["ocs"] * rates.ocs_per_day
    )
    return 1.2 * steps + 15.0 * arrivals + 25.0 * strikes


def check_budget(workload: Workload, rates: FaultRates, options: Options, components: Mapping[str, int]) -> None:
    """Refuse (exit 2) a run expected to log more than MAX_EVENTS records, before it allocates anything.
    `workload` is the workload file's (per pod): the fleet's stream is worked out here."""
    expected = expected_events(fleet_workload(workload, options), rates, options, components)
    if expected > MAX_EVENTS:
        raise BadInput(
            f"simulation too large: about {expected:,.0f} events expected, over the limit of {MAX_EVENTS:,} "
            f"(fewer --days, a longer --checkpoint-interval, or lower arrival or fault rates)"
        )
