"""Client-side bounds on a database connection: without them a stalled server or a network that drops packets held
a command, `serve`'s /readyz and /metrics with it, for as long as the operating system's TCP settings let it.
Tests of the parameters a connection is given, never of timing."""

from __future__ import annotations

import pgserver
import pytest
from pgserver import PgServer, db_name

from tpufleet.state.pgbackend import PostgresBackend
from tpufleet.state.pgurl import CONNECTION_DEFAULTS, connection_options

pg_server = pgserver.pg_server  # the fixtures: a server for the session, a new database per test
pg_url = pgserver.pg_url

BOUNDS = ("connect_timeout", "keepalives", "keepalives_idle", "keepalives_interval", "keepalives_count")


def test_a_connection_is_bounded_by_default():
    options = connection_options({"host": "db", "dbname": "f"}, {}, 170000)
    assert {k: options[k] for k in (*BOUNDS, "tcp_user_timeout")} == dict(CONNECTION_DEFAULTS)
    assert options["keepalives"] == 1 and options["tcp_user_timeout"] > 0 and options["keepalives_idle"] > 0


@pytest.mark.parametrize("key", [*BOUNDS, "tcp_user_timeout"])
def test_a_urls_own_setting_wins(key):
    assert key not in connection_options({"host": "db", key: "7"}, {}, 170000)  # libpq reads the URL's


def test_pgconnect_timeout_in_the_environment_wins_over_the_default():
    options = connection_options({"host": "db"}, {"PGCONNECT_TIMEOUT": "3"}, 170000)
    assert "connect_timeout" not in options and options["keepalives_idle"] == CONNECTION_DEFAULTS["keepalives_idle"]


def test_a_libpq_older_than_12_is_not_given_tcp_user_timeout():
    assert "tcp_user_timeout" not in connection_options({}, {}, 110022)


def _parameters(url: str) -> dict[str, str]:
    backend = PostgresBackend(url)
    try:
        return backend.connection().info.get_parameters()
    finally:
        backend.close()


def test_the_connection_made_carries_the_bounds_and_a_urls_own(pg_server: PgServer, pg_url):
    pg_server.sql("DROP ROLE IF EXISTS dave")
    pg_server.sql("CREATE ROLE dave LOGIN PASSWORD 'pw-dave'")
    url = pg_server.tcp_url(db_name(pg_url), "dave", "pw-dave")
    made = _parameters(url)
    assert {k: made.get(k) for k in CONNECTION_DEFAULTS} == {k: str(v) for k, v in CONNECTION_DEFAULTS.items()}
    own = _parameters(url + "?keepalives_idle=5&tcp_user_timeout=9000&connect_timeout=4")
    assert (own["keepalives_idle"], own["tcp_user_timeout"], own["connect_timeout"]) == ("5", "9000", "4")
    assert own["keepalives_count"] == str(CONNECTION_DEFAULTS["keepalives_count"])
