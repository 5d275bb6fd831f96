"""The state (and optionally a goodput report) as Prometheus metrics, through `prometheus_client` (pure).

Names follow Prometheus' conventions: the `tpufleet_` prefix, base units in the name (`_seconds`,
`_chip_seconds`), `_ratio` for 0..1 shares, `_total` only on the one counter (faults ever recorded, which only
grows), `_info` for constant text. Labels are low-cardinality: pod, state, kind, factor, bucket, segment; the
per-slice ratio is labelled by slice name and the per-job figures by `multislice_job` (a fleet has tens of slices
and jobs, not thousands; not `job`, which Prometheus sets to the scrape job and would rename `exported_job`). Every value comes from
the same views as `status -o json`, so the two always agree.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily, Metric
from prometheus_client.registry import Collector

from tpufleet.fleetstate import FleetState, SliceState
from tpufleet.ids import KINDS, natural_key
from tpufleet.views import inventory, status

FACTORS = ("sg", "rg", "pg", "mpg")


class FleetCollector(Collector):
    """Yields the families of one state (read once, when built) and of a goodput report, if given."""

    def __init__(
        self,
        state: FleetState,
        last_change: float | None,
        goodput: dict[str, Any] | None,
        version: str,
        drift: Mapping[str, Mapping[str, int]] | None = None,
        missing: Collection[str] = (),
    ) -> None:
        self.state, self.last_change, self.goodput, self.version = state, last_change, goodput, version
        self.drift = drift
        self.missing = missing  # slices whose indexed routing tables are no longer kept (as `status` says them)

    def collect(self) -> Iterator[Metric]:
        yield from self._state()
        yield from self._cubes_and_faults()
        yield from self._slices()
        yield from self._jobs()
        if self.goodput is not None:
            yield from goodput_families(self.goodput)
        if self.drift is not None:
            yield drift_family(self.drift)

    def _state(self) -> Iterator[Metric]:
        info = InfoMetricFamily("tpufleet", "The tool that wrote these metrics.", value={"version": self.version})
        yield info
        yield from self._generations()
        yield GaugeMetricFamily(
            "tpufleet_state_serial", "Serial of the state (one more per change).", self.state.serial
        )
        if self.last_change is not None:
            yield GaugeMetricFamily(
                "tpufleet_state_last_change_timestamp_seconds",
                "Unix time of the last committed change of the state.",
                self.last_change,
                unit="seconds",
            )

    def _generations(self) -> Iterator[Metric]:
        """`tpufleet_pod_generation_info{pod, generation, accelerator}` for each pod of a generation; none in a
        fleet of the built-in TPU v4 model, whose metrics stay as they were."""
        pods = [p for p in self.state.fleet.pods if p.generation is not None]
        if not pods:
            return
        family = InfoMetricFamily(
            "tpufleet_pod_generation", "Accelerator generation of a pod.", labels=["pod", "generation", "accelerator"]
        )
        for p in pods:
            assert p.generation is not None
            family.add_metric([p.name, p.generation.name, p.generation.gke_accelerator], {})
        yield family

    def _cubes_and_faults(self) -> Iterator[Metric]:
        cubes = GaugeMetricFamily(
            "tpufleet_cubes", "Cubes by pod and state (free, allocated, out).", labels=["pod", "state"]
        )
        counts = {(p.name, s): 0 for p in self.state.fleet.pods for s in ("free", "allocated", "out")}
        for row in inventory(self.state):
            counts[row["pod"], row["state"]] += 1
        for (pod_name, cube_state), n in counts.items():
            cubes.add_metric([pod_name, cube_state], n)
        yield cubes
        yield from self._node_pools()
        opened = CounterMetricFamily("tpufleet_faults_opened", "Faults and drains ever recorded.")
        opened.add_metric([], self.state.next_fault - 1)  # ids are handed out in order from f1
        yield opened
        faults = GaugeMetricFamily(
            "tpufleet_open_faults", "Open unplanned faults by kind of component.", labels=["kind"]
        )
        drains = GaugeMetricFamily(
            "tpufleet_planned_drains", "Open planned drains by kind of component.", labels=["kind"]
        )
        open_now = self.state.open_faults()
        for kind in KINDS:
            faults.add_metric([kind], sum(1 for f in open_now if f.target.kind == kind and not f.planned))
            drains.add_metric([kind], sum(1 for f in open_now if f.target.kind == kind and f.planned))
        yield faults
        yield drains
        health = self.state.health()
        ocs = GaugeMetricFamily("tpufleet_ocs_xconnects", "OCS cross-connects in use, by pod.", labels=["pod"])
        failed = GaugeMetricFamily("tpufleet_ocs_failed", "OCS with an open unplanned fault, by pod.", labels=["pod"])
        drained = GaugeMetricFamily(
            "tpufleet_ocs_drained", "OCS with an open planned drain (maintenance), by pod.", labels=["pod"]
        )
        planned = {o for o in health.ocs_down if (f := self.state.open_fault_on(o)) is not None and f.planned}
        for pod in self.state.fleet.pods:
            ocs.add_metric([pod.name], sum(len(v) for k, v in self.state.ocs.items() if k.pod == pod.name))
            down = [o for o in health.ocs_down if o.pod == pod.name]
            failed.add_metric([pod.name], sum(1 for o in down if o not in planned))
            drained.add_metric([pod.name], sum(1 for o in down if o in planned))
        yield ocs
        yield failed
        yield drained

    def _node_pools(self) -> Iterator[Metric]:
        """`tpufleet_node_pool_cubes{pod}`: the free cubes the cluster's node pools hold as unplaced slices (which
        ones unknown; status' `k8s.unplaced_slices.by_pod`), so free less these is what is left to allocate; only in
        a fleet `import k8s` recorded node pools in, whose other metrics stay as they were."""
        if not self.state.k8s.node_pools:
            return
        family = GaugeMetricFamily(
            "tpufleet_node_pool_cubes",
            "Free cubes held by the cluster's node pools tpufleet has not placed (which ones unknown), by pod.",
            labels=["pod"],
        )
        held = self.state.health().held
        for pod in self.state.fleet.pods:
            family.add_metric([pod.name], held.get(pod.name, 0))
        yield family

    def _slices(self) -> Iterator[Metric]:
        view = status(self.state, self.missing)
        by_state = GaugeMetricFamily("tpufleet_slices", "Slices by state.", labels=["state"])
        for state in SliceState:
            by_state.add_metric([state.value], sum(1 for s in view["slices"] if s["state"] == state.value))
        yield by_state
        yield GaugeMetricFamily(
            "tpufleet_stale_route_tables",
            "Slices whose stored routing tables no longer match.",
            len(view["stale_routes"]),
        )
        yield GaugeMetricFamily(
            "tpufleet_missing_route_tables",
            "Slices whose indexed routing tables are no longer kept (a file removed by hand, or damaged).",
            len(view["missing_routes"]),
        )
        yield GaugeMetricFamily(
            "tpufleet_degraded_slices_without_route_tables",
            "Degraded slices with no stored routing tables: they run on their healthy ones through their faults.",
            len(view["degraded_without_routes"]),
        )
        yield GaugeMetricFamily(
            "tpufleet_incomplete_wiring_slices", "Wired slices missing cross-connects.", len(view["incomplete_wiring"])
        )
        retained = GaugeMetricFamily(
            "tpufleet_slice_all_to_all_retained_ratio",
            "Share of healthy all-to-all throughput a wired slice keeps (1 when connected).",
            labels=["slice"],
            unit="ratio",
        )
        for name in sorted(self.state.slices, key=natural_key):  # s9 before s10, as slices are counted
            sl = self.state.slices[name]
            if sl.state.wired:
                retained.add_metric([name], sl.reroute.retained if sl.reroute is not None else 1.0)
        yield retained

    def _jobs(self) -> Iterator[Metric]:
        """Multislice jobs: how many in each state, and per job its active slices and the throughput it keeps."""
        from tpufleet.jobs import JobState, all_statuses

        statuses = all_statuses(self.state)
        by_state = GaugeMetricFamily("tpufleet_jobs", "Multislice jobs by state.", labels=["state"])
        for job_state in JobState:
            by_state.add_metric([job_state.value], sum(1 for st in statuses if st.state is job_state))
        yield by_state
        active = GaugeMetricFamily(
            "tpufleet_job_active_slices",
            "Slices of a multislice job that are wired and running.",
            labels=["multislice_job"],
        )
        total = GaugeMetricFamily(
            "tpufleet_job_slices", "Slices a multislice job was allocated.", labels=["multislice_job"]
        )
        kept = GaugeMetricFamily(
            "tpufleet_job_throughput_kept_ratio",
            "Share of its data-parallel throughput a started multislice job keeps (0 when stopped).",
            labels=["multislice_job"],
            unit="ratio",
        )
        for st in statuses:
            active.add_metric([st.job.name], len(st.active))
            total.add_metric([st.job.name], st.total)
            if st.throughput_kept is not None:
                kept.add_metric([st.job.name], st.throughput_kept)
        yield active
        yield total
        yield kept


def goodput_families(report: dict[str, Any]) -> Iterator[Metric]:
    """Fleet and per-segment goodput factors and badput of a `goodput-report` result."""
    ratio = GaugeMetricFamily(
        "tpufleet_goodput_ratio",
        "ML Productivity Goodput factors (sg, rg, pg, mpg) of the fleet and of each segment.",
        labels=["factor", "dimension", "segment"],
        unit="ratio",
    )
    badput = GaugeMetricFamily(
        "tpufleet_goodput_badput_chip_seconds",
        "Chip-seconds lost, by badput bucket, for the fleet and each segment.",
        labels=["bucket", "dimension", "segment"],
        unit="chip_seconds",
    )
    productive = GaugeMetricFamily(
        "tpufleet_goodput_productive_chip_seconds",
        "Chip-seconds of saved progress, for the fleet and each segment.",
        labels=["dimension", "segment"],
        unit="chip_seconds",
    )
    rows = [("fleet", "all", report["fleet"])] + [(s["dimension"], s["value"], s) for s in report["segments"]]
    for dimension, segment, row in rows:
        for factor in FACTORS:
            if row.get(factor) is not None:
                ratio.add_metric([factor, dimension, segment], row[factor])
        for bucket, chip_s in row.get("badput_chip_s", {}).items():
            badput.add_metric([bucket, dimension, segment], chip_s)
        productive.add_metric([dimension, segment], row["productive_chip_s"])
    yield ratio
    yield badput
    yield productive


def drift_family(drift: Mapping[str, Mapping[str, int]]) -> Metric:
    """`tpufleet_drift_items{source, kind}`: the drift of fresh exports against the state (as `tpufleet drift`),
    one sample per kind of each source given, zeros included (so an alert on `> 0` sees the series).

    >>> [(s.labels["kind"], s.value) for s in drift_family({"slices": {"conflict": 1, "shape": 0}}).samples]
    [('conflict', 1), ('shape', 0)]
    """
    family = GaugeMetricFamily(
        "tpufleet_drift_items",
        "Drift items between a fresh export (source: nodes, reservation, slices) and the state, by kind.",
        labels=["source", "kind"],
    )
    for source, kinds in drift.items():
        for kind, n in kinds.items():
            family.add_metric([source, kind], n)
    return family


def exposition(
    state: FleetState,
    last_change: float | None,
    goodput: dict[str, Any] | None = None,
    version: str = "",
    openmetrics: bool = False,
    drift: Mapping[str, Mapping[str, int]] | None = None,
    missing: Collection[str] = (),
) -> bytes:
    """The text a Prometheus server (or the node exporter's textfile collector) reads; `missing` as for
    `FleetCollector`."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(FleetCollector(state, last_change, goodput, version, drift, missing))
    if openmetrics:
        from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics

        om: bytes = generate_openmetrics(registry)  # type: ignore[no-untyped-call]  # unannotated in the library
        return om
    from prometheus_client import generate_latest

    return generate_latest(registry)
