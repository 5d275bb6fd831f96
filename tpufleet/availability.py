"""Availability of a job of k cubes (Fig. 1 of the TPUv4 paper "Resiliency at Scale"): static pod vs OCS-reconfigurable pod, pure.

* reconfigurable: any k healthy cubes of the pod will do; a cube is healthy when all its 16 hosts are up
  (probability p^16), so availability is a binomial tail. Without fault-tolerant routing the slice also needs
  every one of the pod's 48 OCS (probability q^48); with it, OCS failures no longer block.
* static: the pod is one fixed torus of hosts (8 x 8 x 16 hosts for 64 cubes); a k-cube job needs one box of
  healthy hosts. Boxes tried: every cube-grid shape (a, b, c) with a*b*c = k and sides <= 4 (or, when k has no
  such shape, the smallest boxes holding at least k cubes), in every orientation, at every host offset, with
  wraparound. There is no closed form (boxes overlap), so it is estimated by Monte Carlo; a job only the whole
  pod holds (49 to 64 cubes) has the exact value p^(16 * 64).

Monte Carlo draws every host (and OCS) independently, so the reconfigurable estimate is a genuine cross-check of
the binomial value; intervals are 95% Wilson score intervals.

>>> round(reconfigurable_exact(50, 0.99), 3)
0.954
>>> CUBE_HOSTS, STATIC_HOST_GRID, STATIC_POD_CUBES
((2, 2, 4), (8, 8, 16), 64)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, cast

from tpufleet.constants import (
    CHIPS_PER_CUBE,
    CUBE_EDGE,
    CUBES_PER_POD,
    MACHINES_PER_CUBE,
    OCS_PER_POD,
    STATIC_CUBE_GRID,
)
from tpufleet.tails import binom_sf

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from tpufleet.constants import BoolArray, Int64Array
    from tpufleet.static_torus import TorusPod

Vec = tuple[int, int, int]

# A machine (host) is a 2 x 2 x 1 block of chips, so a cube of 4 x 4 x 4 chips is 2 x 2 x 4 hosts, numbered
# x fastest: machine m of a cube sits at (m % 2, (m // 2) % 2, m // 4).
CUBE_HOSTS: Final[Vec] = (CUBE_EDGE // 2, CUBE_EDGE // 2, CUBE_EDGE)
STATIC_HOST_GRID: Final[Vec] = (
    STATIC_CUBE_GRID[0] * CUBE_HOSTS[0],
    STATIC_CUBE_GRID[1] * CUBE_HOSTS[1],
    STATIC_CUBE_GRID[2] * CUBE_HOSTS[2],
)  # the static pod's host torus
STATIC_POD_CUBES: Final = STATIC_CUBE_GRID[0] * STATIC_CUBE_GRID[1] * STATIC_CUBE_GRID[2]
Z95 = 1.959963984540054


def reconfigurable_exact(k: int, p: float, pod_cubes: int = CUBES_PER_POD, q: float | None = None) -> float:
    value = binom_sf(k - 1, pod_cubes, p**MACHINES_PER_CUBE)
    return value * (q**OCS_PER_POD if q is not None else 1.0)


def wilson(successes: int, trials: int) -> tuple[float, float]:
    if trials == 0:
        return (0.0, 1.0)
    phat = successes / trials
    denom = 1 + Z95**2 / trials
    centre = (phat + Z95**2 / (2 * trials)) / denom
    half = Z95 * math.sqrt(phat * (1 - phat) / trials + Z95**2 / (4 * trials**2)) / denom
    # at 0 or every success the interval ends at 0 or 1 exactly: in floats centre + half came to 0.9999999999999999
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    return (low, 1.0 if successes == trials else min(1.0, centre + half))


def static_boxes(k: int, grid: Vec = STATIC_CUBE_GRID) -> list[Vec]:
    """Cube-grid boxes a k-cube job may take in a static pod (see module docstring)."""
    fits = [(a, b, c) for a in range(1, grid[0] + 1) for b in range(1, grid[1] + 1) for c in range(1, grid[2] + 1)]
    exact = [s for s in fits if s[0] * s[1] * s[2] == k]
    if exact:
        return exact
    bigger = [s for s in fits if s[0] * s[1] * s[2] >= k]
    if not bigger:
        return []
    least = min(s[0] * s[1] * s[2] for s in bigger)
    return [s for s in bigger if s[0] * s[1] * s[2] == least]


def _host_box(cube_box: Vec) -> Vec:
    a, b, c = cube_box
    hx, hy, hz = CUBE_HOSTS
    return (hx * a, hy * b, hz * c)


MAX_WORK = 5e9  # units of `expected_work`, a unit about a host draw's time: about 75 s on one core
# word operations of the static search (`_fits`) a host draw's time buys: a 64-bit OR or shift over the trials' planes
WORD_OPS_PER_DRAW = 10


def expected_work(
    ks: list[int], trials: int, pod_cubes: int = CUBES_PER_POD, static_pod: TorusPod | None = None
) -> float:
    """The Monte Carlo's work, before it runs, in host draws: per trial, a draw for each of the pod's hosts, and on
    a static pod the static search's word operations, (A + B + C) x Z for each box A x B x C tried (`_fits`),
    WORD_OPS_PER_DRAW to a draw. Whatever the hosts' availability: the search is over planes of bits, not failures.
    With `static_pod` (another pod, `static_torus`), its own hosts' draws and its search instead of the twin's.

    >>> f"{expected_work([64], 20000):,.0f}"  # 1,024 draws + (8 + 8 + 16) x 16 / 10 for the one box, per trial
    '21,504,000'
    """
    hosts = pod_cubes * MACHINES_PER_CUBE
    word_ops = 0
    if static_pod is not None:
        from tpufleet import static_torus

        boxes = {box for k in ks for box in static_torus.host_boxes(static_pod, CHIPS_PER_CUBE * k)}
        hosts += static_pod.hosts
        word_ops = static_torus.search_ops(static_pod, boxes)
    elif pod_cubes == STATIC_POD_CUBES:
        z = STATIC_HOST_GRID[2]
        word_ops = sum((a + b + c) * z for a, b, c in {_host_box(cubes) for k in ks for cubes in static_boxes(k)})
    return trials * (hosts + word_ops / WORD_OPS_PER_DRAW)


def check_work(ks: list[int], trials: int, pod_cubes: int = CUBES_PER_POD, static_pod: TorusPod | None = None) -> None:
    """Refuse (BadInput, exit 2) a Monte Carlo of more than MAX_WORK (`expected_work`) before it starts.

    The message names only what lowers the work: fewer trials always, fewer sizes only where the static search
    runs (a pod without a static twin costs a draw per host per trial whatever the sizes)."""
    from tpufleet.errors import BadInput

    work = expected_work(ks, trials, pod_cubes, static_pod)
    if work > MAX_WORK:
        static = work > expected_work([], trials, pod_cubes, static_pod)  # the static search has a share
        what, hint = (
            ("host draws and static-box checks", "fewer --trials or --cubes")
            if static
            else ("host draws", "fewer --trials")
        )
        raise BadInput(
            f"simulation too large: {trials:,} trials of {len(ks)} slice size(s) are about {work:,.0f} units of "
            f"work ({what}), over the limit of {MAX_WORK:,.0f} ({hint})"
        )


def simulate(
    ks: list[int],
    p: float,
    q: float,
    trials: int,
    seed: int,
    pod_cubes: int = CUBES_PER_POD,
    static: bool = True,
    batch: int = 4000,
    on_progress: Callable[[int], None] | None = None,
    static_pod: TorusPod | None = None,
) -> dict[str, list[int]]:
    """Monte Carlo successes per k: {"reconfigurable", "reconfigurable_ft", "static"} -> list of counts.

    `on_progress(m)` is called after each batch of m trials (for a progress bar; it does not change the result).
    With `static_pod`, "static" counts that pod's (`static_torus`), its hosts drawn from a stream of their own: the
    reconfigurable counts are those of the same seed without it.
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    counts = {key: np.zeros(len(ks), dtype=np.int64) for key in ("reconfigurable", "reconfigurable_ft", "static")}
    twin = static and static_pod is None and pod_cubes == STATIC_POD_CUBES
    boxes = {k: [_host_box(s) for s in static_boxes(k)] for k in ks} if twin else {}
    other = _OtherPod(static_pod, ks, seed) if static and static_pod is not None else None
    ks_arr = np.array(ks)
    done = 0
    while done < trials:
        m = min(batch, trials - done)
        done += m
        # float64 draws: float32 ones come in steps of 2**-24 and the comparison rounds p to float32, so a host
        # availability within 3e-8 of 1 (0.99999999, or rates of 1e-6 a day) made every host always up
        host_up = rng.random((m, pod_cubes * MACHINES_PER_CUBE)) < p
        # cast: with an axis, all() returns an array; numpy's stubs say "np.bool | array"
        ocs_up = cast("BoolArray", (rng.random((m, OCS_PER_POD)) < q).all(axis=1))
        cubes_up = host_up.reshape(m, pod_cubes, MACHINES_PER_CUBE).all(axis=2).sum(axis=1)
        enough = cubes_up[:, None] >= ks_arr[None, :]
        counts["reconfigurable_ft"] += enough.sum(axis=0)
        counts["reconfigurable"] += (enough & ocs_up[:, None]).sum(axis=0)
        if boxes:
            counts["static"] += _static_batch(host_up, ks, boxes)
        if other is not None:
            counts["static"] += other.successes(m, p)
        if on_progress is not None:
            on_progress(m)
    return {key: v.tolist() for key, v in counts.items()}


