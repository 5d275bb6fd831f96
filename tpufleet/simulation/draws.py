"""Random draws: when jobs arrive and what they are, and when and where faults strike.

All draws come from the simulation's one `random.Random`, in a fixed order, so the same seed gives the same events.
Fault rates are per component of each pod's generation: its hosts per cube (chips per cube over chips per host)
and its OCS (`components`); the built-in TPU v4 pod's are `tpufleet.constants`'.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator, Mapping

from tpufleet.constants import DAY, DIMS, HOUR, MACHINES_PER_CUBE, OCS_PER_DIM, OCS_PER_POD, OPTICAL_LINKS_PER_CUBE
from tpufleet.ids import HostId, OcsId
from tpufleet.model import Fleet, Pod, cube_optical_links
from tpufleet.shapes import Shape
from tpufleet.simulation.events import Arrival, FaultStrike, FaultTarget
from tpufleet.simulation.inputs import FaultKind, FaultRates, Options, Workload
from tpufleet.simulation.job import Job
from tpufleet.simulation.log import EventLog
from tpufleet.simulation.reroute import RerouteCosts


def arrivals(rng: random.Random, workload: Workload, start: float, end: float) -> Iterator[Arrival]:
    """The listed jobs, then Poisson arrivals of the shape mix with lognormal durations (capped)."""
    for spec in workload.jobs:
        yield Arrival(
            start + spec.arrival_hours * HOUR, spec.shape, spec.duration_hours, spec, spec.slices, spec.elastic_min
        )
    per_second = workload.arrival_rate_per_hour / HOUR
    if per_second <= 0 or not workload.shapes:  # (a rate of 5e-324 an hour is 0 a second: no arrival)
        return
    shapes, weights = [s for s, _ in workload.shapes], [w for _, w in workload.shapes]
    t = start
    while True:
        t += rng.expovariate(per_second)
        if t >= end:
            return
        log_hours = math.log(workload.duration_median_h) + workload.duration_sigma * rng.gauss(0, 1)
        hours = min(workload.duration_max_h, math.exp(log_hours))
        shape = rng.choices(shapes, weights=weights)[0]
        yield Arrival(t, shape, hours, None, *_multislice(rng, workload, shape))


def _multislice(rng: random.Random, workload: Workload, shape: Shape) -> tuple[int, int | None]:
    """Slices and elastic minimum of a random arrival (one slice, not elastic, unless the workload mixes in
    multislice jobs: then nothing is drawn for other workloads, which keep their random stream). Only slice
    counts the fleet can hold are drawn; a shape with none of them stays one slice."""
    mix = workload.multislice
    if mix is None or rng.random() >= mix.share:
        return 1, None
    counts = mix.counts_for(shape)
    if not counts or not sum(w for _, w in counts) > 0:
        return 1, None
    slices = rng.choices([n for n, _ in counts], weights=[w for _, w in counts])[0]
    elastic = rng.random() < mix.elastic_share
    return slices, (mix.elastic_min(slices) if elastic and slices > 1 else None)


def hosts_per_cube(pod: Pod) -> int:
    """Hosts (VMs) of one cube of the pod: 64 chips over the generation's chips per host (16 for TPU v4)."""
    return MACHINES_PER_CUBE if pod.generation is None else pod.generation.hosts_per_cube


def ocs_per_dim(pod: Pod) -> int:
    return OCS_PER_DIM if pod.generation is None else pod.generation.ocs_per_dim


def components(fleet: Fleet) -> dict[str, int]:
    """How many of each component a daily fault rate applies to, from each pod's generation: hosts, optical
    links (the cables from a cube face to its OCS port, 96 a cube whatever the generation) and OCS. For pods of
    the built-in TPU v4 model, `model.component_counts`.

    >>> from tpufleet.model import default_fleet
    >>> components(default_fleet(2))
    {'host': 2048, 'link': 12288, 'ocs': 96}
    """
    return {
        "host": sum(len(p.cubes) * hosts_per_cube(p) for p in fleet.pods),
        "link": len(fleet.cubes) * OPTICAL_LINKS_PER_CUBE,
        "ocs": sum(OCS_PER_POD if p.generation is None else p.generation.ocs_count for p in fleet.pods),
    }


