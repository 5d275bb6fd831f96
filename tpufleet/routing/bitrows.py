"""Reach checks of plain dimension-order tables on an untwisted torus, on bit rows (pure).

A reach check (`reach.fewest_left`) replays a candidate's wild-first repair with validity alone
(`tolerant.left_unrepaired`). On a full pod its pairs are 16.7 M and a candidate breaks 2-4 M of them: finding
them as an N * N mask, listing them, checking each one's six first hops in the first round and putting the
million left in the repair's order took two thirds of a check. Here they are bits instead: pair (t, s) is bit z
of word (t, x, y), s = (x, y, z), so a destination's pairs are X * Y words (16x16x16: 256 words of 16 bits, the
whole set 2 MB).

* The broken pairs come from the rings, without a table: a route of order (o0, o1, o2) runs in dimension o0 along
  the source's ring, in o1 along the ring holding the target's o0 and the source's o2 coordinates, in o2 along the
  target's ring; it is broken iff one of those runs crosses a dead hop. Each term is a small array over four
  coordinates (`_run_crossing`), OR-ed into the words (`broken_words`).
* The first round of first hops is six whole-array shifts (`first_round_left`): a chip's neighbour through x or y
  is the next word of its row, through z the next bit; a dead port's hop stays on the chip itself (`hop_stays`),
  whose pair is the one being checked and still broken, so it never helps (as in `tolerant.left_unrepaired`).
* The pairs it leaves sit on a few hundred destinations (`left_rows`), whose masks the chain rounds look up; their
  places in the list of broken pairs come per destination, and the repair's shuffle of that list puts them in
  order without a sort (`repair_order`).

The chain rounds depend on that order, not only on the graph, so they stay the same batch-by-batch replay
(`tolerant.chain_rounds`). Every count is the one the pair-by-pair check gives.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tpufleet.shapes import Shape

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from tpufleet.constants import BoolArray
    from tpufleet.routing.dor import Order
    from tpufleet.topology import ChipGraph

    Words = npt.NDArray[np.unsignedinteger[Any]]  # [N, X, Y] one bit per pair (t, s): bit z of word (t, x, y)

WORD_BITS = 64  # the widest word: slices up to 64 chips along z take this path


@dataclass(frozen=True)
class TorusBits:
    """An untwisted torus's live graph, as bit-row shifts: its sides, the word type (little-endian, at least Z
    bits, so the words' bytes are the pairs in flat order) and, per port, the [X, Y] words whose bit z is set
    where chip (x, y, z) has no live link through it."""

    dims: tuple[int, int, int]
    word: np.dtype[Any]
    hop_stays: tuple[Words, ...]

    @property
    def chips(self) -> int:
        return self.dims[0] * self.dims[1] * self.dims[2]


def torus_bits(shape: Shape, expected: ChipGraph, alive: ChipGraph) -> TorusBits | None:
    """The live graph as bit rows; None when it is not an untwisted torus that only lacks links (its neighbours
    are then no shifts), or its rings along z are longer than a word."""
    import numpy as np

    dims = shape.dims
    if not shape.wraps or shape.twisted or dims[2] > WORD_BITS or expected.shape != (shape.chips, 6):
        return None
    if not np.array_equal(expected, _shifts(dims)) or not ((alive == expected) | (alive < 0)).all():
        return None
    size = 1 << (max(1, -(-dims[2] // 8)) - 1).bit_length()  # bytes: 1, 2, 4 or 8
    word = np.dtype(f"<u{size}")
    stays = tuple(_pack((alive[:, p] < 0).reshape(dims), word) for p in range(6))
    return TorusBits(dims, word, stays)


def _shifts(dims: tuple[int, int, int]) -> npt.NDArray[np.int64]:
    """The untwisted torus's neighbour table (`topology.neighbors`), each port one step along its ring."""
    import numpy as np

    xyz = np.indices(dims).reshape(3, -1)
    out: npt.NDArray[np.int64] = np.full((xyz.shape[1], 6), -1, dtype=np.int64)
    for d in range(3):
        if dims[d] == 1:
            continue  # a ring of one chip has no link to itself
        for side, step in enumerate((1, -1)):
            nxt = xyz.copy()
            nxt[d] = (nxt[d] + step) % dims[d]
            out[:, 2 * d + side] = np.ravel_multi_index(tuple(nxt), dims)
    return out


def _pack(bits: BoolArray, word: np.dtype[Any]) -> Words:
    """Bool [..., Z] to words [...] holding bit z of each."""
    import numpy as np

    weights = np.left_shift(np.ones(1, dtype=word), np.arange(bits.shape[-1], dtype=word))
    packed: Words = np.bitwise_or.reduce(np.where(bits, weights, 0).astype(word), axis=-1)
    return packed


