"""The state protocol under another writer and odd sequences: what a command checked before the lock is checked
again under it, and no command leaves a state the next one refuses."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from helpers import one_line
from tpufleet.state import store as store_module


@pytest.fixture
def writer_first(fleet, monkeypatch):
    """Runs the given command as another writer just before the command under test takes the lock."""
    pending: list[tuple[str, ...]] = []
    original = store_module.Store.transaction

    @contextlib.contextmanager
    def transaction(self, *args, **kwargs) -> Iterator[store_module.Transaction]:
        while pending:
            assert fleet(*pending.pop()).code == 0
        with original(self, *args, **kwargs) as tx:
            yield tx

    monkeypatch.setattr(store_module.Store, "transaction", transaction)
    return pending


def test_inject_fault_on_a_cube_gone_since_it_was_checked_names_the_cube(fleet, writer_first):
    writer_first.append(("init", "--force", "--cubes-per-pod", "8"))
    line = one_line(fleet("inject-fault", "cube:c40"))
    assert "c40" in line and "would not load again" not in line
    assert fleet("-o", "json", "faults").json == []
    assert fleet("-o", "json", "status").json["serial"] == 2  # init, then init --force: nothing committed since
