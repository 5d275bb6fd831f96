"""Regression tests for files planted in a state directory: hard links to files outside it, FIFOs beside a
waiting table, huge or sparse files and compressed memory bombs. Each is refused naming the file (exit 2), never
written through, waited on for good, or an internal error (exit 70)."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import beside_a_fifo, one_line, snapshot


@pytest.mark.parametrize("name", ["journal.jsonl", ".lock.info"])
def test_a_state_file_hard_linked_to_a_file_outside_is_refused_and_that_file_is_untouched(fleet, tmp_path, name):
    outside = tmp_path / "notes.txt"
    outside.write_bytes(b"an operator's notes\n")
    linked = fleet.state / name
    linked.unlink(missing_ok=True)
    os.link(outside, linked)
    before = snapshot(fleet.state)
    line = one_line(fleet("inject-fault", "cube:c03"))
    assert str(linked) in line and "hard link" in line
    assert outside.read_bytes() == b"an operator's notes\n"  # neither appended to nor truncated
    assert snapshot(fleet.state) == before
    shutil.copy2(linked, f"{linked}.copy")  # the copy the message asks for: then the next command works
    os.replace(f"{linked}.copy", linked)
    assert fleet("inject-fault", "cube:c03").code == 0
    assert outside.read_bytes() == b"an operator's notes\n"


DEAD_PID = 4194303  # above any pid in use (the kernel's largest pid is 4194304 at most)


def test_a_fifo_in_place_of_tables_with_a_dead_writers_temp_beside_them_is_not_waited_on(routed):
    """A writer looks for tables a killed commit left under a temporary name; the file in place, a FIFO nobody
    writes, was opened to read its stamp and every writing command hung, holding the lock."""
    tables = routed.state / "routes" / "s.npz"
    committed = tables.read_bytes()
    (routed.state / "routes" / f".s.npz.{DEAD_PID}.abcdefgh.tmp").write_bytes(committed)
    tables.unlink()
    os.mkfifo(tables)
    assert beside_a_fifo(lambda: routed("inject-fault", "host:c40/1"), tables).code == 0
    assert tables.read_bytes() == committed  # the waiting tables are put in its place
    assert routed("collective", "s", "--op", "all-to-all", "--bytes", "1MiB").code == 0


def _run_with_memory_cap(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The command in a process that may map at most 2 GiB: what it reads whole must fit."""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, resource.getrlimit(resource.RLIMIT_AS)[1]))

    return subprocess.run(
        [sys.executable, "-m", "tpufleet", "--state", str(state), *args],
        capture_output=True,
        text=True,
        preexec_fn=cap,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)},
        check=False,
    )


@pytest.mark.parametrize("command", [("status",), ("inject-fault", "cube:c03")])
def test_a_huge_sparse_state_file_is_refused_by_its_size_not_read_whole(fleet, command):
    huge = 8 << 30
    os.truncate(fleet.state / "state.json", huge)  # sparse: no disk used
    before = {p.name: p.stat().st_size for p in fleet.state.iterdir()}
    r = _run_with_memory_cap(fleet.state, *command)
    assert r.returncode == 2, r.stderr[-500:]
    assert r.stderr.count("\n") == 1 and str(fleet.state / "state.json") in r.stderr and str(huge) in r.stderr
    assert {p.name: p.stat().st_size for p in fleet.state.iterdir()} == before


