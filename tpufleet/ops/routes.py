"""Use case of routing tables: generate and check them on a snapshot, then index them if nothing moved.

Generating tables for a big slice takes seconds, so it runs outside the lock on the state as loaded; `record`
then runs inside a transaction and refuses if the state changed meanwhile (the tables would describe a network
that is no longer there).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tpufleet import wiring
from tpufleet.constants import EXPORT_FORMATS, HARDWARE_VCS
from tpufleet.errors import BadStateFile, Refused
from tpufleet.faults import kept_exactly, routed_around, thorough_may_keep
from tpufleet.fleetstate import Change, FleetState, Reroute, RouteRecord, Slice, SliceState
from tpufleet.movesteps import evicted_refusal
from tpufleet.ops.outcome import Outcome
from tpufleet.routing import export, reuse
from tpufleet.routing.figures import RouteReport
from tpufleet.routing.report import evaluate


def export_format(out: str, given: str | None) -> str:
    """The format of `routes --out`: `given` (--format), else the one the file's suffix names, else npz.

    >>> export_format("t.json", None), export_format("t.IBROUTE", None), export_format("t.bin", None)
    ('json', 'ibroute', 'npz')
    >>> export_format("t.json", "npz")
    'npz'
    """
    if given is not None:
        return given
    suffix = out.rpartition(".")[2].lower() if "." in out.rpartition("/")[2] else ""
    return suffix if suffix in EXPORT_FORMATS else "npz"


SPARSE_NOT_STORED = "sparse tables (--table-capacity) are for study"
# the working tables are known to be deadlock-free: unchecked ones never replace them
UNCHECKED_NOT_STORED = "tables not checked for deadlock (--no-deadlock-check) are for study"
STUDY_ONLY = (SPARSE_NOT_STORED, UNCHECKED_NOT_STORED)  # written where --out asks: the command's work is done


@dataclass
class RoutedSlice:
    name: str
    serial: int  # the state serial the tables were made at
    graph: wiring.SliceGraph
    report: RouteReport
    meta: dict[str, Any]
    thorough: bool = False  # made with order pairs whatever the slice's size (asked, or to keep its floor)
    # the tables' all-to-all throughput kept, measured for the slice's record when `--traffic` left it out
    all_to_all_kept: float | None = None

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
    thorough: bool = False,
) -> RoutedSlice:
    """Discover the slice as wired and as healthy as it is, make its tables and every figure (`thorough`: order
    pairs whatever the slice's size, also made when the quick tables keep less than the slice's floor); Refused
    when the slice is not wired, miswired, or the tables have a channel-dependency cycle."""
    sl = state.slice(name)
    if sl.state is SliceState.EVICTED:
        raise evicted_refusal(name)
    if not sl.state.wired and not sl.shape.is_subcube:
        raise Refused(f"slice {name!r} is {sl.state}, not wired; run `tpufleet plan-xconnect {name} --apply` first")
    graph = wiring.build(sl, state.fleet, state.ocs, state.health())
    if graph.miswired:
        raise Refused(
            f"slice {name!r} is not wired as a {sl.shape}: {len(graph.miswired)} miswired link(s)", graph.miswired
        )
    report = evaluate(
        sl.shape, graph.expected, graph.nbr, algorithm, traffics, deadlock_check, max_vcs=max_vcs, thorough=thorough
    )
    if algorithm == "auto" and deadlock_check and not thorough and _below_floor(sl, graph, report):
        # the fault path keeps such a slice on thorough tables: so do its stored ones
        thorough = True
        report = evaluate(sl.shape, graph.expected, graph.nbr, algorithm, traffics, max_vcs=max_vcs, thorough=True)
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
        # what the index entry names them by: `made` is to the second, and the slice's own older tables put back
        # from a copy made within that second must not pass for these
        "tables_id": secrets.token_hex(16),
        "algorithm": s["algorithm"],
        "vcs": s["vcs"],
        # which VC each hop takes is not fixed by a rule alone: the layout kept (see README, "Virtual channels")
        "vc_layout": s["vc_layout"],
        "wild_layers": report.tables.wild_layers,
    }
    return RoutedSlice(name, state.serial, graph, report, meta, thorough)


def _below_floor(sl: Slice, graph: wiring.SliceGraph, report: RouteReport) -> bool:
    """The quick tables route every pair but keep less of the all-to-all throughput than the slice's floor, where
    thorough tables may keep more (`faults.thorough_may_keep`); measured when `--traffic` left all-to-all out."""
    from tpufleet.routing.dimension_orders import broken_dims, thorough_may_help
    from tpufleet.routing.rescue import rescued

    s, chips, broken = report.summary, len(graph.expected), broken_dims(graph.expected, graph.nbr)
    if s["unroutable_pairs"] or rescued(s) or not thorough_may_help(sl.shape, chips, broken):
        return False
    exact = "all-to-all" in s["max_link_load"] and "all-to-all" in s.get("healthy_max_link_load", {})
    kept = kept_exactly(s) if exact else all_to_all_kept(sl, graph, report)
    return thorough_may_keep(sl, chips, True, kept, broken)


def all_to_all_kept(sl: Slice, graph: wiring.SliceGraph, report: RouteReport) -> float:
    """The all-to-all throughput the tables keep (of tables that route every pair), measured when `--traffic`
    left all-to-all out: a degraded slice's record carries it whatever traffic the tables were weighed for."""
    from tpufleet.routing.healthy import healthy_loads

    kept = report.summary["throughput_retained"].get("all-to-all")
    if kept is None:
        healthy = healthy_loads(sl.shape, graph.expected, ("all-to-all",))["all-to-all"]
        kept = round(healthy / reuse.all_to_all_load(report), 4)
    return float(kept)


