"""A link-by-link discrete simulation of a collective's schedule, to check the cost model against.

Unlike the model, nothing here assumes that the steps of a phase are alike or that the most loaded link alone
sets a step's time: every step is executed on real data (integer vectors, so the result can be checked exactly),
every message follows its table route hop by hop, and the links are shared max-min fairly among the messages
crossing them (progressive filling), re-shared each time a message finishes. A step ends when its last message
has arrived (transfer plus per-hop latency); steps run one after another, as in a bulk-synchronous program.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tpufleet.collectives.profile import Profile
from tpufleet.collectives.schedules import dim_phases, snake_ring
from tpufleet.collectives.tables import Tables, walk

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    IntArray = npt.NDArray[np.int64]


@dataclass
class SimResult:
    seconds: float
    steps: int
    messages: int
    correct: bool  # every chip ended with the exact expected data


def fair_rates(
    flow_of_hop: IntArray, link_of_hop: IntArray, capacity: npt.NDArray[np.float64], flows: int
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


def run_step(t: Tables, profile: Profile, src: IntArray, dst: IntArray, nbytes: npt.NDArray[np.float64]) -> float:
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


class _Run:
    """Executes ring phases on integer data and times every step."""

    def __init__(self, t: Tables, profile: Profile, nbytes: float, elements: int, seed: int = 7) -> None:
        import numpy as np

        self.t, self.profile = t, profile
        self.per_element = nbytes / elements
        self.data = np.random.default_rng(seed).integers(0, 1000, size=(t.n, elements), dtype=np.int64)
        self.total = self.data.sum(axis=0)
        self.seg = np.tile(np.arange(elements, dtype=np.int64), (t.n, 1))
        self.seconds, self.steps, self.messages = 0.0, 0, 0

    def _step(self, moves: list[tuple[IntArray, IntArray, IntArray]], add: bool) -> None:
        """moves: (senders [R], receivers [R], element indices [R, k]) all sent at once."""
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

    def _halves(self, rings: IntArray, bidir: bool) -> tuple[IntArray, IntArray | None]:
        """[R, m, pos-part, k] element indices of the halves sent clockwise (and counter-clockwise)."""
        m = rings.shape[1]
        parts = self.seg[rings].reshape(rings.shape[0], m, m, -1)  # [ring, position, part, elements]
        if not bidir:
            return parts, None
        h = parts.shape[-1] // 2
        return parts[..., :h], parts[..., h:]

    def reduce_scatter(self, rings: IntArray, bidir: bool) -> None:
        import numpy as np

        m = rings.shape[1]
        cw, ccw = self._halves(rings, bidir)
        for s in range(m - 1):
            moves = [(rings[:, i], rings[:, (i + 1) % m], cw[:, i, (i - s) % m]) for i in range(m)]
            if ccw is not None:
                moves += [(rings[:, i], rings[:, (i - 1) % m], ccw[:, i, (i + s) % m]) for i in range(m)]
            self._step(moves, add=True)
        seg = np.empty((self.t.n, self.seg.shape[1] // m), dtype=np.int64)  # the rings cover every chip
        for i in range(m):
            keep = [cw[:, i, (i + 1) % m]] + ([ccw[:, i, (i - 1) % m]] if ccw is not None else [])
            seg[rings[:, i]] = np.concatenate(keep, axis=1)
        self.seg = seg

    def all_gather(self, rings: IntArray, bidir: bool, before: IntArray) -> None:
        m = rings.shape[1]
        self.seg = before
        cw, ccw = self._halves(rings, bidir)
        for s in range(m - 1):
            moves = [(rings[:, i], rings[:, (i + 1) % m], cw[:, i, (i + 1 - s) % m]) for i in range(m)]
            if ccw is not None:
                moves += [(rings[:, i], rings[:, (i - 1) % m], ccw[:, i, (i - 1 + s) % m]) for i in range(m)]
            self._step(moves, add=False)

    def scattered_ok(self) -> bool:
        """Every chip holds the full sum of its shard, and the shards cover the data once."""
        import numpy as np

        rows = np.arange(self.t.n)[:, None]
        covered = np.sort(self.seg.ravel())
        return bool((self.data[rows, self.seg] == self.total[self.seg]).all()) and bool(
            (covered == np.arange(self.data.shape[1])).all()
        )


def simulate(
    t: Tables, profile: Profile, op: str, algorithm: str, nbytes: float, order: tuple[int, ...] = (0, 1, 2)
) -> SimResult:
    """Run all-reduce, reduce-scatter or all-gather (ring, bidir-ring or dim-by-dim) step by step on `t`."""

    if algorithm == "dim-by-dim":
        plan = [(ph.rings, True) for ph in dim_phases(t.shape, order, t.healthy_nbr)]
    else:
        plan = [(snake_ring(t.shape), algorithm == "bidir-ring")]
    run = _Run(t, profile, nbytes, 2 * t.n)
    history = []
    for rings, bidir in plan:
        history.append(run.seg.copy())
        run.reduce_scatter(rings, bidir)
    correct = run.scattered_ok()
    if op == "reduce-scatter":
        return SimResult(run.seconds, run.steps, run.messages, correct)
    if op == "all-gather":  # the same steps as the reduce-scatter's, backwards: time only that half
        run.seconds = run.steps = run.messages = 0
    for (rings, bidir), before in zip(reversed(plan), reversed(history), strict=True):
        run.all_gather(rings, bidir, before)
    correct = correct and bool((run.data == run.total[None, :]).all())
    return SimResult(run.seconds, run.steps, run.messages, correct)
