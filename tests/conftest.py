"""Shared test set-up: Hypothesis profiles, and the in-process CLI runner and its fixtures.

Hypothesis profile: $TPUFLEET_HYPOTHESIS_PROFILE, else "ci" when $CI is set, else "dev" (`--hypothesis-profile`
overrides both). "ci" is derandomized: every run of a test tries the same examples (the seed is derived from the
test), so CI is reproducible and a failure prints the blob to replay it. "dev" draws new examples each run;
"nightly" draws many more.
"""

from __future__ import annotations

import faulthandler
import itertools
import json
import os
import shlex
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tpufleet.cli import main
from tpufleet.state import prebuiltcache

# Registered from Hypothesis' own defaults (with $CI set, Hypothesis has already loaded its built-in "ci").
_BASE = settings.get_profile("default")
settings.register_profile(
    "ci",
    _BASE,
    derandomize=True,
    database=None,  # nothing carried over between runs: the same examples every time
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", _BASE, deadline=None)
settings.register_profile("nightly", _BASE, max_examples=1000, deadline=None, print_blob=True)
HYPOTHESIS_PROFILE = os.environ.get("TPUFLEET_HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
settings.load_profile(HYPOTHESIS_PROFILE)


def hypothesis_line(config: pytest.Config) -> str:
    current = settings()
    seed = config.getoption("hypothesis_seed", None)
    if seed is not None:
        how = f"seed {seed} (--hypothesis-seed)"
    elif current.derandomize:
        how = "derandomized: a fixed seed per test, derived from the test itself"
    else:
        how = "random seed per test (printed with any failure)"
    return f"hypothesis profile {settings.get_current_profile_name()!r}: max_examples={current.max_examples}, {how}"


def pytest_report_header(config: pytest.Config) -> str:
    return hypothesis_line(config)


# No test takes more than a minute or two, even on a busy machine: one still running after this has hung (a lock a
# forked process inherited held, a child never answering). Every thread's stack is then dumped to the real stderr
# and the test's process ended, so the run goes on (pytest-xdist reports the test as crashed and starts another
# worker) and says where it hung, rather than waiting until the CI runner's own limit ends it with no word. A process
# a test forks while the timer runs must leave by os._exit (as every one here does): its copy of the timer's state
# would make a normal exit wait for a thread it has not.
HANG_S = 900
_REAL_STDERR: list[int] = []  # fd 2 as pytest_configure finds it: during a test fd 2 is pytest's capture file


def pytest_configure(config: pytest.Config) -> None:
    _REAL_STDERR.append(os.dup(2))


def pytest_enter_pdb(config: pytest.Config, pdb: object) -> None:
    faulthandler.cancel_dump_traceback_later()  # a debugging session is no hang


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    faulthandler.dump_traceback_later(HANG_S, exit=True, file=_REAL_STDERR[0])
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The tests marked `slow` (seconds each) first in each half of the run.

    pytest-xdist's work stealing hands each of `make test`'s two workers one half of the collected order and lets
    an idle worker steal from the end of the other's queue; a slow test that starts last makes its worker finish
    alone, up to twenty seconds after the other. Dealt alternately to the fronts of both halves, the slow tests
    start first and the quick ones even the end out. The order changes nothing else: no test depends on another.
    """
    slow = [item for item in items if item.get_closest_marker("slow")]
    if not slow:
        return
    quick = [item for item in items if not item.get_closest_marker("slow")]
    first, second = slow[0::2], slow[1::2]
    cut = max(0, len(items) // 2 - len(first))
    items[:] = first + quick[:cut] + second + quick[cut:]


def pytest_sessionstart(session: pytest.Session) -> None:
    """-q hides the header (`make test` runs quiet): print the profile line anyway, CI logs need it. The kernels
    built ahead of time are installed first where they can be (built once, about 8 s): every test then reads large
    logs with them, whichever ran before it (tests/test_goodput_prebuilt.py compares them with Numba's JIT)."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if session.config.option.verbose < 0 and reporter is not None:
        reporter.write_line(hypothesis_line(session.config))
    prebuiltcache.install()


@dataclass
class Result:
    code: int
    out: str
    err: str

    @property
    def json(self):
        return json.loads(self.out)


class Cli:
    """Runs the real entry point in-process (fast), capturing output and the exit code."""

    pytest_argv = tuple(sys.argv)  # pytest's own command line, as it started

    def __init__(self, capsys, state: Path):
        self.capsys = capsys
        self.state = state

    def __call__(self, *args: str | os.PathLike[str], state: bool = True) -> Result:
        argv = (["--state", str(self.state)] if state else []) + [str(a) for a in args]
        self.capsys.readouterr()
        # The journal and the lock's holder record sys.argv, as a real run's: pytest's own command line (as long as
        # the list of files it was given) would be recorded instead, and a test's journal lines would grow with it.
        # A command line a test set itself (to see how it is recorded) is kept.
        outer = sys.argv
        if tuple(outer) == self.pytest_argv:
            sys.argv = ["tpufleet", *argv]
        try:
            main(argv)
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        finally:
            sys.argv = outer
        captured = self.capsys.readouterr()
        machine = any(
            f"{a} {b}" in {"-o json", "-o yaml", "--output json", "--output yaml"} for a, b in itertools.pairwise(argv)
        )
        # A table or an error suggests commands with the --state given (`next: tpufleet --state DIR routes s`, see
        # tpufleet/cli/suggested.py): read here as the contract gives them; tests/test_suggested_state.py passes
        # --state itself and reads them as printed.
        given = f"tpufleet --state {shlex.quote(str(self.state))} "
        if not state:
            return Result(code, captured.out, captured.err)
        if machine or {"--output=json", "--output=yaml"} & set(argv):  # JSON and YAML are left as written
            said = captured.err if captured.err.lstrip().startswith("{") else captured.err.replace(given, "tpufleet ")
            return Result(code, captured.out, said)  # a note on stderr is text still
        return Result(code, captured.out.replace(given, "tpufleet "), captured.err.replace(given, "tpufleet "))


@pytest.fixture
def cli(tmp_path, capsys):
    return Cli(capsys, tmp_path / "state")


@pytest.fixture
def fleet(cli):
    r = cli("init")
    assert r.code == 0, r.err
    return cli


@pytest.fixture
def reserved(cli):
    """A TPU7x superpod with the fixture reservation imported: c17, c58, c121 DEGRADED; c40 and c99 drained for
    maintenance (its windows are past)."""
    assert cli("init", "--generation", "tpu7x").code == 0
    r = cli(
        "import",
        "reservation",
        Path(__file__).parent.parent / "fixtures/gke/tpu7x-reservation-subblocks.json",
        "--apply",
    )
    assert r.code == 0, r.err
    return cli


@pytest.fixture
def routed(fleet):
    """A fleet with slice `s` (4x4x4) wired and its tables stored (some modules define their own `routed`)."""
    assert fleet("allocate", "s", "--shape", "4x4x4").code == 0
    assert fleet("plan-xconnect", "s", "--apply").code == 0
    assert fleet("routes", "s").code == 0
    return fleet


@pytest.fixture(autouse=True)
def _no_env_state(monkeypatch, tmp_path_factory):
    monkeypatch.delenv("TPUFLEET_STATE", raising=False)
    monkeypatch.delenv("TPUFLEET_CONFIG", raising=False)  # a developer's own config file must not reach the tests
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("xdg")))
    monkeypatch.delenv("TPUFLEET_DEBUG", raising=False)
    os.environ.setdefault("COLUMNS", "200")


@pytest.fixture(autouse=True)
def _no_fsync(monkeypatch):
    """`os.fsync` guards committed files against a power cut, which no test simulates: the crash tests kill
    processes at named points of the protocol, and the page cache keeps what a killed process wrote. Skipping it
    saves about 10 ms of every state-changing command in the suite; the tests of fsync's failures patch it themselves.
    Commands run as subprocesses (`python -m tpufleet`) still call the real one."""
    monkeypatch.setattr(os, "fsync", lambda fd: None)


@pytest.fixture
def canonical_form_only(monkeypatch):
    """Faults routed in their canonical form only, as above 256 chips (`canonical.FORMS_LIMIT`): on 4x4x8 z/0 alone
    (139) is then heavier than z/0 with x/0 (137), the case stored tables are weighed for after `clear-fault`. With
    its mirrored images z/0 alone is routed at 137 and the stored tables are never lighter."""
    from tpufleet.routing import canonical, report

    monkeypatch.setattr(canonical, "FORMS_LIMIT", 0)
    report._forms_made.cache_clear()
    yield
    report._forms_made.cache_clear()


@pytest.fixture
def reaped(monkeypatch):
    """Whether every child forked in the test is gone and reaped (False when none was forked; other tests' processes
    may still run here)."""
    forked: list[int] = []
    real = os.fork

    def fork() -> int:
        pid = real()
        if pid:
            forked.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", fork)

    def gone() -> bool:
        for pid in forked:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                continue
            return False
        return bool(forked)

    return gone
