"""Use case of routing tables: generate and check them on a snapshot, then index them if nothing moved.

Generating tables for a big slice takes seconds, so it runs outside the lock on the state as loaded; `record`
then runs inside a transaction and refuses if the state changed meanwhile (the tables would describe a network
that is no longer there).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tpufleet import wiring
from tpufleet.constants import HARDWARE_VCS
from tpufleet.errors import Refused
from tpufleet.fleetstate import Change, FleetState, Reroute, RouteRecord, SliceState
from tpufleet.ids import LinkId, OcsId
from tpufleet.ops.outcome import Outcome
from tpufleet.routing import export
from tpufleet.routing.report import RouteReport, evaluate

EXPORT_FORMATS = ("npz", "json", "ibroute")


@dataclass
class RoutedSlice:
    name: str
    serial: int  # the state serial the tables were made at
    graph: wiring.SliceGraph
    report: RouteReport
    meta: dict[str, Any]

    @property
    def unroutable(self) -> list[str]:
        names = self.graph.chip_names
        return [f"{names[a]} -> {names[b]}" for a, b in self.report.unroutable]


def compute(
    state: FleetState,
    name: str,
    algorithm: str,
    traffics: Sequence[str],
    deadlock_check: bool,
    now: str,
    max_vcs: int = HARDWARE_VCS,
) -> RoutedSlice:
    """Discover the slice as wired and as healthy as it is, make its tables and every figure; Refused when the
    slice is not wired, miswired, or the tables have a channel-dependency cycle."""
    sl = state.slice(name)
    if sl.state is SliceState.EVICTED:
        raise Refused(f"slice {name!r} is evicted; run `tpufleet reschedule {name}` first")
    if not sl.state.wired and not sl.shape.is_subcube:
        raise Refused(f"slice {name!r} is {sl.state}, not wired; run `tpufleet plan-xconnect {name} --apply` first")
    graph = wiring.build(sl, state.fleet, state.ocs, state.health())
    if graph.miswired:
        raise Refused(
            f"slice {name!r} is not wired as a {sl.shape}: {len(graph.miswired)} miswired link(s)", graph.miswired
        )
    report = evaluate(sl.shape, graph.expected, graph.nbr, algorithm, traffics, deadlock_check, max_vcs=max_vcs)
    s = report.summary
    if s["deadlock_free"] is False:
        raise Refused(
            f"tables for {name!r} have a channel-dependency cycle; not written: " + " -> ".join(report.cycle[:12])
        )
    meta = {
        "slice": name,
        "shape": sl.shape.text,
        "twisted": sl.shape.twisted,
        "serial": state.serial,
        "made": now,
        "algorithm": s["algorithm"],
        "vcs": s["vcs"],
        # which VC each hop takes is not fixed by a rule alone: the layout kept (see README, "Virtual channels")
        "vc_layout": s["vc_layout"],
        "wild_layers": report.tables.wild_layers,
    }
    return RoutedSlice(name, state.serial, graph, report, meta)


def not_storable(routed: RoutedSlice, hardware_vcs: int, asked_vcs: int | None = None) -> str | None:
    """Why these tables must not replace the slice's working ones (None: they may). Tables over the VC budget
    asked for (`--max-vcs`) are not what was asked: when no table set fits it, the leanest is only shown."""
    s = routed.report.summary
    if s["unroutable_pairs"]:
        return f"{s['unroutable_pairs']} pairs are unroutable (export them with --out FILE to study)"
    if s["vcs"] is not None and s["vcs"] > hardware_vcs:
        return f"they need {s['vcs']} virtual channels and the hardware has {hardware_vcs}"
    if s["vcs"] is not None and asked_vcs is not None and s["vcs"] > asked_vcs:
        return f"they need {s['vcs']} virtual channels, more than --max-vcs {asked_vcs} allows"
    return None


def sparse(routed: RoutedSlice, capacity: int) -> tuple[RoutedSlice, int]:
    """The same tables with at most `capacity` destinations a chip (each chip's own rings per dimension first, as
    the TPU-v3 multipod's 1,024-entry tables held), for study and export; and the ring entries that did not fit."""
    import dataclasses

    from tpufleet.collectives.sparse import sparse_route_tables

    tables, missing = sparse_route_tables(routed.report.tables, routed.graph.expected, capacity)
    report = dataclasses.replace(routed.report, tables=tables)
    return dataclasses.replace(routed, report=report), missing


def export_bytes(routed: RoutedSlice, fmt: str) -> bytes:
    """The tables in an export format (npz is also what the state directory keeps)."""
    tables, names = routed.report.tables, routed.graph.chip_names
    if fmt == "npz":
        return export.npz_bytes(tables, routed.meta)
    if fmt == "json":
        return export.json_text(tables, routed.meta, names).encode()
    return export.ibroute_text(tables, names, routed.name).encode()


def record(state: FleetState, routed: RoutedSlice, table_file: str) -> Outcome:
    """Index the stored tables; Refused if the state moved on since they were computed."""
    if state.serial != routed.serial or routed.name not in state.slices:
        raise Refused(
            f"the state changed while routes for {routed.name!r} were computed "
            f"(serial {routed.serial} -> {state.serial}); run again"
        )
    s = routed.report.summary
    _update_degraded(state, routed)
    state.routes[routed.name] = RouteRecord(
        table_file,
        state.next_serial,
        routed.meta["made"],
        s["algorithm"],
        s["vcs"],
        s["routable_pairs"],
        s["unroutable_pairs"],
    )
    data = {"slice": routed.name, **s}
    summary = (
        f"routes {routed.name}: {s['routable_pairs']} routable, {s['unroutable_pairs']} unroutable, {s['vcs']} VCs"
    )
    return Outcome(data, Change(summary))


def _update_degraded(state: FleetState, routed: RoutedSlice) -> None:
    """Tables that route around faults leave the slice degraded, with their figures; tables of a whole slice
    make it plainly connected again."""
    sl = state.slice(routed.name)
    if not sl.state.wired:
        return
    s = routed.report.summary
    if not routed.graph.missing and not s["pairs_broken_by_faults"]:
        state.recover(sl.name)
        return
    cubes = set(sl.cubes)
    avoided = tuple(
        f.id
        for f in state.open_faults()
        if isinstance(f.target, (OcsId, LinkId))
        and (f.target.pod == sl.pod if isinstance(f.target, OcsId) else f.target.cube in cubes)
    )
    state.degrade(sl.name, Reroute(s["throughput_retained"].get("all-to-all", 0.0), s["vcs"] or 0, avoided))