class _OtherPod:
    """A static pod other than the twin (`static_torus`): its boxes per size, and its hosts' own random stream."""

    def __init__(self, pod: TorusPod, ks: list[int], seed: int) -> None:
        import numpy as np

        from tpufleet import static_torus

        self.pod = pod
        self.boxes = [static_torus.host_boxes(pod, CHIPS_PER_CUBE * k) for k in ks]
        self.rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0])

    def successes(self, m: int, p: float) -> Int64Array:
        from tpufleet import static_torus

        host_up = self.rng.random((m, self.pod.hosts)) < p
        return static_torus.successes(self.pod, host_up, self.boxes)


def _host_coords() -> tuple[Int64Array, Int64Array, Int64Array]:
    """(x, y, z) in the static pod's host torus (8 x 8 x 16) of host number cube * 16 + machine (cubes numbered
    row-major in the 4 x 4 x 4 STATIC_CUBE_GRID)."""
    import numpy as np

    _, gy, gz = STATIC_CUBE_GRID
    hx_c, hy_c, hz_c = CUBE_HOSTS
    cube = np.arange(STATIC_POD_CUBES)
    cx, cy, cz = cube // (gy * gz), (cube // gz) % gy, cube % gz
    mach = np.arange(MACHINES_PER_CUBE)
    hx = (hx_c * cx[:, None] + mach[None, :] % hx_c).ravel()
    hy = (hy_c * cy[:, None] + (mach[None, :] // hx_c) % hy_c).ravel()
    hz = (hz_c * cz[:, None] + mach[None, :] // (hx_c * hy_c)).ravel()
    return hx, hy, hz


def _static_batch(host_up: BoolArray, ks: list[int], boxes: dict[int, list[Vec]]) -> Int64Array:
    """Per k: trials in which some box of healthy hosts exists (each box shape searched once, `_fits`)."""
    import numpy as np

    planes = _failed_planes(host_up)
    out = []
    cache: dict[Vec, BoolArray] = {}
    for k in ks:
        ok = np.zeros(len(host_up), dtype=bool)
        for box in boxes.get(k, []):
            if box not in cache:
                cache[box] = _fits(planes, *box)
            ok |= cache[box]
        out.append(int(ok.sum()))
    return np.array(out)


def _failed_planes(host_up: BoolArray) -> npt.NDArray[np.uint64]:
    """[trials, Z]: each z-plane of the static pod's host torus as one 64-bit word, bit x * Y + y set where that
    host is down (X * Y is 64: 8 x 8)."""
    import numpy as np

    X, Y, Z = STATIC_HOST_GRID
    hx, hy, hz = _host_coords()
    by_bit = np.lexsort((hy, hx, hz))  # plane by plane, each in bit order x * Y + y
    down = ~host_up[:, by_bit].reshape(len(host_up), Z, X * Y)
    packed = np.packbits(down, axis=2, bitorder="little")  # host x * Y + y is bit y of byte x
    planes: npt.NDArray[np.uint64] = np.ascontiguousarray(packed).view("<u8").reshape(len(host_up), Z)
    return planes


_PER_ROW = 0x0101010101010101  # one bit in each of a plane word's eight rows (bytes) of Y bits


def _fits(planes: npt.NDArray[np.uint64], A: int, B: int, C: int) -> BoolArray:
    """Per trial, whether some A x B x C box of the host torus, at any origin, has no host down.

    A host down at (fx, fy, fz) rules out the origins (fx - dx, fy - dy, fz - dz) for dx < A, dy < B, dz < C (with
    wraparound): as bits of a plane word, the failures' word rotated down by dx rows, each row rotated by dy, and
    the planes fz - dz. OR-ed over the three offsets in turn, a plane's word is full when no origin on it is left."""
    import numpy as np

    X, Y, _ = STATIC_HOST_GRID
    out = planes.copy()
    for dx in range(1, A):  # the row of Y bits dx further on
        out |= (planes >> np.uint64(dx * Y)) | (planes << np.uint64(X * Y - dx * Y))
    rows = out.copy()
    for dy in range(1, B):  # within each row, the bit dy further on
        low = np.uint64(_PER_ROW * ((1 << (Y - dy)) - 1))
        out |= ((rows >> np.uint64(dy)) & low) | ((rows << np.uint64(Y - dy)) & ~low)
    cover = out.copy()
    for dz in range(1, C):
        cover |= np.roll(out, -dz, axis=1)
    fits: BoolArray = (cover != np.uint64(0xFFFFFFFFFFFFFFFF)).any(axis=1)
    return fits


def report(
    ks: list[int],
    p: float,
    q: float,
    trials: int,
    seed: int,
    pod_cubes: int = CUBES_PER_POD,
    on_progress: Callable[[int], None] | None = None,
    static_pod: TorusPod | None = None,
) -> dict[str, Any]:
    """Each size's availabilities, exact and Monte Carlo with its 95% interval, at full float precision: six
    decimals made 0.9999997 read 1.0 (never down) and 3e-08 read 0.0 (never up). The static values are the 64-cube
    pod's static twin's, or `static_pod`'s (`static_torus`; `static_pod` names it, null without either)."""
    sims = simulate(ks, p, q, trials, seed, pod_cubes, on_progress=on_progress, static_pod=static_pod)
    rows = []
    for i, k in enumerate(ks):
        exact_ft = reconfigurable_exact(k, p, pod_cubes)
        exact = reconfigurable_exact(k, p, pod_cubes, q)
        row: dict[str, Any] = {
            "cubes": k,
            "chips": CHIPS_PER_CUBE * k,
            "reconfigurable": float(exact),
            "reconfigurable_method": "exact",
            "reconfigurable_mc": float(sims["reconfigurable"][i] / trials),
            "reconfigurable_mc_ci": [float(v) for v in wilson(sims["reconfigurable"][i], trials)],
            "reconfigurable_ft": float(exact_ft),
            "reconfigurable_ft_method": "exact",
            "reconfigurable_ft_mc": float(sims["reconfigurable_ft"][i] / trials),
            "reconfigurable_ft_mc_ci": [float(v) for v in wilson(sims["reconfigurable_ft"][i], trials)],
        }
        if static_pod is not None or pod_cubes == STATIC_POD_CUBES:
            row.update(_static_fields(k, p, sims["static"][i], trials, static_pod))
        rows.append(row)
    twin = "tpu-v4" if pod_cubes == STATIC_POD_CUBES else None
    return {
        "host_availability": p,
        "ocs_availability": q,
        "trials": trials,
        "seed": seed,
        "pod_cubes": pod_cubes,
        "static_pod": twin if static_pod is None else static_pod.name,
        "results": rows,
    }


def _static_fields(k: int, p: float, successes: int, trials: int, static_pod: TorusPod | None) -> dict[str, Any]:
    """A size's static values: the twin's boxes in cubes (`2x2x4`), another pod's as its slices' chips (`16x32`);
    exact where only the whole pod holds the job (every host up) or none does (0: the pod is smaller, an interval
    of [0, 0]: no Monte Carlo draw decides it)."""
    from tpufleet import static_torus

    if static_pod is None:
        boxes: list[tuple[int, ...]] = list(static_boxes(k))
        shapes = ["x".join(map(str, b)) for b in boxes]
        hosts, whole = STATIC_POD_CUBES * MACHINES_PER_CUBE, STATIC_POD_CUBES
    else:
        host_boxes = static_torus.host_boxes(static_pod, CHIPS_PER_CUBE * k)
        boxes, shapes = list(host_boxes), static_torus.chip_shapes(static_pod, host_boxes)
        hosts = whole = static_pod.hosts
    out: dict[str, Any] = {"static_boxes": shapes}
    if not boxes:  # no draw decides it: the interval is the value
        out["static"], out["static_method"], out["static_ci"] = 0.0, "exact", [0.0, 0.0]
        return out
    if all(math.prod(b) == whole for b in boxes):  # only the whole pod holds it (the twin: 49-64 cubes)
        out["static"], out["static_method"] = float(p**hosts), "exact"
    else:
        out["static"], out["static_method"] = float(successes / trials), "monte-carlo"
    out["static_ci"] = [float(v) for v in wilson(successes, trials)]
    return out


def plot(result: dict[str, Any], image_format: str) -> bytes:
    """Availability against slice size, like Fig. 1 of the TPUv4 paper, as PNG or SVG bytes."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["results"]
    chips = [r["chips"] for r in rows]
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=120)
    if "static" in rows[0]:
        other = result["static_pod"] not in (None, "tpu-v4")
        name = f"static {result['static_pod']} pod" if other else "static pod"
        ax.plot(chips, [r["static"] for r in rows], "o-", label=f"{name} (contiguous block)")
    ax.plot(chips, [r["reconfigurable"] for r in rows], "s-", label="reconfigurable (OCS)")
    ax.plot(chips, [r["reconfigurable_ft"] for r in rows], "^-", label="reconfigurable + fault-tolerant routing")
    ax.set_xlabel("slice size (chips)")
    ax.set_ylabel("probability the job can be placed")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(True, alpha=0.3)
    ax.set_title(f"host availability {result['host_availability']}, OCS availability {result['ocs_availability']}")
    ax.legend(loc="lower left")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format=image_format)
    plt.close(fig)
    return buf.getvalue()
