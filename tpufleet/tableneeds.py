"""Which slices need routing tables made (pure): a slice of whole cubes runs on tables; a degraded one whose stored
tables predate a fault it is rerouted around, or that has none, runs through the failed part until `tpufleet routes`
stores tables around it."""

from __future__ import annotations

from tpufleet.constants import MOVED_TABLES_REASON
from tpufleet.fleetstate import FleetState, RouteRecord, Slice
from tpufleet.ids import natural_key


def needs_tables(state: FleetState, sl: Slice) -> bool:
    """Whether slice `sl` runs on routing tables: a slice of whole cubes always; a sub-cube slice (no optical
    links) only when tables are stored for it (`routes` made some: they then go stale and are made again as any)."""
    return not sl.machines or sl.name in state.routes


def tables_moved(record: RouteRecord | None) -> bool:
    """Whether stored tables are stale for a move (`reschedule`): made on the cubes the slice left."""
    return record is not None and record.stale and record.stale_reason == MOVED_TABLES_REASON


def tables_predating(state: FleetState, sl: Slice) -> list[str]:
    """The faults a degraded slice is rerouted around whose opening its stored tables predate: those tables still
    route through the failed part until `tpufleet routes` stores tables around it. None for a slice that is not
    rerouted, has no stored tables, or fresh ones (a fault makes the tables of every slice it reroutes stale); a
    fault recorded before faults kept their serial counts as later than the tables. Tables made before a move
    (`reschedule`) are of the cubes it left: they predate every fault, whenever they were made."""
    record = state.routes.get(sl.name)
    if sl.reroute is None or record is None or not record.stale or sl.machines:
        return []
    if tables_moved(record):
        return list(sl.reroute.faults)
    opened = {f: fault.opened_serial if (fault := state.fault(f)) is not None else None for f in sl.reroute.faults}
    return [f for f, serial in opened.items() if serial is None or serial > record.serial]


def degraded_without_tables(state: FleetState) -> list[str]:
    """The degraded slices of whole cubes with no stored tables, by name: rerouted around faults on paper, they run
    on their healthy tables through them until `tpufleet routes` makes some (`status`, `routes --stale`).

    >>> from tpufleet.model import default_fleet
    >>> degraded_without_tables(FleetState(default_fleet()))
    []
    """
    return sorted(
        (n for n, sl in state.slices.items() if sl.reroute is not None and not sl.machines and n not in state.routes),
        key=natural_key,
    )
