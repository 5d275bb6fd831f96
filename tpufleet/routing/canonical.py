"""The same fault turned by a symmetry of the slice gets the same tables, turned (pure).

An untwisted torus is symmetric under every map p -> A p + v of its chip coordinates (A a signed permutation of
equal-sized dimensions, v a translation). Faults that one such map turns into another are the same fault, yet the
repairs' greedy choices (batch order, ties by chip number, dimension orders named x, y, z) would route them
differently (4x4x4 with one OCS down: 34 to 36 by OCS). So up to CANONICAL_LIMIT chips the fault is first turned
into its canonical form, the smallest image of its dead link set; the tables are made there and turned back: the
same routes, turned, hence the same load. Whether the turned tables fit the virtual channels is decided again on
the real slice (its datelines stay where they are); the caller falls back to routing the fault as it is.

Which image is smallest says nothing of how well the repairs do there: they name dimensions and directions, so the
canonical form mirrored may route lighter (4x4x8 with a z OCS down: 139 in the canonical form, 137 mirrored along
z; an x OCS 130 against 128 mirrored along y). Up to FORMS_LIMIT chips, for faults in one dimension (an OCS, links
of one dimension's OCS), every mirrored image of the canonical form (`mirrors`) is made too, and the lightest that
fits is kept: the images depend on the fault's canonical form only,
so every fault of the class still gets the same load, and a single fault is no longer routed worse than a compound
fault containing it (whose own forms may have been luckier). Swapping equal dimensions as well would make up to 48
forms instead of 8, for nothing more on the faults tried; mirroring faults in two or three dimensions too would make
each of their up to 8 forms (3 links of 3 OCS on 4x8x8, whose whole-OCS patterns are routed too: 14.4 s instead of
1.8, for 282 instead of 298).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tpufleet.routing.analysis import RouteTables
from tpufleet.shapes import Shape

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from tpufleet.topology import ChipGraph

CANONICAL_LIMIT = 1024  # chips
# chips: every mirrored image of the canonical form is made too (4x4x8: at most 8 forms of a tenth of a second each;
# on 8x8x8 a form of three OCS down takes seconds)
FORMS_LIMIT = 256
TWISTED_FORMS = 8  # forms of a twisted torus's fault: its canonical form and translations of it


@dataclass(frozen=True)
class Turn:
    """A symmetry sigma of the healthy torus: chip p -> chips[p]; port q -> ports[q]; dimension d -> dims[d]."""

    chips: npt.NDArray[np.int64]
    ports: npt.NDArray[np.int64]
    dims: tuple[int, int, int]

    def graph(self, nbr: ChipGraph) -> ChipGraph:
        """The chip graph turned: sigma(p) links to sigma(q) through port sigma(port)."""
        import numpy as np

        out = np.full_like(nbr, -1)
        target = np.where(nbr >= 0, self.chips[np.maximum(nbr, 0)], -1)
        out[self.chips[:, None], self.ports[None, : nbr.shape[1]]] = target
        return out

    def then(self, other: Turn) -> Turn:
        """This symmetry followed by `other`."""
        dims = (other.dims[self.dims[0]], other.dims[self.dims[1]], other.dims[self.dims[2]])
        return Turn(other.chips[self.chips], other.ports[self.ports], dims)

    def back(self, rt: RouteTables, alive: ChipGraph) -> RouteTables:
        """Tables made on the turned slice, turned back onto the real one (live graph `alive`)."""
        import numpy as np

        idx = np.ix_(self.chips, self.chips)
        P = rt.P[idx].copy()
        inverse = np.argsort(self.ports)
        moving = P >= 0
        P[moving] = inverse[P[moving].astype(np.int64)]
        wild = rt.wild[idx].copy() if rt.wild is not None else None
        dest_class = rt.dest_class[self.chips].copy() if rt.dest_class is not None else None
        real = {self.dims[d]: d for d in range(3)}  # turned dimension -> real dimension
        orders = [(real[o[0]], real[o[1]], real[o[2]]) for o in rt.orders]
        return RouteTables(rt.shape, alive, P, rt.L[idx].copy(), wild, dest_class, orders, rt.algorithm)


def canonical_turn(shape: Shape, expected: ChipGraph, alive: ChipGraph) -> Turn | None:
    """The symmetry taking the fault (the links `alive` lacks) to its canonical form; None when the slice is not
    an untwisted torus up to CANONICAL_LIMIT chips, nothing is dead, or a link is rewired rather than lost."""
    import numpy as np

    from tpufleet.topology import coordinates

    n = len(expected)
    if not shape.wraps or n > CANONICAL_LIMIT or min(shape.dims) < 3:
        return None
    gone = (expected >= 0) & (alive != expected)
    if not gone.any() or not ((alive == expected) | (alive < 0)).all():
        return None
    if shape.twisted:  # (their forms are weighed against the live graph's own tables: `report._turned_or_made`)
        return _canonical_translation(shape, expected, gone) if n <= FORMS_LIMIT else None
    dims = np.array(shape.dims)
    xyz = coordinates(shape.dims).astype(np.int64)
    a, p = np.nonzero(gone)
    b = expected[a, p].astype(np.int64)
    ends = np.r_[a, b]
    best: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], int] | None = None
    for axes in itertools.permutations(range(3)):
        if tuple(dims[list(axes)]) != tuple(dims):
            continue
        for signs in itertools.product((1, -1), repeat=3):
            moved = xyz[ends][:, list(axes)] * np.array(signs)  # p -> A p: row r = sign_r * p[axes[r]]
            image = (moved[None, :, :] + xyz[:, None, :]) % dims  # [v, end, 3]: A p + v
            ids = np.ravel_multi_index(tuple(np.moveaxis(image, -1, 0)), shape.dims)  # [v, end]
            ia, ib = ids[:, : len(a)], ids[:, len(a) :]
            keys = np.sort(np.minimum(ia, ib) * n + np.maximum(ia, ib), axis=1)
            v = int(np.lexsort(keys.T[::-1])[0])
            key = tuple(int(k) for k in keys[v])
            if best is None or key < best[0]:
                best = (key, axes, signs, v)
    assert best is not None
    _, axes, signs, v = best
    chips = np.ravel_multi_index(tuple(((xyz[:, list(axes)] * np.array(signs) + xyz[v]) % dims).T), shape.dims)
    turn = _turn(axes, signs, chips)
    if not (turn.graph(expected) == expected).all():  # a check: the map must be a symmetry of the healthy torus
        return None
    return turn


def translations(shape: Shape, expected: ChipGraph) -> npt.NDArray[np.int64]:
    """[v, p]: chip p moved by chip v's offset from chip 0, p + v, stepping + along each dimension as many times as
    v's coordinate (a twisted torus is a Cayley graph of an abelian group: every such translation keeps its links and
    their ports, where the coordinates' plain sums would not follow its twisted wraps).

    >>> from tpufleet.shapes import parse_shape
    >>> from tpufleet.topology import neighbors
    >>> shape = parse_shape("4x4x8", twisted=True)
    >>> t = translations(shape, neighbors(shape))
    >>> t.shape, sorted(t[5].tolist()) == list(range(128)), int(t[5][0]), int(t[1][t[4]][0])
    ((128, 128), True, 5, 5)
    """
    import numpy as np

    from tpufleet.topology import coordinates

    n = len(expected)
    xyz = coordinates(shape.dims)
    out = np.empty((n, n), dtype=np.int64)
    out[0] = np.arange(n)
    for v in range(1, n):  # in coordinate order: v less one step along its last nonzero dimension came before
        d = int(np.flatnonzero(xyz[v])[-1])
        back = int(expected[v, 2 * d + 1])  # v's - neighbour along d: v - e_d
        out[v] = expected[out[back], 2 * d]
    return out


def _canonical_translation(shape: Shape, expected: ChipGraph, gone: npt.NDArray[np.bool_]) -> Turn | None:
    """A twisted torus's fault turned to its canonical form by translations only (its mirrorings and swaps of
    dimensions need not keep its twisted wraps): the translation giving the smallest image of its dead links."""
    import numpy as np

    n = len(expected)
    a, p = np.nonzero(gone)
    b = expected[a, p].astype(np.int64)
    moved = translations(shape, expected)
    ia, ib = moved[:, a], moved[:, b]
    keys = np.sort(np.minimum(ia, ib) * n + np.maximum(ia, ib), axis=1)
    v = int(np.lexsort(keys.T[::-1])[0])
    turn = Turn(moved[v], np.arange(6, dtype=np.int64), (0, 1, 2))
    return turn if (turn.graph(expected) == expected).all() else None  # a check: it must keep the healthy torus


def _turn(axes: tuple[int, ...], signs: tuple[int, ...], chips: npt.NDArray[np.int64]) -> Turn:
    """Real dimension axes[r] becomes turned dimension r, its + direction the sign_r direction."""
    import numpy as np

    ports = np.zeros(6, dtype=np.int64)
    dims = [0, 0, 0]
    for r, (d, sign) in enumerate(zip(axes, signs, strict=True)):
        dims[d] = r
        ports[2 * d] = 2 * r + (0 if sign > 0 else 1)
        ports[2 * d + 1] = 2 * r + (1 if sign > 0 else 0)
    return Turn(chips.astype(np.int64), ports, (dims[0], dims[1], dims[2]))


def mirrors(shape: Shape, expected: ChipGraph, canonical: ChipGraph) -> list[Turn]:
    """The identity, then, up to FORMS_LIMIT chips and when the fault's dead links lie in one dimension, each
    mirroring of the slice (x -> -x, per dimension) that turns the canonical form `canonical` into another graph,
    each image once."""
    import numpy as np

    from tpufleet.topology import coordinates

    n = len(canonical)
    turns = [_turn((0, 1, 2), (1, 1, 1), np.arange(n))]
    _, ports = np.nonzero((expected >= 0) & (canonical != expected))
    if n > FORMS_LIMIT or len(np.unique(ports // 2)) != 1:
        return turns
    if shape.twisted:  # a mirroring need not keep its twisted wraps: other translations of the form instead
        return _translated_forms(shape, expected, canonical, turns)
    dims = np.array(shape.dims)
    xyz = coordinates(shape.dims).astype(np.int64)
    seen = {canonical.tobytes()}
    for signs in itertools.product((1, -1), repeat=3):
        chips = np.ravel_multi_index(tuple(((xyz * np.array(signs)) % dims).T), shape.dims)
        mirror = _turn((0, 1, 2), signs, chips)
        image = mirror.graph(canonical).tobytes()
        if image not in seen:
            seen.add(image)
            turns.append(mirror)
    return turns


def _translated_forms(shape: Shape, expected: ChipGraph, canonical: ChipGraph, turns: list[Turn]) -> list[Turn]:
    """The identity, then the translations of a twisted torus's canonical form that give other graphs, in chip
    order, up to TWISTED_FORMS forms in all: like the mirrored images of an untwisted one's, they depend on the
    canonical form only. Unlike those, they are not every image: the fault's own tables, made beside them
    (`report._turned_or_made`), may be lighter, so one fault a translation away may still carry another load
    (twisted 4x8x8, one x OCS: 191 to 195 by index, where x/3's tables, turned, carry 191 on every one; making all
    16 images as they are would find them, at about 4.5 s of CPU a fault on 4x8x8 against 0.5)."""
    import numpy as np

    seen = {canonical.tobytes()}
    moved = translations(shape, expected)
    for v in range(1, len(moved)):
        turn = Turn(moved[v], np.arange(6, dtype=np.int64), (0, 1, 2))
        image = turn.graph(canonical).tobytes()
        if image not in seen:
            seen.add(image)
            turns.append(turn)
            if len(turns) == TWISTED_FORMS:
                break
    return turns
