"""Symmetry and monotonicity of fault-tolerant routing, as properties over every OCS of 4x4x4, 4x4x8 and 8x8x8
(derandomized: every OCS, fixed partners and link subsets).

(a) Faults that are the same fault turned by a symmetry of the slice (an automorphism of the healthy torus mapping
    one dead link set onto the other, found here by mapping coordinates, not by the router) get the same
    all-to-all max load within one unit.
(b) A single OCS failure is never routed worse than the tables the tool builds for a compound fault containing it
    (those tables are valid for it), and `routes` after `clear-fault` never stores tables worse than the stored
    ones that are still valid.
(c) Optical links of one OCS are never routed worse than the whole OCS.
"""

from __future__ import annotations

import itertools
import sys
from functools import cache
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import routing_quality as rq  # benchmarks/ is not a package: found on the path above

from tpufleet.constants import CUBE_EDGE
from tpufleet.routing.report import evaluate
from tpufleet.shapes import parse_shape
from tpufleet.topology import coordinates, neighbors

Fault = tuple[tuple[str, int], ...]
OCS_PER_DIM = CUBE_EDGE * CUBE_EDGE
ALL_OCS: list[tuple[str, int]] = [(d, i) for d in "xyz" for i in range(OCS_PER_DIM)]


@cache
def _graphs(text: str) -> tuple[np.ndarray, np.ndarray]:
    shape = parse_shape(text)
    return neighbors(shape), coordinates(shape.dims).astype(np.int64)


def _alive(text: str, fault: Fault) -> np.ndarray:
    shape = parse_shape(text)
    return rq.ocs_failures(shape, _graphs(text)[0], fault)


@cache
def _load(text: str, fault: Fault, links: tuple[int, ...] | None = None) -> float:
    """All-to-all max link load of the tables `routes` keeps within 3 VCs (deadlock-free, every pair routable);
    `links`: only those dead links (positions in `_dead_links`) of the OCS failure `fault`."""
    shape = parse_shape(text)
    expected = _graphs(text)[0]
    alive = _alive(text, fault)
    if links is not None:
        alive = expected.copy()
        for k in links:
            a, p = _dead_links(text, fault)[k]
            b = int(expected[a, p])
            alive[a, p] = alive[b, p ^ 1] = -1
    s = evaluate(shape, expected, alive, "auto", ("all-to-all",), max_vcs=3).summary
    assert s["deadlock_free"] and s["vcs"] <= 3 and s["unroutable_pairs"] == 0
    return float(s["max_link_load"]["all-to-all"])


@cache
def _dead_links(text: str, fault: Fault) -> list[tuple[int, int]]:
    """(chip, + port) of each dead bidirectional link of an OCS failure."""
    expected = _graphs(text)[0]
    alive = _alive(text, fault)
    chips, ports = np.nonzero((alive != expected) & (expected >= 0))
    return [(int(c), int(p)) for c, p in zip(chips, ports, strict=True) if p % 2 == 0]


def _canonical(text: str, fault: Fault) -> tuple[int, ...]:
    """The smallest image of the fault's dead link set under every map p -> A p + v of the healthy torus (A a
    signed permutation of equal dimensions, v a translation): equal for faults that are the same fault turned."""
    dims = np.array(parse_shape(text).dims)
    expected, xyz = _graphs(text)
    ends = np.array([(a, int(expected[a, p])) for a, p in _dead_links(text, fault)])  # [links, 2] chips
    best: tuple[int, ...] | None = None
    n = len(xyz)
    for axes in itertools.permutations(range(3)):
        if tuple(dims[list(axes)]) != tuple(dims):
            continue
        for signs in itertools.product((1, -1), repeat=3):
            # only the dead links' end chips are mapped: [v, link] ids of each end under p -> A p + v
            a, b = (_images(xyz, dims, ends[:, side], list(axes), np.array(signs)) for side in (0, 1))
            keys = np.sort(np.minimum(a, b) * n + np.maximum(a, b), axis=1)
            row = keys[np.lexsort(keys.T[::-1])[0]]
            cand = tuple(int(k) for k in row)
            best = cand if best is None or cand < best else best
    assert best is not None
    return best


