"""Hardening of the state layer: each defect of the "Hardening" issue as a regression test, through the CLI where
it can be.

Bad input exits 2 with one line naming the file, field and value; an operating-system error writing the state
exits 1 with one line naming the file; either way the state directory is left byte-identical. Exit 70 (a bug)
never. Errors a test cannot cause for real (a full disk, a read-only mount, permissions when run as root) are
simulated by making `os.write`, `os.fsync` or `os.open` fail for the state's own files only. No sleeps.
"""

from __future__ import annotations

import contextlib
import errno
import json
import multiprocessing
import os
import resource
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
from contextlib import contextmanager
from pathlib import Path

import pytest

from helpers import snapshot
from tpufleet.cli import main
from tpufleet.errors import BadInput, Refused
from tpufleet.fleetstate import Change
from tpufleet.model import default_fleet
from tpufleet.state import Store, journal, resolve_state_dir
from tpufleet.state import filebackend as store_module  # where the directory's lock is taken
from tpufleet.state.outputs import check_output_path, write_output

CTX = multiprocessing.get_context("fork")
IS_ROOT = os.geteuid() == 0


def one_line_error(r, code: int, *needles: str) -> None:
    assert r.code == code, (r.code, r.err)
    assert r.err.count("\n") == 1 and r.err.startswith("tpufleet: error: "), r.err
    for needle in needles:
        assert needle in r.err, (needle, r.err)


def fd_path(fd: int) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return ""


needs_proc = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc/self/fd")


def lines(path: Path) -> list[bytes]:
    return path.read_bytes().split(b"\n")[:-1]


def serials(path: Path) -> list[int | None]:
    out: list[int | None] = []
    for line in lines(path):
        try:
            entry = json.loads(line)
        except (ValueError, RecursionError):
            entry = None
        out.append(entry.get("serial") if isinstance(entry, dict) else None)
    return out


def temp_files(state: Path) -> list[str]:
    return sorted(p.name for p in state.iterdir() if p.name.endswith(".tmp"))


# ---- 1. the journal's committed history is never cut --------------------------------------------------------


@pytest.fixture
def six(fleet):
    """A state at serial 6 (init + 5 faults)."""
    for i in range(5):
        assert fleet("inject-fault", f"host:c{10 + i}/1").code == 0
    assert serials(fleet.state / "journal.jsonl") == [1, 2, 3, 4, 5, 6]
    return fleet


def test_blank_line_and_leftover_line_keep_the_whole_history(six):
    path = six.state / "journal.jsonl"
    old = lines(path)
    leftover = json.dumps({"serial": 7, "summary": "never committed"}).encode()
    path.write_bytes(b"\n".join([*old[:2], b"", *old[2:], leftover]) + b"\n")  # 8 lines, a blank one third
    assert [e["serial"] for e in six("show", "journal", "-o", "json").json] == [1, 2, 3, 4, 5, 6]
    assert Store(six.state).journal_damage() == [3]

    r = six("inject-fault", "host:c20/1")
    assert r.code == 0, r.err
    assert serials(path) == [1, 2, None, 3, 4, 5, 6, 7]  # the leftover went, the history stayed
    assert lines(path)[2] == b"" and b"never committed" not in path.read_bytes()
    assert [e["serial"] for e in six("show", "journal", "-o", "json").json] == [1, 2, 3, 4, 5, 6, 7]
    assert Store(six.state).journal_damage() == [3]


def test_show_journal_reads_past_damaged_lines(six):
    path = six.state / "journal.jsonl"
    old = lines(path)
    damaged = [b"{not json", b'{"serial": true}', b"[1, 2]", b"\xff\xfe", b"[" * 100_000, b'{"serial": 99}']
    path.write_bytes(b"\n".join([old[0], *damaged, *old[1:]]) + b"\n")
    r = six("show", "journal", "-o", "json")
    assert r.code == 0 and [e["serial"] for e in r.json] == [1, 2, 3, 4, 5, 6]
    assert Store(six.state).journal_damage() == [2, 3, 4, 5, 6, 7]  # serial 99 inside the history is damage too
    assert six("inject-fault", "host:c20/1").code == 0
    assert serials(path)[-1] == 7 and len(lines(path)) == 13  # nothing removed


def test_damaged_line_after_the_last_committed_one_is_kept_and_uncommitted_lines_dropped(six):
    path = six.state / "journal.jsonl"
    committed = path.read_bytes()
    path.write_bytes(committed + b"garbage\n" + b'{"serial": 7}\n' + b'{"serial": 8, "torn')
    assert Store(six.state).journal_damage() == [7]
    assert six("inject-fault", "host:c20/1").code == 0
    raw = path.read_bytes()
    assert raw.startswith(committed + b"garbage\n") and raw.count(b"\n") == 8
    assert serials(path) == [1, 2, 3, 4, 5, 6, None, 7]
    assert json.loads(lines(path)[-1])["summary"].startswith("inject-fault")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and temp_files(six.state) == []