def not_storable(routed: RoutedSlice, hardware_vcs: int, asked_vcs: int | None = None) -> str | None:
    """Why these tables must not replace the slice's working ones (None: they may). Tables over the VC budget
    asked for (`--max-vcs`) are not what was asked: when no table set fits it, the leanest is only shown."""
    s = routed.report.summary
    if s["unroutable_pairs"]:
        return f"{s['unroutable_pairs']} pairs are unroutable (export them with --out FILE to study)"
    if s["deadlock_free"] is not True:
        return UNCHECKED_NOT_STORED
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


def record(state: FleetState, routed: RoutedSlice, table_file: str, read_stored: ReadStored | None = None) -> Outcome:
    """Index the stored tables; Refused if the slice's live graph changed since they were computed (a commit
    elsewhere in the fleet leaves them valid: tables depend only on the slice's wiring and its links' health).
    With `read_stored` (the slice's stored tables, read under the lock), the outcome has no change to commit when
    they are the very tables made and the slice's record and index entry would stay as they are (`routes` run
    again with nothing changed: no new serial, no journal line)."""
    if state.serial != routed.serial and not still_valid(state, routed):
        raise Refused(
            f"the state changed while routes for {routed.name!r} were computed "
            f"(serial {routed.serial} -> {state.serial}: the slice, its wiring or its links' health); run again"
        )
    s, sl = routed.report.summary, state.slice(routed.name)
    before = (sl.state, sl.reroute, state.routes.get(routed.name))
    _update_degraded(state, routed)
    entry = RouteRecord(
        table_file,
        state.next_serial,
        routed.meta["made"],
        s["algorithm"],
        s["vcs"],
        s["routable_pairs"],
        s["unroutable_pairs"],
        tables_id=routed.meta["tables_id"],
    )
    state.record_routes(routed.name, entry)
    data = {"slice": routed.name, **s}
    if read_stored is not None and _nothing_changed(before, (sl.state, sl.reroute, entry), routed, read_stored):
        return Outcome(data, None)
    summary = (
        f"routes {routed.name}: {s['routable_pairs']} routable, {s['unroutable_pairs']} unroutable, {s['vcs']} VCs"
    )
    return Outcome(data, Change(summary))