def _port_of_zeros_as_long_as_it_claims(path: Path, claimed: int) -> None:
    """The `port` member's header claims `claimed` int8 entries, and its deflated stream holds that many zeros: a
    few hundred kilobytes on disk that numpy's reader would allocate whole."""
    import io
    import zipfile

    import numpy as np

    members = dict(np.load(path))
    header = np.lib.format.header_data_from_array_1_0(members.pop("port"))
    header["shape"] = (64, claimed // 64)
    forged = io.BytesIO()
    np.lib.format.write_array_header_1_0(forged, header)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for name, value in members.items():
            with zf.open(f"{name}.npy", "w") as fh:
                np.lib.format.write_array(fh, value, allow_pickle=False)
        with zf.open("port.npy", "w") as fh:
            fh.write(forged.getvalue())
            zeros = bytes(1 << 24)
            for _ in range(claimed >> 24):
                fh.write(zeros)


def test_a_member_claiming_more_than_tables_of_its_shape_hold_is_refused_before_it_is_read(routed):
    """A forged shape over a compressed run of zeros as long as it claims (a zip bomb) was allocated whole: 4 GiB
    from a 4 MB file, an internal error (MemoryError) or the machine's memory."""
    import tracemalloc

    tables = routed.state / "routes" / "s.npz"
    _port_of_zeros_as_long_as_it_claims(tables, 512 << 20)
    assert tables.stat().st_size < 4 << 20
    tracemalloc.start()
    try:
        r = routed("collective", "s", "--op", "all-reduce", "--bytes", "1MiB")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert str(tables) in one_line(r) and "port" in r.err
    assert peak < 192 << 20, peak  # the 512 MiB it claims were never allocated
    assert routed("routes", "s").code == 0  # the command that replaces them
    assert routed("collective", "s", "--op", "all-reduce", "--bytes", "1MiB").code == 0


def test_a_member_with_a_header_version_numpy_does_not_write_for_tables_is_refused(routed):
    """A version 3.0 header skipped the size check: its 2**21 x 2**21 shape was a 4 TiB allocation (exit 70)."""
    import struct
    import zipfile

    import numpy as np

    tables = routed.state / "routes" / "s.npz"
    members = dict(np.load(tables))
    port = members.pop("port")
    header = "{'descr': '|i1', 'fortran_order': False, 'shape': (2097152, 2097152), }"
    header += " " * (64 - (12 + len(header) + 1) % 64) + "\n"
    forged = b"\x93NUMPY\x03\x00" + struct.pack("<I", len(header)) + header.encode() + port.tobytes()
    np.savez_compressed(tables.with_suffix(""), **members)
    with zipfile.ZipFile(tables, "a") as zf:
        zf.writestr("port.npy", forged)
    r = routed("collective", "s", "--op", "all-reduce", "--bytes", "1MiB")
    assert str(tables) in one_line(r) and "port" in r.err


SPARSE_TAIL = 8 << 30


@pytest.mark.parametrize(
    "command", [("history",), ("show", "journal"), ("diff", "1", "2"), ("report",), ("faults", "--all")]
)
def test_a_huge_sparse_journal_tail_is_read_in_bounded_pieces(fleet, command):
    """A zero-filled tail (a crash on XFS or ext4 leaves one; `truncate -s +8G` makes one) was read whole: exit 70
    (MemoryError). It is a torn last line, as a torn write is: ignored by readers."""
    assert fleet("inject-fault", "cube:c03").code == 0
    path = fleet.state / "journal.jsonl"
    os.truncate(path, path.stat().st_size + SPARSE_TAIL)
    r = _run_with_memory_cap(fleet.state, *command, "-o", "json")
    assert r.returncode == 0, r.stderr[-500:]
    assert "damaged" not in r.stderr


def test_a_writer_cuts_a_huge_sparse_journal_tail_off_as_a_torn_write(fleet):
    assert fleet("inject-fault", "cube:c03").code == 0
    path = fleet.state / "journal.jsonl"
    committed = path.read_bytes()
    os.truncate(path, len(committed) + SPARSE_TAIL)
    r = _run_with_memory_cap(fleet.state, "inject-fault", "cube:c07")
    assert r.returncode == 0, r.stderr[-500:]
    assert path.read_bytes().startswith(committed) and path.stat().st_size < len(committed) * 2
    assert [e["serial"] for e in fleet("history", "-o", "json").json] == [1, 2, 3]


def test_a_sparse_hole_inside_the_journal_is_one_damaged_line_read_past(fleet):
    assert fleet("inject-fault", "cube:c03").code == 0
    assert fleet("inject-fault", "cube:c04").code == 0
    path = fleet.state / "journal.jsonl"
    first, second, third = path.read_bytes().splitlines(keepends=True)
    with path.open("wb") as fh:  # the second line's start lost under 8 GiB of NULs
        fh.write(first)
        fh.seek(SPARSE_TAIL, os.SEEK_CUR)
        fh.write(second + third)
    r = _run_with_memory_cap(fleet.state, "history", "-o", "json")
    assert r.returncode == 0, r.stderr[-500:]
    assert "damaged line(s) 2 skipped" in r.stderr
    r = _run_with_memory_cap(fleet.state, "inject-fault", "cube:c07")
    assert r.returncode == 0, r.stderr[-500:]
    assert path.stat().st_size > SPARSE_TAIL  # committed history (damaged or not) is kept
    history = fleet("history", "-o", "json")
    assert [e["serial"] for e in history.json] == [1, 3, 4] and "damaged line(s) 2 skipped" in history.err


def test_a_journal_line_longer_than_readers_take_is_refused(fleet, monkeypatch):
    from tpufleet.state import journalfile

    before = snapshot(fleet.state)
    monkeypatch.setattr(journalfile, "MAX_LINE_BYTES", 200)
    r = fleet("inject-fault", "cube:c03")
    assert r.code == 2 and "journal line" in r.err and "nothing changed" in r.err
    assert snapshot(fleet.state) == before


def test_a_huge_sparse_lock_note_is_not_read_whole_when_the_lock_is_busy(fleet):
    """The note of who holds the lock was read whole by a command timing out on it: exit 70 (MemoryError)."""
    from tpufleet.state.lock import exclusive

    with exclusive(fleet.state, 1, "tpufleet allocate"):
        os.truncate(fleet.state / ".lock.info", 20 << 30)
        r = _run_with_memory_cap(fleet.state, "--lock-timeout", "1", "inject-fault", "cube:c07")
    assert r.returncode == 3, r.stderr[-500:]
    assert "an unknown process" in r.stderr


def test_the_lock_note_keeps_the_start_of_a_long_command_line(fleet):
    from tpufleet.state.lock import exclusive

    with exclusive(fleet.state, 1, "tpufleet import slices " + "x" * 500_000):
        note = (fleet.state / ".lock.info").read_bytes()
        r = fleet("--lock-timeout", "0", "inject-fault", "cube:c07")
    assert len(note) < 4096
    assert r.code == 3 and "tpufleet import slices xxx" in r.err


NO_DATABASE = "postgresql://nobody@127.0.0.1:1/fleet"  # refused at once: nothing listens on port 1


def test_state_push_recovers_a_huge_sparse_journal_tail_before_reading_the_journal(fleet):
    """`state push` read the directory's journal whole before its recovery: exit 70 (MemoryError)."""
    path = fleet.state / "journal.jsonl"
    committed = path.read_bytes()
    os.truncate(path, len(committed) + SPARSE_TAIL)
    r = _run_with_memory_cap(fleet.state, "state", "push", str(fleet.state), NO_DATABASE)
    assert r.returncode == 1 and "127.0.0.1" in r.stderr, r.stderr[-500:]
    assert path.read_bytes() == committed


def test_state_push_refuses_a_journal_line_of_gigabytes(fleet):
    path = fleet.state / "journal.jsonl"
    with path.open("r+b") as fh:
        fh.seek(SPARSE_TAIL, os.SEEK_END)
        fh.write(b"x\n")
    r = _run_with_memory_cap(fleet.state, "state", "push", str(fleet.state), NO_DATABASE)
    assert r.returncode == 2, r.stderr[-500:]
    assert r.stderr.count("\n") == 1 and f"{path}: line 2 is longer than" in r.stderr


def test_state_push_refuses_a_tables_file_larger_than_any_unread(fleet):
    """`state push` read a routing-tables file whole, whatever its size: exit 70 (MemoryError) on a sparse one."""
    for step in (("allocate", "s", "--shape", "4x4x4"), ("plan-xconnect", "s", "--apply"), ("routes", "s")):
        assert fleet(*step).code == 0, step
    path = fleet.state / "routes" / "s.npz"
    os.truncate(path, 8 << 30)
    r = _run_with_memory_cap(fleet.state, "state", "push", str(fleet.state), NO_DATABASE)
    assert r.returncode == 2, r.stderr[-500:]
    assert r.stderr.count("\n") == 1 and str(path) in r.stderr and "larger than any tables file" in r.stderr


def test_state_push_of_an_empty_directory_says_there_is_nothing_to_push(cli, tmp_path):
    """An empty directory (no `init` run there) was refused as a command's missing `--state` (`run tpufleet init or
    pass --state`), not as `state push`'s own DIR: it is "no fleet state in DIR to push", exit 1, the directory
    left empty."""
    empty = tmp_path / "empty"
    empty.mkdir(mode=0o700)
    r = cli("state", "push", str(empty), NO_DATABASE)
    assert r.code == 1 and "to push" in r.err and "--state" not in r.err, r.err
    assert list(empty.iterdir()) == []


def test_state_push_of_a_file_is_bad_input_as_state_of_a_file_is(cli, tmp_path):
    """`state push FILE URL` was "no fleet state in FILE to push", exit 1, where `--state FILE` is bad input (2)."""
    afile = tmp_path / "fleet.txt"
    afile.write_text("x\n")
    r = cli("state", "push", str(afile), NO_DATABASE)
    assert r.code == 2 and f"state directory '{afile}' is not a directory" in r.err, r.err
    assert afile.read_text() == "x\n"
    dangling = tmp_path / "gone"
    dangling.symlink_to(tmp_path / "unmounted")  # a link to nothing is no file: there is no fleet to push
    r = cli("state", "push", str(dangling), NO_DATABASE)
    assert r.code == 1 and "no fleet state in" in r.err, r.err


def test_a_directory_planted_in_the_cache_stops_no_trim(tmp_path):
    """A directory in `cache/` under a temp file's name, older than an hour: removing it failed, which ended every
    trim there, so the cache kept every entry written after it, far past its 16 entries and 64 MB (631 after three
    `inject-fault`s on a pod). It stays now, and the entries are trimmed around it."""
    import numpy as np

    from tpufleet.state import tablecache

    cache = tablecache.TableCache(tmp_path)
    stray = tmp_path / "cache" / ".abc.npy.123.xyz.tmp"
    stray.mkdir(parents=True)
    os.utime(stray, (1000, 1000))  # long ago: a dead writer's, the least recently used
    for i in range(tablecache.MAX_ENTRIES + 4):
        cache.put(f"{i + 1:040x}", np.full(8, i % 6, dtype=np.int8))
        cache.flush()
    files = [p for p in (tmp_path / "cache").iterdir() if p.is_file()]
    assert len(files) == tablecache.MAX_ENTRIES and stray.is_dir()


def test_routes_and_cache_directories_others_can_write_are_refused_as_the_state_directory_is(routed):
    """`routes/` or `cache/` made writable by others (a `chmod -R 777`, a copy under a loose umask) was written into
    as it was, so any account could put tables there that `collective` reads as the slice's, or cache entries the
    router would use; the state directory itself is refused so. A write into either is refused now (exit 2, naming
    it, nothing written; a cache entry is simply not kept), until `chmod go-w`."""
    assert routed("inject-fault", "link:c00/x/3/out").code == 0
    routes, cache = routed.state / "routes", routed.state / "cache"
    routes.chmod(0o777)
    before = snapshot(routed.state)
    line = one_line(routed("routes", "s"), code=2)
    assert str(routes) in line and "0777" in line and "chmod go-w" in line
    assert snapshot(routed.state) == before
    routes.chmod(0o700)
    shutil.rmtree(cache, ignore_errors=True)
    cache.mkdir(mode=0o700)
    cache.chmod(0o777)
    assert routed("routes", "s").code == 0
    assert list(cache.iterdir()) == []


@pytest.mark.parametrize("pid", ["99999999999999999999", "0"])
def test_a_temp_file_name_with_a_pid_no_process_has_bricks_nothing(routed, pid):
    """A file named as a writer's temp file but with a process number no process can have (one past what a pid
    holds, planted or copied in) made every writer, and for `routes/` every reader too, exit 70 (OverflowError
    asking whether that process runs); pid 0 was taken for a running writer (the signal went to our own process
    group) and stayed for good. Such a name is a dead writer's: the next writer removes it."""
    planted = [routed.state / f".state.json.{pid}.abc123.tmp", routed.state / "routes" / f".s.npz.{pid}.abc123.tmp"]
    for path in planted:
        path.write_bytes(b"junk")
    assert routed("status").code == 0
    assert routed("collective", "s", "--op", "all-to-all", "--bytes", "1MiB").code == 0
    assert routed("inject-fault", "host:c40/1").code == 0
    assert routed("routes", "s").code == 0
    assert not [p for p in planted if p.exists()]


@pytest.mark.parametrize("kind", ["directory", "fifo"])
def test_init_over_a_state_file_that_is_no_file_says_so_with_or_without_force(cli, kind):
    """`init` said a fleet state already exists and to use --force; `init --force` then refused the directory (or
    FIFO) where the state file belongs. Both say what stands there."""
    import os

    cli.state.mkdir()
    where = cli.state / "state.json"
    where.mkdir() if kind == "directory" else os.mkfifo(where)
    for args in (("init",), ("init", "--force")):
        r = cli(*args)
        assert r.code == 2 and r.err.count("\n") == 1, (args, r.err)
        assert f"{where} is a {kind if kind == 'directory' else 'FIFO'}" in r.err and "--force" not in r.err, r.err
