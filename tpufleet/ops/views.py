"""Use cases that only read: `show`, `status`, `report` and `topology`.

Each loads what it needs from the store (never taking the write lock) and returns the document the command renders;
the pure views (`tpufleet.views`, `fleetmap`, `fleetreport`, `topology`) compute it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from itertools import pairwise
from typing import TYPE_CHECKING, Any, Literal

from tpufleet import views
from tpufleet.errors import BadInput
from tpufleet.fleetreport import JOURNAL_LINES
from tpufleet.fleetreport import report as fleet_report
from tpufleet.fleetstate import FleetState, SliceState
from tpufleet.ids import natural_key
from tpufleet.journalentry import JournalEntry
from tpufleet.state import generations
from tpufleet.state.journal import Enough, Scan
from tpufleet.state.store import Store, is_database_url
from tpufleet.tableneeds import degraded_without_tables

if TYPE_CHECKING:
    from collections.abc import Collection

    from tpufleet.fleetmap import FleetMap
    from tpufleet.shapes import Shape

ShowWhat = Literal["inventory", "health", "slices", "jobs", "ocs", "journal"]

_ROWS = {
    "inventory": views.inventory,
    "health": views.health_rows,
    "slices": views.slice_rows,
    "jobs": views.job_rows,
    "ocs": views.ocs_rows,
}


@dataclass(frozen=True)
class Listing:
    """The rows of one `show` part; `damaged`: journal line numbers skipped as damaged (journal only)."""

    rows: list[dict[str, Any]]
    journal: JournalRead | None = None  # `show journal`: the reading, for what it says of the journal's lines


@dataclass(frozen=True)
class JournalRead:
    """The committed journal entries, and the line numbers of damaged lines skipped."""

    entries: list[JournalEntry]
    damaged: list[int]
    serial: int = 0  # the state's: the journal's last entry may be a damaged line's
    high: int = 0  # the highest serial read (`Scan.high`)
    trailing: int = 0  # damaged lines after the last entry (`Scan.kept`)
    beyond: list[int] = field(default_factory=list)  # serials of entries beyond the state's (`Scan.beyond`)
    crash_leaves: int = 1  # entries beyond the state's serial a crash may leave: one in a directory, none in a database

    @property
    def gap(self) -> tuple[int, int] | None:
        """See `journal_gap`."""
        return journal_gap(self.high, self.serial, self.trailing)

    @property
    def missing(self) -> list[tuple[int, int]]:
        """See `inner_gaps`."""
        return inner_gaps([e.serial for e in self.entries], len(self.damaged) - self.trailing)


def of_scan(read: Scan, serial: int, store: Store | None = None) -> JournalRead:
    """The `JournalRead` of a scan of the journal against the state's `serial` (of `store`'s journal: a database's
    commit writes its row and the state's at once, so no crash leaves an entry beyond its serial)."""
    leaves = 0 if store is not None and is_database_url(store.where) else 1
    return JournalRead(read.entries, read.damaged, serial, read.high, len(read.kept), read.beyond, leaves)


def inner_gaps(serials: list[int], damaged: int = 0) -> list[tuple[int, int]]:
    """The serials missing between the entries read (first, last for each run): lines lost inside the journal,
    their changes shown nowhere. Empty when no more are missing than `damaged` lines (named as such, each of
    which may be one of them) stand among the entries."""
    ordered = sorted(set(serials))
    runs = [(a + 1, b - 1) for a, b in pairwise(ordered) if b > a + 1]
    return runs if sum(last - first + 1 for first, last in runs) > damaged else []


def inner_gap_note(runs: list[tuple[int, int]]) -> str:
    """What a reader says of `inner_gaps`."""
    named = [f"{first}" if first == last else f"{first}..{last}" for first, last in runs[:5]]
    more = " ..." if len(runs) > 5 else ""
    return f"serials {', '.join(named)}{more} are missing inside it: their changes are not in it (lines lost?)"


