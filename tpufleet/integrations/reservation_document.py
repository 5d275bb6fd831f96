"""A Compute Engine reservation's sub-blocks as read: decoding `gcloud compute reservations sub-blocks list
--format=json` (or the API's list response) into typed values, every field checked (pure: a document in, typed values
out; `tpufleet.integrations.reservation` plans the import).

In All-Capacity mode a TPU7x reservation comes as blocks and sub-blocks, one sub-block a 4x4x4 cube of 16 hosts.
The fields read are those of the Compute Engine API's `ReservationSubBlock` resource (REST reference,
`compute/docs/reference/rest/v1/reservationSubBlocks`): `name`, `count`, `inUseCount`, `physicalTopology`
{`cluster`, `block`, `subBlock`}, `healthInfo` {`healthStatus`, `healthyHostCount`, `degradedHostCount`} and
`reservationSubBlockMaintenance.upcomingGroupMaintenance` {`type`, `maintenanceStatus`, `windowStartTime`,
`windowEndTime`}. Items of kind `compute#reservationBlock` (`reservations blocks list`) may be given in the same
list: their `physicalTopology.block` is then the set of blocks a sub-block may name. Anything else is ignored.

>>> doc = [{"name": "sb-a", "physicalTopology": {"block": "b1", "subBlock": "s0"},
...         "healthInfo": {"healthStatus": "DEGRADED", "healthyHostCount": 15, "degradedHostCount": 1}}]
>>> sb = decode_reservation(doc, "list.json").sub_blocks[0]
>>> sb.name, sb.block, sb.health, sb.degraded_hosts
('sb-a', 'b1', 'DEGRADED', 1)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tpufleet.errors import NO_VALUE, BadStateFile
from tpufleet.gkerecords import MaintenanceWindow, SubBlockRecord
from tpufleet.text import bounded
from tpufleet.timeparse import RFC3339, real_time, utc_stamp

__all__ = [
    "HEALTH_STATUSES",
    "MAINTENANCE_STATUSES",
    "MAINTENANCE_TYPES",
    "ReservationInput",
    "SubBlock",
    "decode_reservation",
]

# The enums, as the Compute Engine reference gives them (ReservationSubBlockHealthInfo.HealthStatus,
# UpcomingMaintenance.MaintenanceStatus and .Type).
HEALTH_STATUSES = ("HEALTHY", "DEGRADED", "HEALTH_STATUS_UNSPECIFIED")
MAINTENANCE_STATUSES = ("PENDING", "ONGOING", "UNKNOWN")
MAINTENANCE_TYPES = ("SCHEDULED", "UNSCHEDULED", "MULTIPLE", "UNKNOWN_TYPE")
KIND_SUB_BLOCK, KIND_BLOCK = "compute#reservationSubBlock", "compute#reservationBlock"
# the fields of the API's list response besides `items` (its `kind` is its items' kind): with only these, no items
_LIST_FIELDS = frozenset({"kind", "id", "selfLink", "nextPageToken", "warning"})
MAX_ITEMS = 65_536  # 455 TPU7x superpods; a reservation of 16 holds 2,304 sub-blocks
MAX_COUNT = 1_000_000
# A sub-block's name: RFC 1035, 1-63 characters (the reference's pattern). Physical ids: documented only as strings.
NAME = re.compile(r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?")
PHYSICAL_ID = re.compile(r"[\x21-\x7e]{1,128}")


@dataclass(frozen=True)
class SubBlock:
    """One sub-block of the list, as read."""

    name: str
    index: int  # its position in the list
    block: str  # physicalTopology.block ("" when absent)
    position: str | None  # physicalTopology.subBlock
    health: str
    healthy_hosts: int | None
    degraded_hosts: int | None
    count: int | None
    in_use: int | None
    maintenance: MaintenanceWindow | None

    def record(self, cube: str) -> SubBlockRecord:
        return SubBlockRecord(
            cube, self.block, self.health, self.healthy_hosts, self.degraded_hosts, self.maintenance, self.position
        )


@dataclass(frozen=True)
class ReservationInput:
    sub_blocks: tuple[SubBlock, ...]
    blocks: frozenset[str] | None  # physical blocks of the block items given; None: no block item in the list


class _Where:
    """Builds the messages of one input file: file, field path (list position first), object, value."""

    def __init__(self, file: str, items_at: str = "") -> None:
        self.file, self.items_at = file, items_at  # items_at: the list's own field (`items` in the API's response)

    def bad(self, path: str, value: object, problem: str, name: str | None = None) -> BadStateFile:
        who = f"sub-block {bounded(name, 60)}: " if name else ""
        at = ".".join(p for p in (self.items_at, path) if p)
        return BadStateFile(self.file, at, value, who + problem)


def decode_reservation(doc: object, file: str) -> ReservationInput:
    """The sub-blocks (and blocks) of a `sub-blocks list --format=json` document: a JSON list, or the REST list
    response (an object with `items`). BadStateFile (exit 2) names the file, the item, the field and the value."""
    where, items = _items(doc, file)
    if len(items) > MAX_ITEMS:
        raise where.bad("", len(items), f"more than {MAX_ITEMS:,} items: import the reservation block by block")
    subs: list[SubBlock] = []
    blocks: set[str] | None = None
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise where.bad(str(i), item, "must be an object (a reservation sub-block)")
        if item.get("kind") == KIND_BLOCK:
            blocks = (blocks or set()) | {_block_of(item, str(i), where)}
        else:
            subs.append(_sub_block(item, i, where))
    _check_unique(subs, where)
    _check_blocks_named(subs, where)
    return ReservationInput(tuple(subs), None if blocks is None else frozenset(blocks))


def _items(doc: object, file: str) -> tuple[_Where, list[Any]]:
    """The list of items: the document itself (gcloud's list), or the `items` of the API's list response, whose
    fields are then named from `items` (`items.0.name`)."""
    where = _Where(file)
    if isinstance(doc, list):
        return where, doc
    if not isinstance(doc, dict):
        problem = (
            "must be a JSON list (gcloud compute reservations sub-blocks list --format=json) or an object with items"
        )
        raise where.bad("", doc, problem)
    if "items" not in doc and doc.get("kind") in (KIND_SUB_BLOCK, KIND_BLOCK) and doc.keys() <= _LIST_FIELDS:
        return _Where(file, "items"), []  # the API leaves an empty list's `items` out of its response
    if "items" not in doc:
        raise where.bad(
            "items", NO_VALUE, "missing (must be the list of sub-blocks, as the API's list response holds them)"
        )
    if not isinstance(doc["items"], list):
        raise where.bad("items", doc["items"], "must be a list of sub-blocks")
    return _Where(file, "items"), doc["items"]


def _check_blocks_named(subs: list[SubBlock], where: _Where) -> None:
    """Either every sub-block names its block or none does (one block): a sub-block without one among named ones
    would make a block of its own, with no name, that could take a pod for good."""
    unnamed = next((sb for sb in subs if not sb.block), None)
    named = next((sb for sb in subs if sb.block), None)
    if unnamed is not None and named is not None:
        problem = f"names no block, while sub-block {bounded(named.name, 60)} names {bounded(named.block, 60)}"
        raise where.bad(f"{unnamed.index}.physicalTopology.block", NO_VALUE, problem, unnamed.name)


def _sub_block(item: dict[str, Any], i: int, where: _Where) -> SubBlock:
    path = str(i)
    kind = item.get("kind", KIND_SUB_BLOCK)
    if kind != KIND_SUB_BLOCK:
        raise where.bad(f"{path}.kind", kind, f"must be {KIND_SUB_BLOCK} or {KIND_BLOCK}")
    name = item.get("name", NO_VALUE)
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise where.bad(f"{path}.name", name, "missing or not a sub-block name (RFC 1035, 1-63 characters)")
    topo = _object(item, "physicalTopology", path, where, name)
    health = _object(item, "healthInfo", path, where, name)
    status = health.get("healthStatus", "HEALTH_STATUS_UNSPECIFIED")
    if status not in HEALTH_STATUSES:
        raise where.bad(f"{path}.healthInfo.healthStatus", status, f"must be {_or(HEALTH_STATUSES)}", name)
    healthy = _count(health, "healthyHostCount", f"{path}.healthInfo", where, name)
    degraded = _count(health, "degradedHostCount", f"{path}.healthInfo", where, name)
    count = _count(item, "count", path, where, name)
    if count is not None and (healthy or 0) + (degraded or 0) > count:
        problem = f"with {healthy or 0} healthy, more hosts than the sub-block's count of {count}"
        raise where.bad(f"{path}.healthInfo.degradedHostCount", degraded, problem, name)
    return SubBlock(
        name=name,
        index=i,
        block=_physical(topo, "block", f"{path}.physicalTopology", where, name) or "",
        position=_physical(topo, "subBlock", f"{path}.physicalTopology", where, name),
        health=status,
        healthy_hosts=healthy,
        degraded_hosts=degraded,
        count=count,
        in_use=_count(item, "inUseCount", path, where, name),
        maintenance=_maintenance(item, path, where, name),
    )


def _block_of(item: dict[str, Any], path: str, where: _Where) -> str:
    name = item.get("name", NO_VALUE)
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise where.bad(f"{path}.name", name, "missing or not a block name (RFC 1035, 1-63 characters)")
    topo = _object(item, "physicalTopology", path, where, None)
    return _physical(topo, "block", f"{path}.physicalTopology", where, None) or ""


def _object(item: Mapping[str, Any], key: str, path: str, where: _Where, name: str | None) -> dict[str, Any]:
    value = item.get(key, {})
    if not isinstance(value, dict):
        raise where.bad(f"{path}.{key}", value, "must be an object", name)
    return value


def _physical(topo: Mapping[str, Any], key: str, path: str, where: _Where, name: str | None) -> str | None:
    value = topo.get(key)
    if value is not None and (not isinstance(value, str) or not PHYSICAL_ID.fullmatch(value)):
        raise where.bad(f"{path}.{key}", value, "must be a string of 1-128 visible ASCII characters", name)
    return value


def _count(obj: Mapping[str, Any], key: str, path: str, where: _Where, name: str) -> int | None:
    value = obj.get(key)
    if value is not None and (type(value) is not int or not 0 <= value <= MAX_COUNT):
        raise where.bad(f"{path}.{key}", value, f"must be an integer from 0 to {MAX_COUNT:,}", name)
    return value


def _maintenance(item: Mapping[str, Any], path: str, where: _Where, name: str) -> MaintenanceWindow | None:
    group = _object(item, "reservationSubBlockMaintenance", path, where, name)
    path = f"{path}.reservationSubBlockMaintenance"
    upcoming = _object(group, "upcomingGroupMaintenance", path, where, name)
    if not upcoming:
        return None
    path = f"{path}.upcomingGroupMaintenance"
    status = upcoming.get("maintenanceStatus", "UNKNOWN")
    if status not in MAINTENANCE_STATUSES:
        raise where.bad(f"{path}.maintenanceStatus", status, f"must be {_or(MAINTENANCE_STATUSES)}", name)
    kind = upcoming.get("type")
    if kind is not None and kind not in MAINTENANCE_TYPES:
        raise where.bad(f"{path}.type", kind, f"must be {_or(MAINTENANCE_TYPES)}", name)
    start, end = (_time(upcoming, k, path, where, name) for k in ("windowStartTime", "windowEndTime"))
    if start is not None and end is not None and end < start:
        raise where.bad(f"{path}.windowEndTime", end, f"before the window's start {start}", name)
    return MaintenanceWindow(status, kind, start, end)


def _time(obj: Mapping[str, Any], key: str, path: str, where: _Where, name: str) -> str | None:
    """The time as the tool writes times (UTC, whole seconds: the waves of a plan are ordered by it)."""
    value = obj.get(key)
    if value is None:
        return None
    written = isinstance(value, str) and RFC3339.fullmatch(value)
    stamp = utc_stamp(value) if written else None
    if stamp is None:
        raise where.bad(f"{path}.{key}", value, _time_problem(value if written else None), name)
    return stamp


def _time_problem(written: str | None) -> str:
    """Why a time is refused: RFC 3339 allows a leap second and offsets that leave year 9999 in UTC, which are
    times all the same, but none the tool can keep (`real_time` checks the calendar; a real time `utc_stamp`
    refuses can only be past year 9999 once in UTC, or before year 1 for a time of 0001-01-01 ahead of UTC)."""
    if written is not None and written[17:19] == "60" and real_time(f"{written[:17]}59{written[19:]}"):
        return "is a leap second (:60), which the tool cannot keep: give the second before or after"
    if written is not None and real_time(written):
        return f"is {'before year 1' if written.startswith('0001-') else 'past year 9999'} in UTC, which the tool cannot keep"
    return "must be an RFC 3339 time of the calendar (2026-06-16T09:00:00Z)"


def _check_unique(subs: list[SubBlock], where: _Where) -> None:
    """No two sub-blocks with one name, nor at one physical position (else two would be one cube)."""
    names: dict[str, int] = {}
    positions: dict[tuple[str, str], SubBlock] = {}
    for sb in subs:
        if sb.name in names:
            raise where.bad(f"{sb.index}.name", sb.name, f"also the name of item {names[sb.name]}", sb.name)
        names[sb.name] = sb.index
        if sb.position is None:
            continue
        other = positions.setdefault((sb.block, sb.position), sb)
        if other is not sb:
            problem = f"the same position (block {bounded(sb.block, 60)}) as sub-block {other.name}"
            raise where.bad(f"{sb.index}.physicalTopology.subBlock", sb.position, problem, sb.name)


def _or(options: tuple[str, ...]) -> str:
    return ", ".join(options[:-1]) + " or " + options[-1]
