"""Concurrency, crash safety and file hygiene of the state directory.

Fleets are made and changed through the real CLI where one command per test will do; the stress tests drive
`Store.transaction` directly (a CLI command costs ~70 ms, too slow for 400 of them). Assertions read the files
(`state.json`, `journal.jsonl`): their format is the contract, whatever objects the code builds from them.
"""

import json
import multiprocessing
import os
import shlex
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tpufleet.cli import main
from tpufleet.errors import BadInput, LockTimeout
from tpufleet.fleetstate import Change
from tpufleet.ids import parse_target
from tpufleet.state import Store, crashpoints
from tpufleet.state.files import safe_child
from tpufleet.state.lock import exclusive
from tpufleet.state.store import Transaction
from tpufleet.state.temps import remove_stale_temps

CTX = multiprocessing.get_context("fork")


def tpufleet(*args: object) -> int:
    """Run the real entry point in this process; its exit code."""
    try:
        main([str(a) for a in args])
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    return 0


def make_state(path: Path) -> Store:
    assert tpufleet("--state", path, "init") == 0
    return Store(path, lock_timeout=60)


def state_doc(store: Store) -> dict:
    """The committed state as the file holds it, after `Store.load` has read and validated it."""
    store.load()
    return json.loads(store.state_path.read_bytes())


def journal_lines(store: Store) -> list[bytes]:
    """Every line of the raw journal, committed or not (a torn last line included)."""
    return store.journal_path.read_bytes().splitlines()


def temp_files(store: Store) -> list[str]:
    return sorted(p.name for p in store.dir.iterdir() if p.name.endswith(".tmp"))


def drain_a_link(store: Store, tag: str) -> None:
    """A real mutation: a planned drain of an optical link, numbered from the shared fault counter."""
    with store.transaction(command=f"test {tag}") as tx:
        mark_drain(tx, tag)


def mark_drain(tx: Transaction, tag: str) -> None:
    """Open the drain in the transaction and mark it to be committed."""
    fid = tx.state.next_fault
    target = f"link:c{fid // 16 % 64:02d}/x/{fid % 16}/out"  # a different link for each of the first 1024
    fault = tx.state.open_fault(parse_target(target), planned=True, reason=tag, now="2026-01-01T00:00:00Z")
    tx.commit(Change(f"drain {fault.id} by {tag}"))


def _worker(path: str, worker: int, count: int) -> None:
    store = Store(Path(path), lock_timeout=120)
    for i in range(count):
        drain_a_link(store, f"w{worker}.{i}")


