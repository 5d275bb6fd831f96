"""The terminal picture of `show map`: one small grid per z layer of each pod, the OCS strip, a legend.

Plain characters always; colour only when stdout is a terminal (Click strips the styles otherwise), $NO_COLOR
is unset and $TERM is not `dumb`. A degraded slice's letter is underlined.
"""

from __future__ import annotations

import os

import click

from tpufleet.constants import CUBE_EDGE
from tpufleet.fleetmap import (
    DRAINED,
    FREE,
    FREE_DEGRADED,
    OCS_IN_USE,
    OUT,
    RESERVED,
    SHARED,
    FleetMap,
    PodMap,
    ocs_rows_by_dim,
)

_PALETTE = ("cyan", "green", "magenta", "blue", "bright_cyan", "bright_green", "bright_magenta", "bright_blue")
_FIXED = {
    OUT: "red",
    DRAINED: "yellow",
    FREE: "bright_black",
    FREE_DEGRADED: "yellow",
    SHARED: "white",
    RESERVED: "cyan",
    OCS_IN_USE: "green",
}


def _no_colour() -> bool:
    """$NO_COLOR set (no-color.org), or a terminal that cannot show colour ($TERM dumb)."""
    return bool(os.environ.get("NO_COLOR")) or os.environ.get("TERM") == "dumb"


def _paint(mark: str, degraded: set[str], width: int = 2, colour: bool = True) -> str:
    """The mark, coloured (the padding to `width` stays outside the style so lines strip clean)."""
    pad = " " * (width - len(mark))
    if not colour or _no_colour() or mark == " ":
        return mark + pad
    if mark in _FIXED:
        return click.style(mark, fg=_FIXED[mark], bold=mark == OUT) + pad
    fg = _PALETTE[sum(map(ord, mark)) % len(_PALETTE)]
    return click.style(mark, fg=fg, underline=mark in degraded, bold=mark in degraded) + pad


def _pod_lines(pm: PodMap, degraded: set[str], colour: bool) -> list[str]:
    c = pm.counts
    lines = [
        f"pod {pm.pod}{f' ({pm.generation})' if pm.generation else ''}: {len(pm.cubes)} cubes, {c['slice']} in slices, {c['free']} free, {c['reserved']} reserved, {c['out']} out, {c['drained']} drained"
    ]
    layers = pm.layers()
    width = CUBE_EDGE * 3 + 4
    lines.append("     " + "".join(f"z={z}".ljust(width) for z in range(len(layers))))
    for y in range(CUBE_EDGE):
        row = f"  y{y} "
        for layer in layers:
            marks = [_paint(cell.mark if cell else " ", degraded, colour=colour) for cell in layer[y]]
            row += " ".join(marks) + " " * (width - 3 * CUBE_EDGE + 1)
        lines.append(row.rstrip())
    lines.append("     " + "".join("x0 x1 x2 x3".ljust(width) for _ in layers).rstrip())
    lines.append("  OCS  (0-15)")
    for dim, switches in ocs_rows_by_dim(pm).items():
        lines.append(f"   {dim}   " + "".join(_paint(o.mark, degraded, 1, colour) for o in switches))
    return lines


def render_map(fm: FleetMap, colour: bool = True) -> str:
    """The picture; `colour=False` for a file (styles are otherwise stripped only when echoed to a non-terminal)."""
    degraded = {e.mark for e in fm.legend if e.state == "degraded"}
    lines: list[str] = []
    for pm in fm.pods:
        lines += [*_pod_lines(pm, degraded, colour), ""]
    lines.append(
        f"cubes: {FREE} free  {OUT} out of the pool (fault)  {DRAINED} drained  {SHARED} shared by sub-cube slices"
        f"  {RESERVED} reserved for an evicted slice"
        + (
            f"  {FREE_DEGRADED} free, reported DEGRADED"
            if any(c.mark == FREE_DEGRADED for p in fm.pods for c in p.cubes)
            else ""
        )
    )
    lines.append(f"OCS:   {FREE} healthy, unused  {OCS_IN_USE} cross-connects in use  {OUT} failed  {DRAINED} drained")
    if fm.legend:
        lines.append("slices:")
        for e in fm.legend:
            detail = f"  ({e.detail})" if e.detail else ""
            lines.append(f"  {_paint(e.mark, degraded, colour=colour)} {e.slice:<16} {e.shape:<16} {e.state}{detail}")
    return "\n".join(line.rstrip() for line in lines)
