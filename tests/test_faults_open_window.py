"""A reservation's maintenance with no end time opens a drain whose window has no end (`... to ?`): `faults` and
`faults --all` failed on it (internal error, exit 70), for good once the cleared fault stayed in the history."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

RESERVATION = Path(__file__).parent.parent / "fixtures/gke/tpu7x-reservation-subblocks.json"


@pytest.mark.parametrize("how", ["null", "absent"])
def test_a_drain_without_an_end_is_listed(cli, tmp_path, how):
    doc = json.loads(RESERVATION.read_text())
    window = doc[40]["reservationSubBlockMaintenance"]["upcomingGroupMaintenance"]
    if how == "null":
        window["windowEndTime"] = None
    else:
        del window["windowEndTime"]
    path = tmp_path / "res.json"
    path.write_text(json.dumps(doc))
    assert cli("init", "--generation", "tpu7x").code == 0
    assert cli("import", "reservation", path, "--apply").code == 0
    rows = {f["target"]: f for f in cli("faults", "-o", "json").json}
    drain = rows["cube:c40"]
    assert "window_start" in drain and "window_end" not in drain
    for args in (("faults",), ("faults", "--all")):
        r = cli(*args)
        assert r.code == 0, r.err
        line = next(ln for ln in r.out.splitlines() if "cube:c40" in ln)
        assert line.rstrip().endswith("to ?"), line
    assert cli("clear-fault", drain["id"]).code == 0
    r = cli("faults", "--all")
    assert r.code == 0 and "cube:c40" in r.out, r.err
