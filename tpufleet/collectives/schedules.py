"""Which chips exchange data with which: the 1D ring over a whole slice and the dimension-by-dimension rings.

Dimension by dimension, a slice's chips are written in mixed radix, chip = a1*g1 + a2*g2 + a3*g3, one generator
per phase; phase k runs rings along g_k among the chips that share every other digit, so after a reduce-scatter
in phase k a chip holds the shard of its digit a_k, and phase k+1 only combines chips holding the same shard.

On a regular torus or mesh g_k is one hop along dimension d_k and the digits are the coordinates. A twisted torus
(a Cayley graph of Z^3 modulo the twisted lattice) changes the rings: following +x across the twisted wraparound
shifts the later coordinates, so the x "ring" is a helix that closes only after visiting several z offsets
(8 chips on twisted 4x4x8, not 4), and a later dimension's ring would no longer close on its own shard; its
generator gets the smallest correction from the earlier phases (on twisted 4x4x8 after the x helix, +y-x: two
hops) so that it closes after its own number of steps. The product of the ring sizes is always the slice's size.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product
from typing import TYPE_CHECKING

from tpufleet.constants import DIMS
from tpufleet.shapes import Shape, Vec

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from tpufleet.constants import Int64Array

Move = tuple[int, int]  # (dimension, signed number of hops)


@dataclass
class Phase:
    dim: int  # the dimension this phase runs along
    generator: tuple[Move, ...]  # the ring step, as hops along dimensions
    rings: Int64Array  # [rings, size] chip ids in ring order (ring[j + 1] = ring[j] + generator)

    @property
    def size(self) -> int:
        return int(self.rings.shape[1])

    @property
    def step_text(self) -> str:
        return "".join(
            ("+" if k > 0 else "-") + (f"{abs(k)}" if abs(k) > 1 else "") + DIMS[d] for d, k in self.generator
        )


def snake_ring(shape: Shape, nbr: npt.NDArray[np.int32] | None = None) -> Int64Array:
    """[1, N] a ring through every chip: a back-and-forth path over x in each row, rows back and forth in each
    z plane, planes alternately reversed; on even sides consecutive chips are neighbours and the ring closes
    through a z (or y) wraparound, which no twist shifts. Where that wraparound is no link (`nbr`, the healthy
    neighbours: a mesh, a sub-cube slice or a what-if `--wrap` leaves out; without `nbr`, a sub-cube shape), a
    ring of neighbours over mesh links alone (`_mesh_cycle`) where the mesh has one."""
    import numpy as np

    X, Y, Z = shape.dims
    plane = [(x if y % 2 == 0 else X - 1 - x, y) for y in range(Y) for x in range(X)]
    order = []
    for z in range(Z):
        for x, y in plane if z % 2 == 0 else reversed(plane):
            order.append((x * Y + y) * Z + z)
    if nbr is None:  # a mesh's snake closes where its ends are neighbours (2x2x2), as the neighbour table says
        ends = [(*divmod(divmod(c, Z)[0], Y), c % Z) for c in (order[0], order[-1])]
        closes = shape.wraps or sum(abs(a - b) for a, b in zip(*ends, strict=True)) <= 1
    else:
        closes = len(order) < 2 or order[0] in nbr[order[-1]]
    mesh = None if closes else _mesh_cycle(shape.dims)
    if mesh is not None:
        order = [(x * Y + y) * Z + z for x, y, z in mesh]
    return np.array([order], dtype=np.int64)


def _mesh_cycle(dims: Vec) -> list[Vec] | None:
    """A ring of neighbours through every chip of a mesh (no wraparound to close the snake over), or None where a
    mesh has none (an odd number of chips, or a line of more than two). One side `r` of two or more is the rows;
    the other two sides, snaked, are a path of M columns, M even (an even side is among them): down the rows 1..
    of each column in turn, back and forth, then home along row 0. The snake closed over a 3-hop route instead,
    whose links the ring's own steps the other way round also take: a bidirectional ring no faster than one way.

    >>> _mesh_cycle((2, 2, 1))
    [(0, 1, 0), (1, 1, 0), (1, 0, 0), (0, 0, 0)]
    """
    sides = [d for d in range(3) if dims[d] >= 2]
    even = [d for d in sides if dims[d] % 2 == 0]
    if len(sides) < 2 or not even:
        return None
    r = next(d for d in sides if d != even[0])
    p, q = (d for d in range(3) if d != r)
    path = [(u if v % 2 == 0 else dims[p] - 1 - u, v) for v in range(dims[q]) for u in range(dims[p])]
    order = [(i, j) for j in range(len(path)) for i in (range(1, dims[r]) if j % 2 == 0 else range(dims[r] - 1, 0, -1))]
    order += [(0, j) for j in reversed(range(len(path)))]
    cycle = []
    for i, j in order:
        at = [0, 0, 0]
        at[r], (at[p], at[q]) = i, path[j]
        cycle.append((at[0], at[1], at[2]))
    return cycle


def _apply(nbr: npt.NDArray[np.int32], chips: Int64Array, moves: tuple[Move, ...], times: int = 1) -> Int64Array:
    import numpy as np

    out = np.asarray(chips, dtype=np.int64)
    for _ in range(times):
        for d, k in moves:
            port = 2 * d if k > 0 else 2 * d + 1
            for _ in range(abs(k)):
                out = nbr[out, port].astype(np.int64)
    return out


def _order_mod(nbr: npt.NDArray[np.int32], gen: tuple[Move, ...], members: npt.NDArray[np.bool_]) -> int:
    """Smallest m >= 1 with m * gen in the subgroup `members` (a bool mask over chips; chip 0 is the identity)."""
    import numpy as np

    cur = np.zeros(1, dtype=np.int64)
    for m in range(1, len(nbr) + 1):
        cur = _apply(nbr, cur, gen)
        if members[int(cur[0])]:
            return m
    raise AssertionError("a generator of a finite group has finite order")


def _closure(nbr: npt.NDArray[np.int32], gens: list[tuple[Move, ...]]) -> npt.NDArray[np.bool_]:
    import numpy as np

    inside = np.zeros(len(nbr), dtype=bool)
    inside[0] = True
    frontier = np.array([0], dtype=np.int64)
    while len(frontier):
        nxt = np.unique(np.concatenate([_apply(nbr, frontier, g) for g in gens])) if gens else frontier[:0]
        nxt = nxt[~inside[nxt]]
        inside[nxt] = True
        frontier = nxt
    return inside


def _generator(
    nbr: npt.NDArray[np.int32], d: int, earlier: list[tuple[tuple[Move, ...], int]]
) -> tuple[tuple[Move, ...], int]:
    """The ring step for dimension d after the earlier phases: +d plus the shortest combination of the earlier
    generators that makes it close after its order modulo them (no correction on an untwisted torus)."""
    import numpy as np

    base: tuple[Move, ...] = ((d, 1),)
    members = _closure(nbr, [g for g, _ in earlier])
    m = _order_mod(nbr, base, members)
    ranges = [range(-(size // 2), size - size // 2) for _, size in earlier]
    candidates = sorted(
        product(*ranges), key=lambda c: (sum(abs(a) * _hops(g) for a, (g, _) in zip(c, earlier, strict=True)), c)
    )
    zero = np.zeros(1, dtype=np.int64)
    for coeffs in candidates:
        moves = base + tuple((dd, kk * a) for a, (g, _) in zip(coeffs, earlier, strict=True) if a for dd, kk in g)
        if int(_apply(nbr, zero, moves, m)[0]) == 0:
            return _merge(moves), m
    raise AssertionError("some correction from the earlier phases always closes the ring")


def _hops(moves: tuple[Move, ...]) -> int:
    return sum(abs(k) for _, k in moves)


def _merge(moves: tuple[Move, ...]) -> tuple[Move, ...]:
    """Moves summed per dimension, the phase's own dimension first."""
    total: dict[int, int] = {}
    for d, k in moves:
        total[d] = total.get(d, 0) + k
    return tuple((d, k) for d, k in total.items() if k)


