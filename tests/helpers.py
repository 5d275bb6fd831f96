"""Helpers shared by the tests."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

GUARD_S = 30.0  # how long a test waits for what must come at once before it calls it a hang


def snapshot(state: Path) -> dict[str, bytes]:
    """Every state file's bytes (the lock files aside): to prove a refused command changed nothing."""
    return {p.name: p.read_bytes() for p in sorted(state.rglob("*")) if p.is_file() and not p.name.startswith(".lock")}


def wired(fleet: Any, name: str, shape: str, *extra: str) -> None:
    """Slice (or job) `name` allocated and its cross-connects applied, through the CLI fixture `fleet`."""
    assert fleet("allocate", name, "--shape", shape, *extra).code == 0
    assert fleet("plan-xconnect", name, "--apply").code == 0


def add_fault(state: Path, target: str, planned: bool = False) -> str:
    """Open a fault directly in the state (as healthd or the pod manager would report it)."""
    from tpufleet.fleetstate import Change
    from tpufleet.ids import parse_target
    from tpufleet.state import Store

    with Store(state).transaction(command="test fault") as tx:
        fault = tx.state.open_fault(parse_target(target), planned, "test", "2026-01-01T00:00:00Z")
        tx.commit(Change(f"fault {fault.id} {target}"))
    return fault.id


def expected_neighbour(coord, port, dims, twisted):
    """The torus / twisted torus rule of "Resiliency at Scale", written from coordinates alone."""
    X, Y, _Z = dims
    if twisted and Y == X:
        shift = {0: (0, 0, X), 1: (0, 0, X), 2: (0, 0, 0)}
    elif twisted:
        shift = {0: (0, X, X), 1: (0, 0, 0), 2: (0, 0, 0)}
    else:
        shift = {0: (0, 0, 0), 1: (0, 0, 0), 2: (0, 0, 0)}
    d, sign = port // 2, (1 if port % 2 == 0 else -1)
    c = list(coord)
    c[d] += sign
    if c[d] == dims[d] or c[d] < 0:
        c[d] %= dims[d]
        c = [(v + sign * s) % n for v, s, n in zip(c, shift[d], dims, strict=False)]
    return tuple(c)


def ocs_failure(shape, dim, index):
    """The periodic pattern of one OCS failure: link {dim, index} gone at every cube boundary (both directions)."""
    from tpufleet.ids import face_index
    from tpufleet.topology import coordinates, neighbors

    exp = neighbors(shape)
    alive = exp.copy()
    d = "xyz".index(dim)
    for s, c in enumerate(coordinates(shape.dims)):
        local = [int(v) % 4 for v in c]
        if local[d] == 3 and face_index(dim, *local) == index:
            t = exp[s, 2 * d]
            alive[s, 2 * d] = -1
            alive[t, 2 * d + 1] = -1
    return exp, alive


def one_line(r, code: int = 2) -> str:
    """The one line a refused command prints on stderr, after checking its exit code (2: bad input)."""
    lines = r.err.strip().splitlines()
    assert r.code == code, (r.code, r.err[-500:])
    assert len(lines) == 1, r.err[-1000:]
    return lines[0]


def in_thread(call: Callable[[], Any]) -> tuple[threading.Thread, threading.Event, list[Any]]:
    """`call` run in a thread of its own: (the thread, set once it returned or raised, what it returned or raised)."""
    done, out = threading.Event(), []

    def run() -> None:
        try:
            out.append(call())
        except Exception as exc:  # noqa: BLE001 - raised again in the test's thread
            out.append(exc)
        finally:
            done.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, done, out


def beside_a_fifo(call: Callable[[], Any], fifo: Path) -> Any:
    """What `call` returns, which must not wait on a reader of `fifo` (nobody writes it): a reader still waiting
    after GUARD_S fails the test, and is then let go (the FIFO opened for writing and closed: an end of file)."""
    thread, done, out = in_thread(call)
    try:
        assert done.wait(GUARD_S), f"waited on {fifo}"
    finally:
        with contextlib.suppress(OSError):  # ENXIO: no reader waiting
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(GUARD_S)
    if isinstance(out[0], Exception):
        raise out[0]
    return out[0]


