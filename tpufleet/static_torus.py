"""A static pod wired as one fixed 2D torus of chips, for `simulate-availability --static-pod tpu-v3`: the TPU v3 pod
whose measured availability Fig. 1 of "Resiliency at Scale" (NSDI 2024) shows falling sharply as a job grows to its
1,024 chips. Pure.

A job of C chips needs one box of healthy hosts: every a x b hosts of C chips whose sides fit the pod's, in both
orientations, at every host offset, with wraparound (when C has no such box, the smallest boxes holding at least C
chips; none when C is more than the pod's chips). That is the most generous contiguous allocation: an allocator
offering fewer shapes places a job no more often. The pod's hosts fail independently, with the availability of the
reconfigurable pod's hosts, each drawn apart from them (it is another pod).

The search works as the TPU v4 static twin's (`availability._fits`): each row of the host torus is one word of
failed hosts, OR-ed over the box's offsets.

>>> TPU_V3.host_grid, TPU_V3.hosts, TPU_V3.chips
((16, 16), 256, 1024)
>>> host_boxes(TPU_V3, 256), chip_shapes(TPU_V3, [(8, 16)]), host_boxes(TPU_V3, 2048)
([(4, 16), (8, 8), (16, 4)], ['16x32'], [])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from tpufleet.constants import BoolArray, Int64Array

Box = tuple[int, int]  # hosts along x and y


@dataclass(frozen=True)
class TorusPod:
    """A static pod: a torus of `chip_grid` chips, each host `host_chips` of it."""

    name: str
    chip_grid: Box
    host_chips: Box

    @property
    def host_grid(self) -> Box:
        return (self.chip_grid[0] // self.host_chips[0], self.chip_grid[1] // self.host_chips[1])

    @property
    def hosts(self) -> int:
        return self.host_grid[0] * self.host_grid[1]

    @property
    def chips(self) -> int:
        return self.chip_grid[0] * self.chip_grid[1]


# "Resiliency at Scale" (NSDI 2024), section 2.1: "TPUv3 has 1024 TPUs connected in a 32x32 ICI torus". A host holds
# four chips, 2 x 2 (Cloud TPU's v3-8: one host; https://cloud.google.com/tpu/docs/system-architecture-tpu-vm).
TPU_V3: Final = TorusPod("tpu-v3", (32, 32), (2, 2))
STATIC_PODS: Final = {TPU_V3.name: TPU_V3}


def host_boxes(pod: TorusPod, chips: int) -> list[Box]:
    """The host boxes a job of `chips` chips may take on `pod` (see the module's docstring)."""
    X, Y = pod.host_grid
    per_host = pod.host_chips[0] * pod.host_chips[1]
    fits = [(a, b) for a in range(1, X + 1) for b in range(1, Y + 1)]
    exact = [s for s in fits if s[0] * s[1] * per_host == chips]
    if exact:
        return exact
    bigger = [s for s in fits if s[0] * s[1] * per_host >= chips]
    least = min((s[0] * s[1] for s in bigger), default=0)
    return [s for s in bigger if s[0] * s[1] == least]


def chip_shapes(pod: TorusPod, boxes: list[Box]) -> list[str]:
    """Host boxes as the slices' chip shapes are written (`16x32`)."""
    hx, hy = pod.host_chips
    return [f"{a * hx}x{b * hy}" for a, b in boxes]


def search_ops(pod: TorusPod, boxes: set[Box]) -> int:
    """Word operations of one trial's search over these boxes (`fits`: a + b over each of the X row words)."""
    return sum((a + b) * pod.host_grid[0] for a, b in boxes)


def successes(pod: TorusPod, host_up: BoolArray, sizes: list[list[Box]]) -> Int64Array:
    """Per job size (its boxes), the trials in which some box of `pod` has every host up; host h at (h // Y, h % Y)."""
    import numpy as np

    rows = _failed_rows(pod, host_up)
    cache: dict[Box, BoolArray] = {}
    out = []
    for boxes in sizes:
        ok = np.zeros(len(host_up), dtype=bool)
        for box in boxes:
            if box not in cache:
                cache[box] = _fits(rows, *box, pod.host_grid[1])
            ok |= cache[box]
        out.append(int(ok.sum()))
    return np.array(out, dtype=np.int64)


def _failed_rows(pod: TorusPod, host_up: BoolArray) -> npt.NDArray[np.uint64]:
    """[trials, X]: each row of the host torus as one word, bit y set where host (x, y) is down."""
    import numpy as np

    X, Y = pod.host_grid
    down = ~host_up.reshape(len(host_up), X, Y)
    weights = np.left_shift(np.uint64(1), np.arange(Y, dtype=np.uint64))
    rows: npt.NDArray[np.uint64] = (down.astype(np.uint64) * weights).sum(axis=2, dtype=np.uint64)
    return rows


def _fits(rows: npt.NDArray[np.uint64], A: int, B: int, Y: int) -> BoolArray:
    """Per trial, whether some A x B box of the torus, at any origin, has no host down: a host down at (fx, fy)
    rules out the origins (fx - dx, fy - dy) for dx < A, dy < B, with wraparound; a row's word is full when no
    origin on it is left."""
    import numpy as np

    full = np.uint64((1 << Y) - 1)
    out = rows.copy()
    for dx in range(1, A):
        out |= np.roll(rows, -dx, axis=1)
    across = out.copy()
    for dy in range(1, B):  # within the row, the bit dy further on
        out |= (across >> np.uint64(dy)) | ((across << np.uint64(Y - dy)) & full)
    fits: BoolArray = (out != full).any(axis=1)
    return fits
