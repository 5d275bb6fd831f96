"""Discrete-event simulation of pods under load and faults, writing the events `goodput-report` reads (pure).

Jobs arrive (or are listed), wait in a priority queue and are placed through the same allocation and
cross-connect planning code the CLI uses. Components fail at daily rates and are repaired; an OCS or optical-link
fault is absorbed by fault-tolerant routing (the job runs on, slower by its modelled all-reduce, `reroute`)
exactly where `inject-fault` would reroute, and otherwise evicts the job, as a machine fault always does. An
evicted or preempted job restarts from its last checkpoint after a restart overhead (TPU initialisation, training
preparation, compilation, restore). Preemption frees room for a higher-priority job, evicting lower-priority
jobs medium-sized first, then large, small and extra-large last (the ML Productivity Goodput paper, section 5).
The `extra-large-first` scheduler policy (`Options.scheduler`) also puts extra-large jobs at the head of the queue,
lets them preempt any smaller job and never preempts them, the paper's reason for their high scheduling goodput.
The `reserve` policies (`reserve`, `extra-large-first-reserve`) add EASY backfill: the first job that cannot start
holds a reservation at the time the running jobs' predicted ends free room for it (`reservation`).

Modes: ``static`` places a job only on a contiguous box of cubes of the pod's fixed 4x4x4 cube torus, has no
fault-tolerant routing, and cannot wire a spare cube in: a job hit by a machine fault keeps its block (still
all-allocated) and restarts when the machine is repaired; ``reconfigurable`` takes any healthy free cubes, still
without fault-tolerant routing (and so cannot place multi-cube jobs in a pod with a failed OCS);
``reconfigurable-ft`` adds fault-tolerant routing for the jobs that opt in.

The workload's arrival rate is per pod: a fleet of N pods gets N times the job stream (times `load_per_pod`), so
each pod is as busy as one pod on its own. `spare_cubes` healthy free cubes per pod are kept back for jobs a fault
displaced, so they restart at once instead of queueing behind new arrivals.

Parts: `inputs` (workload, fault rates, options; their schemas and loaders), `scale` (the fleet's job stream,
fault-rate factors, the event budget), `events` (typed events and their queue), `job`, `placement` (the fleet's
occupancy, health and cross-connects), `runner` (running jobs' timelines), `scheduler` (wait queue, preemption),
`reservation` (the head's reservation and backfill around it),
`fault_response`, `draws` (arrivals and faults), `log` (records, counters, the JSON-lines writer) and `engine`
(the `Simulator` that composes them and runs the event loop).

Steps are logged at the granularity of "macro steps": each checkpoint interval is ``macro_steps`` logged steps, and
the job's ``ideal_step_s`` is per logged step, so the goodput accounting is unchanged.
"""

from tpufleet.simulation.engine import Simulator
from tpufleet.simulation.inputs import (
    MODES,
    FaultRates,
    JobSpec,
    Options,
    Workload,
)

__all__ = [
    "MODES",
    "FaultRates",
    "JobSpec",
    "Options",
    "Simulator",
    "Workload",
]
