"""A link-by-link discrete simulation of a collective's schedule, to check the cost model against.

Unlike the model, nothing here assumes that the steps of a phase are alike or that the most loaded link alone
sets a step's time: every step is executed on real data (integer vectors, so the result can be checked exactly),
every message follows its table route hop by hop, and the links are shared max-min fairly among the messages
crossing them (progressive filling), re-shared each time a message finishes. A step ends when its last message
has arrived (transfer plus per-hop latency); steps run one after another, as in a bulk-synchronous program.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tpufleet.collectives.profile import Profile
from tpufleet.collectives.schedules import dim_phases, snake_ring
from tpufleet.collectives.tables import Tables, walk

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from tpufleet.constants import Int64Array


@dataclass
class SimResult:
    seconds: float
    steps: int
    messages: int
    correct: bool  # every chip ended with the exact expected data


def fair_rates(
    flow_of_hop: Int64Array, link_of_hop: Int64Array, capacity: npt.NDArray[np.float64], flows: int
) -> npt.NDArray[np.float64]:
    """Max-min fair rates of `flows` flows (progressive filling): raise every unfrozen flow's rate together until
    some link is full, freeze the flows crossing it, repeat."""
    import numpy as np

    rate = np.zeros(flows)
    frozen = np.zeros(flows, dtype=bool)
    left = capacity.astype(np.float64).copy()
    while not frozen.all():
        live = ~frozen[flow_of_hop]
        users = np.bincount(link_of_hop[live], minlength=len(left))
        used = users > 0
        share = np.full(len(left), np.inf)
        share[used] = left[used] / users[used]
        level = share.min()
        full = used & (share <= level * (1 + 1e-12))
        hit = np.unique(flow_of_hop[live & full[link_of_hop]])
        rate[hit] = level
        frozen[hit] = True
        np.subtract.at(left, link_of_hop[np.isin(flow_of_hop, hit)], level)
        left = np.maximum(left, 0.0)
    return rate


def run_step(t: Tables, profile: Profile, src: Int64Array, dst: Int64Array, nbytes: npt.NDArray[np.float64]) -> float:
    """Seconds until every message of one step has arrived."""
    import numpy as np

    flow_of_hop, link_of_hop, hops, ok = walk(t, src, dst)
    if not ok.all():
        raise ValueError("a message of the schedule is not delivered by the tables")
    capacity = np.array([profile.bandwidth(p // 2) for p in range(6)] * t.n)
    remaining = nbytes.astype(np.float64).copy()
    done_at = np.zeros(len(src))
    active = remaining > 0
    now = 0.0
    while active.any():
        keep = active[flow_of_hop]
        ids = np.flatnonzero(active)
        local = np.full(len(src), -1)
        local[ids] = np.arange(len(ids))
        rates = fair_rates(local[flow_of_hop[keep]], link_of_hop[keep], capacity, len(ids))
        dt = float((remaining[ids] / rates).min())
        now += dt
        remaining[ids] -= rates * dt
        finished = ids[remaining[ids] <= nbytes[ids] * 1e-9]
        done_at[finished] = now
        remaining[finished] = 0.0
        active[finished] = False
    return float((done_at + hops * profile.hop_latency).max()) if len(src) else 0.0


Move = tuple["Int64Array", "Int64Array", "Int64Array"]  # senders [R], receivers [R], element indices [R, k]


def _halves(seg: Int64Array, rings: Int64Array, bidir: bool) -> tuple[Int64Array, Int64Array | None]:
    """[R, position, part, k] element indices of the halves sent clockwise (and counter-clockwise)."""
    m = rings.shape[1]
    parts = seg[rings].reshape(rings.shape[0], m, m, -1)
    if not bidir:
        return parts, None
    h = parts.shape[-1] // 2
    return parts[..., :h], parts[..., h:]


def rs_steps(seg: Int64Array, rings: Int64Array, bidir: bool) -> tuple[list[list[Move]], Int64Array]:
    """The moves of a ring reduce-scatter, step by step, and each chip's segment after it.

    Clockwise, the chip at position i sends part (i - s) at step s and ends with the whole sum of part i + 1;
    counter-clockwise (bidirectional rings, the other half of every part) it sends part (i + s), ends with i - 1.
    """
    import numpy as np

    m = rings.shape[1]
    cw, ccw = _halves(seg, rings, bidir)
    steps = []
    for s in range(m - 1):
        moves = [(rings[:, i], rings[:, (i + 1) % m], cw[:, i, (i - s) % m]) for i in range(m)]
        if ccw is not None:
            moves += [(rings[:, i], rings[:, (i - 1) % m], ccw[:, i, (i + s) % m]) for i in range(m)]
        steps.append(moves)
    after = np.empty((len(seg), seg.shape[1] // m), dtype=np.int64)  # the rings cover every chip
    for i in range(m):
        keep = [cw[:, i, (i + 1) % m]] + ([ccw[:, i, (i - 1) % m]] if ccw is not None else [])
        after[rings[:, i]] = np.concatenate(keep, axis=1)
    return steps, after


def ag_steps(before: Int64Array, rings: Int64Array, bidir: bool) -> list[list[Move]]:
    """The moves of the all-gather undoing `rs_steps` from segment `before`: each chip passes on what it has."""
    m = rings.shape[1]
    cw, ccw = _halves(before, rings, bidir)
    steps = []
    for s in range(m - 1):
        moves = [(rings[:, i], rings[:, (i + 1) % m], cw[:, i, (i + 1 - s) % m]) for i in range(m)]
        if ccw is not None:
            moves += [(rings[:, i], rings[:, (i - 1) % m], ccw[:, i, (i - 1 + s) % m]) for i in range(m)]
        steps.append(moves)
    return steps


class _Run:
    """Integer data on every chip, the moves applied to it, and the simulated time of every step."""

    def __init__(self, t: Tables, profile: Profile, nbytes: float, elements: int, seed: int = 7) -> None:
        import numpy as np

        self.t, self.profile = t, profile
        self.per_element = nbytes / elements
        self.data = np.random.default_rng(seed).integers(0, 1000, size=(t.n, elements), dtype=np.int64)
        self.total = self.data.sum(axis=0)
        self.seconds, self.steps, self.messages = 0.0, 0, 0

    def step(self, moves: list[Move], add: bool) -> None:
        """Every move of a step at once: values are read before any is written."""
        import numpy as np

        values = [self.data[s[:, None], idx] for s, _r, idx in moves]
        for (_s, r, idx), v in zip(moves, values, strict=True):
            if add:
                self.data[r[:, None], idx] += v
            else:
                self.data[r[:, None], idx] = v
        src = np.concatenate([s for s, _r, _i in moves])
        dst = np.concatenate([r for _s, r, _i in moves])
        size = np.concatenate([np.full(len(s), idx.shape[1] * self.per_element) for s, _r, idx in moves])
        self.seconds += run_step(self.t, self.profile, src, dst, size)
        self.steps += 1
        self.messages += len(src)

    def lockstep(self, per_part: list[list[list[Move]]], add: bool) -> None:
        """Run several parts' steps together: step s of every part that still has one."""
        for s in range(max(len(p) for p in per_part)):
            self.step([mv for p in per_part if s < len(p) for mv in p[s]], add)

    def scattered_ok(self, segs: list[Int64Array]) -> bool:
        """Every chip holds the full sum of its shards, and the shards cover the data once."""
        import numpy as np

        seg = np.concatenate(segs, axis=1)
        rows = np.arange(self.t.n)[:, None]
        covered = np.sort(seg.ravel())
        return bool((self.data[rows, seg] == self.total[seg]).all()) and bool(
            (covered == np.arange(self.data.shape[1])).all()
        )


