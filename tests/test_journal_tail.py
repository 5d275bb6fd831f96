"""Reading the journal's end only (`show journal --tail`, `report`, `metrics`, `serve`'s metrics): the same
entries as reading it whole, and the damaged lines among those read, numbered as a whole reading numbers them."""

from __future__ import annotations

import json
import os
from dataclasses import replace

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from tpufleet.state import Store, journal, journalfile

GOOD, GARBAGE, BEYOND = "good", "garbage", "beyond"


@st.composite
def journals(draw):
    """Raw journal bytes whose good lines carry serials 1, 2, ... (unique), with damaged lines and lines beyond the
    state's serial anywhere, and perhaps a torn end; the state's serial."""
    kinds = draw(st.lists(st.sampled_from([GOOD, GOOD, GOOD, GARBAGE, BEYOND]), max_size=40))
    good = kinds.count(GOOD)
    serial = draw(st.integers(0, good + 1))
    out, n = [], 0
    for kind in kinds:
        if kind == GOOD:
            n += 1
            out.append(json.dumps({"serial": n, "summary": "x" * draw(st.integers(0, 30))}).encode())
        elif kind == GARBAGE:
            out.append(draw(st.sampled_from([b"", b"{not json", b"[1]", b'{"serial": true}'])))
        else:
            out.append(json.dumps({"serial": serial + 1 + draw(st.integers(0, 3))}).encode())
    raw = b"".join(line + b"\n" for line in out)
    if draw(st.booleans()):
        raw += draw(st.sampled_from([b'{"serial": 9', b'{"serial": %d}' % (n + 1), b"x", b'{"serial": 1}']))
    return raw, serial


@given(journals(), st.integers(1, 12), st.sampled_from([1, 7, 64, 65536]), st.sampled_from([1, 5, 1 << 24]))
# a torn end that repeats an earlier serial, read as an entry: its damaged lines are those after the repeat
@example(
    (b'{"serial": 1, "summary": ""}\n\n{"serial": 2, "summary": ""}\n{"serial": 3, "summary": ""}\n\n{"serial": 1}', 4),
    1,
    1,
    1,
)
def test_the_tail_is_the_end_of_the_whole_reading(tmp_path_factory, case, count, block, chunk):
    raw, serial = case
    path = tmp_path_factory.mktemp("j") / "journal.jsonl"
    path.write_bytes(raw)
    whole = journal.scan(raw, serial)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(journal, "_TAIL", block)
        mp.setattr(journalfile, "PIECE", chunk)
        tail = _read_tail(path, serial, count)
    assert tail.entries == whole.entries[-count:]
    assert tail.damaged == whole.damaged[len(whole.damaged) - len(tail.damaged) :]  # the end of the same numbers
    if tail.entries:  # every damaged line after the first entry shown was read
        first = _line_of(raw, tail.entries[0].serial)
        assert [d for d in whole.damaged if d > first] == [d for d in tail.damaged if d > first]
    assert path.read_bytes() == raw  # a reader writes nothing


def _read_tail(path, serial: int, count: int) -> journal.Scan:
    found = journal.read_back(path, serial, journal.last(count))
    found.entries = found.entries[-count:]
    return found


def _line_of(raw: bytes, serial: int) -> int:
    """The number of the last line holding the entry `serial`: the tail's first entry is the latest line of that
    serial (a torn end may repeat an earlier one, `{"serial": 1}` after the entry 3, read as an entry as a whole
    reading reads it)."""
    found = None
    for number, line in enumerate(raw.split(b"\n"), 1):
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if isinstance(doc, dict) and type(doc.get("serial")) is int and doc["serial"] == serial:
            found = number
    if found is None:
        raise AssertionError(serial)
    return found


def test_missing_journal_has_no_tail(tmp_path):
    assert _read_tail(tmp_path / "journal.jsonl", 5, 3).entries == []


def test_show_journal_tail_report_and_metrics_read_the_end(fleet, monkeypatch):
    for i in range(6):
        assert fleet("inject-fault", f"host:c{10 + i}/1").code == 0
    path = fleet.state / "journal.jsonl"
    raw = path.read_bytes().split(b"\n")
    path.write_bytes(b"\n".join([*raw[:2], b"{damaged", *raw[2:]]))  # line 3 damaged, serial 7 on line 8
    whole = fleet("show", "journal", "-o", "json")
    assert [e["serial"] for e in whole.json] == [1, 2, 3, 4, 5, 6, 7]

    monkeypatch.setattr(journal, "_TAIL", 16)  # read from the end a few lines at a time
    tail = fleet("show", "journal", "--tail", "2", "-o", "json")
    assert tail.code == 0 and tail.json == whole.json[-2:]
    tail = fleet("show", "journal", "--tail", "5", "-o", "json")  # serial 3 on, after the damaged line
    assert tail.json == whole.json[-5:] and "damaged line(s) 3 skipped" in tail.err
    report = fleet("report", "-o", "json")
    assert [e["serial"] for e in report.json["journal"]] == [7, 6, 5, 4, 3, 2, 1]
    metrics = fleet("metrics").out
    assert "\ntpufleet_state_last_change_timestamp_seconds " in metrics
    assert metrics == _metrics_reading_whole(fleet, monkeypatch)


