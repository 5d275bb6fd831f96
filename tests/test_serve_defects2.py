"""`tpufleet serve` defects of the second review (/tmp/h_serve: M1-M3), each pinned: goodput logs being written (a
last line not finished yet is left for the next read, and `tpufleet_goodput_logs_read_ok` says whether the logs
read), and Alertmanager payloads whose `tpufleet_planned` label or times are not what they must be (422 naming the
field, nothing changed)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="tpufleet serve needs the serve extra (starlette, uvicorn)")
pytest.importorskip("httpx", reason="Starlette's TestClient needs httpx")

from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from tpufleet.goodput import columnar, fastread
from tpufleet.state import goodputlogs

ROOT = Path(__file__).parent.parent
GOODPUT = ROOT / "fixtures" / "goodput" / "fleet.jsonl"
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
        mp.setattr(goodputlogs, "CHUNK_BYTES", 256)  # many pieces: the last line is a piece of its own
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
