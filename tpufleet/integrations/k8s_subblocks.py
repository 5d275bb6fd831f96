"""A new partition's cube by the physical sub-block of its nodes (`gce-topology-subblock`): the cube of the
reservation's sub-block at that position (`physicalTopology.subBlock`, kept by `import reservation`), and why none
is, for the message of a partition left unplaced (pure)."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from tpufleet.fleetstate import FleetState


def sub_block_cube(state: FleetState, named: Collection[str], subblock: str | None, pod: str) -> str | None:
    """The cube of `pod` of the reservation's sub-block at `subblock`, unless a partition names it (`named`)."""
    if subblock is None:
        return None
    cubes = (r.cube for r in state.reservation.sub_blocks.values() if r.position == subblock)
    return next((c for c in cubes if state.fleet.cube_pod.get(c) == pod and c not in named), None)


def no_sub_block(state: FleetState, named: Mapping[str, str], pod: str, label: str, subblock: str | None) -> str:
    """Why a partition's nodes found no sub-block's cube at their physical sub-block, when the reservation names
    the pod's cubes: none is at it, or the one there is another partition's already (`named`: partition -> cube);
    '' otherwise."""
    if subblock is None or not state.reservation.sub_blocks:
        return ""
    at = [r.cube for r in state.reservation.sub_blocks.values() if r.position == subblock]
    at = [c for c in at if state.fleet.cube_pod.get(c) == pod]
    if not at:
        return f": its nodes' {label} {subblock} is the position of no sub-block the reservation has in {pod}"
    holder = next((p for p, c in named.items() if c == at[0]), "?")
    return f": the sub-block at {label} {subblock}, cube {at[0]}, is partition {holder} already"
