"""A state file that is not JSON at all (cut short, zeroed, overwritten) was named with its byte and no way out: the
message now says what to do, on every command that reads it, and nothing is written."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("damage", [b'{"serial": 1, "fleet":', b"", b"\x00" * 64, b"\xff\xfe{}"])
@pytest.mark.parametrize(
    "command", [("status",), ("inject-fault", "host:c00/1"), ("allocate", "a", "--shape", "4x4x4")]
)
def test_a_damaged_state_file_names_the_ways_out(fleet, tmp_path, damage, command):
    path = tmp_path / "state" / "state.json"
    path.write_bytes(damage)
    r = fleet(*command)
    assert r.code == 2, r.err
    assert "state pull" in r.err and "init --force" in r.err and str(path) in r.err, r.err
    assert path.read_bytes() == damage


def test_a_state_file_that_reads_but_breaks_a_rule_gets_no_such_hint(fleet, tmp_path):
    """JSON whose field is wrong (edited by hand, say) names the field; it is not called damaged."""
    path = tmp_path / "state" / "state.json"
    path.write_text('{"serial": "x"}')
    r = fleet("status")
    assert r.code == 2 and "init --force" not in r.err, r.err
