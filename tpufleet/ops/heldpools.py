"""Node pools `import k8s` holds unplaced that a new slice of their name places (pure use-case helpers).

GKE names a slice's node pool after the slice: a slice allocated under a held pool's name is that pool, so the
room the pool held is the slice's to take, and from that serial on the pool holds nothing of its own."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import replace

from tpufleet.errors import BadInput
from tpufleet.fleetstate import FleetState
from tpufleet.gkerecords import NodePoolSlice
from tpufleet.health import Health
from tpufleet.integrations.k8s_pools import unplaced_cubes
from tpufleet.shapes import Shape


def placed_pools(
    state: FleetState, names: Iterable[str], shape: Shape, running: bool = False
) -> dict[str, NodePoolSlice]:
    """The held pools among `names` (new slices of `shape`); BadInput (exit 2) for one whose topology is another
    shape: the name says the slice is that pool. `running`: a Slice the cluster runs (`import slices`), whose name
    GKE chose: it takes the name whatever the pool held under it (the next `import k8s` says the two disagree)."""
    pools = {name: pool for name in names if (pool := state.k8s.node_pools.get(name)) is not None}
    for name, pool in pools.items():
        if sorted(pool.shape.dims) != sorted(shape.dims) and not running:
            raise BadInput(
                f"bad slice name: {name!r} is a node pool `import k8s` holds unplaced on {pool.pod} as a "
                f"{pool.shape.text} slice, not {shape.text}: allocate it as {pool.shape.text}, or choose another name"
            )
    return pools


def health_without(state: FleetState, pools: Collection[str]) -> Health:
    """The state's health, the room `pools` hold given back (their slices take it)."""
    if not pools:
        return state.health()
    others = (p for name, p in state.k8s.node_pools.items() if name not in pools)
    return replace(state.health(), held=unplaced_cubes(others))


def let_go(state: FleetState, pools: Collection[str]) -> None:
    """The pools are slices now: they hold no room of their own."""
    if pools:
        state.record_k8s_health(state.k8s.degraded, {}, removed=pools)
