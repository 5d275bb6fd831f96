"""Regression tests for `routes/` and `cache/` writable by others: refused for writes, they were still read (the
tables a killed writer left waiting installed from `routes/` by any writer, cache entries used by the router).
A writer refuses `routes/` as it refuses the state directory; a cache others may write is not read."""

from __future__ import annotations

import numpy as np

from helpers import one_line, snapshot
from tpufleet.state.tablecache import TableCache

DEAD_PID = 4194303  # above any pid in use


def test_a_writer_refuses_a_routes_directory_others_can_write_and_installs_nothing_from_it(routed):
    routes = routed.state / "routes"
    planted = routes / f".s.npz.{DEAD_PID}.abcdefgh.tmp"  # tables "left waiting", put there by another account
    planted.write_bytes((routes / "s.npz").read_bytes())
    routes.chmod(0o777)
    before = snapshot(routed.state)
    line = one_line(routed("inject-fault", "host:c40/1"), code=2)  # a writer that writes no tables
    assert str(routes) in line and "0777" in line and "chmod go-w" in line
    assert snapshot(routed.state) == before and planted.exists()
    routes.chmod(0o700)
    assert routed("inject-fault", "host:c40/1").code == 0


def test_a_cache_entry_in_a_cache_others_can_write_is_not_read(tmp_path):
    cache = TableCache(tmp_path)
    key = "ab" * 20
    cache.put(key, np.arange(8, dtype=np.int8))
    cache.flush()
    assert cache.get(key) is not None
    (tmp_path / "cache").chmod(0o777)
    assert cache.get(key) is None
    (tmp_path / "cache").chmod(0o700)
    assert cache.get(key) is not None