def _metrics_reading_whole(fleet, monkeypatch) -> str:
    """`metrics` as it was made from the whole journal."""
    monkeypatch.setattr(Store, "journal_tail", lambda self, count, serial=None: _whole_tail(self, count, serial))
    return fleet("metrics").out


def _whole_tail(store: Store, count: int, serial: int | None) -> journal.Scan:
    found = store.journal_scan(serial)
    found.entries = found.entries[-count:]
    return found


def _whole_back(store: Store, enough, serial: int | None) -> journal.Scan:
    return store.journal_scan(serial)


@pytest.mark.parametrize(
    ("args", "shows_serial_5"),  # what is shown reaches serial 5's line, just before the damaged one
    [
        (("history", "--since", "4"), True),
        (("history", "--since", "1"), True),
        (("history", "--since", "8"), False),  # the current serial (a later one is refused, as by diff)
        (("history", "--since", "1h"), True),
        (("history", "--since", "0001-01-01T00:00:00Z"), True),
        (("history", "--since", "3000-01-01T00:00:00Z"), False),
        (("history", "--since", "5", "--slice", "a"), False),
        (("diff", "3"), True),
        (("diff", "0"), True),
        (("diff", "2", "5"), True),
        (("diff", "7"), False),
    ],
)
def test_history_and_diff_read_back_give_what_the_whole_journal_gives(fleet, monkeypatch, args, shows_serial_5):
    for command in (("allocate", "a", "--shape", "4x4x4"), ("plan-xconnect", "a", "--apply")):
        assert fleet(*command).code == 0
    for i in range(5):
        assert fleet("inject-fault", f"host:c{10 + i}/1").code == 0  # serials 4-8
    path = fleet.state / "journal.jsonl"
    raw = path.read_bytes().split(b"\n")
    path.write_bytes(b"\n".join([*raw[:5], b"{damaged", *raw[5:]]))  # line 6, before serial 6's line
    monkeypatch.setattr(journal, "_TAIL", 16)  # read from the end a few lines at a time
    back = fleet(*args, "-o", "json")
    with monkeypatch.context() as mp:
        mp.setattr(Store, "journal_back", lambda self, enough, serial=None: _whole_back(self, enough, serial))
        whole = fleet(*args, "-o", "json")
    assert back.code == whole.code == 0 and back.json == whole.json
    assert "damaged line(s) 6" in whole.err
    if shows_serial_5:  # the damaged lines among those read: all that matter to what is shown
        assert "damaged line(s) 6" in back.err


def test_diff_counts_a_serial_copied_twice_once(fleet):
    assert fleet("inject-fault", "host:c10/1").code == 0
    assert fleet("inject-fault", "host:c11/1").code == 0
    path = fleet.state / "journal.jsonl"
    raw = path.read_bytes().split(b"\n")  # serials 1-3 and the end
    path.write_bytes(b"\n".join([*raw[:3], raw[1], raw[3]]))  # serial 2's line again after serial 3's
    d = fleet("diff", "1", "-o", "json").json
    assert d["commits"] == 2 and [f["id"] for f in d["faults"]["opened"]] == ["f1", "f2"]


def test_suspects_read_back_to_the_window_count_what_the_whole_journal_gives(fleet, monkeypatch):
    from tpufleet.state import store as store_module

    monkeypatch.setattr(store_module, "CLEARED_FAULTS_KEPT", 1)  # cleared faults move into the journal at once
    for _ in range(4):
        for target in ("cube:c05", "host:c07/1"):
            assert fleet("inject-fault", target).code == 0
            assert fleet("clear-fault", target).code == 0
    path = fleet.state / "journal.jsonl"
    lines = path.read_bytes().split(b"\n")
    old = json.loads(lines[1])  # a line of years ago, before the window: reading back stops there
    path.write_bytes(b"\n".join([lines[0], json.dumps({**old, "time": "2020-01-01T00:00:00Z"}).encode(), *lines[2:]]))
    monkeypatch.setattr(journal, "_TAIL", 16)
    back = fleet("suspects", "-o", "json")
    with monkeypatch.context() as mp:
        mp.setattr(Store, "journal_back", lambda self, enough, serial=None: _whole_back(self, enough, serial))
        whole = fleet("suspects", "-o", "json")
    assert back.code == whole.code == 0 and back.json == whole.json
    assert back.json["faults_in_window"] == 8
    assert sorted(s["target"] for s in back.json["suspects"]) == ["cube:c05", "cube:c07", "host:c07/1"]


