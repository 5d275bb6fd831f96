"""Estimates of each algorithm on a slice's tables, and the choice among them (`auto`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import permutations, product
from typing import TYPE_CHECKING

from tpufleet.collectives.model import (
    A2A_ALGORITHMS,
    RING_ALGORITHMS,
    Estimate,
    Pattern,
    PhaseCost,
    _all_pairs_pattern,
    _ring_pattern,
    pattern,
)
from tpufleet.collectives.profile import Profile
from tpufleet.collectives.schedules import Phase, dim_phases, snake_ring
from tpufleet.collectives.tables import Tables, walk
from tpufleet.constants import DIMS
from tpufleet.errors import BadInput

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

PASSES = {"all-reduce": 2, "reduce-scatter": 1, "all-gather": 1, "all-to-all": 1}


def folded(tables: Tables) -> tuple[bool, bool, bool]:
    """The mesh dimensions whose rings are folded (no member more than two hops from the next): a what-if's, as
    its tables say, and a sub-cube slice's (a mesh in every dimension), so that both model one network alike."""
    if tables.source == "what-if":
        x, y, z = (bool(f) for f in tables.meta["fold"])
        return x, y, z
    if tables.shape.wraps:
        return False, False, False
    x, y, z = (n > 2 for n in tables.shape.dims)
    return x, y, z


@dataclass
class Context:
    """One slice's tables and profile, with the per-phase step costs shared by every order that uses them."""

    tables: Tables
    profile: Profile
    patterns: dict[tuple[object, ...], Pattern] = field(default_factory=dict)
    loads: dict[tuple[object, ...], npt.NDArray[np.float64]] = field(default_factory=dict)
    rings: dict[str, npt.NDArray[np.int64]] = field(default_factory=dict)
    phases: dict[tuple[int, ...], list[Phase]] = field(default_factory=dict)

    def snake(self) -> npt.NDArray[np.int64]:
        if "snake" not in self.rings:
            self.rings["snake"] = snake_ring(self.tables.shape, self.tables.healthy_nbr)
        return self.rings["snake"]

    def dim_phases(self, order: tuple[int, ...]) -> list[Phase]:
        if order not in self.phases:
            self.phases[order] = dim_phases(self.tables.shape, order, self.tables.healthy_nbr, folded(self.tables))
        return self.phases[order]

    def ring(self, key: tuple[object, ...], rings: npt.NDArray[np.int64], bidir: bool) -> Pattern:
        full = (*key, bidir)
        if full not in self.patterns:
            self.patterns[full] = _ring_pattern(self.tables, self.profile, rings, bidir)
        return self.patterns[full]


def _finish(est: Estimate, profile: Profile) -> Estimate:
    for ph in est.phases:
        if ph.pattern.undelivered is not None:
            est.undelivered = ph.pattern.undelivered
            est.latency = est.bandwidth = float("inf")
            return est
        est.latency += est.passes * ph.steps * ph.pattern.hops * profile.hop_latency
        est.bandwidth += est.passes * ph.steps * ph.step_seconds
    return est


def ring(ctx: Context, op: str, nbytes: float, bidir: bool) -> Estimate:
    """One ring through every chip of the slice (unidirectional, or bidirectional with half chunks each way)."""
    rings = ctx.snake()
    p = rings.shape[1]
    est = Estimate(op, "bidir-ring" if bidir else "ring", None, nbytes, p, passes=PASSES[op])
    pat = ctx.ring(("snake",), rings, bidir)
    est.phases.append(PhaseCost(None, p, 1, "snake", nbytes, nbytes / p / (2 if bidir else 1), p - 1, pat))
    return _finish(est, ctx.profile)