def test_a_state_file_older_than_its_journal_is_refused_not_cut(six, tmp_path):
    """A state.json put back from a backup (serial 3) under a journal at serial 6: three entries beyond the state's
    serial, where a crash leaves one. Dropping them lost committed history and handed serials 4-6 and their fault
    ids out again; the writer now refuses (exit 2, naming the journal and its serial), changing nothing."""
    path, state_file = six.state / "journal.jsonl", six.state / "state.json"
    current = state_file.read_bytes()
    doc = json.loads(current)
    backup = tmp_path / "state.json"
    for serial in (3, 4, 5):  # stand-ins for last night's state: only its serial matters to the check
        backup.write_text(json.dumps({**doc, "serial": serial}))
        state_file.write_bytes(backup.read_bytes())
        journal_before = path.read_bytes()
        r = six("inject-fault", "host:c44/1")
        if serial == 5:  # one entry beyond: a crash's, dropped as ever
            assert r.code == 0, r.err
            assert serials(path) == [1, 2, 3, 4, 5, 6]
            state_file.write_bytes(current)
            path.write_bytes(journal_before)
            continue
        assert r.code == 2 and len(r.err.strip().splitlines()) == 1, r.err
        assert (
            f"{path}: field serial" in r.err and f"beyond the state's serial {serial}" in r.err and "(value 6)" in r.err
        )
        assert path.read_bytes() == journal_before and state_file.read_bytes() == backup.read_bytes()
    state_file.write_bytes(current)  # the matching state put back: writes go on
    assert six("inject-fault", "host:c44/1").code == 0 and serials(path) == [1, 2, 3, 4, 5, 6, 7]


def test_torn_last_line_is_dropped_by_the_next_writer(six):
    path = six.state / "journal.jsonl"
    committed = path.read_bytes()
    path.write_bytes(committed + b'{"serial": 7, "summ')
    assert Store(six.state).journal_damage() == []
    assert [e["serial"] for e in six("show", "journal", "-o", "json").json] == [1, 2, 3, 4, 5, 6]
    assert six("inject-fault", "host:c20/1").code == 0
    assert path.read_bytes().startswith(committed) and serials(path) == [1, 2, 3, 4, 5, 6, 7]


def test_scan_keeps_every_committed_entry():
    raw = b'{"serial":1}\n\n{"serial":2}\n{"serial":5}\n{"serial":3}\nx\n{"serial":4}\n{"serial":4'
    found = journal.scan(raw, 3)
    assert [e.serial for e in found.entries] == [1, 2, 3]
    assert found.damaged == [2, 4, 6]  # blank, serial 5 inside the history, and a damaged line after it
    assert found.committed_end == raw.index(b"x\n") - 0 and found.wanted(raw)[found.committed_end :] == b"x\n"


# ---- 2. short writes and operating-system errors --------------------------------------------------------------


