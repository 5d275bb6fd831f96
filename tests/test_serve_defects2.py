"""`tpufleet serve` defects of the second review (/tmp/h_serve: M1-M3), each pinned: goodput logs being written (a
last line not finished yet is left for the next read, and `tpufleet_goodput_logs_read_ok` says whether the logs
read), and Alertmanager payloads whose `tpufleet_planned` label or times are not what they must be (422 naming the
field, nothing changed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import read_in_blocks, snapshot

pytest.importorskip("starlette", reason="tpufleet serve needs the serve extra (starlette, uvicorn)")
pytest.importorskip("httpx", reason="Starlette's TestClient needs httpx")

from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from tpufleet.errors import BadInput
from tpufleet.goodput import columnar, fastread
from tpufleet.state import goodputlogs

ROOT = Path(__file__).parent.parent
GOODPUT = ROOT / "fixtures" / "goodput" / "fleet.jsonl"
ALERTS = ROOT / "fixtures" / "alertmanager"
TOKEN = "s3cret-token-for-the-tests-0123456789"


def client(state: Path, goodput: list[Path] | None = None) -> TestClient:
    """The application as `tpufleet serve [--goodput LOG...]` builds it."""
    from tpufleet.cli.serve import goodput_extras, metrics_inputs
    from tpufleet.serve.app import Server, build_app
    from tpufleet.serve.snapshot import Source
    from tpufleet.state import Store

    extras = goodput_extras(goodput, "native") if goodput else None
    source = Source(Store(state), goodput or [], extras)
    return TestClient(build_app(Server(source, metrics_inputs(), TOKEN.encode(), 5)), raise_server_exceptions=False)


def served(c: TestClient) -> dict[str, list[tuple[dict[str, str], float]]]:
    """The samples of each family /metrics serves."""
    text = c.get("/metrics").text
    return {f.name: [(s.labels, s.value) for s in f.samples] for f in text_string_to_metric_families(text)}


# ---- M1: goodput logs being written ------------------------------------------------------------------------------
def test_a_line_being_written_leaves_the_goodput_served_and_a_bad_one_says_so(fleet, tmp_path, capsys):
    log = tmp_path / "live.jsonl"
    log.write_bytes(GOODPUT.read_bytes())
    c = client(fleet.state, [log])
    first = served(c)
    assert first["tpufleet_goodput_logs_read_ok"] == [({}, 1.0)] and first["tpufleet_goodput_ratio"]
    with log.open("a") as fh:
        fh.write('{"type":"event","job":"serve","time":17')  # a writer partway through a line
    now = served(c)
    assert now["tpufleet_goodput_ratio"] == first["tpufleet_goodput_ratio"]  # all of them vanished
    assert now["tpufleet_goodput_logs_read_ok"] == [({}, 1.0)]
    with log.open("a") as fh:
        fh.write('67571200,"event":"submitted"}\n{"type":"event","job":"serve","time":"x","event":"submitted"}\n')
    broken = served(c)
    assert broken["tpufleet_goodput_logs_read_ok"] == [({}, 0.0)]
    assert not [name for name in broken if name.startswith("tpufleet_goodput_") and "logs_read" not in name]
    assert f"goodput left out until the logs read again: {log}:26: field time:" in capsys.readouterr().err
    assert "tpufleet_goodput_logs_read_ok" not in served(client(fleet.state))  # no --goodput: no such series


@pytest.mark.parametrize("reader", ["lines", "msgspec", "columns"])
def test_only_an_unfinished_last_line_is_left_out(tmp_path, reader):
    """A last line without a line break is read when it is a whole JSON object (a log written without a final
    newline), and left out when it is not one yet; goodput-report itself still reads (and refuses) it."""
    whole = GOODPUT.read_text().rstrip("\n")
    done, cut = tmp_path / "done.jsonl", tmp_path / "cut.jsonl"
    done.write_text(whole)
    cut.write_text(whole + '\n{"type":"event","job":"j","time":17')
    with pytest.MonkeyPatch.context() as mp:
        blocks = read_in_blocks(mp, 256)  # many pieces: the last line is a piece of its own
        if reader != "msgspec":
            mp.setattr(fastread, "_DECODER", None)
        if reader != "columns":
            mp.setattr(columnar, "pa", None)
        full = goodputlogs.load([GOODPUT], "native", False)
        for path in (done, cut):
            log = goodputlogs.load([path], "native", False, whole_lines=True)
            assert (log.records, log.jobs, len(log.capacity)) == (full.records, full.jobs, len(full.capacity))
        with pytest.raises(Exception, match=f"{cut}:25: field <line>: not valid JSON"):
            goodputlogs.load([cut], "native", False)
    assert blocks.fewest() > 1 and len(blocks.reads) == 4


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"], ids=["lf", "crlf", "cr"])
def test_a_malformed_last_line_ended_by_a_line_break_is_refused_not_left_for_later(tmp_path, newline):
    """A native log's last line, ended by a lone CR but no JSON: the server left it out as a line still being
    written (the logs read, its goodput shown) where ended by a line feed it was refused as goodput-report does.
    A line break ends a line whichever it is: refused."""
    log = tmp_path / "bad-last.jsonl"
    lines = ['{"type":"event","job":"a","time":1767571200.0,"event":"job_start"}', '{"type":"event","job":"a","ti']
    log.write_bytes((newline.join(lines) + newline).encode())
    with pytest.raises(BadInput, match=f"{log}:2: field <line>: not valid JSON"):
        goodputlogs.load([log], "native", False, whole_lines=True)
    log.write_bytes((newline.join(lines)).encode())  # no line break after it: still being written
    assert goodputlogs.load([log], "native", False, whole_lines=True).records == 1


@pytest.mark.parametrize("fmt", ["native", "ml-goodput"])
def test_a_one_line_log_with_a_byte_order_mark_and_no_line_break_is_read(tmp_path, fmt):
    """A log of one finished record, written with a byte-order mark and no final line break: goodput-report read
    it, the server left it out as a line still being written (the mark made it no JSON), for as long as it ran."""
    record = '{"job_name": "j", "job_start_time": 1767571200.0}'
    if fmt == "native":
        record = '{"type":"event","job":"j","time":1767571200.0,"event":"job_start"}'
    log = tmp_path / "bom.jsonl"
    log.write_bytes(b"\xef\xbb\xbf" + record.encode())
    assert goodputlogs.load([log], fmt, False).records == 1
    assert goodputlogs.load([log], fmt, False, whole_lines=True).records == 1
    log.write_bytes(b"\xef\xbb\xbf" + record.encode()[:-9])  # still being written: left out
    assert goodputlogs.load([log], fmt, False, whole_lines=True).records == 0


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"], ids=["lf", "crlf", "cr"])
def test_an_ml_goodput_log_ended_by_any_line_break_is_read_whole_by_the_server(tmp_path, newline):
    """An ml-goodput log whose lines end with a lone CR: goodput-report read its entries, the server none (the log's
    last LF, there being none, was taken for the start of a line still being written: all of it)."""
    entries = [
        '{"job_name": "j", "job_start_time": 1767571200.0}',
        '{"job_name": "j", "step_count": 1, "step_start_time": 1767571210.0}',
        '{"job_name": "j", "step_count": 2, "step_start_time": 1767571220.0}',
    ]
    log = tmp_path / "ml.jsonl"
    log.write_bytes(newline.join(entries).encode() + newline.encode())
    assert goodputlogs.load([log], "ml-goodput", False, whole_lines=True).records == 3
    log.write_bytes(newline.join(entries).encode() + newline.encode() + b'{"job_name": "j", "step_co')
    assert goodputlogs.load([log], "ml-goodput", False, whole_lines=True).records == 3


def test_logs_read_whole_leave_an_unfinished_last_line_out_too(tmp_path):
    csv_log = tmp_path / "jobs.csv"
    csv_log.write_text("type,job,time,event,step\nevent,a,1767571200,job_start,\nevent,a,17675712")  # cut in a time
    assert goodputlogs.load([csv_log], "native", False, whole_lines=True).records == 1
    ml = tmp_path / "ml.jsonl"
    ml.write_text('{"job_name": "j", "job_start_time": 1767571200.0}\n{"job_name": "j", "step_co')
    assert goodputlogs.load([ml], "ml-goodput", False, whole_lines=True).records == 1
    array = tmp_path / "ml.json"  # a JSON array's last line is "]": never left out
    array.write_text('[\n{"jsonPayload": {"job_name": "j", "job_start_time": 1767571200.0}}\n]')
    assert goodputlogs.load([array], "ml-goodput", False, whole_lines=True).records == 1
    array.write_bytes(b"\xef\xbb\xbf" + array.read_bytes())  # a byte-order mark first: still an array
    assert goodputlogs.load([array], "ml-goodput", False, whole_lines=True).records == 1


# ---- M2, M3: Alertmanager payloads --------------------------------------------------------------------------------
def firing(**change: object) -> dict:
    payload = json.loads((ALERTS / "firing.json").read_text())
    alert = payload["alerts"][0]
    for key, value in change.items():
        if key == "planned":
            alert["labels"]["tpufleet_planned"] = value
        else:
            alert[key] = value
    return payload


def post(fleet, payload: dict):
    return client(fleet.state).post("/api/v1/alerts", headers={"Authorization": f"Bearer {TOKEN}"}, json=payload)


@pytest.mark.parametrize("value", ["yes", "1", "", " true", "no", "truee"])
def test_a_planned_label_other_than_true_or_false_is_422_naming_it(fleet, value):
    """`yes` and `1` opened an unplanned fault (counted in tpufleet_open_faults, firing the repair-time alert)."""
    before = snapshot(fleet.state)
    r = post(fleet, firing(planned=value))
    assert r.status_code == 422
    assert r.json()["error"] == f'alerts[0].labels."tpufleet_planned": {json.dumps(value)}; true or false'
    assert snapshot(fleet.state) == before


def test_a_resolution_closes_its_fault_whatever_its_planned_label_says(fleet):
    """A fault opened before the label was checked (`yes`: unplanned) is still closed by its resolution: a 422
    would leave it open for good (Alertmanager does not retry a 4xx)."""
    assert post(fleet, firing(planned="true")).status_code == 200
    resolved = firing(planned="yes", status="resolved", endsAt="2026-03-02T11:15:04Z")
    r = post(fleet, resolved)
    assert r.status_code == 200, r.json()
    assert not [f for f in fleet("faults", "-o", "json").json if f["target"] == "host:c07/3"]


@pytest.mark.parametrize("value, planned", [("true", True), ("TRUE", True), ("False", False), ("false", False)])
def test_true_and_false_in_any_case_say_whether_the_fault_is_planned(fleet, value, planned):
    r = post(fleet, firing(planned=value))
    assert r.status_code == 200 and r.json()["alerts"][0]["action"] == "opened"
    (fault,) = [f for f in fleet("faults", "-o", "json").json if f["target"] == "host:c07/3"]
    assert fault["planned"] is planned


@pytest.mark.parametrize(
    "field, value",
    [
        ("startsAt", "2026-13-45T00:00:00Z"),
        ("startsAt", "2026-02-29T10:00:00Z"),
        ("startsAt", "2026-03-02T24:00:00Z"),
        ("startsAt", "2026-03-02T10:00:61Z"),
        ("startsAt", "2026-03-02T10:00:00+25:00"),
        ("startsAt", "2026-03-02T10:00:00"),
        ("endsAt", "2026-13-45T00:00:00Z"),
        ("endsAt", "0001-01-00T00:00:00Z"),
        ("endsAt", None),
    ],
)
def test_a_time_that_does_not_exist_is_422_naming_its_field(fleet, field, value):
    """An impossible startsAt was stored in the fault's mark, and a new spelling of it opened a second fault."""
    before = snapshot(fleet.state)
    r = post(fleet, firing(**{field: value}))
    assert r.status_code == 422
    assert r.json()["error"] == f"alerts[0].{field}: {json.dumps(value)}; an RFC 3339 time"
    assert snapshot(fleet.state) == before


