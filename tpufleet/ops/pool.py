"""Where cubes stand after a release: back in the pool, or not and why."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from tpufleet.fleetstate import FleetState, Slice
from tpufleet.ids import natural_key


def released(slices: Iterable[Slice]) -> list[str]:
    """The cubes a release gives up, each once, as the fleet counts them (c2 before c10, whichever slice): the
    slices' own and those reserved for an evicted slice's move."""
    cubes = {c for sl in slices for c in (*sl.cubes, *(sl.proposal.cubes if sl.proposal is not None else ()))}
    return sorted(cubes, key=natural_key)


def pool_after(state: FleetState, cubes: Sequence[str]) -> dict[str, list[str]]:
    """Where released cubes stand now: back in the pool, still held (other slices share a cube, or an evicted
    slice's move is reserved on it), or still out of the pool (an open fault on them)."""
    health, usage = state.health(), state.machine_usage()
    out = [c for c in cubes if not health.cube_ok(c)]
    held = [c for c in cubes if c not in out and usage.get(c)]
    free = [c for c in cubes if c not in out and c not in held]
    return {"back_in_pool": free, "still_held": held, "still_out": out}


def release_words(data: dict[str, list[str]]) -> str:
    """`release`'s line: the cubes back in the pool, and those that are not, with why."""
    parts = [
        f"{','.join(data['back_in_pool'])} back in the pool" if data["back_in_pool"] else "no cube back in the pool"
    ]
    if data["still_held"]:
        parts.append(f"{','.join(data['still_held'])} still held by other slices")
    if data["still_out"]:
        parts.append(f"{','.join(data['still_out'])} still out of the pool (open faults)")
    return "; ".join(parts)
