"""Routing quality: the tool's all-to-all maximum link load beside the exact linear-programming optimum.

Traffic is uniform all-to-all: one unit per ordered pair of distinct chips. The optimum is the multicommodity
flow LP (any routing, any split of a pair's unit over any number of paths, so a lower bound for every routing):

    minimise U  subject to, per destination t, a flow f_t >= 0 on the live directed links in which every chip
    s != t sends 1 unit to t and t absorbs N - 1, and sum_t f_t(e) <= U on every directed link e,

solved with HiGHS through `scipy.optimize.linprog` (see Solver below). Commodities are aggregated by destination, which is
exact: any flow to t decomposes into paths ending at t, whatever source each path is charged to.

Symmetry reduction (exact, not a heuristic). Let G be a group of automorphisms of the live directed graph.
Uniform all-to-all traffic is invariant under every permutation of the chips, so for an optimal solution f and
g in G, the relabelled solution (g.f)_{g t}(g e) = f_t(e) is optimal too, and by convexity of the LP so is the
average over G, whose maximum link load is at most the average of the maxima. Hence some optimal solution is
G-invariant, and it is determined by the flows f_r of one representative destination r per orbit of G. Conversely
any flows f_r (each a valid flow to r) define a full solution by f_t = mean over the g in G with g r = t of g.f_r
(an average of valid flows to t), whose load on link e is

    load(e) = sum_r (1 / |Stab(r)|) sum_{g in G} f_r(g^-1 e),

which is G-invariant, so a constraint load(e) <= U per orbit of links suffices. The reduced LP therefore has the
same optimum as the full one. G is found by trying every map p -> A p + v of the chip lattice (A a signed
permutation matrix, v a chip position; the slice is a Cayley graph of Z^3 modulo its (twisted) wrap lattice),
keeping those that map the live link set onto itself exactly (checked link by link, so soundness does not rest on
the lattice argument), and closing them under composition. An OCS failure is periodic with period 4 along every
axis and its pattern has reflections too, so for 8x8x8 the group has 128 elements and the LP shrinks ~40 fold.
As a check, the 4x4x8 cases are also solved unreduced (~40 s each) and must agree (see main()).

Solver: HiGHS's interior point method with crossover (`method="highs-ipm"`). Plain `method="highs"` lets HiGHS
pick dual simplex, which stalls on these highly degenerate LPs (4x4x4 with one OCS failure, unreduced: 100 s
against 4 s); both are HiGHS and give the same optimum.

Measured: on 8x8x8 the faulty optima equal the cut bound of a broken dimension (one x OCS failure: 256 x 256
pairs cross the two x cube boundaries each way on 2 x (64 - 4) live links, 8192/15; a second failure, in y, leaves
it there), and the twisted slices, healthy or not, reach the distance bound (all hop distances / live links),
except two of the checker's cases (twisted 8x8x16 with an x and a z OCS down: 1202.53 against 1202.32; twisted
8x16x16 with one OCS down: 2995.45 against 2991.83). The checker's twisted one-OCS rows (|G| 256 on 8x8x16, 512
on 8x16x16: 12 destinations, 73k and 147k variables) take 5-35 s each with the automorphism search, under 0.5 GB.

Run alone with `.venv/bin/python benchmarks/routing_quality.py` (or as part of `make bench`); it prints its
figures to stdout only (nothing written beside benchmarks/latest.json, which run_all.py fills with these rows too).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from tpufleet.shapes import Shape
    from tpufleet.topology import ChipGraph

    IntArray = npt.NDArray[np.int64]
    Graph = npt.NDArray[np.integer[Any]]  # [N, 6] chip reached through each port, -1 = no link

ROOT = Path(__file__).resolve().parents[1]
Row = tuple[str, float, str, float, str]  # run_all.py's rows: name, seconds, target, baseline seconds, ratio text


# ---------------------------------------------------------------------------------------------- graphs


def ocs_failures(shape: Shape, expected: ChipGraph, failures: Sequence[tuple[str, int]]) -> ChipGraph:
    """The live graph after OCS failures {dim, face index}: at every cube boundary of dimension dim, the link of
    each chip whose face index is `index` is gone, both directions (a boundary link leaves a chip with local
    coordinate 3 in the + direction; its reverse enters the neighbour's - port)."""

    from tpufleet.constants import CUBE_EDGE
    from tpufleet.ids import face_index
    from tpufleet.topology import coordinates

    alive = expected.copy()
    local = coordinates(shape.dims) % CUBE_EDGE
    for dim, index in failures:
        d = "xyz".index(dim)
        for s, xyz in enumerate(local.tolist()):
            if xyz[d] == CUBE_EDGE - 1 and face_index(dim, *xyz) == index and expected[s, 2 * d] >= 0:
                t = int(expected[s, 2 * d])
                alive[s, 2 * d] = -1
                alive[t, 2 * d + 1] = -1
    return alive


def links(nbr: Graph) -> tuple[IntArray, IntArray]:
    """(source, destination) of every live directed link, in (chip, port) order."""
    import numpy as np

    src, port = np.nonzero(nbr >= 0)
    return src.astype(np.int64), nbr[src, port].astype(np.int64)


def distance_bound(nbr: Graph) -> float:
    """Sum of all pairwise hop distances / live directed links: every routing spends at least that much capacity,
    so the maximum link load is at least this (equal to the optimum when shortest paths can be balanced)."""
    import numpy as np

    from tpufleet.routing.distances import graph_distances

    src, _ = links(nbr)
    g = graph_distances(nbr.astype(np.int32))
    n = len(nbr)
    return g.mean_hops * n * (n - 1) / len(src)


# ---------------------------------------------------------------------------------------------- symmetry


def _closure(gens: list[IntArray], n: int) -> IntArray:
    """Every composition of the permutations `gens` (rows of chip images), as a [|G|, n] array."""
    import numpy as np

    ident = np.arange(n, dtype=np.int64)
    seen: dict[bytes, IntArray] = {ident.tobytes(): ident}
    frontier = [ident]
    while frontier:
        block = np.stack(frontier)
        frontier = []
        for g in gens:
            for row in g[block]:  # g o f for every f of the frontier
                key = row.tobytes()
                if key not in seen:
                    seen[key] = row
                    frontier.append(row)
    return np.stack(list(seen.values()))


def is_automorphism(perms: IntArray, nbr: Graph) -> npt.NDArray[np.bool_]:
    """Per row of `perms` ([M, N] chip images): is it a bijection mapping the live directed link set onto itself?

    Checked link by link: a bijection of the chips maps distinct links to distinct pairs, so when every link's
    image is a live link of the same multiplicity (parallel links of a 2-chip ring), the images are the whole set."""
    import numpy as np

    n = len(nbr)
    src, dst = links(nbr)
    count = np.zeros(n * n, dtype=np.uint8)  # live links from chip a to chip b, at a * n + b
    np.add.at(count, src * n + dst, 1)
    want = count[src * n + dst]
    ok = np.zeros(len(perms), dtype=bool)
    block = max(1, 2**24 // max(1, len(src)))  # rows per block: a few hundred MB of images at most
    for lo in range(0, len(perms), block):
        p = perms[lo : lo + block]
        in_range: npt.NDArray[np.bool_] = np.all((p >= 0) & (p < n), axis=1)
        p = np.where(in_range[:, None], p, 0)
        hit = np.zeros(p.shape, dtype=bool)
        hit[np.arange(len(p))[:, None], p] = True
        bijective = in_range & hit.all(axis=1)
        ok[lo : lo + block] = bijective & (count[p[:, src] * n + p[:, dst]] == want).all(axis=1)
    return ok


def automorphisms(shape: Shape, nbr: Graph) -> IntArray:
    """A group of automorphisms of the live graph `nbr` of a wrapped slice, [|G|, N] chip images (row 0 may be
    any element; the identity is always included). Only the identity for meshes (no lattice to act on)."""
    import itertools

    import numpy as np

    from tpufleet.topology import coordinates, neighbors

    n = len(nbr)
    identity = np.arange(n, dtype=np.int64)[None, :]
    expected = neighbors(shape).astype(np.int64)
    if not shape.wraps or (expected < 0).any():
        return identity
    # order of each unit step e_d in the slice's group: walk +d from chip 0 until back
    order = []
    for d in range(3):
        c, k = int(expected[0, 2 * d]), 1
        while c != 0:
            c, k = int(expected[c, 2 * d]), k + 1
        order.append(k)

    def locate(q: IntArray) -> IntArray:
        """The chip reached from chip 0 by q[:, d] unit steps along each dimension d (moves commute)."""
        ids = np.zeros(len(q), dtype=np.int64)
        for d in range(3):
            steps = q[:, d] % order[d]
            for k in range(int(steps.max(initial=0))):
                ids = np.where(steps > k, expected[ids, 2 * d], ids)
        return ids

    xyz = coordinates(shape.dims).astype(np.int64)
    if not (locate(xyz) == np.arange(n)).all():  # not a Cayley graph in these coordinates: no reduction
        return identity
    # translate[v, c]: the chip reached from chip c by chip v's steps (c + v in the slice's group)
    translate = np.broadcast_to(np.arange(n, dtype=np.int64), (n, n)).copy()
    for d in range(3):
        steps = xyz[:, d] % order[d]
        for k in range(int(steps.max(initial=0))):
            translate = np.where(steps[:, None] > k, expected[translate, 2 * d], translate)
    found: list[IntArray] = []
    for axes in itertools.permutations(range(3)):
        for signs in itertools.product((1, -1), repeat=3):
            a = np.zeros((3, 3), dtype=np.int64)
            for row, (axis, sign) in enumerate(zip(axes, signs, strict=True)):
                a[row, axis] = sign
            perms = translate[:, locate(xyz @ a.T)]  # row v: p -> Ap + v
            found.extend(perms[is_automorphism(perms, nbr)])
    known: set[bytes] = {identity[0].tobytes()}
    gens: list[IntArray] = []
    group = identity
    for p in found:
        if p.tobytes() not in known:
            gens.append(p)
            group = _closure(gens, n)
            known = {row.tobytes() for row in group}
    assert is_automorphism(group, nbr).all()  # compositions of automorphisms: a check, not a filter
    return group


# ---------------------------------------------------------------------------------------------- the LP


@dataclass
class LpResult:
    optimum: float
    seconds: float
    group: int  # automorphisms used
    destinations: int  # representative destinations solved for
    variables: int
    constraints: int


def solve(nbr: Graph, group: IntArray | None = None, method: str = "highs-ipm") -> LpResult:
    """The exact all-to-all min-max link load of the live graph `nbr` ([N, 6], -1 = no link), optionally reduced
    by a group of its automorphisms (see the module docstring for why that is exact)."""
    import numpy as np
    import scipy.sparse as sp
    from scipy.optimize import linprog

    t0 = time.perf_counter()
    n = len(nbr)
    src, dst = links(nbr)
    e = len(src)
    if group is None:
        group = np.arange(n, dtype=np.int64)[None, :]
    order = len(group)
    # orbits of chips (representatives and stabiliser sizes) and of links (representatives)
    chip_orbit_min = group.min(axis=0)  # rows are a group: the orbit of c is group[:, c]
    reps = np.unique(chip_orbit_min)
    stab = np.array([order // len(np.unique(group[:, r])) for r in reps.tolist()], dtype=np.float64)
    key = src * n + dst
    sorted_keys = np.argsort(key)

    def link_index(s: IntArray, t: IntArray) -> IntArray:
        k = s * n + t
        pos = np.searchsorted(key, k, sorter=sorted_keys)
        idx = sorted_keys[np.minimum(pos, e - 1)]
        assert (key[idx] == k).all()
        return idx

    link_images = link_index(group[:, src].ravel(), group[:, dst].ravel()).reshape(order, e)  # [g, e] -> g e
    link_reps = np.unique(link_images.min(axis=0))
    inverse = np.argsort(group, axis=1)
    pulled = link_index(inverse[:, src[link_reps]].ravel(), inverse[:, dst[link_reps]].ravel()).reshape(order, -1)
    r_count, k_count = len(reps), len(link_reps)
    n_var = r_count * e + 1  # f_r(e) for each representative r, then U

    # flow conservation per representative: out - in = 1 at every chip but r, -(N-1) at r
    inc = sp.csr_matrix(
        (np.r_[np.ones(e), -np.ones(e)], (np.r_[src, dst], np.r_[np.arange(e), np.arange(e)])), shape=(n, e)
    )
    a_eq = sp.hstack([sp.block_diag([inc] * r_count, format="csr"), sp.csr_matrix((r_count * n, 1))], format="csr")
    b_eq = np.ones(r_count * n)
    b_eq[np.arange(r_count) * n + reps] = -(n - 1)

    # load on each link-orbit representative: sum_r 1/|Stab r| sum_g f_r(g^-1 e) - U <= 0
    rows = np.broadcast_to(np.arange(k_count), (r_count, order, k_count))
    cols = np.arange(r_count)[:, None, None] * e + pulled[None, :, :]
    vals = np.broadcast_to((1.0 / stab)[:, None, None], (r_count, order, k_count))
    loads = sp.coo_matrix((vals.ravel(), (rows.ravel(), cols.ravel())), shape=(k_count, n_var - 1))
    a_ub = sp.hstack([loads, sp.csr_matrix(-np.ones((k_count, 1)))], format="csr")
    c = np.zeros(n_var)
    c[-1] = 1.0
    # Flow towards r never needs to leave r (cut each path at its first arrival, drop the cycles: no load grows).
    upper = np.full(n_var, np.inf)
    leaving_r, leaving_e = np.nonzero(src[None, :] == reps[:, None])
    upper[leaving_r * e + leaving_e] = 0.0
    bounds = np.stack([np.zeros(n_var), upper], axis=1)
    res = linprog(c, A_ub=a_ub, b_ub=np.zeros(k_count), A_eq=a_eq, b_eq=b_eq, bounds=bounds, method=method)
    if res.status != 0:
        raise RuntimeError(f"LP not solved: {res.message}")
    return LpResult(float(res.fun), time.perf_counter() - t0, order, r_count, n_var, k_count + r_count * n)


def lp_min_max_load(nbr: Graph, shape: Shape | None = None) -> float:
    """The exact LP optimum of the maximum link load for uniform all-to-all traffic on the live graph `nbr`.

    Given the slice's `shape` (whose healthy graph `nbr` is a subgraph of), the LP is reduced by the automorphisms
    of `nbr` (exact: see the module docstring); without it the full LP is solved.
    """
    group = automorphisms(shape, nbr) if shape is not None else None
    return solve(nbr, group).optimum


# ---------------------------------------------------------------------------------------------- the cases


@dataclass
class Case:
    name: str
    shape: str
    twisted: bool
    failures: tuple[tuple[str, int], ...] = ()
    full_check: bool = False  # also solve the unreduced LP (small cases): must equal the reduced optimum


CASES = (
    Case("healthy twisted 4x4x8", "4x4x8", True, full_check=True),
    Case("healthy twisted 4x8x8", "4x8x8", True),
    Case("8x8x8, one x OCS failure (x/3)", "8x8x8", False, (("x", 3),)),
    Case("8x8x8, two OCS failures (x/3, y/5)", "8x8x8", False, (("x", 3), ("y", 5))),
    Case("twisted 4x4x8, one x OCS failure (x/3)", "4x4x8", True, (("x", 3),), full_check=True),
    Case("twisted 4x8x8, one x OCS failure (x/3)", "4x8x8", True, (("x", 3),)),
)
VC_BUDGETS = (3, 4, 6)


@dataclass
class IssueCase:
    """A row of the fault-tolerance checker's table: the LP is solved (reduced by symmetry) when `lp`, else a lower bound stands."""

    name: str
    shape: str
    twisted: bool
    failures: tuple[tuple[str, int], ...] = ()
    links: int = 0  # > 0: only every other dead link of the failures, at most this many (scattered optical links)
    lp: bool = True
    thorough: bool = False  # `routes --thorough`: order pairs whatever the slice's size


ISSUE_CASES = (
    IssueCase("4x4x4, one x OCS (x/3)", "4x4x4", False, (("x", 3),)),
    IssueCase("4x4x4, one y OCS (y/3)", "4x4x4", False, (("y", 3),)),
    IssueCase("4x4x4, one z OCS (z/3)", "4x4x4", False, (("z", 3),)),
    IssueCase("8x8x8, one x OCS (x/3)", "8x8x8", False, (("x", 3),)),
    IssueCase("8x8x8, 3 links of x/3, y/5, z/2", "8x8x8", False, (("x", 3), ("y", 5), ("z", 2)), links=3, lp=False),
    IssueCase("8x8x8, three OCS (x/3, y/5, z/2)", "8x8x8", False, (("x", 3), ("y", 5), ("z", 2))),
    IssueCase("8x8x8, x and y OCS in the same z planes (x/5, y/5)", "8x8x8", False, (("x", 5), ("y", 5))),
    IssueCase("8x8x16, x and z OCS (x/3, z/2)", "8x8x16", False, (("x", 3), ("z", 2)), lp=False),
    IssueCase("8x8x16, x and z OCS in the same y planes (x/5, z/5)", "8x8x16", False, (("x", 5), ("z", 5)), lp=False),
    IssueCase("twisted 8x8x16, x and z OCS", "8x8x16", True, (("x", 3), ("z", 2))),
    IssueCase("twisted 8x8x16, one x OCS (x/3)", "8x8x16", True, (("x", 3),)),
    IssueCase("twisted 8x8x16, one x OCS (x/3), --thorough", "8x8x16", True, (("x", 3),), thorough=True),
    IssueCase("twisted 8x8x16, x and z OCS, --thorough", "8x8x16", True, (("x", 3), ("z", 2)), thorough=True),
    IssueCase("twisted 8x8x16, x and y OCS (x/3, y/5)", "8x8x16", True, (("x", 3), ("y", 5))),
    IssueCase("twisted 8x8x16, one y OCS (y/3)", "8x8x16", True, (("y", 3),)),
    IssueCase("twisted 8x8x16, one y OCS (y/3), --thorough", "8x8x16", True, (("y", 3),), thorough=True),
    IssueCase("twisted 8x8x16, one z OCS (z/3)", "8x8x16", True, (("z", 3),)),
    IssueCase("twisted 8x8x16, one z OCS (z/3), --thorough", "8x8x16", True, (("z", 3),), thorough=True),
    IssueCase("twisted 8x16x16, one x OCS (x/3)", "8x16x16", True, (("x", 3),)),
    IssueCase("twisted 8x16x16, one x OCS (x/3), --thorough", "8x16x16", True, (("x", 3),), thorough=True),
    IssueCase("twisted 8x16x16, one y OCS (y/3), --thorough", "8x16x16", True, (("y", 3),), thorough=True),
    IssueCase("8x16x16, one y OCS (y/3)", "8x16x16", False, (("y", 3),), lp=False),
    IssueCase("16x16x16, one x OCS (x/3)", "16x16x16", False, (("x", 3),), lp=False),
)


def scattered(expected: ChipGraph, alive: ChipGraph, count: int) -> ChipGraph:
    """Only `count` of the dead links of `alive` (every other one, spread over the failures), both directions."""
    import numpy as np

    chips, ports = np.nonzero((alive != expected) & (expected >= 0))
    plus = [(int(c), int(p)) for c, p in zip(chips, ports, strict=True) if p % 2 == 0]
    step = max(1, len(plus) // count)
    out = expected.copy()
    for a, p in plus[::step][:count]:
        b = int(expected[a, p])
        out[a, p] = out[b, p + 1] = -1
    return out


def cut_bound(shape: Shape, nbr: Graph) -> float:
    """A lower bound on the all-to-all max load: per dimension, the slice cut into two halves at coordinate 0
    and k/2 (cube boundaries), (N/2)^2 pairs crossing each way over the live links that cross that way."""
    from tpufleet.topology import coordinates

    n = len(nbr)
    xyz = coordinates(shape.dims)
    best = 0.0
    for d, k in enumerate(shape.dims):
        if k < 2 or shape.twisted:
            continue
        side = xyz[:, d] < k // 2
        src, dst = links(nbr)
        crossing = int((side[src] & ~side[dst]).sum())
        if crossing:
            best = max(best, (n // 2) * (n - n // 2) / crossing)
    return best


def checker_table(rows: list[Row] | None = None) -> list[dict[str, object]]:
    """The fault-tolerance checker's table re-measured: tool (auto, 3 VCs), LP optimum or bound (saying which),
    optimum/tool, healthy kept against the tool's healthy tables and against the healthy optimum, the healthy optimum
    over this optimum (what the best routing keeps; against a bound, at most that), VCs."""
    from tpufleet.routing.report import evaluate
    from tpufleet.shapes import parse_shape
    from tpufleet.topology import neighbors

    print(
        "\nThe fault-tolerance checker's cases: all-to-all max link load within 3 VCs, beside the LP optimum (or a lower bound)",
        flush=True,
    )
    head = f"{'case':<38} {'tool':>7} {'optimum':>9} {'which':>14} {'opt/tool':>8} {'kept/tab':>8} {'kept/opt':>8}"
    print(f"{head} {'opt kept':>8} {'VCs':>3} {'tool s':>6} {'CPU s':>6} {'LP s':>6}", flush=True)
    out: list[dict[str, object]] = []
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv[:-1] else ""  # a part of the cases' names
    for case in (c for c in ISSUE_CASES if only in c.name):
        shape = parse_shape(case.shape, case.twisted)
        expected = neighbors(shape)
        alive = ocs_failures(shape, expected, case.failures)
        if case.links:
            alive = scattered(expected, alive, case.links)
        t, cpu = time.perf_counter(), time.process_time()
        s = evaluate(shape, expected, alive, "auto", ("all-to-all",), max_vcs=3, thorough=case.thorough).summary
        tool_s, tool_cpu = time.perf_counter() - t, time.process_time() - cpu
        tool = float(s["max_link_load"]["all-to-all"])
        t = time.perf_counter()
        if case.lp:
            optimum, which = solve(alive, automorphisms(shape, alive)).optimum, "LP"
        else:
            cut, dist = cut_bound(shape, alive), distance_bound(alive)
            optimum, which = max(cut, dist), "bound (cut)" if cut >= dist else "bound (dist)"
        lp_s = time.perf_counter() - t
        kept_tab = s["throughput_retained"]["all-to-all"]
        kept_opt = s["throughput_retained_vs_optimum"]["all-to-all"]
        # the healthy optimum over this one: what the best routing keeps (at most that, against a bound)
        opt_kept = float(s["healthy_optimum_max_link_load"]["all-to-all"]) / optimum
        print(
            f"{case.name:<38} {tool:7.1f} {optimum:9.2f} {which:>14} {optimum / tool:8.4f} {kept_tab:8.4f} "
            f"{kept_opt:8.4f} {opt_kept:8.4f} {s['vcs']:>3} {tool_s:6.2f} {tool_cpu:6.2f} {lp_s:6.2f}",
            flush=True,
        )
        out.append(
            {"case": case.name, "tool_max_load": tool, "optimum": round(optimum, 4), "optimum_is": which,
             "optimum_over_tool": round(optimum / tool, 4), "kept_vs_tables": kept_tab, "kept_vs_optimum": kept_opt,
             "optimum_kept_vs_healthy_optimum": round(opt_kept, 4), "vcs": s["vcs"]}
        )  # fmt: skip
        if rows is not None:
            rows.append(
                (f"routing quality, {case.name}", tool_s, "(no target)", lp_s,
                 f"optimum/tool: {optimum / tool:.3f} ({which}); kept vs healthy optimum {kept_opt:.3f}")
            )  # fmt: skip
    return out


# Three OCS down on 8x8x8, one per dimension: the checker's case, then eleven more drawn once (random.Random(7))
THREE_OCS = (
    (3, 5, 2), (10, 4, 12), (1, 2, 3), (11, 1, 6), (1, 2, 13), (13, 2, 7),
    (2, 13, 1), (3, 7, 1), (12, 1, 7), (1, 4, 9), (13, 4, 3), (9, 5, 3), (0, 0, 0),
    # where the trees in zxy leave a pair unreached (5 of 60 drawn with random.Random(11), 6 of 100 with 12): the
    # other orders' trees (`tree_families.THREE_OCS_ORDERS`)
    (9, 0, 2), (0, 0, 6), (12, 12, 13), (12, 15, 2), (7, 15, 2),
    (10, 12, 2), (3, 7, 15), (2, 12, 6), (8, 15, 1), (12, 15, 9), (11, 3, 13),
)  # fmt: skip


def three_ocs_table(rows: list[Row] | None = None) -> None:
    """Three OCS down on 8x8x8: the tool (3 VCs) beside the same run as before (the baseline: pre-legs along the
    middle dimension only, and never where a canonical form's tables fit, which were then kept however poor), and
    the cut bound (the LP optimum where it was solved: 546.13)."""
    from unittest import mock

    from tpufleet.routing import report, tree_families
    from tpufleet.shapes import parse_shape
    from tpufleet.topology import neighbors

    shape = parse_shape("8x8x8")
    expected = neighbors(shape)
    print("\nThree OCS down on 8x8x8 (3 VCs): pre-legs in every dimension against the middle one's only", flush=True)
    print(
        f"{'x/y/z OCS':<10} {'tool':>6} {'before':>6} {'bound':>8} {'bnd/tool':>8} {'before':>6} {'CPU x':>6}",
        flush=True,
    )
    for x, y, z in THREE_OCS:
        alive = ocs_failures(shape, expected, (("x", x), ("y", y), ("z", z)))
        # each run from scratch: no canonical form's tables kept from the one before (`report._forms_made`)
        report._forms_made.cache_clear()
        t = time.process_time()
        tool, _, vcs, _ = tool_figures(shape, expected, alive, 3)
        tool_s = time.process_time() - t
        report._forms_made.cache_clear()
        t = time.process_time()
        with (
            mock.patch.object(tree_families, "_mesh_relieved", return_value=None),
            mock.patch.object(report, "_with_pre_legs", side_effect=lambda *args: args[-1]),
            mock.patch.object(report, "_with_own_where_poor", side_effect=lambda *args: args[-2]),
        ):
            before, _, before_vcs, _ = tool_figures(shape, expected, alive, 3)
        before_s = time.process_time() - t
        bound = cut_bound(shape, alive)
        print(
            f"{x}/{y}/{z:<6} {tool:6.0f} {before:6.0f} {bound:8.2f} {bound / tool:8.4f} {bound / before:6.3f} "
            f"{tool_s / before_s:6.2f}" + ("" if vcs == before_vcs == 3 else f"  VCs {vcs}, before {before_vcs}"),
            flush=True,
        )
        if rows is not None:
            rows.append(
                (f"routing, three OCS x/{x} y/{y} z/{z} on 8x8x8", tool_s, "(no target)", before_s,
                 f"max load {tool:g} against {before:g}; bound/tool {bound / tool:.3f}")
            )  # fmt: skip


def tool_figures(shape: Shape, expected: ChipGraph, alive: ChipGraph, max_vcs: int) -> tuple[float, float, int, float]:
    """(max all-to-all link load, healthy reference, VCs used, seconds) of `evaluate` with `auto` tables."""
    from tpufleet.routing.report import evaluate

    t = time.perf_counter()
    report = evaluate(shape, expected, alive, "auto", ("all-to-all",), max_vcs=max_vcs)
    s = report.summary
    seconds = time.perf_counter() - t
    return float(s["max_link_load"]["all-to-all"]), float(s["healthy_max_link_load"]["all-to-all"]), s["vcs"], seconds


def _fraction(x: float) -> str:
    from fractions import Fraction

    f = Fraction(x).limit_denominator(64)
    return f"{f}" if abs(float(f) - x) < 1e-6 * max(1.0, abs(x)) and f.denominator > 1 else ""


def main(rows: list[Row] | None = None) -> list[dict[str, object]]:
    """Run every case, print the table (and the VC-budget trade-off), append run_all.py-style rows to `rows`."""
    from tpufleet.shapes import parse_shape
    from tpufleet.topology import neighbors

    print("\nRouting quality: all-to-all max link load, tool (auto, max 3 VCs) vs exact LP optimum (HiGHS)", flush=True)
    head = f"{'case':<42} {'tool':>7} {'healthy':>7} {'LP opt':>9} {'dist bnd':>9} {'tool/opt':>8} {'thr vs opt':>10}"
    print(f"{head} {'VCs':>3} {'|G|':>4} {'dests':>5} {'LP vars':>8} {'LP s':>6} {'tool s':>6}", flush=True)
    out: list[dict[str, object]] = []
    for case in CASES:
        shape = parse_shape(case.shape, case.twisted)
        expected = neighbors(shape)
        alive = ocs_failures(shape, expected, case.failures)
        tool, healthy, vcs, tool_s = tool_figures(shape, expected, alive, 3)
        t = time.perf_counter()
        group = automorphisms(shape, alive)
        sym_s = time.perf_counter() - t
        lp = solve(alive, group)
        lp.seconds += sym_s
        bound = distance_bound(alive)
        ratio = tool / lp.optimum
        exact = _fraction(lp.optimum)
        print(
            f"{case.name:<42} {tool:7.1f} {healthy:7.1f} {lp.optimum:9.3f} {bound:9.3f} {ratio:8.4f} "
            f"{lp.optimum / tool:10.4f} {vcs:>3} {lp.group:>4} {lp.destinations:>5} {lp.variables:>8} "
            f"{lp.seconds:6.2f} {tool_s:6.2f}" + (f"  (optimum = {exact})" if exact else ""),
            flush=True,
        )
        record: dict[str, object] = {
            "case": case.name,
            "tool_max_load": tool,
            "healthy_tool_max_load": healthy,
            "lp_optimum": round(lp.optimum, 6),
            "distance_bound": round(bound, 6),
            "tool_over_optimum": round(ratio, 6),
            "throughput_vs_optimum": round(lp.optimum / tool, 6),
            "vcs": vcs,
            "automorphisms": lp.group,
            "lp_seconds": round(lp.seconds, 3),
        }
        if case.full_check:
            full = solve(alive)
            agree = abs(full.optimum - lp.optimum) <= 1e-6 * max(1.0, full.optimum)
            print(
                f"{'':<4}check, unreduced LP ({full.variables} variables, {full.seconds:.2f} s): {full.optimum:.6f}"
                f" {'== reduced optimum' if agree else '!= REDUCED OPTIMUM ' + f'{lp.optimum:.6f}'}",
                flush=True,
            )
            record["lp_optimum_unreduced"] = round(full.optimum, 6)
            if not agree:
                raise AssertionError(f"{case.name}: symmetry-reduced LP {lp.optimum} != full LP {full.optimum}")
        out.append(record)
        if rows is not None:
            rows.append(
                (
                    f"routing quality LP solve, {case.name}",
                    lp.seconds,
                    "(no target)",
                    tool_s,
                    f"tool/optimum: {ratio:.3f} (tool {tool:g} at {vcs} VCs, optimum {lp.optimum:.3f})",
                )
            )

    print("\nVC budget trade-off: the tool's all-to-all max link load by max_vcs (auto tables)", flush=True)
    budget_cases = [c for c in CASES if c.shape in ("4x4x8", "8x8x8")]
    print(f"{'case':<42} {'LP opt':>9} " + " ".join(f"{f'{k} VCs':>14}" for k in VC_BUDGETS), flush=True)
    for case in budget_cases:
        shape = parse_shape(case.shape, case.twisted)
        expected = neighbors(shape)
        alive = ocs_failures(shape, expected, case.failures)
        optimum = next(float(str(r["lp_optimum"])) for r in out if r["case"] == case.name)
        cells = []
        for k in VC_BUDGETS:
            tool, _, vcs, _ = tool_figures(shape, expected, alive, k)
            cells.append(f"{tool:6.1f} ({vcs} used)")
        print(f"{case.name:<42} {optimum:9.3f} " + " ".join(f"{c:>14}" for c in cells), flush=True)
    out += checker_table(rows)
    three_ocs_table(rows)
    print("(figures printed only; under `make bench` the rows above also go to benchmarks/latest.json)", flush=True)
    return out


if __name__ == "__main__":
    sys.path[:0] = [str(ROOT)]
    if "--checker" in sys.argv:
        checker_table()
    elif "--three-ocs" in sys.argv:
        three_ocs_table()
    else:
        main()