def popcount(words: Words) -> int:
    """Set bits in all the words."""
    import numpy as np

    return int(_bit_counts(words).sum(dtype=np.int64))


def _bit_counts(words: Words) -> npt.NDArray[np.integer[Any]]:
    """Set bits per word (`np.bitwise_count` where numpy has it, 2.0 on; a byte table before)."""
    import numpy as np

    if hasattr(np, "bitwise_count"):
        counts: npt.NDArray[np.integer[Any]] = np.bitwise_count(words)
        return counts
    table = np.array([bin(b).count("1") for b in range(256)], dtype=np.uint8)
    per_byte = table[words.view(np.uint8)].reshape(*words.shape, words.itemsize)
    summed: npt.NDArray[np.integer[Any]] = per_byte.sum(axis=-1, dtype=np.uint8)
    return summed


def broken_words(bits: TorusBits, order: Order, expected: ChipGraph, alive: ChipGraph) -> Words:
    """The pairs whose plain dimension-order route (`order`) crosses a link `alive` lacks: the set
    `rings.broken_mask_by_runs` gives, as words. Per dimension of the order, a run is broken when it crosses a
    dead hop of its ring (`_run_crossing`); which ring it runs in takes the target's coordinates in the dimensions
    already done and the source's in the others."""
    import numpy as np

    X, Y, Z = bits.dims
    dead = (expected >= 0) & (alive < 0)
    ids = np.arange(bits.chips).reshape(bits.dims)
    # 6-D grids: the target's x, y, z on axes 0-2, the source's on axes 3-5 (`bits.dims * 2`: the sides twice)
    grid = [np.arange(side).reshape([side if a == k else 1 for a in range(6)]) for k, side in enumerate(bits.dims * 2)]
    out = np.zeros((X, Y, Z, X, Y), dtype=bits.word)
    for i, d in enumerate(order):
        at = np.moveaxis(ids, d, -1).reshape(-1, bits.dims[d])  # [ring, position] -> chip
        plus, minus = dead[at, 2 * d], dead[at, 2 * d + 1]
        if not (plus.any() or minus.any()):
            continue
        crossing = _run_crossing(bits.dims[d], plus, minus)
        a, b = [k for k in range(3) if k != d]
        ring_a, ring_b = (grid[k] if k in order[:i] else grid[3 + k] for k in (a, b))
        term = crossing[ring_a * bits.dims[b] + ring_b, grid[3 + d], grid[d]]
        if term.shape[5] == Z:  # the source's z among its coordinates: one bit each
            words = _pack(term, bits.word)
        else:  # every bit of a word alike
            words = np.where(term[..., 0], np.array(_full(Z), dtype=bits.word), np.array(0, dtype=bits.word))
        out |= words
    return out.reshape(bits.chips, X, Y)


def _full(bits: int) -> int:
    return (1 << bits) - 1


def _run_crossing(n: int, plus: BoolArray, minus: BoolArray) -> BoolArray:
    """[ring, e, b]: the dimension-order run from position e to position b crosses a dead hop; `plus` and
    `minus` [ring, position] mark the dead hops leaving a position in each direction. Counted on the ring laid
    twice, so a run that wraps is one slice of it."""
    import numpy as np

    from tpufleet.routing.dor import _ring

    direction, dist = _ring(n, n > 1)
    e = np.arange(n)[:, None]
    length = dist.astype(np.int64)
    laps = [np.zeros((len(plus), 2 * n + 1), dtype=np.int64) for _ in range(2)]
    for lap, dead in zip(laps, (plus, minus), strict=True):
        np.cumsum(np.concatenate([dead, dead], axis=1), axis=1, out=lap[:, 1:])
    ahead = laps[0][:, e + length] - laps[0][:, e]  # hops e .. e + length - 1
    behind = laps[1][:, e + n + 1] - laps[1][:, e + n + 1 - length]  # hops e .. e - length + 1
    crossing: BoolArray = np.where(direction > 0, ahead > 0, (direction < 0) & (behind > 0))
    return crossing


def first_round_left(bits: TorusBits, words: Words) -> Words:
    """The broken pairs the repair's first round leaves: those with no first hop to a pair not broken (the
    round's choices are made against the broken set as it starts, so it is one pass for all of them)."""
    import numpy as np

    left = words.copy()
    hop = np.empty_like(words)
    for port in range(6):
        _through(bits, words, port, hop)
        hop |= bits.hop_stays[port]
        left &= hop
    return left


