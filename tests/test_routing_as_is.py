"""A whole-OCS fault routed in its canonical form (`routing.canonical`) whose turned tables keep less than 0.92 of
the cut bound is also routed as it is, and the lighter kept: which image of a fault routes well is luck, as the
repairs name dimensions and directions."""

from __future__ import annotations

import networkx as nx
import pytest
from test_routing_split import walked_load
from test_vc_packing import channel_graph, layout_vcs

from helpers import ocs_failure
from tpufleet.routing import report
from tpufleet.routing.optimum import kept_at_most
from tpufleet.routing.report import evaluate
from tpufleet.shapes import parse_shape

pytestmark = pytest.mark.slow


def _down(text: str, *faults: tuple[str, int]):
    shape = parse_shape(text)
    expected, alive = ocs_failure(shape, *faults[0])
    for dim, index in faults[1:]:
        alive[ocs_failure(shape, dim, index)[1] < 0] = -1
    return shape, expected, alive


def _cut_bound(shape, alive, s) -> float:
    healthy = float(s["healthy_max_link_load"]["all-to-all"])
    kept = kept_at_most(shape, alive, healthy)
    assert kept is not None
    return healthy / kept


def test_two_ocs_whose_canonical_form_routes_poorly_are_routed_as_they_are():
    """8x8x16, x/5 and z/5 (broken rings in the same y planes): 2477 in the canonical form, 2214 as it is."""
    shape, expected, alive = _down("8x8x16", ("x", 5), ("z", 5))
    r = evaluate(shape, expected, alive, "auto", ("all-to-all",), max_vcs=3)
    s = r.summary
    load = s["max_link_load"]["all-to-all"]
    assert load == 2214 and int(walked_load(r.tables).max()) == 2214
    assert _cut_bound(shape, alive, s) / load >= 0.98
    assert s["deadlock_free"] and s["vcs"] == 3 and s["unroutable_pairs"] == 0
    graph, vcs = channel_graph(r.tables, *layout_vcs(r.tables, s["vc_layout"]))
    assert vcs == 3 and nx.is_directed_acyclic_graph(graph)


def test_a_canonical_form_that_routes_well_is_not_routed_again(monkeypatch):
    """8x8x16, x/3 and z/2: the turned tables keep 0.985 of the cut bound; nothing is made for the live graph."""
    shape, expected, alive = _down("8x8x16", ("x", 3), ("z", 2))
    made_for_live = []
    real = report._made_for

    def spy(shape_, expected_, alive_, *args, **kwargs):
        made_for_live.append(bool((alive_ == alive).all()))
        return real(shape_, expected_, alive_, *args, **kwargs)

    monkeypatch.setattr(report, "_made_for", spy)
    report._forms_made.cache_clear()
    s = evaluate(shape, expected, alive, "auto", ("all-to-all",), max_vcs=3).summary
    assert s["max_link_load"]["all-to-all"] == 2218 and not any(made_for_live)
    assert made_for_live  # the canonical form was made (not the live graph: it is a translate)
