"""The hierarchical all-reduce of a multislice job: ICI inside each slice, the data-centre network between them.

"Pathways: Asynchronous Distributed Dataflow for ML" (section 5.3, appendix D) reduces gradients inside each
island over ICI, then exchanges them between islands over the DCN; Cloud TPU Multislice does the same. Here,
for S bytes per chip on N slices of P chips (H hosts each):

1. ICI reduce-scatter of S inside each slice (the per-slice model on the slice's own tables): each chip then
   holds a shard of S / P bytes, summed over its slice.
2. DCN all-reduce of every shard among the N slices: chip i of every slice holds shard i, so N rings (one per
   shard) run at once through the hosts. A ring all-reduce sends 2(N-1)/N of its data per member; a host
   carries its P / H chips' shards, so each host sends 2(N-1)/N * S / H bytes at its DCN bandwidth (divided by
   the pods' oversubscription when the slices are in more than one pod), in 2(N-1) steps of one DCN latency.
3. ICI all-gather of the reduced shards inside each slice.

The slices run in lockstep (one program, gang-scheduled), so each ICI phase lasts as long as its slowest slice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tpufleet.collectives.profile import Dcn, Profile
from tpufleet.constants import CHIPS_PER_MACHINE, CUBE_EDGE
from tpufleet.shapes import SUBCUBE_SHAPES, Shape, twistable

if TYPE_CHECKING:
    from tpufleet.generations import Generation


@dataclass(frozen=True)
class DcnPhase:
    """The DCN all-reduce between slices of each chip's shard."""

    slices: int
    hosts_per_slice: int
    bytes_per_chip: float  # S, before the reduce-scatter
    host_bandwidth: float  # bytes/s per host after oversubscription
    oversubscription: float  # 1 when every slice is in one pod
    latency_s: float
    bandwidth_s: float

    @property
    def seconds(self) -> float:
        return self.latency_s + self.bandwidth_s

    @property
    def bytes_per_host(self) -> float:
        return _bytes_per_host(self.slices, self.bytes_per_chip, self.hosts_per_slice)


def _bytes_per_host(slices: int, bytes_per_chip: float, hosts_per_slice: int) -> float:
    """Bytes one host sends over the DCN (and receives) during the ring all-reduce among `slices` slices."""
    return 2 * (slices - 1) / slices * bytes_per_chip / hosts_per_slice


def hosts(shape: Shape) -> int:
    """Hosts of a slice: one per 4 chips (a sub-host slice still has one)."""
    return max(1, shape.chips // CHIPS_PER_MACHINE)


def dcn_all_reduce(nbytes: float, slices: int, hosts_per_slice: int, dcn: Dcn, across_pods: bool) -> DcnPhase:
    """The ring all-reduce among `slices` slices of each chip's shard of `nbytes` (closed form; 0 for one slice)."""
    over = dcn.pod_oversubscription if across_pods else 1.0
    bandwidth = dcn.host_bandwidth / over
    per_host = _bytes_per_host(slices, nbytes, hosts_per_slice)
    latency = 2 * (slices - 1) * dcn.latency
    return DcnPhase(slices, hosts_per_slice, float(nbytes), bandwidth, over, latency, per_host / bandwidth)


@dataclass(frozen=True)
class Hierarchical:
    """The three phases of the all-reduce; each ICI phase is the slowest slice's."""

    reduce_scatter_s: float
    dcn: DcnPhase
    all_gather_s: float

    @property
    def seconds(self) -> float:
        return self.reduce_scatter_s + self.dcn.seconds + self.all_gather_s


def hierarchical(reduce_scatter: Sequence[float], dcn: DcnPhase, all_gather: Sequence[float]) -> Hierarchical:
    """Combine the per-slice ICI times (one per slice) with the DCN phase."""
    return Hierarchical(max(reduce_scatter), dcn, max(all_gather))


@dataclass(frozen=True)
class Step:
    """A data-parallel training step: the model's FLOPs on every chip at peak, then the all-reduce (not
    overlapped, as in the Pathways trace of appendix D: the islands wait for the DCN transfer)."""

    compute_s: float
    all_reduce_s: float
    dcn_s: float

    def _share(self, part_s: float) -> float:
        """`part_s` as a share of the step (0 for a step that takes no time)."""
        return part_s / self.seconds if self.seconds > 0 else 0.0

    @property
    def seconds(self) -> float:
        return self.compute_s + self.all_reduce_s

    @property
    def all_reduce_fraction(self) -> float:
        return self._share(self.all_reduce_s)

    @property
    def dcn_fraction(self) -> float:
        return self._share(self.dcn_s)


def step(model_flops: float, chips: int, profile: Profile, all_reduce_s: float, dcn_s: float = 0.0) -> Step:
    return Step(model_flops / (chips * profile.peak_flops), all_reduce_s, dcn_s)


def one_slice_shapes(chips: int, max_cubes: int, generation: Generation | None = None) -> list[Shape]:
    """The slice shapes of `chips` chips one pod of `max_cubes` cubes can hold: those the pods' `generation`
    accepts (its own shape rule, sides in ascending order, once each), or without one (the built-in TPU v4 pod) the
    documented Cloud TPU v4 torus forms (A <= B <= C <= 2A, sides multiples of 4, twisted
    where the twist exists) or a sub-cube block."""
    from tpufleet.constants import CHIPS_PER_CUBE, MAX_SLICE_CHIPS

    if generation is not None:
        ordered = ((a, b, c) for a, b, c in map(sorted, generation.accepted_shapes()) if a * b * c == chips)
        sides = sorted(set(ordered))
        fits = [d for d in sides if generation.cubes_of(d) <= max_cubes]
        return [Shape(d, twisted=t) for d in fits for t in (False, True) if not t or generation.twistable(d)]
    if chips < CHIPS_PER_CUBE:
        return [Shape(d) for d in SUBCUBE_SHAPES if d[0] * d[1] * d[2] == chips]
    if chips > MAX_SLICE_CHIPS or chips % CHIPS_PER_CUBE or chips // CHIPS_PER_CUBE > max_cubes:
        return []
    out = []
    for a in range(CUBE_EDGE, round(chips ** (1 / 3)) + 1, CUBE_EDGE):
        for b in range(a, 2 * a + 1, CUBE_EDGE):
            c, rest = divmod(chips, a * b)
            if rest == 0 and b <= c <= 2 * a:
                out.append(Shape((a, b, c)))
                if twistable((a, b, c)):
                    out.append(Shape((a, b, c), twisted=True))
    return out