def dim_phases(
    shape: Shape, order: tuple[int, ...], nbr: npt.NDArray[np.int32], fold: tuple[bool, ...] = (False, False, False)
) -> list[Phase]:
    """The rings of each phase of dimension-by-dimension collectives in `order` (first = largest payload).

    `nbr` is the shape's whole (healthy) chip graph: the rings are logical, the routes come from the tables.
    Dimensions of size 1 are skipped. A dimension marked in `fold` is a mesh whose rings are folded (0, 2, 4, ...
    then the odd positions back), so no member is more than two hops from the next (`tpufleet.collectives.whatif`).
    """
    import numpy as np

    order = tuple(d for d in order if shape.dims[d] > 1)
    if not shape.wraps or not shape.twisted:
        grid = np.arange(shape.chips, dtype=np.int64).reshape(shape.dims)
        digits = np.transpose(grid, order + tuple(d for d in range(3) if d not in order))
        digits = digits.reshape([shape.dims[d] for d in order])
        gens: list[tuple[tuple[Move, ...], int]] = [(((d, 1),), shape.dims[d]) for d in order]
    else:
        gens = []
        for d in order:
            gens.append(_generator(nbr, d, gens))
        digits = _digits(nbr, gens)
    phases = []
    for k, (gen, size) in enumerate(gens):
        moved = np.moveaxis(digits, k, -1)
        rings = moved.reshape(-1, moved.shape[-1])
        if fold[order[k]]:
            rings = rings[:, [*range(0, size, 2), *reversed(range(1, size, 2))]]
        phases.append(Phase(order[k], gen, rings))
    return phases


def _digits(nbr: npt.NDArray[np.int32], gens: list[tuple[tuple[Move, ...], int]]) -> Int64Array:
    """chip id of a1*g1 + a2*g2 + ... as an array indexed [a1, a2, ...]; checks it covers every chip once."""
    import numpy as np

    cur = np.zeros(1, dtype=np.int64)
    for gen, size in reversed(gens):
        layers = [cur]
        for _ in range(size - 1):
            layers.append(_apply(nbr, layers[-1], gen))
        cur = np.stack(layers)  # new leading axis for this generator's digit
    if sorted(cur.ravel().tolist()) != list(range(len(nbr))):
        raise AssertionError("the phase generators do not decompose the slice")
    return cur.reshape([size for _, size in gens])


def twist_note(shape: Shape, phases: list[Phase]) -> str | None:
    """How the twist changed the rings (None on an untwisted slice)."""
    if not shape.twisted:
        return None
    parts = []
    for ph in phases:
        d = DIMS[ph.dim]
        if ph.size > shape.dims[ph.dim]:
            parts.append(f"{d}: a helix of {ph.size} chips (the twisted {d} wraparound shifts the later coordinates)")
        elif len(ph.generator) > 1:
            parts.append(
                f"{d}: rings of {ph.size} chips stepping {ph.step_text} (a plain {d} ring would close on another shard)"
            )
        else:
            parts.append(f"{d}: plain rings of {ph.size} chips")
    return "; ".join(parts)
