"""Availability of a job of k cubes (seed 002 Fig. 1): static pod vs OCS-reconfigurable pod, pure.

* reconfigurable: any k healthy cubes of the pod will do; a cube is healthy when all its 16 hosts are up
  (probability p^16), so availability is a binomial tail. Without fault-tolerant routing the slice also needs
  every one of the pod's 48 OCS (probability q^48); with it, OCS failures no longer block.
* static: the pod is one fixed torus of hosts (8 x 8 x 16 hosts for 64 cubes); a k-cube job needs one box of
  healthy hosts. Boxes tried: every cube-grid shape (a, b, c) with a*b*c = k and sides <= 4 (or, when k has no
  such shape, the smallest boxes holding at least k cubes), in every orientation, at every host offset, with
  wraparound. There is no closed form (boxes overlap), so it is estimated by Monte Carlo; only the whole pod has
  the exact value p^(16 * 64).

Monte Carlo draws every host (and OCS) independently, so the reconfigurable estimate is a genuine cross-check of
the binomial value; intervals are 95% Wilson score intervals.

>>> round(reconfigurable_exact(50, 0.99), 3)
0.954
"""

from __future__ import annotations

import math

HOSTS_PER_CUBE = 16
OCS_PER_POD = 48
Z95 = 1.959963984540054


def reconfigurable_exact(k: int, p: float, pod_cubes: int = 64, q: float | None = None) -> float:
    from scipy.stats import binom

    value = float(binom.sf(k - 1, pod_cubes, p**HOSTS_PER_CUBE))
    return value * (q**OCS_PER_POD if q is not None else 1.0)


