"""The alpha-beta cost model of collectives on a slice's routing tables.

A collective is a sequence of steps; in a step every chip sends its messages at once, each along its table
route. A step lasts as long as its most loaded link needs for the bytes routed over it (each link at its own
bandwidth, one direction) plus the per-hop latency of its longest route. A rerouted slice's detours therefore
show as links carrying two rings' messages, and a twisted slice's longer ring steps as more hops.

Ring reduce-scatter over p chips is p - 1 steps of n/p bytes per chip; all-gather the same; all-reduce both.
A bidirectional ring sends half of each chunk each way. Dimension by dimension (the "Exploring the limits of
concurrency in ML training on Google TPUs" paper, section 3.3), the reduce-scatter runs one phase per dimension,
each on 1/size of the previous payload, and the all-gather runs the phases back in reverse order.
All-to-all sends n/p to every other chip in one step (`direct`), or forwards dimension by dimension within rings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, get_args

from tpufleet.collectives.profile import Profile
from tpufleet.collectives.tables import Tables, walk
from tpufleet.constants import DIMS

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

# The collectives `tpufleet collective --op` times, and the algorithms `--algorithm` chooses among.
CollectiveOp = Literal["all-reduce", "reduce-scatter", "all-gather", "all-to-all"]
OPS: tuple[CollectiveOp, ...] = get_args(CollectiveOp)
CollectiveAlgorithm = Literal["ring", "bidir-ring", "dim-by-dim", "multi-dim", "direct", "auto"]
ALGORITHMS: tuple[CollectiveAlgorithm, ...] = get_args(CollectiveAlgorithm)
RING_ALGORITHMS: tuple[CollectiveAlgorithm, ...] = ("ring", "bidir-ring", "dim-by-dim", "multi-dim")
A2A_ALGORITHMS: tuple[CollectiveAlgorithm, ...] = ("direct", "dim-by-dim")


@dataclass
class Pattern:
    """What one step of a phase costs, per byte of each message (all messages of a step are the same size)."""

    seconds_per_byte: float  # max over links of messages / bandwidth
    hops: int  # longest route
    max_messages: int  # messages on the most loaded link
    slowest_link: tuple[int, int] | None  # (chip, port)
    undelivered: tuple[int, int] | None = None  # (source, destination) of a message the tables cannot deliver


@dataclass
class PhaseCost:
    dim: int | None  # None for a whole-slice ring, a direct all-to-all or several dimensions at once
    size: int  # chips per ring (or in the slice)
    rings: int
    step: str  # the ring step, e.g. "+x" or "+y-x"
    payload: float  # bytes per chip entering the phase
    message: float  # bytes per message per step
    steps: int  # steps per pass (reduce-scatter or all-gather)
    pattern: Pattern
    label: str | None = None  # the dimensions busy at once (multi-dim), e.g. "x+y+z"

    @property
    def step_seconds(self) -> float:
        return self.message * self.pattern.seconds_per_byte

    def as_dict(self, profile: Profile, passes: int) -> dict[str, Any]:
        return {
            "dimension": DIMS[self.dim] if self.dim is not None else self.label,
            "ring_size": self.size,
            "rings": self.rings,
            "step": self.step,
            "payload_bytes": self.payload,
            "steps": self.steps * passes,
            "seconds": passes * self.steps * (self.step_seconds + self.pattern.hops * profile.hop_latency),
            "step_s": self.step_seconds + self.pattern.hops * profile.hop_latency,
            "max_link_messages": self.pattern.max_messages,
            "hops": self.pattern.hops,
            "slowest_link": _link_text(self.pattern.slowest_link),
        }


@dataclass
class Estimate:
    op: str
    algorithm: str
    order: tuple[int, ...] | None
    nbytes: float
    chips: int
    phases: list[PhaseCost] = field(default_factory=list)
    passes: int = 1  # 2 for all-reduce (reduce-scatter then all-gather)
    latency: float = 0.0
    bandwidth: float = 0.0
    undelivered: tuple[int, int] | None = None
    shares: tuple[float, ...] | None = None  # multi-dim: the share of the data of each part

    @property
    def runs(self) -> bool:
        return self.undelivered is None

    @property
    def seconds(self) -> float:
        return self.latency + self.bandwidth

    @property
    def name(self) -> str:
        return self.algorithm + (f" ({''.join(DIMS[d] for d in self.order)})" if self.order else "")

    def bus_bandwidth(self) -> float:
        """Algorithm bandwidth n/t times the share of the data each chip must move (NCCL's bus bandwidth)."""
        p = self.chips
        factor = 2 * (p - 1) / p if self.op == "all-reduce" else (p - 1) / p
        return self.nbytes / self.seconds * factor if self.seconds > 0 else 0.0


def _link_text(link: tuple[int, int] | None) -> str | None:
    from tpufleet.topology import PORTS

    return None if link is None else f"chip {link[0]} {PORTS[link[1]]}"


def pattern(
    t: Tables,
    profile: Profile,
    src: npt.NDArray[np.int64],
    dst: npt.NDArray[np.int64],
    weights: npt.NDArray[np.float64] | None = None,
) -> Pattern:
    """Walk one message per (src, dst) along the tables: the per-byte time of the most loaded link, the hops.

    With `weights` (bytes per message) the link loads are in bytes and `seconds_per_byte` is the step's seconds.
    """
    import numpy as np

    msg, links, hops, ok = walk(t, src, dst)
    if not ok.all():
        i = int(np.flatnonzero(~ok)[0])
        return Pattern(0.0, 0, 0, None, (int(src[i]), int(dst[i])))
    if not len(links):
        return Pattern(0.0, 0, 0, None)
    count = np.bincount(links, minlength=t.n * 6).astype(np.float64)
    load = count if weights is None else np.bincount(links, weights=weights[msg], minlength=t.n * 6)
    bw = np.array([profile.bandwidth(p // 2) for p in range(6)])
    per_byte = load.reshape(t.n, 6) / bw[None, :]
    worst = int(np.argmax(per_byte))
    return Pattern(float(per_byte.ravel()[worst]), int(hops.max()), int(count[worst]), (worst // 6, worst % 6))


def _ring_pattern(t: Tables, profile: Profile, rings: npt.NDArray[np.int64], bidir: bool) -> Pattern:
    import numpy as np

    nxt = np.roll(rings, -1, axis=1)
    src, dst = rings.ravel(), nxt.ravel()
    if bidir:
        src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
    return pattern(t, profile, src, dst)


def _all_pairs_pattern(t: Tables, profile: Profile, rings: npt.NDArray[np.int64]) -> Pattern:
    import numpy as np

    m = rings.shape[1]
    a, b = np.meshgrid(np.arange(m), np.arange(m), indexing="ij")
    keep = a != b
    return pattern(t, profile, rings[:, a[keep]].ravel(), rings[:, b[keep]].ravel())
