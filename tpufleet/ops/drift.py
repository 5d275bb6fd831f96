"""Use case of `drift` (and of `metrics --drift-*`): the plans of `import k8s`, `import reservation` and `import
slices` against one state, nothing changed; per source the drift by kind, and in total.

What counts as drift, per source:

* `nodes` (`import k8s`): what its `--apply` would record (its `has_changes`), counted per list of the plan
  (`faults_opened`, `cubes_added`, ...; `machines_named` is a count). Unplaced nodes are not drift: a cluster's
  CPU nodes are never placed.
* `reservation` (`import reservation`): what its `--apply` would record, counted per list of the plan, and the
  sub-blocks it cannot place (`unplaced`); a sub-block updated counts only where no other list names it (a DEGRADED
  sub-block is one `degraded_new`, not also one `sub_blocks_updated`). The lists of degraded cubes and of maintenance announced for a later
  window are the reservation as it is, not drift (a newly announced window is: its sub-block is updated).
* `slices` (`import slices`): every drift item, by kind (`not_in_tpufleet`, `conflict`, `not_in_cluster`,
  `shape`, `cubes`, `state`), whether or not `--apply` would settle it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tpufleet.fleetstate import FleetState
from tpufleet.integrations.gke_slice_list import SliceListInput
from tpufleet.integrations.k8s import K8sMapping, Node
from tpufleet.integrations.reservation_document import ReservationInput
from tpufleet.ops.fleetio import import_k8s
from tpufleet.ops.gke_slices import import_slices
from tpufleet.ops.outcome import Outcome
from tpufleet.ops.reservation import import_reservation

SOURCES = ("nodes", "reservation", "slices")
# Lists of a plan that describe the fleet as it is rather than a difference from the state, or what a difference
# would do (`slices_hit`: the slices the faults and drains opened would stop, counted as those faults already).
_NOT_DRIFT = {"nodes": {"unplaced", "slices_hit"}, "reservation": {"degraded", "maintenance_announced", "slices_hit"}}
_COUNTS = {"nodes": {"machines_named"}}  # counts (not lists) that are drift
# The reservation's lists whose rows name a sub-block whose record changed (it is in `sub_blocks_updated` too)
_NAMING_SUB_BLOCKS = ("degraded_new", "degraded_cleared", "drains_opened", "drains_cleared", "drains_rescheduled")


@dataclass(frozen=True)
class DriftInputs:
    """The fresh exports given (None: that source was not given), with the names used in messages."""

    nodes: tuple[list[Node], K8sMapping, str] | None = None
    reservation: tuple[ReservationInput, str] | None = None
    slices: tuple[SliceListInput, str] | None = None


def drift(state: FleetState, given: DriftInputs, now: str) -> Outcome:
    """Each given source's plan against `state` and its drift by kind; `in_sync` when there is none."""
    sources: dict[str, Any] = {}
    if given.nodes is not None:
        nodes, mapping, name = given.nodes
        sources["nodes"] = _source("nodes", import_k8s(state, nodes, mapping, name, now).data)
    if given.reservation is not None:
        res, name = given.reservation
        sources["reservation"] = _source("reservation", import_reservation(state, res, None, name, now).data)
    if given.slices is not None:
        sl, name = given.slices
        sources["slices"] = _source("slices", import_slices(state, sl, name, now).data)
    total = sum(s["drift"] for s in sources.values())
    return Outcome({"sources": sources, "drift": total, "in_sync": total == 0, "serial": state.serial})


def _source(source: str, plan: dict[str, Any]) -> dict[str, Any]:
    kinds = counts(source, plan)
    total = sum(kinds.values())
    return {"file": plan["source"], "drift": total, "in_sync": total == 0, "kinds": kinds, "plan": plan}


def counts(source: str, plan: dict[str, Any]) -> dict[str, int]:
    """The drift of one source's plan, by kind (every kind the plan has, zero or not)."""
    if source == "slices":
        return dict(plan["drift_counts"])
    kinds = {
        key: _items(value) if isinstance(value, list) else int(value)
        for key, value in plan.items()
        if key not in _NOT_DRIFT.get(source, set()) and (isinstance(value, list) or key in _COUNTS.get(source, set()))
    }
    if source == "reservation":  # one change, one item: a sub-block another list names is not counted again
        named = {row.get("sub_block") for key in _NAMING_SUB_BLOCKS for row in plan[key]}
        kinds["sub_blocks_updated"] = len(set(plan["sub_blocks_updated"]) - named)
    if source == "nodes" and not plan["has_changes"]:
        kinds = dict.fromkeys(kinds, 0)  # lists beside the changes (names forgotten...) only count with them
    elif plan["has_changes"] and not any(kinds.values()):
        kinds["other"] = 1  # a change of a kind this count does not know yet: still drift
    return kinds


def _items(rows: list[Any]) -> int:
    """The rows of a plan's list that are changes (a row marked `"change": "unchanged"` is not)."""
    return sum(1 for row in rows if not (isinstance(row, dict) and row.get("change") == "unchanged"))