def journal_gap(high: int, serial: int, trailing: int = 0) -> tuple[int, int] | None:
    """The serials after the journal's last entry (`high`, the highest serial read) up to the state's `serial`
    (first, last): its last lines are lost (an older journal put back, say), their changes shown nowhere. None when
    it reaches the state's, or when as many damaged lines (named as such) follow its last entry as serials are
    missing."""
    return (high + 1, serial) if serial - high > trailing else None


def gap_note(gap: tuple[int, int]) -> str:
    """What a reader says of `journal_gap`."""
    first, last = gap
    serials = f"serial {first}" if first == last else f"serials {first}..{last}"
    return (
        f"its last entry is serial {first - 1}, the state's serial is {last}: the changes of {serials} are not in it "
        "(lines lost, or an older journal put back?)"
    )


def journal_notes(read: JournalRead) -> list[str]:
    """What every reader that presents the journal says of it on stderr (the command line and `serve` alike): its
    damaged lines skipped, serials missing inside it or at its end, entries beyond the state's serial."""
    notes = []
    if read.damaged:
        lines = ", ".join(map(str, read.damaged[:10])) + (" ..." if len(read.damaged) > 10 else "")
        notes.append(f"damaged line(s) {lines} skipped")
    if read.missing:
        notes.append(inner_gap_note(read.missing))
    if read.gap is not None:
        notes.append(gap_note(read.gap))
    beyond = beyond_note(read.serial, read.beyond, read.crash_leaves)
    return notes if beyond is None else [*notes, beyond]


def beyond_note(serial: int, beyond: list[int], crash_leaves: int = 1) -> str | None:
    """What a reader says of more entries beyond the state's serial than a crash leaves (one in a directory, none
    in a database): the state is older than its journal, which every writer refuses; readers show the state's
    serials only. None for no more than that."""
    if len(beyond) <= crash_leaves:
        return None
    return (
        f"{len(beyond)} entries are beyond the state's serial {serial} (up to serial {max(beyond)}), where a crash "
        f"leaves {'at most one' if crash_leaves else 'none'}: the state is older than its journal (restored from a "
        "backup?); they are not shown, "
        "and every change is refused until the state file of the journal's last serial is put back or the journal "
        "is moved aside"
    )


def read_journal(store: Store, tail: int | None = None, enough: Enough | None = None) -> JournalRead:
    """The journal up to the state's serial (`history`, `diff`, `show journal`); `tail`: its last entries only,
    `enough`: back from its end until the entries read suffice (then the damaged lines among those read only)."""
    serial = store.load().serial
    if tail:
        read = store.journal_tail(tail, serial)
    elif enough is not None:
        read = store.journal_back(enough, serial)
    else:
        read = store.journal_scan(serial)
    return of_scan(read, serial, store)


def show(store: Store, what: ShowWhat, tail: int | None = None) -> Listing:
    """The rows of one part of the fleet state (`tail`: the journal's last N entries)."""
    if what == "slices":
        return Listing(views.slice_rows(*tables_as_stored(store, store.load())))
    if what != "journal":
        return Listing(_ROWS[what](store.load()))
    read = read_journal(store, tail)
    return Listing([e.record() for e in read.entries], read)


def show_map(store: Store, pod: str | None = None) -> FleetMap:
    """The picture of each pod (or of `pod` only)."""
    from tpufleet.fleetmap import fleet_map

    return fleet_map(store.load(), pod)


def status(store: Store) -> dict[str, Any]:
    """`tpufleet status`: one screen of the fleet (with the symbolic links standing where missing tables belong:
    `routes` refuses them, so the step is to remove them first)."""
    state, missing = tables_as_stored(store, store.load())
    return views.status(state, missing, store.linked_tables(missing))


def missing_tables(store: Store, state: FleetState, only: Collection[str] | None = None) -> set[str]:
    """The slices whose indexed routing tables are no longer kept (a file removed by hand, damaged, or replaced by
    another slice's); with `only`, of those slices alone (each file checked is read through: a command that shows
    a few slices reads no other's)."""
    indexed = state.routes if only is None else {name: state.routes[name] for name in only if name in state.routes}
    return set(indexed) - store.tables_present(indexed)


