"""The whole failure pattern of an OCS some of whose optical links are dead, as candidate graphs, pure.

A failed optical link is a subset of its OCS's failure, so tables made for the OCS's pattern serve the link too
(`candidates` makes them beside the live graph's own): a link never routes worse than its OCS.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

from tpufleet.routing.tolerant import dead_links
from tpufleet.shapes import Shape

if TYPE_CHECKING:
    from tpufleet.topology import ChipGraph

# OCS with partly dead links: up to this many, `ocs_patterns` combines their patterns every way (2^k - 1 graphs to
# make candidates for, 15 at most: twisted 4x4x8 with links of 4 OCS down 1.2 -> 3.7 s of CPU; 5 would take 11 s)
COMBINED_OCS_LIMIT = 4


def ocs_patterns(shape: Shape, expected: ChipGraph, alive: ChipGraph) -> list[tuple[ChipGraph, str]]:
    """The live graph with the whole failure pattern of some of the OCS that have a dead link here: one OCS at a
    time, then (`patterns_combined`) every combination of those whose links are partly dead, then all of them;
    empty when a dead link is not optical (or nothing more would be removed).

    An OCS failure takes the same face position out at every cube boundary of its dimension, a periodic pattern
    production precomputes tables for; a failed optical link is a subset of it, so tables made for the pattern
    serve the link too, and may balance better. Expanding one OCS at a time means that among the link's
    candidates are those its OCS's failure would get alone; its combinations with the other OCS, those the OCS's
    failure gets with the other faults open: a fault that is a subset of another never routes worse.
    """
    from tpufleet.constants import CUBE_EDGE, DIMS
    from tpufleet.ids import face_index
    from tpufleet.topology import coordinates

    if not shape.wraps:
        return []
    local = coordinates(shape.dims) % CUBE_EDGE
    chips, ports = dead_links(expected, alive)
    faces: set[tuple[int, int]] = set()
    for chip, port in zip(chips.tolist(), ports.tolist(), strict=True):
        d, sign = port // 2, 1 if port % 2 == 0 else -1
        if local[chip, d] != (CUBE_EDGE - 1 if sign > 0 else 0):
            return []  # an electrical link or a chip: not an OCS pattern
        faces.add((d, face_index(DIMS[d], *local[chip].tolist())))

    def expanded(chosen: list[tuple[int, int]]) -> ChipGraph:
        graph = alive.copy()
        for d, index in chosen:
            a, b = [k for k in range(3) if k != d]
            on_face = CUBE_EDGE * local[:, a] + local[:, b] == index  # `face_index` of every chip at once
            for port, edge in ((2 * d, CUBE_EDGE - 1), (2 * d + 1, 0)):
                graph[on_face & (local[:, d] == edge), port] = -1
        return graph

    ordered = sorted(faces)
    subsets = [[face] for face in ordered] + ([ordered] if len(ordered) > 1 else [])
    if len(ordered) > 2 and patterns_combined(shape, len(expected)):
        partial = [face for face in ordered if not (expanded([face]) == alive).all()]
        if len(partial) <= COMBINED_OCS_LIMIT:
            between = [list(c) for size in range(2, len(partial)) for c in itertools.combinations(partial, size)]
            subsets = subsets[:-1] + between + subsets[-1:]
    out: list[tuple[ChipGraph, str]] = []
    made: set[bytes] = {alive.tobytes()}
    for chosen in subsets:
        graph = expanded(chosen)
        if graph.tobytes() not in made:
            made.add(graph.tobytes())
            names = ", ".join(f"ocs {'xyz'[d]}/{index}" for d, index in chosen)
            out.append((graph, f" for the failure pattern of {names}"))
    return out


def patterns_combined(shape: Shape, chips: int) -> bool:
    """`ocs_patterns` also gives every combination of two or more of the OCS whose links are partly dead (not
    only each one and all of them), up to COMBINED_OCS_LIMIT such OCS: where faults have no canonical form
    (twisted tori; above CANONICAL_LIMIT chips), `report.evaluate` takes the live graph's best candidate as it
    is, so those of an OCS's own failure must be among them, and with other links open that failure's
    candidates include its pattern combined with each other OCS's (a link of z/8 with links of x/10 and z/4
    open: z/8 and z/4 together). Below, each pattern is evaluated as its own fault (`report._with_whole_ocs`),
    which reaches those combinations itself."""
    from tpufleet.routing.canonical import CANONICAL_LIMIT

    return shape.twisted or chips > CANONICAL_LIMIT