@pytest.mark.parametrize(
    "starts", ["2024-02-29T10:15:04.123456789Z", "2026-03-02T10:15:04+05:30", "2026-03-02t10:15:04z"]
)
def test_real_rfc3339_times_are_taken(fleet, starts):
    payload = firing(startsAt=starts, endsAt="0001-01-01T00:00:00Z")  # Go's zero time: a firing alert's endsAt
    r = post(fleet, payload)
    assert r.status_code == 200 and r.json()["opened"] == ["f1"]
    del payload["alerts"][0]["endsAt"]
    assert post(fleet, payload).json()["alerts"][0]["action"] == "unchanged"


def test_a_late_resolution_of_an_earlier_firing_leaves_a_newer_firings_fault_open(fleet):
    """The same alert fired, resolved, and fired again: the first resolution delivered again (a retry, a second
    Alertmanager of a pair) cleared the second firing's fault, matched by fingerprint whatever its startsAt."""
    first, second = "2026-03-02T10:00:00Z", "2026-03-02T12:00:00Z"

    def open_faults() -> list[str]:
        return [f["id"] for f in fleet("faults", "-o", "json").json if f["target"] == "host:c07/3"]

    resolved_first = firing(startsAt=first, status="resolved", endsAt="2026-03-02T11:00:00Z")
    for payload in (firing(startsAt=first), resolved_first, firing(startsAt=second)):
        assert post(fleet, payload).status_code == 200
    (newer,) = open_faults()
    r = post(fleet, resolved_first)
    assert r.status_code == 200 and r.json()["alerts"][0]["action"] == "unchanged"
    assert open_faults() == [newer]
    r = post(fleet, firing(startsAt=second, status="resolved", endsAt="2026-03-02T13:00:00Z"))
    assert r.json()["alerts"][0] == {**r.json()["alerts"][0], "action": "cleared", "fault": newer}
    assert open_faults() == []


def test_a_resolution_clears_the_earlier_firings_still_open_with_its_own(fleet):
    """A startsAt moved later by a restart of Prometheus opens a second fault; the resolution clears both."""
    assert post(fleet, firing(startsAt="2026-03-02T10:00:00Z")).status_code == 200
    assert post(fleet, firing(startsAt="2026-03-02T10:30:00Z")).status_code == 200
    r = post(fleet, firing(startsAt="2026-03-02T10:30:00Z", status="resolved", endsAt="2026-03-02T11:00:00Z"))
    assert r.status_code == 200 and r.json()["alerts"][0]["action"] == "cleared"
    assert not [f for f in fleet("faults", "-o", "json").json if f["target"] == "host:c07/3"]