def tables_to_remake(store: Store, state: FleetState) -> tuple[list[str], dict[str, str]]:
    """`routes --stale`: the slices whose stored tables are stale or missing, as `status` lists them, in name
    order, with the degraded slices that have none (they run through their faults: `status` lists them too), and
    those of them `routes` should not remake now, each with why: an evicted slice's tables wait for its
    move (`reschedule`), a slice whose missing cross-connects can be programmed now for its wiring (tables made
    first would go stale again), and a symbolic link standing where a slice's tables belong is never written
    through."""
    state, missing = tables_as_stored(store, state)
    linked = store.linked_tables(missing)
    wanted = sorted(
        {*(n for n, r in state.routes.items() if r.stale or n in missing), *degraded_without_tables(state)},
        key=natural_key,
    )
    skipped = {n: why for n in wanted if (why := _not_now(state, n, linked)) is not None}
    return [n for n in wanted if n not in skipped], skipped


def _not_now(state: FleetState, name: str, linked: dict[str, str]) -> str | None:
    sl = state.slices[name]
    if sl.state is SliceState.EVICTED:
        return f"evicted: `tpufleet reschedule {name}` moves it first"
    if views.missing_xconnects(state, sl) and views.wiring_wait(state, sl) is None:
        return f"cross-connects missing: `tpufleet plan-xconnect {name} --apply` first"
    if name in linked:
        return f"a symbolic link stands where its tables belong ({linked[name]}): remove it first"
    return None


def tables_as_stored(
    store: Store, state: FleetState, only: Collection[str] | None = None
) -> tuple[FleetState, set[str]]:
    """The state with its tables' index entries as the stored tables stand, and the slices whose tables are missing
    (`missing_tables`, of the slices `only` names when given). Tables a command killed between its commit and their
    rename left waiting under a temporary name are not in place yet: the file holds the ones before them, which
    `collective` models flagged stale until the next change installs them; their entries read stale here too (in
    this copy only: nothing is written)."""
    missing = missing_tables(store, state, only)
    kept = {name: entry for name, entry in state.routes.items() if name not in missing and not entry.stale}
    waiting = store.tables_waiting(kept)
    if not waiting:
        return state, missing
    from dataclasses import replace

    from tpufleet.collectives.tables import WAITING_REASON

    stale = {name: replace(kept[name], stale=True, stale_reason=WAITING_REASON) for name in waiting}
    return replace(state, routes={**state.routes, **stale}), missing


@dataclass(frozen=True)
class Report:
    """The fleet report's document and the map it draws."""

    document: dict[str, Any]
    map: FleetMap
    journal: JournalRead  # the latest changes' reading, for what it says of the journal's lines


def report(store: Store, now: datetime) -> Report:
    """`tpufleet report`: slices, open faults with their age at `now`, the latest changes, and the map."""
    from tpufleet.fleetmap import fleet_map

    state, missing = tables_as_stored(store, store.load())
    latest = store.journal_tail(JOURNAL_LINES, state.serial)
    document = fleet_report(state, latest.entries, now, missing, latest.damaged, store.linked_tables(missing))
    return Report(document, fleet_map(state), of_scan(latest, state.serial, store))


def topology(shape: str, twisted: bool, generation: str | None) -> dict[str, Any]:
    """`tpufleet topology`: the figures of a slice shape under a generation's rule (None: TPU v4's)."""
    from tpufleet.shapes import parse_shape, require_allocatable
    from tpufleet.topology import metrics

    gen = None if generation is None else generations.named_by_option(generation)
    parsed = require_allocatable(parse_shape(shape, twisted, gen))
    figures = metrics(parsed)
    if gen is not None:
        figures["generation"] = gen.name
    else:  # a what-if under the general rule: say which pods could hold it (none: a shape no pod holds)
        figures["generations"] = [name for name in generations.names() if _holds(name, parsed)]
    return figures


def _holds(generation: str, shape: Shape) -> bool:
    from tpufleet.shapes import check_generation

    try:
        check_generation(shape, generations.shipped(generation))
    except BadInput:
        return False
    return True