def test_a_line_copied_out_of_order_never_stops_reading_back_early(fleet, monkeypatch):
    """A copy of serial 3's line after serial 8's: reading back from the end met it first and stopped there, so
    `diff 5` lost serials 6-8 and `history --since 5` started at 9."""
    for i in range(10):
        assert fleet("inject-fault", f"host:c{10 + i}/1").code == 0  # serials 2-11
    path = fleet.state / "journal.jsonl"
    lines = path.read_bytes().split(b"\n")[:-1]
    lines.insert(8, lines[2])
    path.write_bytes(b"\n".join(lines) + b"\n")
    copy_at = len(b"\n".join(lines[:8])) + 1
    monkeypatch.setattr(journal, "_TAIL", path.stat().st_size - copy_at + 1)  # the first block starts at the copy
    for args in (("diff", "5"), ("history", "--since", "5"), ("history", "--since", "1h"), ("suspects",)):
        back = fleet(*args, "-o", "json")
        with monkeypatch.context() as mp:
            mp.setattr(Store, "journal_back", lambda self, enough, serial=None: _whole_back(self, enough, serial))
            whole = fleet(*args, "-o", "json")
        assert back.code == whole.code == 0 and back.json == whole.json, args
    assert fleet("diff", "5", "-o", "json").json["without_detail"] == []


@given(
    st.lists(st.one_of(st.binary(max_size=8).map(lambda b: b.replace(b"\r", b"\n")), st.integers(1, 9000)), max_size=8),
    st.sampled_from([1, 3, 64, 1 << 23]),
    st.sampled_from([2, 5, 100000]),
)
def test_lines_read_in_pieces_forward_and_back_are_the_lines_of_the_bytes(tmp_path_factory, parts, piece, limit):
    """Written pieces and sparse holes (the integers): read in pieces, forward or back, the same lines as the
    bytes in memory split give, a line longer than the limit without its bytes."""
    path = tmp_path_factory.mktemp("j") / "journal.jsonl"
    with path.open("wb") as fh:
        for part in parts:
            if isinstance(part, int):
                fh.seek(part, os.SEEK_CUR)
                fh.truncate()
            else:
                fh.write(part)
    raw = path.read_bytes()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(journalfile, "PIECE", piece)
        mp.setattr(journalfile, "MAX_LINE_BYTES", limit)
        expected = list(journalfile.split(raw))
        fd = os.open(path, os.O_RDONLY)
        try:
            if not any(isinstance(part, int) for part in parts):  # no holes: the pieces are PIECE bytes each
                assert len(list(journalfile.pieces(fd, 0, len(raw)))) == -(-len(raw) // piece)
            assert list(journalfile.lines(fd, len(raw))) == expected
            assert list(journalfile.lines_back(fd, len(raw)))[::-1] == expected
            assert journalfile.newlines_before(fd, len(raw)) == raw.count(b"\n")
            unkept = [replace(line, text=None) if line.text and b"\0" in line.text else line for line in expected]
            assert list(journalfile.lines(fd, len(raw), drop_nul=True)) == unkept
            assert list(journalfile.lines_back(fd, len(raw), drop_nul=True))[::-1] == unkept
        finally:
            os.close(fd)


def test_a_hole_under_the_line_limit_is_a_damaged_line_not_read_into_memory(fleet):
    """A sparse tail of 64 MiB (`truncate -s +64M`; a crash's zero fill) is shorter than the line limit: its NULs
    were made in memory, twice, to find the line damaged (a 200 MiB hole: 400 MB and seconds for `history`). A line
    holding a NUL or a hole is no entry: its bytes are passed over, as a line over the limit's are."""
    import tracemalloc

    assert fleet("inject-fault", "host:c10/1").code == 0
    path = fleet.state / "journal.jsonl"
    with path.open("r+b") as fh:
        fh.truncate(path.stat().st_size + 64 * 1024 * 1024)
    history = fleet("history", "-o", "json")
    assert history.code == 0 and [e["serial"] for e in history.json] == [1, 2]
    tracemalloc.start()
    try:
        whole = journal.read_scan(path, 2)
        back = journal.read_back(path, 2, journal.last(1))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [e.serial for e in whole.entries] == [1, 2] and back.entries[-1].serial == 2
    assert peak < 40 * 1024 * 1024, peak  # (a few 8 MiB pieces, not the hole)