def _write_error(monkeypatch, err: int, where: str, short_first: bool = False) -> None:
    """Make os.write fail with `err` for the file whose name contains `where` (a short write first, if asked)."""
    real = os.write
    calls = {"n": 0}

    def write(fd: int, data) -> int:
        if where in os.path.basename(fd_path(fd)):
            calls["n"] += 1
            if short_first and calls["n"] == 1:
                return real(fd, bytes(data)[: len(data) // 2])
            raise OSError(err, os.strerror(err))
        return real(fd, data)

    monkeypatch.setattr(os, "write", write)


def _fsync_error(monkeypatch, err: int, where: str) -> None:
    real = os.fsync

    def fsync(fd: int) -> None:
        if where in os.path.basename(fd_path(fd)):
            raise OSError(err, os.strerror(err))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)


ERRORS = [errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EIO]


@needs_proc
@pytest.mark.parametrize("err", ERRORS, ids=errno.errorcode.get)
@pytest.mark.parametrize("where", ["journal.jsonl", ".state.json."])
def test_write_errors_are_one_line_and_change_nothing(fleet, monkeypatch, err, where):
    assert fleet("inject-fault", "host:c01/1").code == 0
    before = snapshot(fleet.state)
    _write_error(monkeypatch, err, where, short_first=True)
    r = fleet("inject-fault", "host:c02/2")
    name = "journal.jsonl" if where == "journal.jsonl" else "state.json"
    one_line_error(r, 1, f"cannot write {fleet.state / name}: {os.strerror(err)}")
    monkeypatch.undo()
    assert snapshot(fleet.state) == before and temp_files(fleet.state) == []
    assert fleet("inject-fault", "host:c02/2").code == 0  # and the next command works
    assert serials(fleet.state / "journal.jsonl") == [1, 2, 3]


@needs_proc
@pytest.mark.parametrize("where", ["journal.jsonl", ".state.json."])
def test_fsync_errors_are_one_line_and_change_nothing(fleet, monkeypatch, where):
    before = snapshot(fleet.state)
    _fsync_error(monkeypatch, errno.ENOSPC, where)
    r = fleet("inject-fault", "host:c02/2")
    one_line_error(r, 1, "No space left on device")
    monkeypatch.undo()
    assert snapshot(fleet.state) == before and temp_files(fleet.state) == []


def _open_error(monkeypatch, state: Path, err: int, names: tuple[str, ...] = ()) -> None:
    """os.open of a state file for writing fails with `err` (every state file, or only those named)."""
    real = os.open
    writing = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND

    def fake_open(path, flags, *args, **kwargs):
        p = Path(os.fsdecode(path))
        if flags & writing and p.parent == state and (not names or any(n in p.name for n in names)):
            raise OSError(err, os.strerror(err), str(path))
        return real(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", fake_open)


def test_read_only_file_system_is_one_line_exit_1(fleet, monkeypatch):
    before = snapshot(fleet.state)
    _open_error(monkeypatch, fleet.state, errno.EROFS)
    one_line_error(fleet("inject-fault", "host:c02/2"), 1, ".lock", "Read-only file system")
    one_line_error(fleet("init", "--force"), 1, "Read-only file system")
    assert fleet("status").code == 0  # reading needs no write
    monkeypatch.undo()
    assert snapshot(fleet.state) == before


@pytest.mark.parametrize("name", ["journal.jsonl", ".state.json.", ".lock.info"])
def test_a_state_file_that_cannot_be_opened_for_writing(fleet, monkeypatch, name):
    before = snapshot(fleet.state)
    _open_error(monkeypatch, fleet.state, errno.EACCES, (name,))
    r = fleet("inject-fault", "host:c02/2")
    if name == ".lock.info":  # only a note of the lock's holder: the command goes on
        assert r.code == 0, r.err
        return
    shown = "journal.jsonl" if name == "journal.jsonl" else "state.json"
    one_line_error(r, 1, f"{fleet.state / shown}: Permission denied")
    monkeypatch.undo()
    assert snapshot(fleet.state) == before and temp_files(fleet.state) == []


@pytest.mark.skipif(IS_ROOT, reason="root ignores file permissions")
def test_read_only_directory_and_read_only_journal_for_real(fleet):
    before = snapshot(fleet.state)
    os.chmod(fleet.state, 0o500)
    try:
        one_line_error(fleet("inject-fault", "host:c02/2"), 1, "Permission denied")
    finally:
        os.chmod(fleet.state, 0o700)
    assert snapshot(fleet.state) == before
    os.chmod(fleet.state / "journal.jsonl", 0o400)
    one_line_error(fleet("inject-fault", "host:c02/2"), 1, "journal.jsonl", "Permission denied")
    assert snapshot(fleet.state) == before


def _under_file_size_limit(state: str, limit: int, err_path: str) -> None:
    fd = os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(fd, 2)
    sys.stderr = os.fdopen(2, "w", closefd=False)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
    try:
        main(["--state", state, "inject-fault", "host:c02/2", "--reason", "x" * 600])
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    sys.stderr.flush()
    os._exit(code)


@pytest.mark.skipif(signal.getsignal(signal.SIGXFSZ) != signal.SIG_IGN, reason="SIGXFSZ must be ignored")
@pytest.mark.parametrize("room", ["journal", "state"])
def test_ulimit_f_short_writes_abort_the_commit(monkeypatch, cli, tmp_path, room):
    """`ulimit -f`: the journal line (or the state after it) does not fit: exit 1, nothing changed."""
    # A journal line holds the process's command line: pytest's own, as long as the list of files it was given,
    # would make the journal longer than the state and leave no limit between them; every run here is `tpufleet`.
    monkeypatch.setattr(sys, "argv", ["tpufleet"])
    fleet = cli
    assert fleet("init").code == 0
    # The sizes after the command, measured on a copy whose path is as long (the journal line holds the command,
    # and so the state's path): the limit then falls between them whatever the temporary path.
    journal_size = (fleet.state / "journal.jsonl").stat().st_size
    copy = fleet.state.with_name("s" * len(fleet.state.name))
    shutil.copytree(fleet.state, copy)
    with contextlib.suppress(SystemExit):
        main(["--state", str(copy), "inject-fault", "host:c02/2", "--reason", "x" * 600])
    journal_after = (copy / "journal.jsonl").stat().st_size
    state_after = (copy / "state.json").stat().st_size
    assert journal_size + 100 < journal_after < state_after - 100  # the reason goes into both
    limit = journal_size + 100 if room == "journal" else (journal_after + state_after) // 2
    before = snapshot(fleet.state)
    err = tmp_path / "stderr"
    proc = CTX.Process(target=_under_file_size_limit, args=(str(fleet.state), limit, str(err)))
    proc.start()
    proc.join(120)
    message = err.read_text()
    assert proc.exitcode == 1, message
    name = "journal.jsonl" if room == "journal" else "state.json"
    assert message.count("\n") == 1 and f"cannot write {fleet.state / name}: File too large" in message
    assert snapshot(fleet.state) == before and temp_files(fleet.state) == []


def test_lock_that_is_a_directory_is_exit_2(fleet):
    before = snapshot(fleet.state)
    (fleet.state / ".lock").unlink()
    (fleet.state / ".lock").mkdir()
    one_line_error(fleet("inject-fault", "host:c02/2"), 2, f"{fleet.state / '.lock'} is a directory")
    assert snapshot(fleet.state) == before


# ---- 3. two inits at once: exactly one wins -------------------------------------------------------------------


def test_two_concurrent_inits_one_wins(tmp_path, monkeypatch):
    """The second init reaches the lock while the first holds it, not yet committed: it must still be refused."""
    state = tmp_path / "s"
    second_waits = threading.Event()
    real = store_module.exclusive  # type: ignore[attr-defined]  # patched where the directory backend looks it up

    @contextmanager
    def exclusive(state_dir, timeout, command):
        if command == "second":
            second_waits.set()  # past any check made before the lock
        with real(state_dir, timeout, command) as held:
            yield held

    monkeypatch.setattr(store_module, "exclusive", exclusive)
    outcome: dict[str, object] = {}

    def second() -> None:
        try:
            with Store(state, lock_timeout=120).creation(default_fleet(), command="second") as tx:
                tx.commit(Change("init by second"))
            outcome["second"] = "committed"
        except Refused as exc:
            outcome["second"] = exc

    with Store(state).creation(default_fleet(), command="first") as tx:
        thread = threading.Thread(target=second)
        thread.start()
        assert second_waits.wait(120)
        tx.commit(Change("init by first"))
    thread.join(120)
    assert isinstance(outcome["second"], Refused) and "already exists" in str(outcome["second"])
    assert [e.summary for e in Store(state).journal()] == ["init by first"]


# ---- 5. output files keep their type --------------------------------------------------------------------------


def test_output_to_a_new_file_gets_ordinary_permissions(tmp_path):
    old = os.umask(0o022)
    try:
        write_output(tmp_path / "plan.json", b"{}\n")
        os.umask(0o027)
        write_output(tmp_path / "other.json", b"x")
    finally:
        os.umask(old)
    assert (tmp_path / "plan.json").read_bytes() == b"{}\n"
    assert stat.S_IMODE((tmp_path / "plan.json").stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "other.json").stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.json", "plan.json"]


def test_output_replaces_a_regular_file_atomically_keeping_its_mode(tmp_path):
    path = tmp_path / "plan.json"
    path.write_bytes(b"old content, longer than the new")
    os.chmod(path, 0o604)
    inode = path.stat().st_ino
    write_output(path, b"new")
    assert path.read_bytes() == b"new" and stat.S_IMODE(path.stat().st_mode) == 0o604
    assert path.stat().st_ino != inode  # a new file renamed into place: readers never see half of it
    assert [p.name for p in tmp_path.iterdir()] == ["plan.json"]


def test_output_to_dev_null_leaves_it_a_device():
    before = os.stat("/dev/null")
    check_output_path(Path("/dev/null"), "--out")
    write_output(Path("/dev/null"), b"tables" * 1000)
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev and after.st_ino == before.st_ino
    assert stat.S_IMODE(after.st_mode) == stat.S_IMODE(before.st_mode)


def test_output_to_a_fifo_writes_through(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []

    def reader() -> None:
        with open(fifo, "rb") as fh:
            got.append(fh.read())

    thread = threading.Thread(target=reader)
    thread.start()
    data = b"x" * 200_000  # more than a pipe holds: the writer really streams to the reader
    write_output(fifo, data)
    thread.join(60)
    assert got == [data] and stat.S_ISFIFO(fifo.lstat().st_mode)


def test_output_through_a_symlink_writes_its_target_and_keeps_the_link(tmp_path):
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "plan.json"
    target.write_bytes(b"old")
    os.chmod(target, 0o640)
    link = tmp_path / "link.json"
    link.symlink_to(target)
    check_output_path(link, "--out")
    write_output(link, b"new")
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_bytes() == b"new" and stat.S_IMODE(target.stat().st_mode) == 0o640
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "real" / "made.json")
    write_output(dangling, b"made")
    assert dangling.is_symlink() and (tmp_path / "real" / "made.json").read_bytes() == b"made"
    assert sorted(p.name for p in (tmp_path / "real").iterdir()) == ["made.json", "plan.json"]


def test_output_to_a_socket_is_refused_and_stays_a_socket(tmp_path):
    path = tmp_path / "sock"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))
        with pytest.raises(Refused, match="cannot write"):
            write_output(path, b"x")
    assert stat.S_ISSOCK(path.lstat().st_mode)