def _nothing_changed(
    before: tuple[SliceState, Reroute | None, RouteRecord | None],
    after: tuple[SliceState, Reroute | None, RouteRecord],
    routed: RoutedSlice,
    read_stored: ReadStored,
) -> bool:
    """The slice's state and record are as they were, its index entry fresh and the same but for when the tables
    were made (and their id), and the stored tables are the very ones made (read last: the cheap checks decide most
    runs)."""
    import dataclasses

    from tpufleet.collectives.tables import not_indexed

    state, reroute, entry = after
    old_state, old_reroute, old_entry = before
    if old_entry is None or old_entry.stale or (old_state, old_reroute) != (state, reroute):
        return False
    if dataclasses.replace(old_entry, serial=entry.serial, made=entry.made, tables_id=entry.tables_id) != entry:
        return False
    try:
        stored = read_stored()
    except (BadStateFile, Refused):
        return False  # damaged tables are replaced
    if stored is None or not_indexed(stored.meta, routed.name, old_entry) is not None:  # not the indexed ones
        return False
    return reuse.same_tables(stored, routed.report.tables, routed.meta)


def still_valid(state: FleetState, routed: RoutedSlice) -> bool:
    """Whether the slice still exists, is still wired, and its live chip graph is the one the tables were made for."""
    import numpy as np

    sl = state.slices.get(routed.name)
    if sl is None or sl.state is SliceState.EVICTED or (not sl.state.wired and not sl.shape.is_subcube):
        return False
    graph = wiring.build(sl, state.fleet, state.ocs, state.health())
    before = routed.graph
    return (
        not graph.miswired and np.array_equal(graph.expected, before.expected) and np.array_equal(graph.nbr, before.nbr)
    )


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
    kept = s["throughput_retained"].get("all-to-all", routed.all_to_all_kept)
    if kept is None:  # `route_slice` measures it for every table set it stores
        raise ValueError(f"tables of {routed.name!r} recorded without their all-to-all throughput kept")
    state.degrade(sl.name, Reroute(kept, s["vcs"] or 0, routed_around(state, sl)))


# ---- `routes SLICE`: the whole operation ---------------------------------------------------------------------


@dataclass(frozen=True)
class RouteRequest:
    algorithm: str
    traffics: list[str]
    deadlock_check: bool
    max_vcs: int = HARDWARE_VCS
    thorough: bool = False  # order pairs whatever the slice's size (`dimension_orders.order_pairs`)


@dataclass
class SliceRoutes:
    data: dict[str, Any]  # the documented result of one slice
    unroutable: list[str]
    refusal: str | None  # why the tables were not stored (None: they were)
    exported: bytes | None  # the tables in the export format asked for (None: no export asked)


# Stores the tables (npz bytes) of a routed slice with the transaction that indexes them (`record`); returns
# where they are kept and whether anything was committed (not when they were the very tables stored). The
# shell's: it owns the state directory.
StoreTables = Callable[[RoutedSlice, bytes], tuple[str, bool]]
# Reads the slice's stored tables with every member the router weighs (None: none stored); the shell's too.
ReadStored = Callable[[], reuse.StoredRoutes | None]


