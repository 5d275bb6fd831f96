"""Defects of `routes` a review of the modelling commands found: tables never checked for deadlock replaced
working ones, and tables weighed for all-reduce alone recorded a degraded slice as keeping no all-to-all
throughput at all."""

from __future__ import annotations

import json

import numpy as np


def _wired(fleet, shape: str = "4x4x8") -> None:
    assert fleet("allocate", "s", "--shape", shape).code == 0
    assert fleet("plan-xconnect", "s", "--apply").code == 0


def _stored(fleet) -> tuple[bytes, dict]:
    raw = (fleet.state / "routes" / "s.npz").read_bytes()
    with np.load(fleet.state / "routes" / "s.npz") as tables:
        return raw, json.loads(str(tables["meta"]))


def test_tables_not_checked_for_deadlock_never_replace_the_stored_ones(fleet):
    _wired(fleet)
    assert fleet("routes", "s").code == 0
    assert fleet("inject-fault", "ocs:pod0/x/0").code == 0
    before, meta = _stored(fleet)
    assert meta["vcs"] is not None
    serial = fleet("status", "-o", "json").json["serial"]
    r = fleet("routes", "s", "--no-deadlock-check", "-o", "json")
    assert r.code == 1 and "not stored" in r.err  # refused: not what `routes` is for without --out
    assert r.json["stored"] is False and "not checked for deadlock" in r.json["not_stored"]
    assert r.json["deadlock_free"] is None
    assert _stored(fleet)[0] == before
    assert fleet("status", "-o", "json").json["serial"] == serial  # nothing recorded


def test_unchecked_tables_can_still_be_exported_for_study(fleet, tmp_path):
    _wired(fleet)
    out = tmp_path / "unchecked.npz"
    r = fleet("routes", "s", "--no-deadlock-check", "--out", out, "-o", "json")
    assert r.code == 0 and r.json["stored"] is False
    with np.load(out) as tables:
        assert tables["port"].shape == (128, 128)


def test_all_reduce_tables_record_the_all_to_all_they_keep(fleet):
    _wired(fleet)
    assert fleet("inject-fault", "ocs:pod0/x/0").code == 0
    both = fleet("routes", "s", "-o", "json").json
    kept = both["throughput_retained"]["all-to-all"]
    r = fleet("routes", "s", "--traffic", "all-reduce", "-o", "json")
    assert r.code == 0 and r.json["stored"] is True
    assert "all-to-all" not in r.json["throughput_retained"]
    (row,) = fleet("show", "slices", "-o", "json").json
    assert row["state"] == "degraded"
    assert row["degraded"]["all_to_all_retained"] == kept > 0.5  # the same tables: the same figure
