"""Candidates that leave pairs unroutable never stand before one that routes every pair, and are not made once
both kinds were seen (`reach.Skipping`): the verdict and the tables are those of the routable candidates alone.

On small slices every candidate routes every pair within four chain rounds; with two (monkeypatched, for both the
repair and the reach check) some dimension orders leave pairs and others do not, as a full pod's candidates do
with four (two OCS and two links down on 16x16x16: 18 of 24 candidates left 15-53 pairs).
"""

from __future__ import annotations

from typing import Any

import pytest
from test_routing_reach import _kill_links

MIXED = [("4x4x8", 0.03, 1), ("4x4x4", 0.08, 0), ("4x4x8", 0.05, 2)]  # graphs whose candidates are of both kinds
SKIPS = MIXED[0]  # one where candidates of both kinds are made before others that leave pairs


def _left(info: Any) -> int:
    return int(info["broken_by_faults"] - info["repaired_wild"])


def _case(shape_text: str, fraction: float, seed: int) -> tuple[Any, Any, Any]:
    from tpufleet.shapes import parse_shape
    from tpufleet.topology import neighbors

    shape = parse_shape(shape_text)
    exp = neighbors(shape)
    return shape, exp, _kill_links(exp, fraction, seed)


@pytest.fixture
def two_chain_rounds(monkeypatch: pytest.MonkeyPatch) -> None:
    from tpufleet.routing import tolerant

    monkeypatch.setattr(tolerant, "MAX_CHAIN_ROUNDS", 2)


def _every_candidate(monkeypatch: pytest.MonkeyPatch, shape: Any, exp: Any, alive: Any) -> list[Any]:
    """Every variant made and ranked by load alone, as candidates were ranked before."""
    from tpufleet.routing import candidates as cand
    from tpufleet.routing.reach import Skipping

    with monkeypatch.context() as m:
        m.setattr(Skipping, "worth_making", lambda self, graph, variant: True)
        m.setattr(
            cand,
            "routable_first",
            lambda ranked, routable=False: [(rt, i) for _, rt, i in sorted(ranked, key=lambda r: r[0])],
        )
        return cand.candidates(shape, exp, alive, "auto", 3)


@pytest.mark.parametrize(("shape_text", "fraction", "seed"), MIXED)
def test_only_routable_candidates_are_kept_and_skipping_changes_none_of_them(
    two_chain_rounds: None, monkeypatch: pytest.MonkeyPatch, shape_text: str, fraction: float, seed: int
) -> None:
    from tpufleet.routing import candidates as cand

    shape, exp, alive = _case(shape_text, fraction, seed)
    every = _every_candidate(monkeypatch, shape, exp, alive)
    lefts = [_left(info) for _, info in every]
    assert 0 in lefts and max(lefts) > 0  # both kinds: the case tests something
    repairs: list[int] = []
    real_repair = cand._repair

    def counted(*args: Any, **kwargs: Any) -> Any:
        repairs.append(1)
        return real_repair(*args, **kwargs)

    monkeypatch.setattr(cand, "_repair", counted)
    kept = cand.candidates(shape, exp, alive, "auto", 3)
    assert all(_left(info) == 0 for _, info in kept)
    want = [(info["strategy"], info["max_load"]) for _, info in every if _left(info) == 0]
    assert [(info["strategy"], info["max_load"]) for _, info in kept] == want
    if (shape_text, fraction, seed) == SKIPS:
        assert len(repairs) < len(every)  # some were known to leave pairs before a repair


@pytest.mark.parametrize(("shape_text", "fraction", "seed"), MIXED)
def test_the_verdict_routes_every_pair_when_a_candidate_does(
    two_chain_rounds: None, shape_text: str, fraction: float, seed: int
) -> None:
    from tpufleet.routing.report import evaluate

    shape, exp, alive = _case(shape_text, fraction, seed)
    summary = evaluate(shape, exp, alive, "auto", ("all-to-all",), max_vcs=3).summary
    assert summary["unroutable_pairs"] == 0


def test_when_every_candidate_leaves_pairs_all_are_kept(
    two_chain_rounds: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tpufleet.routing import candidates as cand

    shape, exp, alive = _case("4x4x4", 0.25, 0)
    every = _every_candidate(monkeypatch, shape, exp, alive)
    assert min(_left(info) for _, info in every) > 0
    kept = cand.candidates(shape, exp, alive, "auto", 3)
    assert [(i["strategy"], i["max_load"]) for _, i in kept] == [(i["strategy"], i["max_load"]) for _, i in every]
