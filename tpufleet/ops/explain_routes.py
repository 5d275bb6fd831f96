"""A slice's tables in `explain`'s steps: its `routes` after the steps that wire or move it, and the removal of a
symbolic link standing where they belong (`routes` refuses it; tpufleet never follows nor removes it)."""

from __future__ import annotations

import shlex
from collections.abc import Mapping

from tpufleet.fleetstate import FleetState
from tpufleet.tableneeds import needs_tables


def then_routes(state: FleetState, steps: list[str], linked_tables: Mapping[str, str] | None = None) -> list[str]:
    """`steps` with `tpufleet routes S` after the last step that wires or moves each slice S not wired now
    (`plan-xconnect S|JOB --apply`, `reschedule S`), unless a `routes S` comes after it: a wired slice runs on
    tables made for where it is, so the list ends with the slice running, not waiting for its tables. A sub-cube
    slice needs none (no optical links) unless some are stored for it; a symbolic link standing where the tables
    belong is removed before the slice's first `routes` (`routes` refuses it)."""
    last: dict[str, int] = {}  # slice -> index of the last step that wires or moves it
    for i, argv in enumerate(map(shlex.split, steps)):
        if len(argv) > 2 and argv[1] in ("plan-xconnect", "reschedule"):
            named = state.job_slices(argv[2]) if argv[2] in state.jobs else [state.slices.get(argv[2])]
            last.update((sl.name, i) for sl in named if sl is not None and not sl.state.wired)
    out = list(steps)
    for i in sorted(set(last.values()), reverse=True):  # from the last, so the earlier places stay where they are
        out[i + 1 : i + 1] = [
            step for name, at in last.items() if at == i for step in _routed(state, name, steps[i + 1 :])
        ]
    return _links_first(out, linked_tables or {})


def _routed(state: FleetState, name: str, later: list[str]) -> list[str]:
    """`routes NAME`, unless `later` routes it or it needs no tables (`views.needs_tables`)."""
    routes = f"tpufleet routes {shlex.quote(name)}"
    return [] if routes in later or not needs_tables(state, state.slices[name]) else [routes]


def _links_first(steps: list[str], linked_tables: Mapping[str, str]) -> list[str]:
    """`steps` with the `rm` of the symbolic link standing where a slice's tables belong once, right before the
    slice's first `routes` (which refuses it; those after it find the tables that one stored)."""
    out = list(steps)
    for name, link in linked_tables.items():
        routes, rm = f"tpufleet routes {shlex.quote(name)}", rm_step(link)
        if routes in out:
            out = [s for s in out if s != rm]
            out.insert(out.index(routes), rm)
    return out


def link_why(link: str) -> str:
    return f"a symbolic link stands where its routing tables belong: {link} (never followed: remove it)"


def rm_step(link: str) -> str:
    """Removes the symbolic link standing where a slice's tables belong (`routes` refuses it; never followed)."""
    return f"rm -- {shlex.quote(str(link))}"
