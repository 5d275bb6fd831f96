"""Regression tests for `routes/` and `cache/` writable by others: refused for writes, they were still read (the
tables a killed writer left waiting installed from `routes/` by any writer, cache entries used by the router).
A writer refuses `routes/` as it refuses the state directory; a cache others may write is not read."""

from __future__ import annotations

import numpy as np
import pytest

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


@pytest.mark.parametrize("kind", ["symlink", "file"])
@pytest.mark.parametrize(
    "command",
    [("allocate", "z", "--shape", "4x4x4"), ("inject-fault", "host:c40/1"), ("policy", "s", "--min-throughput", "0.8")],
)
def test_a_writer_that_writes_no_tables_refuses_a_routes_that_is_no_directory(routed, tmp_path, kind, command):
    """`routes/` a symbolic link or a file: `status`, `routes` and `release` refused it (exit 2), but a writer that
    touches no table (`allocate`, `inject-fault`, `policy`) committed on it. Every writer refuses it now, the
    state unchanged, and works again once a real directory is back."""
    routes = routed.state / "routes"
    moved = tmp_path / "elsewhere"
    routes.rename(moved)
    if kind == "symlink":
        routes.symlink_to(moved)
    else:
        routes.write_text("x")
    before = snapshot(routed.state)
    line = one_line(routed(*command), code=2)
    assert str(routes) in line and ("symbolic link" if kind == "symlink" else "not a directory") in line
    assert snapshot(routed.state) == before
    routes.unlink()
    moved.rename(routes)
    assert routed(*command).code == 0


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