def wilson(successes: int, trials: int) -> tuple[float, float]:
    if trials == 0:
        return (0.0, 1.0)
    phat = successes / trials
    denom = 1 + Z95**2 / trials
    centre = (phat + Z95**2 / (2 * trials)) / denom
    half = Z95 * math.sqrt(phat * (1 - phat) / trials + Z95**2 / (4 * trials**2)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def static_boxes(k: int, grid=(4, 4, 4)) -> list[tuple[int, int, int]]:
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


def _host_box(cube_box):
    a, b, c = cube_box
    return (2 * a, 2 * b, 4 * c)  # a cube is 2 x 2 x 4 hosts (hosts are 2x2x1 chips)


def simulate(
    ks: list[int],
    p: float,
    q: float,
    trials: int,
    seed: int,
    pod_cubes: int = 64,
    static: bool = True,
    batch: int = 4000,
) -> dict:
    """Monte Carlo successes per k: {"reconfigurable", "reconfigurable_ft", "static"} -> list of counts."""
    import numpy as np

    rng = np.random.default_rng(seed)
    counts = {key: np.zeros(len(ks), dtype=np.int64) for key in ("reconfigurable", "reconfigurable_ft", "static")}
    grid_hosts = (8, 8, 16)
    boxes = {k: [_host_box(s) for s in static_boxes(k)] for k in ks} if static and pod_cubes == 64 else {}
    ks_arr = np.array(ks)
    done = 0
    while done < trials:
        m = min(batch, trials - done)
        done += m
        host_up = rng.random((m, pod_cubes * HOSTS_PER_CUBE), dtype=np.float32) < p
        ocs_up = (rng.random((m, OCS_PER_POD), dtype=np.float32) < q).all(axis=1)
        cubes_up = host_up.reshape(m, pod_cubes, HOSTS_PER_CUBE).all(axis=2).sum(axis=1)
        enough = cubes_up[:, None] >= ks_arr[None, :]
        counts["reconfigurable_ft"] += enough.sum(axis=0)
        counts["reconfigurable"] += (enough & ocs_up[:, None]).sum(axis=0)
        if boxes:
            counts["static"] += _static_batch(host_up, ks, boxes, grid_hosts)
    return {key: v.tolist() for key, v in counts.items()}


def _host_coords():
    """(x, y, z) in the 8 x 8 x 16 host torus of host number cube * 16 + machine (cubes in a 4x4x4 grid)."""
    import numpy as np

    cube = np.arange(64)
    cx, cy, cz = cube // 16, (cube // 4) % 4, cube % 4
    mach = np.arange(16)
    hx = (2 * cx[:, None] + mach[None, :] % 2).ravel()
    hy = (2 * cy[:, None] + (mach[None, :] // 2) % 2).ravel()
    hz = (4 * cz[:, None] + mach[None, :] // 4).ravel()
    return hx, hy, hz


def _static_batch(host_up, ks, boxes, grid):
    """Per k: trials in which some box of healthy hosts exists.

    Failures are few, so instead of summing every box the search marks, per trial, the box origins each failed
    host rules out: a 64-bit mask per z-plane of the 8 x 8 (x, y) origins; a box fits iff some plane is not full.
    """
    import numpy as np

    m = len(host_up)
    X, Y, Z = grid
    hx, hy, hz = _host_coords()
    rows, hosts = np.nonzero(~host_up)
    per_row = np.bincount(rows, minlength=m)
    width = int(per_row.max()) if len(rows) else 0
    slot = np.arange(len(rows)) - np.repeat(np.cumsum(per_row) - per_row, per_row)
    failed = np.full((m, max(width, 1)), -1, dtype=np.int64)
    failed[rows, slot] = hosts
    full = np.uint64(0xFFFFFFFFFFFFFFFF)
    out = []
    cache: dict = {}
    for k in ks:
        ok = np.zeros(m, dtype=bool)
        for A, B, C in boxes.get(k, []):
            key = (A, B, C)
            if key not in cache:
                cache[key] = _fits(failed, per_row, A, B, C, hx, hy, hz, X, Y, Z, full)
            ok |= cache[key]
        out.append(int(ok.sum()))
    return np.array(out)


def _fits(failed, per_row, A, B, C, hx, hy, hz, X, Y, Z, full):
    import numpy as np

    m, width = failed.shape
    if per_row.max(initial=0) * A * B * C < X * Y * Z:
        return np.ones(m, dtype=bool)
    # origins ruled out by a failure at (fx, fy), as bits x * 8 + y of one z-plane
    table = np.zeros((X, Y), dtype=np.uint64)
    for fx in range(X):
        for fy in range(Y):
            bits = 0
            for dx in range(A):
                for dy in range(B):
                    bits |= 1 << (((fx - dx) % X) * Y + (fy - dy) % Y)
            table[fx, fy] = bits
    cover = np.zeros((m, Z), dtype=np.uint64)
    for j in range(width):
        rows = np.flatnonzero(failed[:, j] >= 0)
        h = failed[rows, j]
        bits = table[hx[h], hy[h]]
        for dz in range(C):
            planes = (hz[h] - dz) % Z
            cover[rows, planes] |= bits
    return (cover != full).any(axis=1)


def report(ks: list[int], p: float, q: float, trials: int, seed: int, pod_cubes: int = 64) -> dict:
    sims = simulate(ks, p, q, trials, seed, pod_cubes)
    rows = []
    for i, k in enumerate(ks):
        exact_ft = reconfigurable_exact(k, p, pod_cubes)
        exact = reconfigurable_exact(k, p, pod_cubes, q)
        row = {
            "cubes": k,
            "chips": 64 * k,
            "reconfigurable": round(exact, 6),
            "reconfigurable_method": "exact",
            "reconfigurable_mc": round(sims["reconfigurable"][i] / trials, 6),
            "reconfigurable_mc_ci": [round(v, 6) for v in wilson(sims["reconfigurable"][i], trials)],
            "reconfigurable_ft": round(exact_ft, 6),
            "reconfigurable_ft_method": "exact",
            "reconfigurable_ft_mc": round(sims["reconfigurable_ft"][i] / trials, 6),
            "reconfigurable_ft_mc_ci": [round(v, 6) for v in wilson(sims["reconfigurable_ft"][i], trials)],
        }
        if pod_cubes == 64:
            boxes = static_boxes(k)
            row["static_boxes"] = ["x".join(map(str, b)) for b in boxes]
            if k == pod_cubes:
                row["static"] = round(p ** (pod_cubes * HOSTS_PER_CUBE), 6)
                row["static_method"] = "exact"
            else:
                row["static"] = round(sims["static"][i] / trials, 6)
                row["static_method"] = "monte-carlo"
            row["static_ci"] = [round(v, 6) for v in wilson(sims["static"][i], trials)]
        rows.append(row)
    return {"host_availability": p, "ocs_availability": q, "trials": trials, "seed": seed, "pod_cubes": pod_cubes,
            "results": rows}


def plot(result: dict, path) -> None:
    """Availability against slice size, like seed 002 Fig. 1 (PNG or SVG by the file's suffix)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["results"]
    chips = [r["chips"] for r in rows]
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=120)
    if "static" in rows[0]:
        ax.plot(chips, [r["static"] for r in rows], "o-", label="static pod (contiguous block)")
    ax.plot(chips, [r["reconfigurable"] for r in rows], "s-", label="reconfigurable (OCS)")
    ax.plot(chips, [r["reconfigurable_ft"] for r in rows], "^-", label="reconfigurable + fault-tolerant routing")
    ax.set_xlabel("slice size (chips)")
    ax.set_ylabel("probability the job can be placed")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(True, alpha=0.3)
    ax.set_title(f"host availability {result['host_availability']}, OCS availability {result['ocs_availability']}")
    ax.legend(loc="lower left")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def parse_sizes(text: str, unit: str) -> list[int]:
    from tpufleet.errors import BadInput

    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise BadInput(f"bad option --{unit}: {text!r} is not a comma-separated list of whole numbers") from None
    if not values:
        raise BadInput(f"bad option --{unit}: empty list")
    if unit == "chips":
        bad = [v for v in values if v % 64 or v <= 0]
        if bad:
            raise BadInput(f"bad option --chips: {bad[0]} is not a whole number of cubes (multiples of 64)")
        values = [v // 64 for v in values]
    bad = [v for v in values if not 1 <= v <= 64]
    if bad:
        raise BadInput(f"bad option --{unit}: {bad[0]} is outside 1-64 cubes")
    return sorted(set(values))