@pytest.mark.slow
def test_eight_processes_fifty_mutations_each_lose_nothing(tmp_path):
    store = make_state(tmp_path / "s")
    procs = [CTX.Process(target=_worker, args=(str(store.dir), w, 50)) for w in range(8)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(300)
        assert p.exitcode == 0
    doc = state_doc(store)
    assert doc["serial"] == 401  # init + 400
    assert [e.serial for e in store.journal()] == list(range(1, 402))
    assert [json.loads(line)["serial"] for line in journal_lines(store)] == list(range(1, 402))
    ids = [f["id"] for f in doc["faults"]]
    assert sorted(ids) == sorted(f"f{n}" for n in range(1, 401))
    assert sorted(f["reason"] for f in doc["faults"]) == sorted(f"w{w}.{i}" for w in range(8) for i in range(50))


# Where a SIGKILL lands in a commit (journal line first, then the state file), and what it must leave behind:
# (the serial moved by, raw journal lines beyond the state serial, temp files left beside state.json).
CRASHES = {
    "journal.before_write": (0, 0, 0),
    "journal.before_fsync": (0, 1, 0),  # the line is in the page cache: a killed process does not lose it
    "journal.after_fsync": (0, 1, 0),
    "atomic_write.before_fsync": (0, 1, 1),
    "atomic_write.before_rename": (0, 1, 1),
    "atomic_write.before_dir_fsync": (1, 0, 0),  # renamed: committed (only a power cut could still lose it)
    "transaction.before_side_files": (1, 0, 0),  # committed; the files beside the state not yet swapped
}


def test_every_crash_point_is_tested():
    assert list(CRASHES) == list(crashpoints.POINTS)


def _inject_fault_crashing_at(state: str, point: str) -> None:
    os.environ[crashpoints.ENV] = point
    sys.exit(tpufleet("--state", state, "inject-fault", "host:c01/1", "--reason", "crash test"))


@pytest.mark.parametrize("point", list(CRASHES))
def test_sigkill_at_each_step_of_a_commit(tmp_path, point):
    moved, uncommitted, temps = CRASHES[point]
    store = make_state(tmp_path / "s")
    drain_a_link(store, "earlier")
    before, before_state, before_journal = (
        state_doc(store),
        store.state_path.read_bytes(),
        store.journal_path.read_bytes(),
    )
    serial = before["serial"] + moved

    proc = CTX.Process(target=_inject_fault_crashing_at, args=(str(store.dir), point))
    proc.start()
    proc.join(120)
    assert proc.exitcode == -signal.SIGKILL  # killed exactly there: not finished, not failed before it

    doc = state_doc(store)  # always loads
    assert doc["serial"] == serial
    opened = [f for f in doc["faults"] if f["target"] == "host:c01/1"]
    if moved:
        assert len(opened) == 1 and opened[0]["cleared"] is None
    else:
        assert store.state_path.read_bytes() == before_state and not opened
    assert [e.serial for e in store.journal()] == list(range(1, serial + 1))  # committed: ends at the state
    raw = store.journal_path.read_bytes()
    assert raw.startswith(before_journal) and raw.endswith(b"\n")  # appended to, whole lines only
    lines = journal_lines(store)
    assert len(lines) == serial + uncommitted
    assert json.loads(lines[-1])["serial"] == serial + uncommitted
    left = temp_files(store)
    assert len(left) == temps
    for name in left:  # the new state, whole (written and flushed), never renamed into place
        assert json.loads((store.dir / name).read_bytes())["serial"] == before["serial"] + 1

    # the next writer drops the uncommitted journal line and the dead writer's temp file
    assert tpufleet("--state", store.dir, "inject-fault", "host:c02/2") == 0
    doc = state_doc(store)
    lines = journal_lines(store)
    assert doc["serial"] == serial + 1 == len(lines) == json.loads(lines[-1])["serial"]
    assert [json.loads(line)["serial"] for line in lines] == list(range(1, serial + 2))
    assert temp_files(store) == []


def _reach(name: str, times: int, spec: str) -> None:
    os.environ[crashpoints.ENV] = spec
    for _ in range(times):
        crashpoints.reached(name)


@pytest.mark.parametrize(
    "spec, times, killed",
    [
        ("journal.after_fsync", 1, True),
        ("journal.after_fsync:2", 1, False),
        ("journal.after_fsync:2", 2, True),
        ("journal.before_fsync", 3, False),
        ("", 3, False),
    ],
)
def test_crash_point_fires_only_where_and_when_asked(spec, times, killed):
    proc = CTX.Process(target=_reach, args=("journal.after_fsync", times, spec))
    proc.start()
    proc.join(60)
    assert proc.exitcode == (-signal.SIGKILL if killed else 0)


def _nothing() -> None:
    pass


def test_only_temp_files_of_dead_writers_are_removed(tmp_path):
    target = tmp_path / "state.json"
    dead = CTX.Process(target=_nothing)
    dead.start()
    dead.join(60)
    names = {
        "dead": f".state.json.{dead.pid}.abc_123.tmp",  # its writer is gone: removed
        "live": f".state.json.{os.getpid()}.abc_123.tmp",  # this process: still writing it
        "other": f".state.json.7.npz.{dead.pid}.abc_123.tmp",  # another file's temp
        "old": ".state.json.abc_123.tmp",  # no pid: not ours to judge
    }
    for name in names.values():
        (tmp_path / name).write_bytes(b"{}")
    assert remove_stale_temps(target) == [tmp_path / names["dead"]]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(n for k, n in names.items() if k != "dead")


def test_lock_timeout_names_the_holder(tmp_path):
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
    with pytest.raises(RuntimeError), store.transaction() as tx:
        mark_drain(tx, "half done")
        raise RuntimeError("boom")
    assert (store.state_path.read_bytes(), store.journal_path.read_bytes()) == before
    assert temp_files(store) == []


def test_files_are_private(tmp_path):
    store = make_state(tmp_path / "s")
    assert stat.S_IMODE(store.dir.stat().st_mode) == 0o700
    for p in store.dir.iterdir():
        assert stat.S_IMODE(p.stat().st_mode) == 0o600, p


@pytest.mark.parametrize(
    "name", ["../evil", "a/b", "..", ".hidden", "", "x" * 65, "/etc/passwd", "a\nb", "a\n", "a\u0663"]
)
def test_names_cannot_escape_the_state_directory(tmp_path, name):
    with pytest.raises(BadInput):
        safe_child(tmp_path, name, ".npz")


def test_yaml_is_only_safe_loaded():
    root = Path(__file__).resolve().parents[1] / "tpufleet"
    for path in root.rglob("*.py"):
        text = path.read_text()
        for bad in ("yaml.load(", "yaml.unsafe_load", "yaml.full_load", "Loader=yaml.Loader", "yaml.Loader"):
            assert bad not in text, f"{path}: {bad}"


@pytest.mark.slow
def test_concurrent_runbooks_through_the_cli(tmp_path):
    """Four shells each inject five faults at once: every one lands, each with its own serial and journal line."""
    state = tmp_path / "s"
    cli = [sys.executable, "-m", "tpufleet", "--state", str(state)]
    subprocess.run([*cli, "init"], check=True, capture_output=True)
    procs = []
    for w in range(4):
        cmds = " && ".join(
            f"{shlex.join(cli)} inject-fault host:c{w * 10 + i:02d}/{i} --reason w{w} >/dev/null" for i in range(5)
        )
        procs.append(subprocess.Popen(["bash", "-c", cmds]))
    assert [p.wait(timeout=300) for p in procs] == [0, 0, 0, 0]
    store = Store(state)
    doc = state_doc(store)
    assert doc["serial"] == 21
    assert sorted(f["target"] for f in doc["faults"]) == sorted(
        f"host:c{w * 10 + i:02d}/{i}" for w in range(4) for i in range(5)
    )
    assert [e.serial for e in store.journal()] == list(range(1, 22))


def test_cli_lock_timeout_is_exit_3(tmp_path, capsys):
    store = make_state(tmp_path / "s")
    capsys.readouterr()
    with exclusive(store.dir, 1, "tpufleet maintenance-window"):
        code = tpufleet("--state", store.dir, "--lock-timeout", "0.2", "inject-fault", "host:c01/1")
    assert code == 3
    err = capsys.readouterr().err
    assert "maintenance-window" in err and err.count("\n") == 1


def _state_doc(tmp_path: Path) -> tuple[Path, dict]:
    assert tpufleet("--state", tmp_path / "s", "init") == 0
    path = tmp_path / "s" / "state.json"
    return path, json.loads(path.read_text())


def test_kubernetes_names_round_trip_and_old_states_have_none(tmp_path):
    from tpufleet.ids import HostId

    path, doc = _state_doc(tmp_path)
    assert "k8s" not in doc  # a state never imported keeps the file's old shape
    with Store(tmp_path / "s").transaction() as tx:
        tx.state.name_in_k8s(tx.state.k8s_names_after({"blk": "pod0"}, {"p1": "c03"}, {"node-a": HostId("c03", 7)}))
        tx.commit(Change("names"))
    names = Store(tmp_path / "s").load().k8s
    assert (names.blocks, names.partitions, names.nodes) == (
        {"blk": "pod0"},
        {"p1": "c03"},
        {"node-a": HostId("c03", 7)},
    )
    assert json.loads(path.read_text())["k8s"]["nodes"] == {"node-a": "host:c03/7"}


@pytest.mark.parametrize(
    ("names", "field"),
    [
        ({"blocks": {"b": "pod9"}}, "k8s.blocks.b"),
        ({"partitions": {"p": "c99"}}, "k8s.partitions.p"),
        ({"partitions": {"p": "c01", "q": "c01"}}, "k8s.partitions.q"),
        ({"nodes": {"n": "host:c01/16"}}, "k8s.nodes.n"),
        ({"nodes": {"n": "host:c01/2", "m": "host:c01/2"}}, "k8s.nodes.m"),
        ({"nodes": {"Bad_Name": "host:c01/2"}}, "k8s.nodes"),
        ({"sub_blocks": {"c99": "sb-0000-0000"}}, "k8s.sub_blocks.c99"),
    ],
)
def test_bad_kubernetes_names_in_a_state_file_are_exit_2(tmp_path, capsys, names, field):
    path, doc = _state_doc(tmp_path)
    doc["k8s"] = names
    path.write_text(json.dumps(doc))
    assert tpufleet("--state", tmp_path / "s", "status") == 2
    assert f"field {field}" in capsys.readouterr().err


def test_two_names_for_one_machine_are_refused(tmp_path):
    from tpufleet.errors import Refused
    from tpufleet.gkerecords import K8sNames
    from tpufleet.ids import HostId

    _state_doc(tmp_path)
    with (
        pytest.raises(Refused, match="two Kubernetes names for one machine"),
        Store(tmp_path / "s").transaction() as tx,
    ):
        tx.state.name_in_k8s(K8sNames(nodes={"a": HostId("c01", 1), "b": HostId("c01", 1)}))


def _with_job(tmp_path: Path, *extra: str) -> tuple[Path, dict]:
    """A state holding job `j` (two 4x4x4 slices j-0 and j-1), as the file has it."""
    path, _ = _state_doc(tmp_path)
    assert tpufleet("--state", tmp_path / "s", "allocate", "j", "--shape", "4x4x4", "--slices", "2", *extra) == 0
    return path, json.loads(path.read_text())


def test_jobs_round_trip_and_old_states_have_none(tmp_path):
    path, doc = _state_doc(tmp_path)
    assert "jobs" not in doc  # a state without jobs keeps the file's old shape
    assert Store(tmp_path / "s").load().jobs == {}
    path.write_text(json.dumps(doc))  # a file written before jobs existed loads unchanged
    assert tpufleet("--state", tmp_path / "s", "status") == 0
    path, doc = _with_job(tmp_path / "new", "--elastic", "1")
    assert doc["jobs"] == {
        "j": {
            "shape": "4x4x4",
            "twisted": False,
            "slices": ["j-0", "j-1"],
            "spread": False,
            "elastic_min": 1,
            "created": doc["jobs"]["j"]["created"],
        }
    }
    assert [doc["slices"][s]["job"] for s in ("j-0", "j-1")] == ["j", "j"]
    job = Store(tmp_path / "new" / "s").load().jobs["j"]
    assert (job.slices, job.elastic_min, job.spread, job.shape.text) == (("j-0", "j-1"), 1, False, "4x4x4")
    assert tpufleet("--state", tmp_path / "new" / "s", "release", "j") == 0
    doc = json.loads(path.read_text())
    assert "jobs" not in doc and doc["slices"] == {}  # the last job gone: the key goes too


def _drop_job_of(doc: dict, name: str) -> None:
    del doc["slices"][name]["job"]


@pytest.mark.parametrize(
    ("edit", "field", "problem"),
    [
        (lambda d: d["jobs"]["j"]["slices"].append("ghost"), "jobs.j.slices.2", "no slice ghost"),
        (lambda d: _drop_job_of(d, "j-1"), "jobs.j.slices.1", "does not name job j"),
        (lambda d: d["slices"]["j-0"].update(job="k"), "jobs.j.slices.0", "does not name job j"),
        (lambda d: d["jobs"].update(k=dict(d["jobs"]["j"])), "jobs.k.slices.0", "also in job j"),
        (lambda d: d["jobs"]["j"].update(elastic_min=3), "jobs.j.elastic_min", "above the job's 2 slice(s)"),
        (lambda d: d["jobs"]["j"].update(elastic_min=0), "jobs.j.elastic_min", "bigger than or equal to 1"),
        (lambda d: d["jobs"]["j"].update(slices=[]), "jobs.j.slices", "at least 1 items"),
        (lambda d: d["jobs"]["j"].update(shape="4x4x8"), "jobs.j.slices.0", "all have its shape"),
        (lambda d: d["jobs"].update({"j-0": d["jobs"].pop("j")}), "jobs.j-0", "cannot share a name"),
        (lambda d: d["jobs"]["j"].update(slices=["j-0"]), "slices.j-1.job", "no job j lists slice j-1"),
        (lambda d: d["jobs"]["j"].update(spread="yes"), "jobs.j.spread", "must be true or false"),
    ],
)
def test_bad_jobs_in_a_state_file_are_exit_2(tmp_path, capsys, edit, field, problem):
    path, doc = _with_job(tmp_path)
    edit(doc)
    path.write_text(json.dumps(doc))
    capsys.readouterr()
    assert tpufleet("--state", tmp_path / "s", "status") == 2
    err = capsys.readouterr().err
    assert f"field {field}:" in err and problem in err and err.count("\n") == 1, err


def test_a_key_with_a_newline_still_gives_a_one_line_error(tmp_path, capsys):
    """Found by test_malformed_state_files_are_exit_2_and_untouched: the field path quoted the key as it was."""
    path, doc = _state_doc(tmp_path)
    doc["routes"] = {"a\nb": None}
    path.write_text(json.dumps(doc))
    capsys.readouterr()
    assert tpufleet("--state", tmp_path / "s", "status") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "field routes.a\\nb" in err, err