@pytest.mark.parametrize("option", ["--out", "--plot"])
def test_output_path_that_is_a_directory_or_has_no_directory(tmp_path, option):
    with pytest.raises(BadInput, match=f"{option} .*is a directory"):
        check_output_path(tmp_path, option)
    with pytest.raises(BadInput, match="is a directory"):
        write_output(tmp_path, b"x")
    missing = tmp_path / "no-such-dir" / "plan.json"
    with pytest.raises(BadInput, match=f"{option} .*no-such-dir.* does not exist"):
        check_output_path(missing, option)
    (tmp_path / "file").write_bytes(b"")
    with pytest.raises(BadInput, match="not a directory"):
        check_output_path(tmp_path / "file" / "plan.json", option)
    check_output_path(tmp_path / "new.json", option)  # a new file in an existing directory is fine
    assert BadInput.exit_code == 2


# ---- 6. nothing inside the state directory is followed out of it ---------------------------------------------


@pytest.fixture
def outside(tmp_path):
    path = tmp_path / "outside.txt"
    path.write_bytes(b"precious\n")
    return path


@pytest.mark.parametrize("name", [".lock.info", ".lock", "journal.jsonl"])
def test_symlinked_state_files_are_refused_and_their_targets_untouched(fleet, outside, name):
    link = fleet.state / name
    link.unlink()
    link.symlink_to(outside)
    before = snapshot(fleet.state)
    one_line_error(fleet("inject-fault", "host:c02/2"), 2, str(link), "symbolic link")
    assert outside.read_bytes() == b"precious\n" and link.is_symlink()
    assert snapshot(fleet.state) == before
    if name == "journal.jsonl":
        one_line_error(fleet("show", "journal"), 2, str(link), "symbolic link")