def _plans(
    t: Tables, profile: Profile, algorithm: str, order: tuple[int, ...]
) -> tuple[list[list[tuple[Int64Array, bool]]], list[int]]:
    """Per part of the data, its ring phases (rings, bidirectional?) in order; and each part's share."""
    if algorithm == "multi-dim":
        from tpufleet.collectives.algorithms import Context, rotations, split

        ctx = Context(t, profile)
        parts = [ctx.dim_phases(o) for o in rotations(tuple(d for d in order if t.shape.dims[d] > 1))]
        return [[(ph.rings, True) for ph in part] for part in parts], split(ctx, parts)
    if algorithm == "dim-by-dim":
        from tpufleet.collectives.algorithms import folded

        return [[(ph.rings, True) for ph in dim_phases(t.shape, order, t.healthy_nbr, folded(t))]], [1]
    return [[(snake_ring(t.shape, t.healthy_nbr), algorithm == "bidir-ring")]], [1]


def simulate(
    t: Tables, profile: Profile, op: str, algorithm: str, nbytes: float, order: tuple[int, ...] = (0, 1, 2)
) -> SimResult:
    """Run all-reduce, reduce-scatter or all-gather (ring, bidir-ring, dim-by-dim or multi-dim) step by step."""
    import numpy as np

    plans, shares = _plans(t, profile, algorithm, order)
    unit = 2 * t.n  # elements per share: every ring size (and its halving) divides it
    bounds = np.cumsum([0, *shares]) * unit
    run = _Run(t, profile, nbytes, int(bounds[-1]))
    segs = [np.tile(np.arange(lo, hi, dtype=np.int64), (t.n, 1)) for lo, hi in itertools.pairwise(bounds)]
    history: list[list[Int64Array]] = []
    for k in range(len(plans[0])):
        history.append(list(segs))
        made = [rs_steps(segs[i], *plans[i][k]) for i in range(len(plans))]
        run.lockstep([steps for steps, _ in made], add=True)
        segs = [after for _, after in made]
    correct = run.scattered_ok(segs)
    if op == "reduce-scatter":
        return SimResult(run.seconds, run.steps, run.messages, correct)
    if op == "all-gather":  # the same steps as the reduce-scatter's, backwards: time only that half
        run.seconds, run.steps, run.messages = 0.0, 0, 0
    for k in reversed(range(len(plans[0]))):
        run.lockstep([ag_steps(history[k][i], *plans[i][k]) for i in range(len(plans))], add=False)
    correct = correct and bool((run.data == run.total[None, :]).all())
    return SimResult(run.seconds, run.steps, run.messages, correct)