def _images(xyz: np.ndarray, dims: np.ndarray, chips: np.ndarray, axes: list[int], signs: np.ndarray) -> np.ndarray:
    """[v, chip] ids of `chips` moved by A (axes permuted, signs flipped), then translated by each v (every chip)."""
    moved = xyz[chips][:, axes] * signs  # [chips, 3]
    image = (moved[None, :, :] + xyz[:, None, :]) % dims  # [v, chips, 3]
    return np.ravel_multi_index(tuple(np.moveaxis(image, -1, 0)), tuple(dims))


SHAPES = [
    pytest.param("4x4x4"),
    pytest.param("4x4x8"),
    pytest.param("8x8x8", marks=pytest.mark.slow),
]


@pytest.mark.parametrize("text", SHAPES)
def test_the_same_fault_turned_gets_the_same_load(text: str) -> None:
    classes: dict[tuple[int, ...], list[tuple[Fault, float]]] = {}
    for ocs in ALL_OCS:
        fault = (ocs,)
        classes.setdefault(_canonical(text, fault), []).append((fault, _load(text, fault)))
    assert len(classes) <= 2  # every OCS failure is one fault turned (4x4x8: x and y, or z)
    for members in classes.values():
        loads = [load for _, load in members]
        assert max(loads) - min(loads) <= 1, members


def _partners(ocs: tuple[str, int]) -> list[tuple[str, int]]:
    """One OCS in each other dimension, fixed by the fault (derandomized)."""
    d, i = ocs
    return [(e, (5 * i + 3 + k) % OCS_PER_DIM) for k, e in enumerate(x for x in "xyz" if x != d)]


@pytest.mark.parametrize("text", ["4x4x4", "4x4x8"])
def test_a_single_ocs_is_never_routed_worse_than_a_compound_fault_containing_it(text: str) -> None:
    for ocs in ALL_OCS:
        single = _load(text, (ocs,))
        for other in _partners(ocs):
            compound = _load(text, tuple(sorted((ocs, other))))
            assert single <= compound, (ocs, other, single, compound)


@pytest.mark.slow
def test_a_single_ocs_on_8x8x8_is_never_routed_worse_than_two_containing_it() -> None:
    for ocs in [("x", 3), ("y", 5), ("z", 2)]:
        for other in _partners(ocs)[:1]:
            assert _load("8x8x8", (ocs,)) <= _load("8x8x8", tuple(sorted((ocs, other)))), (ocs, other)


@pytest.mark.parametrize("text", SHAPES)
def test_links_of_one_ocs_are_never_routed_worse_than_the_whole_ocs(text: str) -> None:
    """Every OCS (8x8x8: one of each dimension): its first link alone, and every other link of it (scattered over
    its boundaries)."""
    for ocs in ALL_OCS if text != "8x8x8" else ALL_OCS[3::OCS_PER_DIM]:
        fault = (ocs,)
        count = len(_dead_links(text, fault))
        whole = _load(text, fault)
        subsets = {(0,), tuple(range(0, count, 2))}
        for links in subsets:
            if len(links) < count:
                assert _load(text, fault, links) <= whole, (ocs, links)


def test_a_link_on_top_of_an_ocs_is_never_routed_worse_than_its_whole_ocs(cli):
    """4x8x8 with x/12 down: a z link of OCS z/8 must keep at least what the whole of z/8 keeps. Faults there are
    routed in their canonical form, so the link's candidates made for the pattern as it is were not enough: the
    pattern's own answer (canonical form included) is a candidate too."""
    for step in (("init",), ("allocate", "s", "--shape", "4x8x8"), ("plan-xconnect", "s", "--apply"), ("routes", "s")):
        assert cli(*step).code == 0, step
    assert cli("inject-fault", "ocs:pod0/x/12").code == 0

    def kept(target: str) -> float:
        r = cli("inject-fault", target, "--dry-run", "-o", "json")
        assert r.code == 0, r.err
        (hit,) = [s for s in r.json["slices"] if s["slice"] == "s"]
        return float(hit["reroute"]["all_to_all_retained"])

    assert kept("link:c03/z/8/in") >= kept("ocs:pod0/z/8")
