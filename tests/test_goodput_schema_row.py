"""A log's schema record: its version is a whole number, as every count, so a CSV cell `1` is version 1 (it was
refused as "this reader knows schema version 1 (value '1')"), and `true` or `1.5` are no version."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

FLEET = Path(__file__).parent.parent / "fixtures/goodput/fleet.jsonl"


def _as_csv(lines: list[dict]) -> str:
    columns = list(dict.fromkeys(k for rec in lines for k in rec))
    out = io.StringIO()
    writer = csv.DictWriter(out, columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(lines)
    return out.getvalue()


def test_a_csv_log_with_its_schema_row_reads_as_the_jsonl(cli, tmp_path):
    records = [json.loads(line) for line in FLEET.read_text().splitlines() if line.strip()]
    assert records[0] == {"type": "schema", "version": 1}
    (tmp_path / "fleet.csv").write_text(_as_csv(records))
    from_csv = cli("goodput-report", tmp_path / "fleet.csv", "-o", "json", state=False)
    from_jsonl = cli("goodput-report", FLEET, "-o", "json", state=False)
    assert from_csv.code == from_jsonl.code == 0, from_csv.err
    assert from_csv.json["fleet"] == from_jsonl.json["fleet"]


@pytest.mark.parametrize(
    ("version", "said"),
    [
        (2, "field version: this reader knows schema version 1 only (value 2)"),
        ("2", "field version: this reader knows schema version 1 only (value '2')"),
        (True, "field version: must be a whole number"),
        (1.5, "field version: must be a whole number"),
    ],
)
def test_a_version_other_than_1_is_refused_naming_it(cli, tmp_path, version, said):
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps({"type": "schema", "version": version}) + "\n")
    r = cli("goodput-report", log, state=False)
    assert r.code == 2 and f"log.jsonl:1: {said}" in r.err, r.err