def dim_by_dim(ctx: Context, op: str, nbytes: float, order: tuple[int, ...]) -> Estimate:
    """Bidirectional rings per dimension, the first dimension of `order` carrying the whole payload."""
    phases = ctx.dim_phases(order)
    est = Estimate(op, "dim-by-dim", tuple(ph.dim for ph in phases), nbytes, ctx.tables.n, passes=PASSES[op])
    payload = float(nbytes)
    for ph in phases:
        m = ph.size
        pat = ctx.ring(("dim", ph.dim, ph.generator), ph.rings, True)
        est.phases.append(PhaseCost(ph.dim, m, len(ph.rings), ph.step_text, payload, payload / m / 2, m - 1, pat))
        payload /= m
    return _finish(est, ctx.profile)


def rotations(order: tuple[int, ...]) -> list[tuple[int, ...]]:
    return [order[i:] + order[:i] for i in range(len(order))]


SPLIT = 24  # multi-dim splits the data in multiples of 1/SPLIT (so a simulation can split integer data alike)


def _ring_load(ctx: Context, ph: Phase) -> npt.NDArray[np.float64]:
    """[N * 6] seconds per byte of message on each link for one step of a phase's bidirectional rings."""
    import numpy as np

    key = ("load", ph.dim, ph.generator)
    if key not in ctx.loads:
        nxt = np.roll(ph.rings, -1, axis=1)
        src, dst = np.concatenate([ph.rings.ravel(), nxt.ravel()]), np.concatenate([nxt.ravel(), ph.rings.ravel()])
        _msg, links, _hops, ok = walk(ctx.tables, src, dst)
        bw = np.tile([ctx.profile.bandwidth(p // 2) for p in range(6)], ctx.tables.n)
        load = np.bincount(links, minlength=ctx.tables.n * 6) / bw
        ctx.loads[key] = load if ok.all() else np.full_like(load, np.inf)
    return ctx.loads[key]


def _compositions(total: int, parts: int) -> npt.NDArray[np.int64]:
    """Every way to write `total` as `parts` positive integers, one per row."""
    import numpy as np

    rows = [c for c in product(range(1, total), repeat=parts - 1) if sum(c) < total]
    return np.array([[*c, total - sum(c)] for c in rows], dtype=np.int64).reshape(-1, parts)


def _distinct_columns(a: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """The distinct columns of `a` (most links of a torus carry the same loads), found by sorting one number per
    column: its dot product with square roots of primes, which no two different load columns share (their
    entries are a few multiples of one another's). Much faster than `np.unique(axis=1)`."""
    import numpy as np

    weights = np.sqrt(np.array([2.0, 3.0, 5.0, 7.0, 11.0, 13.0]))[: a.shape[0]]
    _, first = np.unique(weights @ a, return_index=True)
    return a[:, first]


def split(ctx: Context, parts: list[list[Phase]]) -> list[int]:
    """Units of 1/SPLIT of the data per part that make the bandwidth term of multi-dim smallest.

    Link loads are linear in the parts' sizes, so every split is costed at once: in each stretch of steps the
    busiest link's seconds are the largest of (sizes @ per-part link seconds). A part whose first dimension is
    slower or loaded by detours around a fault gets less data; on a healthy regular slice the split is even.
    """
    import numpy as np

    if len(parts) == 1:
        return [SPLIT]
    units = _compositions(SPLIT, len(parts)).astype(np.float64)
    total = np.zeros(len(units))
    shrink = np.ones(len(parts))  # payload of each part relative to its start
    for k in range(len(parts[0])):
        sizes = [p[k].size for p in parts]
        done = 0
        for end in sorted(set(m - 1 for m in sizes)):
            active = [i for i, m in enumerate(sizes) if m - 1 > done]
            per_unit = np.stack([_ring_load(ctx, parts[i][k]) * shrink[i] / sizes[i] / 2 for i in active])
            per_unit = _distinct_columns(per_unit[:, per_unit.max(axis=0) > 0])
            total += (end - done) * (units[:, active] @ per_unit).max(axis=1, initial=0.0)
            done = end
        shrink /= sizes
    return [int(u) for u in units[int(np.argmin(total))]]


def multi_dim(ctx: Context, op: str, nbytes: float, order: tuple[int, ...]) -> Estimate:
    """Dimension by dimension on every dimension at once: the data in one part per dimension, part i running
    dim-by-dim in the i-th rotation of `order`, so that in each phase every dimension's links carry a part.

    Parts are sized by `split`. Phase k lasts as long as its longest ring; once the shorter rings of other parts
    have finished, only the rest share the links, so every step is costed with the parts still active.
    """
    import numpy as np

    parts = [ctx.dim_phases(o) for o in rotations(order)]
    est = Estimate(op, "multi-dim", tuple(ph.dim for ph in parts[0]), nbytes, ctx.tables.n, passes=PASSES[op])
    units = split(ctx, parts)
    est.shares = tuple(u / SPLIT for u in units)
    payload = [nbytes * u / SPLIT for u in units]
    for k in range(len(parts[0])):
        sizes = [p[k].size for p in parts]
        done = 0
        for end in sorted(set(m - 1 for m in sizes)):
            active = [i for i, m in enumerate(sizes) if m - 1 > done]
            src, dst, size = [], [], []
            for i in active:
                ph, msg = parts[i][k], payload[i] / sizes[i] / 2
                nxt = np.roll(ph.rings, -1, axis=1)
                src += [ph.rings.ravel(), nxt.ravel()]
                dst += [nxt.ravel(), ph.rings.ravel()]
                size += [np.full(2 * ph.rings.size, msg)]
            pat = pattern(ctx.tables, ctx.profile, np.concatenate(src), np.concatenate(dst), np.concatenate(size))
            label = "+".join(DIMS[parts[i][k].dim] for i in active)
            rings = sum(len(parts[i][k].rings) for i in active)
            step = ",".join(parts[i][k].step_text for i in active)
            est.phases.append(PhaseCost(None, max(sizes), rings, step, sum(payload), 1.0, end - done, pat, label))
            done = end
        payload = [payload[i] / sizes[i] for i in range(len(parts))]
    return _finish(est, ctx.profile)


def a2a_direct(ctx: Context, nbytes: float) -> Estimate:
    """Every chip sends n/p to every other chip at once, each message on its own route."""
    p = ctx.tables.n
    est = Estimate("all-to-all", "direct", None, nbytes, p)
    est.phases.append(PhaseCost(None, p, 1, "all pairs", nbytes, nbytes / p, 1, _a2a_pattern(ctx)))
    return _finish(est, ctx.profile)


def _a2a_pattern(ctx: Context) -> Pattern:
    """All-pairs link load from the routing layer's level-by-level sweep (one walk per pair would be N^2 hops)."""
    key = ("all-pairs",)
    if key not in ctx.patterns:
        ctx.patterns[key] = _swept_pattern(ctx.tables, ctx.profile, None)
    return ctx.patterns[key]


def _swept_pattern(t: Tables, profile: Profile, senders: npt.NDArray[np.bool_] | None) -> Pattern:
    """One unit from every source to every destination (`senders[dst, src]`: only those pairs; None: all), its
    link load summed level by level over the tables rather than walked message by message."""
    import numpy as np

    from tpufleet.routing.analysis import Levels, RouteTables, flow, link_load, verify

    rt = RouteTables(t.shape, t.nbr, np.ascontiguousarray(t.port.T), np.ascontiguousarray(t.hop_table().T))
    levels = Levels(rt.L)
    routable = verify(rt, levels)
    broken = ~routable if senders is None else ~routable & senders
    if broken.any():
        dst, src = (int(v[0]) for v in np.nonzero(broken))
        return Pattern(0.0, 0, 0, None, (src, dst))
    weight, _ = flow(rt, routable if senders is None else senders, levels, masks=False)
    load = link_load(rt, weight)
    bw = np.array([profile.bandwidth(p // 2) for p in range(6)])
    per_byte = load / bw[None, :]
    worst = int(np.argmax(per_byte))
    hops = int(rt.L.max()) if senders is None else int(rt.L[senders].max())
    return Pattern(float(per_byte.ravel()[worst]), hops, int(load.ravel()[worst]), (worst // 6, worst % 6))


def _ring_pairs_pattern(t: Tables, profile: Profile, rings: npt.NDArray[np.int64]) -> Pattern:
    """Every pair of each ring's members: walked message by message while their hops (about pairs x ring / 4)
    stay within the tables' N^2 entries, else swept over the tables, whose memory is bounded by theirs (walking
    a 1,024-chip line's million pairs kept 2.7 GB of hops; the sweep gives the same loads)."""
    import numpy as np

    r, m = rings.shape
    if r * m * (m - 1) * m // 4 <= t.n * t.n:
        return _all_pairs_pattern(t, profile, rings)
    ring_of = np.full(t.n, -1, dtype=np.int64)
    ring_of[rings.ravel()] = np.repeat(np.arange(r), m)
    senders = (ring_of[:, None] == ring_of[None, :]) & (ring_of >= 0)[:, None]
    return _swept_pattern(t, profile, senders)


def a2a_dims(ctx: Context, nbytes: float, order: tuple[int, ...]) -> Estimate:
    """All-to-all forwarded dimension by dimension: in each phase a chip sends each ring member the n/size bytes
    bound for chips with that member's digit, so only ring members need table entries."""
    phases = ctx.dim_phases(order)
    est = Estimate("all-to-all", "dim-by-dim", tuple(ph.dim for ph in phases), nbytes, ctx.tables.n)
    for ph in phases:
        key = ("pairs", ph.dim, ph.generator)
        if key not in ctx.patterns and ph.rings.shape == (1, ctx.tables.n):  # one ring of every chip: all pairs
            ctx.patterns[key] = _a2a_pattern(ctx)
        elif key not in ctx.patterns:
            ctx.patterns[key] = _ring_pairs_pattern(ctx.tables, ctx.profile, ph.rings)
        est.phases.append(
            PhaseCost(ph.dim, ph.size, len(ph.rings), ph.step_text, nbytes, nbytes / ph.size, 1, ctx.patterns[key])
        )
    return _finish(est, ctx.profile)


def orders(ctx: Context) -> list[tuple[int, ...]]:
    """Every order of the dimensions longer than one chip."""
    dims = [d for d in range(3) if ctx.tables.shape.dims[d] > 1]
    return [tuple(o) for o in permutations(dims)]


def check_algorithm(op: str, algorithm: str) -> tuple[str, ...]:
    """The algorithms that apply to `op`; BadInput if `algorithm` is not one of them (nor auto)."""
    allowed = A2A_ALGORITHMS if op == "all-to-all" else RING_ALGORITHMS
    if algorithm != "auto" and algorithm not in allowed:
        raise BadInput(
            f"bad option --algorithm: {algorithm!r} does not apply to {op}; use {', '.join(allowed)} or auto"
        )
    return allowed


def estimate(ctx: Context, op: str, nbytes: float, algorithm: str, order: tuple[int, ...] | None) -> list[Estimate]:
    """Estimates of `algorithm` (all orders of dim-by-dim unless `order`); every algorithm for `auto`."""
    allowed = check_algorithm(op, algorithm)
    names = allowed if algorithm == "auto" else (algorithm,)
    out: list[Estimate] = []
    for name in names:
        if name == "dim-by-dim":
            for o in [order] if order else orders(ctx):
                out.append(a2a_dims(ctx, nbytes, o) if op == "all-to-all" else dim_by_dim(ctx, op, nbytes, o))
        elif name == "multi-dim":
            dims = orders(ctx)[0] if orders(ctx) else ()
            families = [order] if order else ([dims, dims[:1] + dims[1:][::-1]] if len(dims) > 2 else [dims])
            out += [multi_dim(ctx, op, nbytes, o) for o in families if o]
        elif name == "direct":
            out.append(a2a_direct(ctx, nbytes))
        else:
            out.append(ring(ctx, op, nbytes, name == "bidir-ring"))
    return out


def parse_order(text: str) -> tuple[int, ...]:
    """'yxz', 'y,x,z' or 'Y X Z' -> (1, 0, 2); every dimension once, or some of them ('yx' on a 128x32, 'x' on a
    what-if ring of 128x1), those left out being one chip deep (`complete_order` checks that against the shape)."""
    letters = [c for c in text.lower() if c not in ", "]
    if sorted(letters) != sorted(set(letters)) or any(c not in DIMS for c in letters) or not letters:
        raise BadInput(f"bad option --dims: {text!r} is not an order of x, y and z (e.g. yxz, or yx on a 128x32)")
    return tuple(DIMS.index(c) for c in letters)


def complete_order(order: tuple[int, ...] | None, dims: tuple[int, int, int]) -> tuple[int, ...] | None:
    """`--dims` on a shape of `dims`: the order with any dimension it leaves out put last, which must be one chip
    deep (`yx` on a 128x32); BadInput when it leaves out a longer one."""
    if order is None:
        return None
    missing = tuple(d for d in range(3) if d not in order)
    longer = [d for d in missing if dims[d] > 1]
    if longer:
        named = "".join(DIMS[d] for d in order)
        d = longer[0]
        raise BadInput(f"bad option --dims: {named!r} leaves out {DIMS[d]}, a dimension of {dims[d]} chips")
    return order + missing


def _gbps(per_byte: float) -> str:
    return f"{1 / per_byte / 1e9:.1f} GB/s" if per_byte > 0 else "no traffic"


SAME = 1e-9  # relative difference below which two estimates tie (then fewer hops, then the listed order wins)


def best_of(ests: list[Estimate]) -> Estimate | None:
    """The fastest estimate that runs; on a tie the one with less latency, then the first listed."""
    running = [e for e in ests if e.runs]
    if not running:
        return None
    fastest = min(e.seconds for e in running)
    tied = [e for e in running if e.seconds <= fastest * (1 + SAME)]
    return min(tied, key=lambda e: e.latency)


def why(best: Estimate, others: list[Estimate]) -> str:
    """Why `best` was chosen: against the best of every other algorithm, and, for dim-by-dim, why this order."""
    text = f"{best.name} is the fastest that runs ({best.seconds * 1e3:.4g} ms)"
    rivals = []
    for name in dict.fromkeys(e.algorithm for e in others if e.algorithm != best.algorithm):
        runs = [e for e in others if e.algorithm == name and e.runs]
        if runs:
            r = min(runs, key=lambda e: e.seconds)
            rivals.append(f"{r.name} {r.seconds * 1e3:.4g} ms ({r.seconds / best.seconds:.3f}x)")
        else:
            rivals.append(f"{name} cannot run on these tables")
    if rivals:
        text += ": against " + ", ".join(rivals)
    if best.algorithm == "multi-dim":
        text += "; it keeps every dimension's links busy (one part of the data per dimension, each in a rotated order)"
    orders = [e for e in others if e.algorithm == "dim-by-dim" == best.algorithm and e.order and e.runs]
    if best.order and len(orders) > 1 and len(best.phases) > 1:
        worst = max(orders, key=lambda e: e.seconds)
        if worst.seconds <= best.seconds * (1 + 1e-6):
            text += "; every dimension order takes the same time (all dimensions' links are equally fast and loaded)"
        else:
            first, last = best.phases[0], best.phases[-1]
            text += (
                f"; order {''.join(DIMS[d] for d in best.order)} puts the largest payload on {DIMS[first.dim or 0]} "
                f"({_gbps(first.pattern.seconds_per_byte)} per message on its busiest link) and the smallest on "
                f"{DIMS[last.dim or 0]} ({_gbps(last.pattern.seconds_per_byte)}); the worst order, "
                f"{''.join(DIMS[d] for d in worst.order or ())}, takes {worst.seconds * 1e3:.4g} ms "
                f"({worst.seconds / best.seconds:.3f}x)"
            )
    return text
