"""What `tpufleet serve` answers, made from one snapshot by the same use cases and renderers as the CLI: the JSON of
`status`, `show slices|jobs|journal` and `faults` (`-o json`, the same encoder), the exposition of `tpufleet
metrics` with the mixin's families, and the page of `report -o html` refreshing itself."""

from __future__ import annotations

import bisect
import re
import sys
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from prometheus_client import CollectorRegistry
from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from tpufleet.cli.render import to_json
from tpufleet.fleetstate import FleetState
from tpufleet.serve.snapshot import Extras, Snapshot

OPENMETRICS_TYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8"
PROMETHEUS_TYPE = "text/plain; version=0.0.4; charset=utf-8"


@dataclass(frozen=True)
class MetricsInputs:
    """What the mixin's families need beside the state: `plan-spares`' inputs and the repair times; `moment`: what
    of the clock the spare rows depend on for a state (the cubes whose announced maintenance has come within the
    horizon), so that the metrics are made again when it changes, not only at a commit."""

    spare_rows: Callable[[FleetState], list[dict[str, Any]]]
    repair_hours: Mapping[str, float]
    moment: Callable[[FleetState], Hashable] = lambda state: ()


def etag(snap: Snapshot) -> str:
    """The entity tag of the snapshot's JSON documents: its serial, quoted (`"42"`), while the stored routing tables
    stand as committed; else the serial and a digest of how they stand (`"42-1f0c..."`: removed, replaced by
    hand, linked, waiting), which the documents say too. A client holding the documents from before such a change
    must not be told they did not change (304)."""
    return str(snap.cached("etag", lambda: _etag(snap)))


def _etag(snap: Snapshot) -> str:
    import hashlib
    import json

    from tpufleet.ops.views import tables_as_stored

    committed = snap.store.state
    state, missing = tables_as_stored(snap.store, committed)
    waiting = sorted(name for name, entry in state.routes.items() if entry is not committed.routes.get(name))
    linked = sorted(snap.store.linked_tables(missing).items())
    if not (missing or waiting or linked):
        return f'"{committed.serial}"'
    stand = json.dumps([sorted(missing), waiting, linked]).encode()
    return f'"{committed.serial}-{hashlib.sha256(stand).hexdigest()[:16]}"'


def status(snap: Snapshot) -> bytes:
    from tpufleet.ops import views

    return snap.cached("status", lambda: to_json(views.status(snap.store)).encode())


def rows(snap: Snapshot, what: Literal["slices", "jobs"]) -> bytes:
    """`show slices` or `show jobs` -o json."""
    from tpufleet.ops import views

    return snap.cached(what, lambda: to_json(views.show(snap.store, what).rows).encode())


def faults(snap: Snapshot, all_faults: bool) -> bytes:
    from tpufleet.ops import faults as fault_ops

    return snap.cached(f"faults:{all_faults}", lambda: to_json(fault_ops.listing(snap.store, all_faults)).encode())


def journal(snap: Snapshot, since: int) -> bytes:
    """`show journal -o json`, the entries after serial `since` only; damaged lines skipped, and serials the journal
    lacks inside it or at its end or holds beyond the state's, are said on stderr, once a state's serial, as `show journal` says
    them."""
    from tpufleet.ops import views

    def read() -> list[dict[str, Any]]:
        listing = views.show(snap.store, "journal")
        notes = views.journal_notes(listing.journal) if listing.journal is not None else []
        for note in notes:
            print(f"tpufleet: warning: {snap.store.journal_label}: {note}", file=sys.stderr)
        return listing.rows

    whole = snap.cached("journal", lambda: _Journal.of(read()))
    return whole.after(since)


