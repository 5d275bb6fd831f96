"""Use cases of slices: allocate and release."""

from __future__ import annotations

from collections.abc import Sequence

from tpufleet import allocation
from tpufleet.fleetstate import Change, FleetState, Slice, SliceState
from tpufleet.ops.outcome import Outcome
from tpufleet.shapes import Shape


def allocate(
    state: FleetState,
    name: str,
    shape: Shape,
    now: str,
    pod: str | None = None,
    cubes: Sequence[str] | None = None,
    fault_tolerant_routing: bool = True,
) -> Outcome:
    """Reserve healthy free cubes (any of one pod, or the given ones) or machines inside a cube."""
    if name in state.slices:
        state.add_slice(state.slices[name])  # refuses, naming the slice
    used = allocation.machine_usage(state.slices.values())
    alloc = allocation.allocate(shape, state.fleet, used, state.health(), pod, cubes)
    sl = Slice(name, shape, alloc.pod, alloc.cubes, alloc.coords, SliceState.ALLOCATED, fault_tolerant_routing,
               created=now, machines=alloc.machines, origin=alloc.origin)
    state.add_slice(sl)
    data = {"slice": name, "serial": state.next_serial, **sl.record()}
    return Outcome(data, Change(f"allocate {name}: {shape} on {','.join(alloc.cubes)}"))


def release(state: FleetState, name: str) -> Outcome:
    """Return a slice's cubes to the pool; its cross-connects stay for a later slice to reuse."""
    sl = state.release(name)
    data = {"slice": name, "serial": state.next_serial, "released_cubes": list(sl.cubes)}
    return Outcome(data, Change(f"release {name}: {','.join(sl.cubes)}"))
