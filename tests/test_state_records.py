"""The file schema and the output contract are two codecs: `state.json` and the journal are written by
`tpufleet.state.records` and `codec.encode`, never by the `record()` methods the commands print with, so either can
change without the other. A state holding every kind of record (slices with a reroute and a proposal, sub-cube
slices, a job, faults with windows, a reservation, node pools, degraded partitions, moved journal records) must
encode to exactly its file with every `record()` broken."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tpufleet.allocation import Allocation
from tpufleet.fleetstate import Fault, Reroute, Slice
from tpufleet.gkerecords import MaintenanceWindow, NodePoolSlice, SubBlockRecord
from tpufleet.journalentry import JournalEntry
from tpufleet.state import codec, records
from tpufleet.state.store import Store

ROOT = Path(__file__).resolve().parents[1]
RESERVATION = ROOT / "fixtures" / "gke" / "tpu7x-reservation-subblocks.json"
POOLS = ROOT / "fixtures" / "k8s" / "v4-nodepools.json"


@pytest.fixture
def busy(cli):
    """A TPU7x superpod with the fixture reservation, slices wired and routed, a fault, a job and a sub-cube slice;
    and a second, built-in v4 pod holding node pools."""
    steps = [
        ("init", "--generation", "tpu7x"),
        ("import", "reservation", RESERVATION, "--apply"),
        ("allocate", "a", "--shape", "4x4x8"),
        ("plan-xconnect", "a", "--apply"),
        ("routes", "a"),
        ("allocate", "small", "--shape", "2x2x2"),
        ("allocate", "j", "--shape", "4x4x4", "--slices", "2"),
        ("inject-fault", "ocs:pod0/x/3"),
        ("inject-fault", "host:c60/2", "--planned", "--reason", "swap"),
    ]
    for step in steps:
        r = cli(*step)
        assert r.code == 0, (step, r.err)
    return cli


def _broken(monkeypatch) -> None:
    def refuse(self):
        raise AssertionError(f"{type(self).__name__}.record() used to write the state")

    for cls in (Fault, Slice, Reroute, Allocation, SubBlockRecord, MaintenanceWindow, NodePoolSlice, JournalEntry):
        monkeypatch.setattr(cls, "record", refuse)


def test_the_state_file_is_written_without_the_output_records(busy, monkeypatch):
    store = Store(busy.state)
    state = store.load()
    assert any(sl.reroute for sl in state.slices.values()) and state.reservation and state.jobs
    on_disk = json.loads((busy.state / "state.json").read_bytes())
    _broken(monkeypatch)
    doc = codec.encode(state)
    doc["schema_version"] = on_disk["schema_version"]
    assert doc == on_disk
    # and a commit goes through with every record() broken
    with store.transaction() as tx:
        tx.state.open_fault(tx.state.faults[0].target, True, "again", "2026-11-25T00:00:00Z")
        from tpufleet.fleetstate import Change

        tx.commit(Change("records"))
    assert store.load().serial == state.serial + 1


def test_journal_lines_are_the_records_module_s(busy):
    store = Store(busy.state)
    lines = [json.loads(line) for line in (busy.state / "journal.jsonl").read_bytes().splitlines()]
    entries = store.journal()
    assert len(entries) == len(lines) > 5
    assert [records.journal_doc(e) for e in entries] == lines


def test_node_pools_and_degraded_partitions_round_trip(cli, monkeypatch):
    assert cli("init").code == 0
    assert cli("import", "k8s", POOLS, "--apply").code == 0
    store = Store(cli.state)
    on_disk = json.loads((cli.state / "state.json").read_bytes())
    assert on_disk["k8s"]["node_pools"]
    _broken(monkeypatch)
    doc = codec.encode(store.load())
    doc["schema_version"] = on_disk["schema_version"]
    assert doc == on_disk
