"""How a log, an export or the state given twice, or as '-', is refused: each option named once, the name the
operator typed, and the same words for standard input everywhere."""

from __future__ import annotations

from helpers import one_line, snapshot


def test_metrics_names_goodput_once_when_its_log_is_standard_input_twice(fleet):
    """`metrics --goodput - --goodput -` said `bad options --goodput and --goodput`, naming one option twice."""
    before = snapshot(fleet.state)
    line = one_line(fleet("metrics", "--goodput", "-", "--goodput", "-"), 2)
    said = "bad option --goodput: - (standard input) is given more than once; only one log can be"
    assert line == f"tpufleet: error: {said}"
    assert snapshot(fleet.state) == before
