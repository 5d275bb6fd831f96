"""`policy` on a slice running rerouted now: a floor above what it keeps (or rerouting turned off) moves nothing
until a fault strikes it, which `explain` said and `policy` did not; the table says so beside the new policy."""

from __future__ import annotations

import pytest

from helpers import wired
from tpufleet.text import share_text

NOTE = (
    "  note: it runs rerouted around f1 now, keeping {kept}: nothing moves it for that (the policy is judged when a "
    "fault strikes it; `tpufleet explain train`)"
)


@pytest.fixture
def rerouted(fleet):
    wired(fleet, "train", "8x8x8")
    assert fleet("policy", "train", "--min-throughput", "0.5").code == 0
    r = fleet("inject-fault", "ocs:pod0/x/3", "-o", "json")
    [row] = r.json["slices"]
    assert row["action"] == "reroute"
    return fleet, share_text(row["reroute"]["all_to_all_retained"])  # 0.9275 (512/552) reads 0.928


def test_a_floor_above_what_it_keeps_is_said_to_move_nothing(rerouted):
    fleet, kept = rerouted
    lines = fleet("policy", "train", "--min-throughput", "0.99").out.splitlines()
    assert lines[1:] == [NOTE.format(kept=kept)]


def test_rerouting_turned_off_is_said_to_move_nothing(rerouted):
    fleet, kept = rerouted
    lines = fleet("policy", "train", "--no-fault-tolerant-routing").out.splitlines()
    assert lines == [
        "slice train: fault-tolerant routing off, rescheduled on any network fault",
        NOTE.format(kept=kept),
    ]


def test_a_floor_it_keeps_needs_no_note(rerouted):
    fleet, _ = rerouted
    assert len(fleet("policy", "train", "--min-throughput", "0.6").out.splitlines()) == 1
