"""What an operator meets at 3 a.m. outside the fleet: an unmounted volume behind the state's symbolic link, a `~`
of no user, a HOME that is not theirs, a missing database driver, an interrupt after the commit, a reader of the
output that went away. Each is one line and a documented exit code, never an internal error (70)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import one_line


def test_init_on_a_symbolic_link_to_nothing_names_the_link(cli, tmp_path) -> None:
    link = tmp_path / "fleet"
    link.symlink_to(tmp_path / "unmounted" / "state")
    for where in (link, link / "sub"):
        r = cli("--state", str(where), "init", state=False)
        assert one_line(r, 1) == (
            f"tpufleet: error: cannot create state directory {where}: {link} is a symbolic link to "
            f"{tmp_path / 'unmounted' / 'state'}, which does not exist"
        )
    assert not (tmp_path / "unmounted").exists()
    named = f"{link} is a symbolic link to {tmp_path / 'unmounted' / 'state'}, which does not exist"
    assert one_line(cli("--state", str(link), "status", state=False), 1) == (
        f"tpufleet: error: no fleet state in {link}: {named}"  # not a fleet to `init` there
    )
    assert one_line(cli("--state", str(link), "allocate", "a", "--shape", "2x2x1", state=False), 1).endswith(named)


@pytest.mark.parametrize(
    ("args", "env", "named"),
    [
        (["--state", "~nosuchuser-tpufleet/x", "status"], {}, "bad option --state '~nosuchuser-tpufleet/x'"),
        (
            ["status"],
            {"TPUFLEET_STATE": "~nosuchuser-tpufleet"},
            "bad environment variable TPUFLEET_STATE '~nosuchuser-tpufleet'",
        ),
        (["state", "pull", "postgresql://db/f", "~nosuchuser-tpufleet/s"], {}, "bad argument DIR"),
        (["--state", "s", "status"], {"TPUFLEET_CONFIG": "~nosuchuser-tpufleet/c.toml"}, "TPUFLEET_CONFIG"),
    ],
)
def test_a_tilde_of_no_user_is_bad_input_naming_where_it_came_from(cli, monkeypatch, args, env, named) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    line = one_line(cli(*args, state=False), 2)
    assert named in line and "names no user with a home directory" in line


def test_a_config_file_naming_a_tilde_of_no_user_is_bad_input(cli, monkeypatch, tmp_path) -> None:
    config = tmp_path / "c.toml"
    config.write_text('state = "~nosuchuser-tpufleet/x"\n')
    monkeypatch.setenv("TPUFLEET_CONFIG", str(config))
    assert f"bad state in {config}" in one_line(cli("status", state=False), 2)


def test_no_home_directory_means_no_config_file_read(fleet, monkeypatch) -> None:
    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.delenv("TPUFLEET_CONFIG", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    r = fleet("status", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["cubes"]["free"] == 64


def test_a_config_file_the_user_may_not_look_at_is_skipped_unless_named(fleet, monkeypatch, tmp_path) -> None:
    """HOME left at another user's directory (`su` without `-`): its config file cannot even be looked at."""
    unreadable = tmp_path / "home" / "tpufleet" / "config.toml"
    real_exists = Path.exists

    def exists(self: Path, *args: object, **kwargs: object) -> bool:
        if self == unreadable:
            raise PermissionError(13, "Permission denied", str(self))
        return real_exists(self)

    monkeypatch.setattr(Path, "exists", exists)
    monkeypatch.delenv("TPUFLEET_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home"))
    assert fleet("status").code == 0
    monkeypatch.setenv("TPUFLEET_CONFIG", str(unreadable))
    assert (
        one_line(fleet("status"), 2)
        == f"tpufleet: error: config file {unreadable} (from TPUFLEET_CONFIG): Permission denied"
    )


@pytest.mark.parametrize("args", [["init"], ["allocate", "a", "--shape", "2x2x1"], ["status"], ["state", "migrate"]])
def test_a_database_state_without_the_driver_says_how_to_install_it(cli, monkeypatch, args) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # as where the postgres extra is not installed
    r = cli("--state", "postgresql://u@127.0.0.1:1/db", *args, state=False)
    assert one_line(r, 1) == (
        "tpufleet: error: the state postgresql://u@127.0.0.1:1/db is a PostgreSQL database: install the driver "
        "with pip install 'tpufleet[postgres]'"
    )


@pytest.mark.parametrize(
    ("module", "point"),
    [("files", "atomic_write.before_dir_fsync"), ("filebackend", "transaction.before_side_files")],
)
def test_an_interrupt_after_the_commit_says_the_change_is_committed(fleet, monkeypatch, module, point) -> None:
    """From the rename on (the directory's fsync, slow on a network disk, comes after it), the change stands."""
    import importlib

    def interrupt_after_the_commit(name: str) -> None:
        if name == point:
            raise KeyboardInterrupt

    # the named point, as a Ctrl-C there
    monkeypatch.setattr(importlib.import_module(f"tpufleet.state.{module}"), "reached", interrupt_after_the_commit)
    r = fleet("allocate", "a", "--shape", "2x2x1")
    assert r.code == 130
    assert r.err.strip().splitlines()[-1] == (
        "tpufleet: interrupted after its change was committed as serial 2 (`tpufleet history` shows it)"
    )
    monkeypatch.undo()
    assert [s["name"] for s in fleet("show", "slices", "-o", "json").json] == ["a"]