@dataclass(frozen=True)
class _Journal:
    """`show journal -o json` made once for a serial, with where each entry's text starts in it: the entries after
    any serial are a tail of the list, cut from the one text (the same bytes as encoding that tail), rather than the
    whole history encoded again for each request (a second of work for a long one)."""

    entries: list[dict[str, Any]]
    text: bytes
    serials: list[int]
    starts: list[int]  # where each entry's text begins ("\n  {", the list's own indentation); [] if not cut

    @classmethod
    def of(cls, entries: list[dict[str, Any]]) -> _Journal:
        text = to_json(entries).encode()
        serials = [int(e["serial"]) for e in entries]
        starts = [m.start() for m in re.finditer(rb"\n  \{", text)]
        if len(starts) != len(entries) or serials != sorted(serials):  # (never so: then each tail is encoded)
            starts = []
        return cls(entries, text, serials, starts)

    def after(self, since: int) -> bytes:
        if not self.starts:
            return to_json([e for e in self.entries if e["serial"] > since]).encode()
        first = bisect.bisect_right(self.serials, since)
        if first == len(self.serials):
            return b"[]"
        return self.text if first == 0 else b"[" + self.text[self.starts[first] :]


class _Families(Collector):
    def __init__(self, families: list[Metric]) -> None:
        self.families = families

    def collect(self) -> list[Metric]:
        return self.families


def metrics(snap: Snapshot, extras: Extras, openmetrics: bool, inputs: MetricsInputs) -> bytes:
    """The families of `tpufleet metrics` (with the goodput of `serve --goodput`, `extras`), then the mixin's: made
    once for a serial, a read of the logs and a moment of the clock as the spare rows see it."""
    version = (extras.key, inputs.moment(snap.store.state))
    return snap.cached(f"metrics:{openmetrics}", lambda: _exposition(snap, extras.values, openmetrics, inputs), version)


def _exposition(snap: Snapshot, extras: Mapping[str, Any], openmetrics: bool, inputs: MetricsInputs) -> bytes:
    from tpufleet import __version__
    from tpufleet.integrations.alertmetrics import alert_families
    from tpufleet.integrations.metrics import FleetCollector
    from tpufleet.ops.fleetio import last_change
    from tpufleet.ops.views import tables_as_stored

    state, missing = tables_as_stored(snap.store, snap.store.state)
    registry = CollectorRegistry(auto_describe=False)
    changed = last_change(snap.store.journal_tail(1).entries, state.serial)
    registry.register(FleetCollector(state, changed, extras.get("goodput"), __version__, missing=missing))
    registry.register(_Families(alert_families(state, inputs.spare_rows(state), inputs.repair_hours, missing)))
    if "goodput_read" in extras:  # (`serve --goodput`)
        registry.register(_Families([_goodput_read(extras["goodput_read"])]))
    if openmetrics:
        from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics

        om: bytes = generate_openmetrics(registry)
        return om
    from prometheus_client import generate_latest

    return generate_latest(registry)


def _goodput_read(read: bool) -> Metric:
    """Whether the goodput logs read at their last change: without it, goodput families that vanish (a log that
    does not read) look like a fleet with nothing to report, and an alert on them goes quiet."""
    from prometheus_client.core import GaugeMetricFamily

    family = GaugeMetricFamily(
        "tpufleet_goodput_logs_read_ok",
        "1 if the goodput logs of serve --goodput read at their last change (the goodput families are served), "
        "0 if not (the families are left out until they read; serve's stderr says why).",
    )
    family.add_metric([], 1.0 if read else 0.0)
    return family


def page(snap: Snapshot, refresh: int) -> bytes:
    """The fleet page of `report -o html`, with each open fault's reason, reloading itself every `refresh` seconds
    (a meta refresh: no script needed). Its ages run from now, so it is made for each request."""
    from tpufleet.cli.fleetpage import render_page
    from tpufleet.ops import views

    report = views.report(snap.store, datetime.now(UTC))
    doc = report.document
    for row in doc["faults"]:
        fault = snap.store.state.fault(row["fault"])
        row["reason"] = fault.reason if fault is not None else ""
    return render_page(doc, refresh=refresh).encode()
