"""The tables tpufleet keeps in a PostgreSQL database, by schema version: MIGRATIONS[v - 1] takes the schema from
version v - 1 to v, and `tpufleet_schema` (_VERSION_TABLE) records each version applied, when and by whom. Kept
apart from the backend (`pgbackend`), which connects, reads, locks and applies these: the schema is data, and a new
version is one step added here.
"""

from __future__ import annotations

SCHEMA_VERSION = 2
_VERSION_TABLE = (
    "CREATE TABLE IF NOT EXISTS tpufleet_schema "
    "(version integer PRIMARY KEY, applied timestamptz NOT NULL DEFAULT now(), by_user text NOT NULL)"
)
# MIGRATIONS[v - 1] takes the schema from version v - 1 to v; each runs in one transaction with its version row.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        "CREATE TABLE tpufleet_state (id smallint PRIMARY KEY CHECK (id = 1), serial bigint NOT NULL "
        "CHECK (serial >= 0), doc bytea NOT NULL, written timestamptz NOT NULL DEFAULT now())",
        "CREATE TABLE tpufleet_journal (seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, serial bigint, "
        "line bytea NOT NULL)",
        "CREATE INDEX tpufleet_journal_serial ON tpufleet_journal (serial)",
        "CREATE FUNCTION tpufleet_journal_append_only() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN RAISE EXCEPTION 'the tpufleet journal is append-only'; END $$",
        "CREATE TRIGGER tpufleet_journal_no_change BEFORE UPDATE OR DELETE ON tpufleet_journal "
        "FOR EACH ROW EXECUTE FUNCTION tpufleet_journal_append_only()",
        "CREATE TRIGGER tpufleet_journal_no_truncate BEFORE TRUNCATE ON tpufleet_journal "
        "FOR EACH STATEMENT EXECUTE FUNCTION tpufleet_journal_append_only()",
        "CREATE TABLE tpufleet_tables (name text PRIMARY KEY, data bytea NOT NULL)",
        "CREATE TABLE tpufleet_cache (key text PRIMARY KEY, data bytea NOT NULL, "
        "used timestamptz NOT NULL DEFAULT clock_timestamp())",
        "CREATE TABLE tpufleet_lock (id smallint PRIMARY KEY CHECK (id = 1), username text NOT NULL, "
        "pid integer NOT NULL, host text NOT NULL, command text NOT NULL, since text NOT NULL)",
    ),
    # Routing tables stored as they come: the server's default compression (pglz) made writing a full pod's 1.7 MB
    # ten times slower (about 40 ms against 4) for a third off their size. Applies to the rows written from now on.
    ("ALTER TABLE tpufleet_tables ALTER COLUMN data SET STORAGE EXTERNAL",),
)
assert len(MIGRATIONS) == SCHEMA_VERSION
