"""`routes` computes outside the lock and records under it: its tables stay valid through commits that leave the
slice's live chip graph as it was (a slice allocated elsewhere, a fault on another pod's OCS), and are refused when
the slice, its wiring or the health of its links changed meanwhile (a fault on its OCS, its release)."""

from __future__ import annotations

import pytest

from tpufleet.errors import Refused
from tpufleet.ops import routes as route_ops
from tpufleet.state.store import Store

NOW = "2026-11-25T00:00:00Z"


@pytest.fixture
def computed(cli):
    for step in (("init", "--pods", "2"), ("allocate", "a", "--shape", "4x4x8", "--pod", "pod0"),
                 ("plan-xconnect", "a", "--apply")):  # fmt: skip
        assert cli(*step).code == 0, step
    store = Store(cli.state)
    return cli, store, route_ops.compute(store.load(), "a", "auto", ("all-to-all",), True, NOW)


def _record(store: Store, routed: route_ops.RoutedSlice) -> None:
    with store.transaction() as tx:
        tx.commit(route_ops.record(tx.state, routed, "routes/a.npz").change)


@pytest.mark.parametrize(
    "meanwhile",
    [
        ("allocate", "b", "--shape", "4x4x4", "--pod", "pod1"),
        ("inject-fault", "ocs:pod1/x/0"),
        ("inject-fault", "cube:c70"),
    ],
)
def test_a_commit_elsewhere_leaves_the_tables_valid(computed, meanwhile):
    cli, store, routed = computed
    assert cli(*meanwhile).code == 0
    serial = store.load().serial
    _record(store, routed)
    state = store.load()
    assert state.serial == serial + 1 and state.routes["a"].vcs == routed.report.summary["vcs"]


@pytest.mark.parametrize(
    "meanwhile", [("inject-fault", "ocs:pod0/x/0"), ("release", "a"), ("inject-fault", "link:c00/x/0/out")]
)
def test_a_change_to_the_slice_or_its_links_refuses_them(computed, meanwhile):
    cli, store, routed = computed
    assert cli(*meanwhile).code == 0
    before = (cli.state / "state.json").read_bytes()
    with pytest.raises(Refused, match="state changed while routes for 'a' were computed"):
        _record(store, routed)
    assert (cli.state / "state.json").read_bytes() == before