def _through(bits: TorusBits, words: Words, port: int, out: Words) -> None:
    """`out`: bit (t, s) of `words` for the pair (t, s') of s's neighbour s' through `port`, on the whole torus
    (a dead port is masked by the caller)."""
    import numpy as np

    d, step = port // 2, 1 if port % 2 == 0 else -1
    if d < 2:  # x or y: the neighbour's word is the next one along that axis of the row, round the ring
        src, dst = np.moveaxis(words, d + 1, 0), np.moveaxis(out, d + 1, 0)  # views, that axis first
        if step > 0:
            dst[:-1], dst[-1] = src[1:], src[0]
        else:
            dst[1:], dst[0] = src[:-1], src[-1]
        return
    z = bits.dims[2]  # z: the neighbour's bit is the next one of the word, round the ring
    if step > 0:
        np.right_shift(words, 1, out=out)
        out |= (words & 1) << (z - 1)
    else:
        np.left_shift(words, 1, out=out)
        out &= _full(z)
        out |= words >> (z - 1)


def unpacked(bits: TorusBits, words: Words) -> BoolArray:
    """Bool mask, flat (row, s) -> row * N + s, of the pairs in `words` (rows of X * Y words)."""
    import numpy as np

    flat = np.unpackbits(words.view(np.uint8), bitorder="little")
    z, width = bits.dims[2], 8 * bits.word.itemsize
    if z != width:  # rows shorter than the word: drop the spare bits
        flat = np.ascontiguousarray(flat.reshape(-1, width)[:, :z]).ravel()
    mask: BoolArray = flat.view(bool)
    return mask


@dataclass(frozen=True)
class LeftRows:
    """The pairs a first round left, on the destinations (rows) that have any: a few hundred of a full pod's
    4,096 destinations, so their mask is a few MB (it fits the caches the chain rounds' lookups hit), and their
    flat indices `row * N + s` number those rows only (`rows[row]` is the destination)."""

    rows: npt.NDArray[np.intp]
    mask: BoolArray  # [len(rows) * N]
    pairs: npt.NDArray[np.int32]  # ascending


def left_rows(bits: TorusBits, left: Words) -> LeftRows:
    """The pairs of `left` (words of every destination) on the destinations that have any."""
    import numpy as np

    rows = np.flatnonzero(left.reshape(bits.chips, -1).any(axis=1))
    mask = unpacked(bits, left[rows])
    return LeftRows(rows, mask, np.flatnonzero(mask).astype(np.int32))


def repair_order(
    bits: TorusBits, words: Words, left: LeftRows, order: npt.NDArray[np.integer[Any]]
) -> npt.NDArray[np.int32]:
    """The pairs of `left` (all broken, in `words`) in the order the repair takes them: the list of all the broken
    pairs (ascending) permuted by `order` (`tolerant.shuffled`), as `tolerant.left_unrepaired` takes the pairs its
    first round leaves. A destination's broken pairs are one stretch of that list, so each kept row's stretch is
    its broken mask selecting its `left` mask: the list's places of the pairs are marked (`kept`) and mapped to
    the pairs (`pair_at`) without counting any one place; the permuted marks then give the places in order."""
    import numpy as np

    count = len(order)
    every_row = _bit_counts(words.reshape(bits.chips, -1)).sum(axis=1, dtype=np.int64)
    starts = (np.cumsum(every_row) - every_row)[left.rows].tolist()  # each kept row's stretch of the list
    sizes = every_row[left.rows].tolist()
    chosen = left.mask[unpacked(bits, words[left.rows])]  # the kept rows' broken pairs: left by the first round?
    kept = np.zeros(count, dtype=bool)
    at = 0
    for start, size in zip(starts, sizes, strict=True):  # a few hundred rows
        kept[start : start + size] = chosen[at : at + size]
        at += size
    pair_at = np.empty(count, dtype=np.int32)  # read only at kept places
    pair_at[kept] = left.pairs  # both ascending
    # a mask, not a list of a million indices; `compress` and `take`, not `[]`: a third of the time
    ordered: npt.NDArray[np.int32] = np.take(pair_at, np.compress(np.take(kept, order), order))
    return ordered


def split(flat: npt.NDArray[Any], n: int) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
    """(flat // n, flat % n), by shift and mask when n is a power of two (an integer division per element costs
    as much as the rest of a pass)."""
    import numpy as np

    if n & (n - 1) == 0:
        return flat >> (n.bit_length() - 1), flat & (n - 1)
    quotient, remainder = np.divmod(flat, n)
    return quotient, remainder
