"""The families the monitoring mixin's alerts need beside those of `tpufleet metrics` (pure).

`tpufleet serve` adds them to its `/metrics`: each pod's spare target and free healthy cubes (as `plan-spares`
works them out), each slice's state, throughput floor and table freshness (and whether its tables still cross a
fault it is rerouted around), each open fault's opening time and the
repair time of its kind, and each maintenance a reservation announced for a later window with the slices still on
its cube. A fleet has tens of slices and open faults, so labelling by slice and fault stays small.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from prometheus_client.core import GaugeMetricFamily, Metric

from tpufleet.constants import HOUR
from tpufleet.fleetstate import FleetState, SliceState
from tpufleet.ids import natural_key
from tpufleet.tableneeds import needs_tables, tables_predating
from tpufleet.timeparse import parse_stamp
from tpufleet.views import reservation_maintenance

# The repair time that stands for each kind of component (the rate files' `repair_hours` keys): a chip, an
# electrical link or a whole cube is repaired as its machine is.
REPAIR_KEY = {"cube": "host", "host": "host", "chip": "host", "ici": "host", "link": "link", "ocs": "ocs"}


def alert_families(
    state: FleetState,
    spare_rows: Sequence[Mapping[str, Any]],
    repair_hours: Mapping[str, float],
    missing: Collection[str] = (),
) -> list[Metric]:
    """The families of one state; `spare_rows`: `plan-spares`' pods (pod, best_spares, free_healthy_cubes);
    `repair_hours`: hours to repair by rate-file key (host, link, ocs); `missing`: slices whose indexed routing
    tables are no longer kept (as `status` says them)."""
    return [*_spares(spare_rows), *_slices(state, missing), *_faults(state, repair_hours), *_maintenance(state)]


def _spares(rows: Sequence[Mapping[str, Any]]) -> list[Metric]:
    target = GaugeMetricFamily(
        "tpufleet_pod_spare_target_cubes",
        "Spare cubes plan-spares holds back for a pod's slices (95% over 7 days, the pod's rates).",
        labels=["pod"],
    )
    free = GaugeMetricFamily(
        "tpufleet_pod_free_healthy_cubes",
        "Free cubes of a pod that plan-spares counts as spares: no open fault, no slice or machine in use, no "
        "maintenance announced within its 7 days, less those the cluster's unplaced node pools hold.",
        labels=["pod"],
    )
    for row in rows:
        target.add_metric([row["pod"]], row["best_spares"])
        free.add_metric([row["pod"]], row["free_healthy_cubes"])
    return [target, free]


def _slices(state: FleetState, missing: Collection[str]) -> list[Metric]:
    states = GaugeMetricFamily(
        "tpufleet_slice_state", "1 for the state a slice is in, 0 for the others.", labels=["slice", "state"]
    )
    floor = GaugeMetricFamily(
        "tpufleet_slice_min_throughput_ratio",
        "Throughput floor of a slice: below it a fault evicts the slice instead of rerouting it.",
        labels=["slice"],
        unit="ratio",
    )
    stale = GaugeMetricFamily(
        "tpufleet_slice_route_tables_stale", "1 when a slice's stored routing tables no longer match.", labels=["slice"]
    )
    gone = GaugeMetricFamily(
        "tpufleet_slice_route_tables_missing",
        "1 when a slice's indexed routing tables are no longer kept (a file removed by hand, or damaged).",
        labels=["slice"],
    )
    through = GaugeMetricFamily(
        "tpufleet_slice_route_tables_through_faults",
        "1 when a rerouted slice's stored routing tables predate a fault it routes around, or it has none stored: "
        "its traffic still crosses the failed part.",
        labels=["slice"],
    )
    for name in sorted(state.slices, key=natural_key):  # s9 before s10, as slices are counted
        sl = state.slices[name]
        for value in SliceState:
            states.add_metric([name, value.value], 1 if sl.state is value else 0)
        floor.add_metric([name], sl.min_throughput)
        record = state.routes.get(name)
        gone_now = record is not None and name in missing  # missing wins: the stale file is gone (`status`)
        stale.add_metric([name], 1 if record is not None and record.stale and not gone_now else 0)
        gone.add_metric([name], 1 if gone_now else 0)
        unrouted = record is None and sl.reroute is not None and needs_tables(state, sl)  # none made around it
        through.add_metric([name], 1 if (tables_predating(state, sl) or unrouted) and not gone_now else 0)
    return [states, floor, stale, gone, through]


def _faults(state: FleetState, repair_hours: Mapping[str, float]) -> list[Metric]:
    opened = GaugeMetricFamily(
        "tpufleet_fault_opened_timestamp_seconds",
        "Unix time an open fault or drain was recorded.",
        labels=["fault", "target", "kind", "planned"],
        unit="seconds",
    )
    for fault in state.open_faults():
        when = parse_stamp(fault.opened)
        if when is not None:
            labels = [fault.id, str(fault.target), fault.target.kind, str(fault.planned).lower()]
            opened.add_metric(labels, when.timestamp())
    repair = GaugeMetricFamily(
        "tpufleet_fault_repair_seconds",
        "Expected repair time of a failed component of this kind (the fault rates' repair hours).",
        labels=["kind"],
        unit="seconds",
    )
    for kind, key in REPAIR_KEY.items():
        if key in repair_hours:
            repair.add_metric([kind], float(repair_hours[key]) * HOUR)
    return [opened, repair]


def _maintenance(state: FleetState) -> list[Metric]:
    """The maintenance `import reservation` found announced for a later window (no planned drain open on its cube
    yet): when its window starts, and how many slices the drain would stop if they are not moved first."""
    labels = ["pod", "cube", "sub_block"]
    start = GaugeMetricFamily(
        "tpufleet_maintenance_window_start_timestamp_seconds",
        "Unix time the window of maintenance announced on a cube (a reservation sub-block) starts.",
        labels=labels,
        unit="seconds",
    )
    slices = GaugeMetricFamily(
        "tpufleet_maintenance_slices",
        "Slices on a cube under announced maintenance: its drain stops them unless they are moved first.",
        labels=labels,
    )
    for row in reservation_maintenance(state):
        when = parse_stamp(row["window_start"]) if row["window_start"] is not None else None
        if row["drained"] or when is None:
            continue
        start.add_metric([row["pod"], row["cube"], row["sub_block"]], when.timestamp())
        slices.add_metric([row["pod"], row["cube"], row["sub_block"]], len(row["slices"]))
    return [start, slices]