class LogBlocks:
    """The blocks each native goodput log was read in since `read_in_blocks`, one list of block sizes per log read
    (a log read twice is two lists). A test asserts `fewest() > 1` to prove its logs were read in several pieces:
    lowering CHUNK_BYTES proves nothing on a log smaller than a block, or where the reader does not look."""

    def __init__(self, size: int) -> None:
        self.size, self.reads = size, list[list[int]]()

    def fewest(self) -> int:
        """The fewest blocks any log read was read in (0 when none was read)."""
        return min((len(blocks) for blocks in self.reads), default=0)

    def as_asked(self) -> bool:
        """Whether every log read was read `size` bytes at a time (the last block of each perhaps fewer)."""
        return all(all(b == self.size for b in r[:-1]) and r[-1] <= self.size for r in self.reads if r)


def read_in_blocks(mp: pytest.MonkeyPatch, size: int) -> LogBlocks:
    """Native goodput logs read `size` bytes at a time (CHUNK_BYTES lowered where the reader looks it up, with `mp`,
    a pytest MonkeyPatch), and the blocks each log read took recorded (the reader's own block reads, spied on)."""
    from tpufleet.state import goodputlogs, goodputpieces, goodputstreams

    seen = LogBlocks(size)
    cut, read = goodputpieces._pieces, goodputstreams._read  # what goodputlogs and goodputpieces imported

    def pieces(*args: Any, **kwargs: Any) -> Any:
        seen.reads.append([])
        return cut(*args, **kwargs)

    def block(*args: Any, **kwargs: Any) -> bytes:
        data = read(*args, **kwargs)
        if data:
            seen.reads[-1].append(len(data))
        return data

    mp.setattr(goodputstreams, "CHUNK_BYTES", size)
    mp.setattr(goodputlogs, "_pieces", pieces)
    mp.setattr(goodputpieces, "_read", block)
    return seen


def _run_crashing_at(state: str, point: str, *args: str) -> None:
    from tpufleet.cli import main
    from tpufleet.state import crashpoints

    os.environ[crashpoints.ENV] = point
    main(["--state", state, *args])  # exits itself


def crash_at(state: Path, point: str, *args: str) -> None:
    """Run `tpufleet --state STATE ARGS` in a forked process killed at the named crash point of the write protocol
    (`tpufleet.state.crashpoints`): never after a sleep."""
    import multiprocessing
    import signal

    proc = multiprocessing.get_context("fork").Process(target=_run_crashing_at, args=(str(state), point, *args))
    proc.start()
    proc.join(300)
    assert proc.exitcode == -signal.SIGKILL


def held_twice(placement: Any) -> list[tuple[str, int]]:
    """(cube, machine) pairs two allocations of a simulation's placement hold at once."""
    seen: set[tuple[str, int]] = set()
    twice: list[tuple[str, int]] = []
    for alloc in placement.placed.values():
        for cube in alloc.cubes:
            for machine in alloc.machines or range(16):
                twice += [(cube, machine)] if (cube, machine) in seen else []
                seen.add((cube, machine))
    return twice


def report_interrupted(script: str, tmp_path: Path) -> tuple[int, str, str]:
    """`script` (which stops its own report, a Ctrl-C to its process group) run by a fresh Python in a session of
    its own, on a small varied native log: its exit code, stdout and stderr (the guard only tells a hang)."""
    import subprocess
    import sys

    from test_goodput_fastpath import varied_log

    log = tmp_path / "a.jsonl"
    log.write_text("\n".join(varied_log(3, 3, 0)) + "\n")
    result = subprocess.run(
        [sys.executable, "-c", script, str(log)],
        capture_output=True,
        text=True,
        timeout=GUARD_S,
        start_new_session=True,
    )
    return result.returncode, result.stdout, result.stderr