def route_slice(
    state: FleetState,
    name: str,
    req: RouteRequest,
    now: str,
    store_tables: StoreTables,
    table_capacity: int | None = None,
    export_format: str | None = None,
    read_stored: ReadStored | None = None,
) -> SliceRoutes:
    """Generate and check one slice's tables on `state` (a snapshot: `record` refuses if it moved on), store
    them when they may replace the working ones, and make the export asked for (`export_format`). Sparse tables
    (`table_capacity`) are for study and export only, never stored. The slice's stored tables (`read_stored`)
    are kept instead of the new ones where they are lighter (`keep_lighter_stored`)."""
    routed = compute(state, name, req.algorithm, req.traffics, req.deadlock_check, now, req.max_vcs, req.thorough)
    kept = False
    if read_stored is not None and table_capacity is None:
        routed, kept = keep_lighter_stored(state, routed, req, read_stored)
    sparse_note: dict[str, Any] = {}
    if table_capacity is not None:
        routed, missing = sparse(routed, table_capacity)
        sparse_note = {"table_capacity": table_capacity, "ring_entries_missing": missing}
    refusal = not_storable(routed, HARDWARE_VCS, req.max_vcs)
    if sparse_note and refusal is None:
        refusal = SPARSE_NOT_STORED
    if refusal is None and "all-to-all" not in routed.report.summary["throughput_retained"]:
        routed.all_to_all_kept = all_to_all_kept(state.slice(name), routed.graph, routed.report)
    data = {
        "slice": name,
        **routed.report.summary,
        **sparse_note,
        "unroutable": routed.unroutable[:1000],
        "thorough": routed.thorough,
        "stored": refusal is None,
        "changed": False,  # set once the tables are committed (`_store_and_export`)
        "kept_stored_tables": kept,
    }
    exported = _store_and_export(routed, refusal, export_format, store_tables, data)
    return SliceRoutes(data, routed.unroutable, refusal, exported)


def keep_lighter_stored(
    state: FleetState, routed: RoutedSlice, req: RouteRequest, read_stored: ReadStored
) -> tuple[RoutedSlice, bool]:
    """`routed`, or the slice's stored tables with their figures on the live graph, and whether those were kept.

    Clearing one of several faults only gives the slice links back, so its stored tables (made around all of
    them) still route it, and may be lighter than tables made afresh for the faults left. They are kept when they
    were made for the slice as it is (`reuse.made_for`), route every pair on live links, are deadlock-free within
    the VC budget and the hardware's, and carry all-to-all strictly lighter than the new tables
    (`reuse.lighter_stored`). Only for `auto` tables checked for deadlock that may be stored (new tables that may
    not are a study, shown as made), and never on a whole slice: its healthy tables are the ones it runs on."""
    graph, sl = routed.graph, state.slice(routed.name)
    whole = bool((graph.nbr == graph.expected).all())
    if req.algorithm != "auto" or not req.deadlock_check or whole or routed.name not in state.routes:
        return routed, False
    if not_storable(routed, HARDWARE_VCS, req.max_vcs) is not None:
        return routed, False
    try:
        stored = read_stored()
    except (BadStateFile, Refused):
        return routed, False  # tables that cannot be read are no candidate: the new ones replace them
    if stored is None or not reuse.made_for(stored, routed.name, sl.shape, sl.connected_serial):
        return routed, False
    budget = min(req.max_vcs, HARDWARE_VCS)
    report = reuse.lighter_stored(sl.shape, graph.expected, graph.nbr, req.traffics, budget, stored, routed.report)
    if report is None:
        return routed, False
    s = report.summary
    meta = {**routed.meta, "vcs": s["vcs"], "vc_layout": s["vc_layout"], "wild_layers": report.tables.wild_layers}
    return RoutedSlice(routed.name, routed.serial, graph, report, meta, routed.thorough), True


def _store_and_export(
    routed: RoutedSlice, refusal: str | None, export_format: str | None, store_tables: StoreTables, data: dict[str, Any]
) -> bytes | None:
    """Store the tables unless `refusal` says why not (noted in `data`), and return the export asked for."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="npz") as pool:
        # The npz is deflated (zlib lets go of the GIL) while the state is locked, checked and committed.
        wanted = refusal is None or export_format == "npz"
        npz = pool.submit(export_bytes, routed, "npz") if wanted else None
        # An export that cannot be made (JSON of a huge slice) refuses here, before anything is committed.
        exported = None if export_format in (None, "npz") else export_bytes(routed, str(export_format))
        if refusal is None and npz is not None:
            data["tables"], data["changed"] = store_tables(routed, npz.result())
        else:
            data["not_stored"] = refusal
        if export_format is None:
            return None
        return exported if exported is not None else npz.result() if npz is not None else b""