def test_fifo_in_place_of_the_journal_is_refused_without_hanging(fleet):
    path = fleet.state / "journal.jsonl"
    path.unlink()
    os.mkfifo(path)
    one_line_error(fleet("inject-fault", "host:c02/2"), 2, str(path), "FIFO")
    one_line_error(fleet("show", "journal"), 2, str(path), "FIFO")


def test_symlinked_state_file_is_refused(fleet, tmp_path):
    elsewhere = tmp_path / "elsewhere.json"
    path = fleet.state / "state.json"
    path.rename(elsewhere)
    path.symlink_to(elsewhere)
    one_line_error(fleet("status"), 2, str(path), "symbolic link")
    one_line_error(fleet("inject-fault", "host:c02/2"), 2, str(path))


@pytest.fixture
def routed(fleet):
    assert fleet("allocate", "s", "--shape", "4x4x4").code == 0
    assert fleet("plan-xconnect", "s", "--apply").code == 0
    return fleet


def test_symlinked_routes_directory_is_refused(routed, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (routed.state / "routes").symlink_to(elsewhere)
    before = snapshot(routed.state)
    one_line_error(routed("routes", "s"), 2, str(routed.state / "routes"), "symbolic link")
    one_line_error(routed("release", "s"), 2, "symbolic link")
    assert list(elsewhere.iterdir()) == [] and snapshot(routed.state) == before


@pytest.mark.parametrize("kind", ["symlink", "fifo", "dangling"])
def test_a_slices_tables_that_are_no_regular_file_are_refused(routed, tmp_path, kind):
    """A symlink in place of routes/s.npz was followed by the reader (and `status` blamed the slice's name); a FIFO
    hung `collective`. Each is refused (exit 2) naming the file, without opening it."""
    assert routed("routes", "s").code == 0
    tables = routed.state / "routes" / "s.npz"
    kept = tmp_path / "s.npz"
    kept.write_bytes(tables.read_bytes())
    tables.unlink()
    if kind == "fifo":
        os.mkfifo(tables)
    else:
        tables.symlink_to(kept if kind == "symlink" else tmp_path / "gone.npz")
    what = "FIFO" if kind == "fifo" else "symbolic link"
    one_line_error(routed("collective", "s", "--op", "all-reduce", "--bytes", "1MB"), 2, str(tables), what)
    assert routed("status").code == 0  # (it reads no tables; it blamed the slice's name)
    tables.unlink()
    tables.write_bytes(kept.read_bytes())
    assert routed("collective", "s", "--op", "all-reduce", "--bytes", "1MB").code == 0


@pytest.mark.parametrize("dangling", [False, True])
def test_a_symlink_at_a_slices_tables_says_the_way_forward(routed, tmp_path, dangling):
    """With a symlink in place of routes/s.npz, `explain s` said next `tpufleet routes s`, which refused with "state
    files are never followed out of the state directory" and no way forward (as `collective` did). Both now name
    the link to remove, and `explain` gives that step first; the link is neither followed nor removed."""
    assert routed("routes", "s").code == 0
    tables, outside = routed.state / "routes" / "s.npz", tmp_path / "outside.npz"
    outside.write_bytes(tables.read_bytes())
    tables.unlink()
    tables.symlink_to(tmp_path / "gone.npz" if dangling else outside)
    before = snapshot(routed.state)
    r = routed("explain", "s", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["routes"] == "missing"
    remove = r.json["next"][-2]
    assert r.json["next"][-1] == "tpufleet routes s" and shlex.split(remove) == ["rm", "--", str(tables)]
    for args in (("routes", "s"), ("collective", "s", "--op", "all-reduce", "--bytes", "1MB")):
        one_line_error(routed(*args), 2, f"{tables} is a symbolic link", f"remove it (rm -- {tables})", "routes s`")
    assert tables.is_symlink() and snapshot(routed.state) == before
    assert dangling or outside.read_bytes()[:2] == b"PK"
    subprocess.run(shlex.split(remove), check=True)  # `next` holds commands: run as printed, it removes the link
    assert not tables.is_symlink() and not tables.exists()
    assert routed("routes", "s").code == 0 and routed("explain", "s", "-o", "json").json["routes"] == "fresh"


def test_routes_that_is_not_a_directory_is_refused(routed):
    (routed.state / "routes").write_bytes(b"")
    one_line_error(routed("routes", "s"), 2, "routes is a regular file, not a directory")


def test_routes_still_stored_in_a_real_directory(routed):
    r = routed("routes", "s", "-o", "json")
    assert r.code == 0, r.err
    assert (routed.state / "routes" / "s.npz").is_file()
    assert stat.S_IMODE((routed.state / "routes").stat().st_mode) == 0o700


@pytest.mark.parametrize("mode, who", [(0o770, "group"), (0o707, "others"), (0o777, "group and others")])
def test_state_directory_writable_by_others_is_refused(fleet, mode, who):
    before = snapshot(fleet.state)
    os.chmod(fleet.state, mode)
    try:
        r = fleet("inject-fault", "host:c02/2")
    finally:
        os.chmod(fleet.state, 0o700)
    one_line_error(r, 2, str(fleet.state), f"writable by {who}", f"{mode:04o}")
    assert snapshot(fleet.state) == before


def test_state_directory_of_another_user_is_refused(fleet, monkeypatch):
    before = snapshot(fleet.state)
    uid = os.geteuid()
    monkeypatch.setattr(os, "geteuid", lambda: uid + 4242)
    one_line_error(fleet("inject-fault", "host:c02/2"), 2, str(fleet.state), f"owned by uid {uid}")
    one_line_error(fleet("init", "--force"), 2, "not by you")
    monkeypatch.undo()
    assert snapshot(fleet.state) == before


def test_empty_state_option_or_variable_is_bad_input(monkeypatch):
    with pytest.raises(BadInput, match="--state"):
        resolve_state_dir("")
    monkeypatch.setenv("TPUFLEET_STATE", "")
    with pytest.raises(BadInput, match="TPUFLEET_STATE"):
        resolve_state_dir(None)
    assert resolve_state_dir("x") == Path("x")
    monkeypatch.delenv("TPUFLEET_STATE")
    assert resolve_state_dir(None) == Path(".tpufleet")


def test_empty_state_variable_through_the_cli(cli, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TPUFLEET_STATE", "")
    one_line_error(cli("init", state=False), 2, "TPUFLEET_STATE")
    assert sorted(tmp_path.iterdir()) == []


def test_empty_state_option_through_the_cli(cli, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    r = cli("--state", "", "init", state=False)
    assert sorted(tmp_path.iterdir()) == []
    one_line_error(r, 2, "--state")


# ---- 14. state validation: references, uniqueness, nothing held twice -----------------------------------------


@pytest.fixture
def busy(fleet):
    """Whole-cube slice a (c00-c07, wired), sub-cube slices b and c sharing c08 (machines 0 and 4,8), fault f1."""
    for args in (
        ["allocate", "a", "--shape", "8x8x8"],
        ["allocate", "b", "--shape", "2x2x1"],
        ["allocate", "c", "--shape", "2x2x2"],
        ["plan-xconnect", "a", "--apply"],
        ["inject-fault", "host:c40/1"],
    ):
        r = fleet(*args)
        assert r.code == 0, (args, r.err)
    doc = json.loads((fleet.state / "state.json").read_bytes())
    assert doc["slices"]["b"]["cubes"] == doc["slices"]["c"]["cubes"] == ["c08"]
    assert doc["slices"]["b"]["machines"] == [0] and doc["slices"]["c"]["machines"] == [4, 8]
    assert doc["ocs"]["pod0/x/0"][0] == [0, 4] and doc["next_fault"] == 2
    return fleet


def _fault(fid: str, target: str) -> dict:
    return {
        "id": fid,
        "target": target,
        "planned": False,
        "reason": "",
        "opened": "2026-01-06T10:30:00Z",
        "cleared": None,
    }


def _add_fault(doc, fid, target):
    doc["faults"].append(_fault(fid, target))
    doc["next_fault"] = max(doc["next_fault"], int(fid[1:]) + 1)


def _copy_slice(doc, src, name, **changes):
    doc["slices"][name] = {**doc["slices"][src], **changes}


EDITS = {
    "fault on a missing cube": (lambda d: _add_fault(d, "f2", "host:c99/1"), "faults.1.target", "c99"),
    "fault on a missing pod": (lambda d: _add_fault(d, "f2", "ocs:pod7/x/1"), "faults.1.target", "pod7"),
    "fault id twice": (lambda d: _add_fault(d, "f1", "host:c41/1"), "faults.1.id", "'f1'"),
    "fault counter rewound": (lambda d: d.update(next_fault=1), "next_fault", "(value 1)"),
    "fault counter at the last id": (
        lambda d: (_add_fault(d, "f7", "host:c41/1"), d.update(next_fault=7)),
        "next_fault",
        "f7",
    ),
    "whole cubes held twice": (lambda d: _copy_slice(d, "a", "a2"), "slices.a2.cubes.0", "slice a"),
    "machines held twice": (
        lambda d: _copy_slice(d, "b", "b2", machines=[8]),
        "slices.b2.machines",
        "machine(s) 8 of cube c08 are also held by slice c",
    ),
    "whole cube over a sub-cube slice": (
        lambda d: _copy_slice(d, "a", "d", shape="4x4x4", cubes=["c08"], coords={"c08": [0, 0, 0]}),
        "slices.d.cubes.0",
        "slice b",
    ),
    "north port twice": (lambda d: d["ocs"]["pod0/x/0"].append([0, 60]), "ocs.pod0/x/0.8", "north port 0"),
    "south port twice": (lambda d: d["ocs"]["pod0/x/0"].append([60, 4]), "ocs.pod0/x/0.8", "south port 4"),
    "port beyond the cabled ones": (lambda d: d["ocs"]["pod0/x/0"].append([64, 60]), "ocs.pod0/x/0.8", "[64, 60]"),
    "negative port": (lambda d: d["ocs"]["pod0/x/0"].append([-1, 60]), "ocs.pod0/x/0.8", "[-1, 60]"),
    "boolean port": (lambda d: d["ocs"]["pod0/x/0"].append([True, 60]), "ocs.pod0/x/0.8", "[True, 60]"),
    "fractional port": (lambda d: d["ocs"]["pod0/x/0"].append([1.5, 60]), "ocs.pod0/x/0.8", "[1.5, 60]"),
    "short pair": (lambda d: d["ocs"]["pod0/x/0"].append([60]), "ocs.pod0/x/0.8", "[60]"),
    "pair not a list": (lambda d: d["ocs"]["pod0/x/0"].append("60-61"), "ocs.pod0/x/0.8", "'60-61'"),
    "OCS of a missing pod": (lambda d: d["ocs"].update({"pod3/x/0": [[0, 1]]}), "ocs.pod3/x/0", "no such OCS"),
    "machine listed twice": (
        lambda d: d["slices"]["c"].update(machines=[4, 4]),
        "slices.c.machines",
        "[4, 4]",
    ),
    # each of these loaded, and `explain`, `reschedule` or the next write then failed with an internal error
    "degraded without its reroute": (
        lambda d: d["slices"]["a"].update(state="degraded"),
        "slices.a.reroute",
        "carries its reroute",
    ),
    "proposal on a missing pod": (
        lambda d: d["slices"]["a"].update(state="evicted", proposal={**_layout(d, "a"), "pod": "pod9"}),
        "slices.a.proposal.pod",
        "pod9",
    ),
    "proposal on missing cubes": (
        lambda d: d["slices"]["a"].update(
            state="evicted", proposal={"pod": "pod0", "cubes": ["c77"], "coords": {"c77": [0, 0, 0]}}
        ),
        "slices.a.proposal.cubes.0",
        "c77",
    ),
    "proposal of another shape": (
        lambda d: d["slices"]["a"].update(
            state="evicted", proposal={"pod": "pod0", "cubes": ["c50"], "coords": {"c50": [0, 0, 0]}}
        ),
        "slices.a.proposal.cubes",
        "holds 8 cube(s)",
    ),
    "an OCS written another way": (
        lambda d: d["ocs"].update({"pod0/x/00": [[5, 5]]}),
        "ocs.pod0/x/00",
        "must be written pod0/x/0",
    ),
}


def _layout(doc, name):
    return {k: doc["slices"][name][k] for k in ("pod", "cubes", "coords")}


@pytest.mark.parametrize("edit", list(EDITS))
def test_inconsistent_state_is_exit_2_naming_it(busy, edit):
    change, field, value = EDITS[edit]
    path = busy.state / "state.json"
    doc = json.loads(path.read_bytes())
    change(doc)
    path.write_text(json.dumps(doc))
    before = snapshot(busy.state)
    for args in (["status"], ["inject-fault", "host:c50/1"]):
        one_line_error(busy(*args), 2, str(path), f"field {field}", value)
    assert snapshot(busy.state) == before


def test_sound_busy_state_loads(busy):
    assert busy("status").code == 0
    assert busy("inject-fault", "host:c50/1").code == 0


def test_torn_last_line_the_state_committed_is_kept_and_ended(six):
    """A last line without its newline while the good lines stop short of the state's serial was committed (the
    write protocol fsyncs a line before its state): it is history, never cut off."""
    path = six.state / "journal.jsonl"
    committed = path.read_bytes()
    assert six("inject-fault", "host:c20/1").code == 0
    last = path.read_bytes()[len(committed) :]
    path.write_bytes(committed + last[:-1])  # serial 7's newline lost
    assert [e["serial"] for e in six("show", "journal", "-o", "json").json] == [1, 2, 3, 4, 5, 6, 7]
    assert Store(six.state).journal_damage() == []
    assert six("clear-fault", "host:c20/1").code == 0
    assert path.read_bytes().startswith(committed + last) and serials(path) == [1, 2, 3, 4, 5, 6, 7, 8]

    path.write_bytes(committed + last[: len(last) // 2])  # serial 7's line cut in half, and serial 8's gone
    stored = path.read_bytes()
    assert Store(six.state).journal_damage() == [7]  # reported, not skipped without a word
    assert six("inject-fault", "host:c21/1").code == 0
    raw = path.read_bytes()
    assert raw.startswith(stored + b"\n") and serials(path) == [1, 2, 3, 4, 5, 6, None, 9]


def test_scan_reads_a_committed_torn_line():
    raw = b'{"serial":1}\n{"serial":2}'
    found = journal.scan(raw, 2)
    assert [e.serial for e in found.entries] == [1, 2] and found.damaged == []
    assert found.wanted(raw) == raw + b"\n"
    assert journal.scan(raw, 1).wanted(raw) == b'{"serial":1}\n'  # beyond the state's serial: a torn write
    assert journal.scan(b'{"serial":1}\n{"ser', 2).wanted(b'{"serial":1}\n{"ser') == b'{"serial":1}\n{"ser\n'
    assert journal.scan(b'{"ser', 1).damaged == []  # no good line at all (an emptied journal): nothing committed
    assert journal.scan(b'{"ser', 1).wanted(b'{"ser') == b""


def test_a_symlink_in_place_of_a_slices_tables_is_missing_and_never_written_through(routed, tmp_path):
    """A symlink in place of routes/s.npz (even to the slice's own tables) is refused by `collective`, yet `status`
    showed the tables fresh: they are missing; `routes` refuses it too, writing nothing through it, until removed."""
    assert routed("routes", "s").code == 0
    tables = routed.state / "routes" / "s.npz"
    kept = tmp_path / "s.npz"
    kept.write_bytes(tables.read_bytes())
    tables.unlink()
    tables.symlink_to(kept)
    assert routed("status", "-o", "json").json["missing_routes"] == ["s"]
    assert routed("show", "slices", "-o", "json").json[0]["routes"] == "missing"
    before = kept.read_bytes()
    one_line_error(routed("routes", "s"), 2, str(tables), "symbolic link")
    assert tables.is_symlink() and kept.read_bytes() == before
    tables.unlink()
    assert routed("routes", "s").code == 0
    assert routed("status", "-o", "json").json["missing_routes"] == []
