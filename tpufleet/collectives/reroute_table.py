"""The all-reduce cost terms of single network faults, one representative per slice shape, kind and dimension.

One failed OCS removes the same face position at every cube boundary of its dimension; one failed optical link
removes one cable. On a torus or twisted torus whose sides are multiples of the cube edge a translation maps any
such fault onto any other of the same kind and dimension, so the graphs are alike. The modelled times are only
nearly alike: the repaired routes and the collective's rings are laid out from chip 0, not symmetrically, and
across positions the all-reduce time of one kind and dimension varies by up to about 12% (measured on 4x4x8
twisted, 4x8x8 twisted and 8x8x8). The table keeps one representative per (shape, kind, dimension): the OCS at
face position 0 and the link leaving cube (0, 0, 0) at face position 0. The fleet simulation looks the terms up
(`tpufleet/data/reroute-costs.json`, written by `python tools/make_reroute_costs.py`) instead of routing around
every fault it draws.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tpufleet.collectives.cost import Terms, collective_terms, link_down_graph, ocs_down_graph
from tpufleet.collectives.profile import Profile
from tpufleet.constants import DIMS
from tpufleet.shapes import Shape

if TYPE_CHECKING:
    from tpufleet.topology import ChipGraph

SCHEMA_VERSION = 1
OP = "all-reduce"
KINDS = ("ocs", "link")


def shape_key(shape: Shape) -> str:
    """'8x8x8' or '4x4x8/twisted'."""
    return "x".join(map(str, shape.dims)) + ("/twisted" if shape.twisted else "")


def profile_key(profile: Profile) -> dict[str, Any]:
    """The profile figures the ICI terms depend on: a table made under other figures does not apply."""
    return {
        "link_bandwidth": profile.link_bandwidth,
        "hop_latency": profile.hop_latency,
        "dimension_bandwidth": dict(sorted(profile.dimension_bandwidth.items())),
    }


def representative(shape: Shape, kind: str, dim: str) -> ChipGraph:
    """The live graph of the representative single fault of `kind` ('ocs' or 'link') on dimension `dim`."""
    if kind == "ocs":
        return ocs_down_graph(shape, [(dim, 0)])
    return link_down_graph(shape, [((0, 0, 0), dim, 0, "out")])


def pattern_name(kind: str, dim: str) -> str:
    return f"{kind}:{dim}"


def shape_entry(shape: Shape, profile: Profile) -> dict[str, list[list[float]]]:
    """The healthy terms and those of every single-fault representative of the shape."""
    entry = {"healthy": [list(t) for t in collective_terms(shape, OP, profile)]}
    for kind in KINDS:
        for dim in DIMS:
            terms = collective_terms(shape, OP, profile, representative(shape, kind, dim))
            entry[pattern_name(kind, dim)] = [list(t) for t in terms]
    return entry


def make_table(shapes: list[Shape], profile: Profile) -> dict[str, Any]:
    """The whole table for `shapes` (multi-cube ones: a sub-cube slice has no optical link to lose)."""
    return {
        "schema_version": SCHEMA_VERSION,
        "op": OP,
        "profile": profile_key(profile),
        "shapes": {shape_key(s): shape_entry(s, profile) for s in shapes if s.wraps},
    }


def terms_of(entry: list[list[float]]) -> Terms:
    return tuple((float(a), float(b)) for a, b in entry)