def test_an_interrupt_before_the_commit_says_nothing_was_committed(fleet, monkeypatch) -> None:
    from tpufleet.cli import INTERRUPTED
    from tpufleet.state import files

    def interrupt_before_the_rename(name: str) -> None:
        if name == "atomic_write.before_rename":
            raise KeyboardInterrupt

    monkeypatch.setattr(files, "reached", interrupt_before_the_rename)
    r = fleet("allocate", "a", "--shape", "2x2x1")
    assert (r.code, r.err.strip().splitlines()[-1]) == (130, INTERRUPTED)
    monkeypatch.undo()
    assert fleet("show", "slices", "-o", "json").json == []


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["status"], 0),
        (["allocate", "w", "--shape", "2x2x1", "-o", "json"], 0),
        (["plan-xconnect", "s", "--detailed-exitcode"], 4),  # the command's own code, not Click's 1 nor a 0
    ],
)
def test_a_reader_gone_before_the_output_leaves_the_commands_own_exit_code(fleet, args, code) -> None:
    assert fleet("allocate", "s", "--shape", "4x4x4").code == 0
    read, write = os.pipe()
    os.close(read)  # the reader is gone before anything is written: every write meets EPIPE
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "tpufleet", "--state", str(fleet.state), *args],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
    finally:
        os.close(write)
    assert (proc.returncode, proc.stderr) == (code, "")
    if args[0] == "allocate":
        assert [s["name"] for s in fleet("show", "slices", "-o", "json").json] == ["s", "w"]


def test_an_interrupt_just_after_the_rename_keeps_the_journal_line_and_the_tables(fleet, monkeypatch) -> None:
    """The rename of the state file is the commit: a Ctrl-C landing just after it must not take the journal line back
    out (a gap in the serials for good) nor drop the tables written for that serial."""
    from tpufleet.state import filebackend

    assert fleet("allocate", "s", "--shape", "4x4x4").code == 0
    assert fleet("plan-xconnect", "s", "--apply").code == 0
    real_install = filebackend.install  # type: ignore[attr-defined]  # the name the commit calls, imported there

    def renamed_then_interrupted(tmp: str, path: Path) -> None:
        real_install(tmp, path)
        raise KeyboardInterrupt

    monkeypatch.setattr(filebackend, "install", renamed_then_interrupted)
    r = fleet("routes", "s", "-o", "json")
    monkeypatch.undo()
    assert (r.code, r.json["stored"]) == (0, True), r.err
    assert fleet("allocate", "t", "--shape", "2x2x1").code == 0  # a later commit, numbered after it
    serials = [e["serial"] for e in fleet("history", "-o", "json").json]
    assert sorted(serials) == list(range(1, max(serials) + 1))
    assert fleet("status", "-o", "json").json["stale_routes"] == []
    assert (fleet.state / "routes" / "s.npz").is_file()


def test_an_output_file_written_again_removes_a_killed_writers_temp_file(fleet, tmp_path) -> None:
    """`timeout 10 tpufleet metrics --out m.prom` from cron, killed before its rename, left its temp file beside
    the output for good; the next write removes it once an hour old (a live writer's stays, and a recent one, which
    may be another machine's on a shared disk)."""
    finished = subprocess.Popen([sys.executable, "-c", "pass"])
    finished.wait()
    out = tmp_path / "m.prom"
    dead = tmp_path / f".m.prom.{finished.pid}.0badc0de.tmp"
    live = tmp_path / f".m.prom.{os.getpid()}.0badc0de.tmp"
    recent = tmp_path / f".m.prom.{finished.pid}.0badcafe.tmp"  # maybe another machine's writer, still writing
    for temp in (dead, live, recent):
        temp.write_bytes(b"# half a metrics file")
    for temp in (dead, live):
        os.utime(temp, (time.time() - 7200, time.time() - 7200))
    assert fleet("metrics", "--out", out).code == 0
    assert out.read_text().startswith("# HELP")
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".m.prom")) == sorted(
        [live.name, recent.name]
    )


def test_state_files_are_readable_by_their_owner_whatever_the_umask(tmp_path) -> None:
    """Under `umask 0277` the journal and the lock's note were made 0400 or 0000: the owner's next `history`
    could not read them."""
    state = tmp_path / "s"
    umask_then_init = "import os, sys; os.umask(0o277); from tpufleet.cli import main; main(sys.argv[1:])"
    proc = subprocess.run(
        [sys.executable, "-c", umask_then_init, "--state", str(state), "init"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    modes = {p.name: p.stat().st_mode & 0o777 for p in state.iterdir() if p.is_file()}
    assert modes == dict.fromkeys(["state.json", "journal.jsonl", ".lock", ".lock.info"], 0o600)


def test_bad_input_is_exit_2_even_when_its_message_cannot_be_written(fleet) -> None:
    """A script reads the exit code: `2>/dev/full` loses the message, never the code (it was 1)."""
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "tpufleet", "--state", str(fleet.state), "allocate", "b", "--shape", "9x9x9"],
            stdout=subprocess.PIPE,
            stderr=full,
            check=False,
        )
    assert (proc.returncode, proc.stdout) == (2, b"")