def faults(rng: random.Random, rates: FaultRates, fleet: Fleet, start: float, end: float) -> Iterator[FaultStrike]:
    """Each kind's strikes, a Poisson process at its daily rate times how many of it the fleet has."""
    counts = components(fleet)
    processes: tuple[tuple[FaultKind, int, float], ...] = (
        ("host", counts["host"], rates.host_per_day),
        ("link", counts["link"], rates.link_per_day),  # per optical link, as inject-fault --random weighs them
        ("ocs", counts["ocs"], rates.ocs_per_day),
        ("drain", counts["host"], rates.drain_per_day),
    )
    for kind, count, rate in processes:
        per_second = count * rate / DAY
        if per_second <= 0:  # (a rate of 1e-320 a day is 0 a second: no strike)
            continue
        t = start
        while True:
            t += rng.expovariate(per_second)
            if t >= end:
                break
            yield FaultStrike(t, kind, _target(rng, kind, fleet))


def _target(rng: random.Random, kind: FaultKind, fleet: Fleet) -> FaultTarget:
    if kind == "ocs":
        pod = fleet.pods[rng.randrange(len(fleet.pods))]
        return OcsId(pod.name, DIMS[rng.randrange(len(DIMS))], rng.randrange(ocs_per_dim(pod)))
    cube = rng.choice(fleet.cubes)
    if kind == "link":
        return rng.choice(cube_optical_links(cube))
    return HostId(cube, rng.randrange(hosts_per_cube(fleet.pod_of(cube))))


def _pick(rng: random.Random, weights: Mapping[str, float]) -> str:
    names = list(weights)
    return rng.choices(names, weights=[weights[n] for n in names])[0]


class JobMaker:
    """Turns arrivals into jobs (drawing what the arrival leaves open) and writes each job's record."""

    def __init__(
        self,
        rng: random.Random,
        workload: Workload,
        options: Options,
        log: EventLog,
        reroute_costs: RerouteCosts | None = None,
    ) -> None:
        self.rng = rng
        self.workload = workload
        self.log = log
        self.step_s = options.step_s
        self.profile = options.profile  # the pods' generation's figures (None: the shipped TPU v4 profile)
        self.chips_per_host = None if options.generation is None else options.generation.chips_per_host
        self.reroute_costs = reroute_costs
        self.jobs: list[Job] = []

    def ideal_step_s(self, job: Job) -> float:
        """Per logged step: the workload's ideal fraction of it, or the job's declared model's ideal (compute at
        peak plus the modelled all-reduce, and for a multislice job the DCN all-reduce between its slices) over
        its step: the declared step time on one slice, plus that DCN all-reduce (the model's FLOPs are per slice:
        data parallel, each slice runs the model on its share of the batch). Peak FLOP/s, ICI and DCN bandwidth
        are the pods' generation's."""
        if job.model is None:
            return self.step_s * self.workload.ideal_step_fraction
        from tpufleet.simulation.multislice import dcn_seconds

        dcn = dcn_seconds(
            job.shape, job.slices, job.model.gradient_bytes, job.spread, self.profile, self.chips_per_host
        )
        ideal = job.model.ideal_step_s(job.shape, self.profile, self.reroute_costs)
        return self.step_s * (ideal + dcn) / (job.model.step_time_s + dcn)

    def make(self, arrival: Arrival) -> Job:
        workload, spec, rng = self.workload, arrival.spec, self.rng
        seq = len(self.jobs)
        if spec is None:
            rank = rng.choices(range(len(workload.priorities)), weights=workload.priority_weights)[0]
        else:
            rank = spec.priority_rank
        phase = (spec.phase if spec else None) or _pick(rng, workload.phases)
        framework = _pick(rng, workload.frameworks)
        # Drawn for listed jobs too (and then not used), so that they consume the same random numbers.
        drawn_fault_tolerant = rng.random() < workload.fault_tolerant_share
        job = Job(
            id=(spec.id if spec else None) or f"job{seq:05d}",
            seq=seq,
            shape=arrival.shape,
            phase=phase,
            framework=framework,
            priority=rank,
            priority_name=workload.priorities[rank],
            fault_tolerant=spec.fault_tolerant if spec else drawn_fault_tolerant,
            work=arrival.hours * HOUR,
            submitted=arrival.time,
            model=(spec.model if spec else workload.models.get(arrival.shape)) if phase == "training" else None,
            slices=arrival.slices,
            elastic_min=arrival.elastic_min,
            spread=arrival.slices > 1 and (workload.multislice.spread if workload.multislice else True),
        )
        self.jobs.append(job)
        self.log.job(job, self.ideal_step_s(job))
        self.log.event(job, arrival.time, "submitted")
        return job
