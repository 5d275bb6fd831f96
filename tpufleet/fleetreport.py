"""The data of `tpufleet report` (pure): the map, the slices, the node pools held as unplaced slices, open faults
with their age, what the provider reports of its cubes (DEGRADED, maintenance announced), the latest changes."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import Any

from tpufleet import views
from tpufleet.constants import DAY, HOUR
from tpufleet.fleetstate import FleetState
from tpufleet.ids import natural_key
from tpufleet.journalentry import JournalEntry
from tpufleet.timeparse import STAMP_FORMAT, parse_stamp

Row = dict[str, Any]
JOURNAL_LINES = 15  # the latest changes shown: a screenful beside the map


def age_text(seconds: float | None) -> str:
    """A short age for people: 45s, 12m, 5h 3m, 4d 2h.

    >>> age_text(45), age_text(750), age_text(18180), age_text(352800)
    ('45s', '12m', '5h 3m', '4d 2h')
    """
    if seconds is None:
        return "?"
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < HOUR:
        return f"{s // 60}m"
    if s < DAY:
        return f"{s // HOUR}h {s % HOUR // 60}m"
    return f"{s // DAY}d {s % DAY // HOUR}h"


def _faults(state: FleetState, now: datetime) -> list[Row]:
    rows = views.health_rows(state)
    for r in rows:
        since = parse_stamp(r["since"])
        r["age_seconds"] = None if since is None else max(0.0, (now - since).total_seconds())
        r["age"] = age_text(r["age_seconds"])
    return rows


def provider(summary: Row) -> Row:
    """What the provider reports of its cubes, from `status`' `reservation` and `k8s` (`summary`): the cubes that
    still serve while their reservation sub-block (`source` "reservation") or GKE partition (`source` "k8s") is
    DEGRADED, as the fleet counts them (a cube both sources report is listed under each), and the reservation's
    announced or ongoing maintenance, earliest window first (both empty without an import).

    >>> provider({"k8s": {"degraded_cubes": [{"cube": "c17", "pod": "pod0", "partition": "p17"}]}})
    {'degraded_cubes': [{'cube': 'c17', 'pod': 'pod0', 'partition': 'p17', 'source': 'k8s'}], 'maintenance': []}
    """
    reservation, k8s = summary.get("reservation", {}), summary.get("k8s", {})
    degraded = [{**g, "source": "reservation"} for g in reservation.get("degraded_cubes", [])]
    degraded += [{**g, "source": "k8s"} for g in k8s.get("degraded_cubes", [])]
    return {
        "degraded_cubes": sorted(degraded, key=lambda g: natural_key(g["cube"])),  # stable: the sub-block's first
        "maintenance": reservation.get("maintenance", []),
    }


def node_pools(summary: Row) -> Row:
    """The node pools `import k8s` holds as unplaced slices, as `status`' `k8s.unplaced_slices` (`slices`, the
    `cubes` they hold, `by_pod`), and `free_after_unplaced`: the free cubes left to allocate once they are counted
    (the free cubes when there are none).

    >>> node_pools({"cubes": {"free": 64}})
    {'slices': [], 'cubes': 0, 'by_pod': {}, 'free_after_unplaced': 64}
    """
    k8s = summary.get("k8s", {})
    pools = k8s.get("unplaced_slices", {"slices": [], "cubes": 0, "by_pod": {}})
    return {**pools, "free_after_unplaced": k8s.get("free_after_unplaced", summary["cubes"]["free"])}


def report(
    state: FleetState,
    journal: Sequence[JournalEntry],
    now: datetime,
    missing: Collection[str] = (),
    damaged: Sequence[int] = (),
    linked: Mapping[str, str] | None = None,
) -> Row:
    """Everything the report shows, as the documented `report -o json` object; `missing`: slices whose routing
    tables are no longer kept (as `status` says them: "missing", not fresh or stale); `damaged`: the journal's
    damaged lines skipped among those read for the latest changes (as `show journal --tail` names them); `linked`:
    the symbolic links standing where slices' tables belong, as `status` names them."""
    from tpufleet.fleetmap import fleet_map  # (here: `status`, which imports this module, draws no map)

    summary = views.status(state, missing, linked)
    return {
        "generated": now.strftime(STAMP_FORMAT),
        "serial": state.serial,
        "inventory": summary["inventory"],
        **({"generations": summary["generations"]} if "generations" in summary else {}),
        "cubes": summary["cubes"],
        "ocs": summary["ocs"],
        "map": fleet_map(state).record(),
        "slices": summary["slices"],
        "jobs": summary["jobs"],
        "node_pools": node_pools(summary),
        "faults": _faults(state, now),
        "stale_routes": summary["stale_routes"],
        "missing_routes": summary["missing_routes"],
        "linked_routes": summary["linked_routes"],
        "incomplete_wiring": summary["incomplete_wiring"],
        "provider": provider(summary),
        "journal": [
            {"serial": e.serial, "time": e.time, "user": e.user, "summary": e.summary}
            for e in journal[-JOURNAL_LINES:][::-1]
        ],
        "journal_damaged_lines": list(damaged),
    }
