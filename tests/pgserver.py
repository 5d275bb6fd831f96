"""A throwaway PostgreSQL server for the tests of the database backend: `initdb` and `pg_ctl` in a temporary
directory, listening on a Unix socket in it and on 127.0.0.1 at a free port, stopped and deleted after the session.

The server binaries come from Debian's `postgresql` package (`make db-deps`), found on PATH or under
/usr/lib/postgresql/*/bin (or $TPUFLEET_PG_BIN). PostgreSQL refuses to run as root: run as root, the server runs as
the `postgres` account. Where any of that is missing the tests skip, saying why.

Local (socket) connections are trusted; TCP ones need a password (scram-sha-256), for the tests of credentials.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

SUPERUSER = "tpufleet"
_dbs = itertools.count()


def _bin_dir() -> Path | None:
    env = os.environ.get("TPUFLEET_PG_BIN")
    candidates = [Path(env)] if env else []
    which = shutil.which("initdb")
    if which:
        candidates.append(Path(which).parent)
    candidates += sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)
    return next((d for d in candidates if (d / "initdb").exists() and (d / "pg_ctl").exists()), None)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PgServer:
    def __init__(self, bin_dir: Path, run_as: str | None) -> None:
        self.bin = bin_dir
        self.run_as = run_as
        self.root = Path(tempfile.mkdtemp(prefix="tpufleet-pg-"))
        self.data = self.root / "data"
        self.sock = str(self.root)
        self.port = _free_port()
        if run_as is not None:
            entry = pwd.getpwnam(run_as)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        argv = [str(self.bin / args[0]), *args[1:]]
        if self.run_as is not None:
            argv = ["runuser", "-u", self.run_as, "--", *argv]
        return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)

    def init(self) -> str | None:
        """initdb; None, or why it failed."""
        done = self._run("initdb", "-D", str(self.data), "-U", SUPERUSER, "-A", "trust", "--no-sync", "-E", "UTF8")
        if done.returncode != 0:
            return f"initdb failed: {done.stderr.strip()[-300:]}"
        hba = self.data / "pg_hba.conf"
        hba.write_text("local all all trust\nhost all all 127.0.0.1/32 scram-sha-256\n")
        return None

    def start(self) -> None:
        options = (
            f"-p {self.port} -k {self.sock} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=60"
        )
        done = self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.root / "log"), "-w", "start")
        if done.returncode != 0:
            log = (self.root / "log").read_text() if (self.root / "log").exists() else ""
            raise RuntimeError(f"pg_ctl start failed: {done.stderr.strip()} {log[-500:]}")

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    def remove(self) -> None:
        self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)

    def url(self, db: str, user: str = SUPERUSER) -> str:
        """A URL over the Unix socket (trusted)."""
        return f"postgresql://{user}@/{db}?host={self.sock}&port={self.port}"

    def tcp_url(self, db: str, user: str, password: str) -> str:
        return f"postgresql://{user}:{password}@127.0.0.1:{self.port}/{db}"

    def sql(self, statement: str, db: str = "postgres") -> list[tuple[object, ...]]:
        import psycopg

        with psycopg.connect(self.url(db), autocommit=True) as conn:
            cur = conn.execute(statement.encode())
            return cur.fetchall() if cur.description else []

    def new_database(self) -> str:
        name = f"fleet{os.getpid()}x{next(_dbs)}"
        self.sql(f"CREATE DATABASE {name}")
        return name


def db_name(url: str) -> str:
    """The database a test URL names."""
    from urllib.parse import urlsplit

    return urlsplit(url).path.lstrip("/")


def _run_as() -> tuple[str | None, str | None]:
    """The account the server runs as (None: this one) and, when there is none fit, why."""
    if os.geteuid() != 0:
        return None, None
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        return None, "running as root and there is no `postgres` account for the server (PostgreSQL refuses root)"
    if shutil.which("runuser") is None:
        return None, "running as root and `runuser` is missing (needed to start the server as `postgres`)"
    return "postgres", None


def start_server() -> tuple[PgServer | None, str]:
    """A running server, or None and why not."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return None, "psycopg is not installed (pip install 'tpufleet[postgres]')"
    bin_dir = _bin_dir()
    if bin_dir is None:
        return None, "PostgreSQL server binaries (initdb, pg_ctl) not found: run `make db-deps`"
    run_as, why = _run_as()
    if why:
        return None, why
    server = PgServer(bin_dir, run_as)
    failed = server.init()
    if failed:
        server.remove()
        return None, failed
    try:
        server.start()
    except RuntimeError as exc:
        server.remove()
        return None, str(exc)
    return server, ""


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    server, why = start_server()
    if server is None:
        pytest.skip(f"no PostgreSQL server for the database backend tests: {why}")
    try:
        yield server
    finally:
        server.remove()


@pytest.fixture
def pg_url(pg_server: PgServer) -> Iterator[str]:
    """A new, empty database on the test server: its URL (dropped after the test)."""
    name = pg_server.new_database()
    yield pg_server.url(name)
    with contextlib.suppress(Exception):
        pg_server.start()  # a test may have stopped it
    with contextlib.suppress(Exception):
        pg_server.sql(f"DROP DATABASE {name} WITH (FORCE)")


@pytest.fixture
def pushed(tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]) -> Any:
    """A state directory at serial 3 (`init`, `allocate`, `inject-fault`), pushed: the database holds the same fleet."""
    from conftest import Cli

    folder = Cli(capsys, tmp_path / "d")
    assert folder("init").code == 0 and folder("allocate", "a", "--shape", "4x4x4").code == 0
    assert folder("inject-fault", "host:c40/1").code == 0
    assert folder("state", "push", folder.state, pg_url, state=False).code == 0
    return folder
