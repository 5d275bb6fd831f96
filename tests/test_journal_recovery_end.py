"""A writer's recovery sees a journal that ends with a committed line from the journal's end, however long that
line (a large `import k8s` delta): it reads that line back, not the whole journal, and leaves what a whole
reading leaves."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tpufleet.errors import BadStateFile
from tpufleet.state import journal, journalfile

LONG = 200_000  # bytes: a last line over the first block read back (64 KiB)


def _entry(serial: int, pad: int = 10) -> bytes:
    return json.dumps({"serial": serial, "summary": "x", "details": {"pad": "p" * pad}}).encode()


def _journal(path: Path, lines: list[bytes], end: bytes = b"\n") -> bytes:
    raw = b"\n".join(lines) + end
    path.write_bytes(raw)
    return raw


def _no_whole_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    def whole_scan(*args: object, **kwargs: object) -> None:
        raise AssertionError("recovery read the whole journal")

    monkeypatch.setattr(journalfile, "lines", whole_scan)


def test_a_committed_last_line_longer_than_the_first_block_needs_no_whole_scan(tmp_path, monkeypatch):
    path = tmp_path / "journal.jsonl"
    raw = _journal(path, [_entry(n) for n in range(1, 500)] + [_entry(500, LONG)])
    _no_whole_scan(monkeypatch)
    journal.recover(path, 500)
    assert path.read_bytes() == raw


@pytest.mark.parametrize(
    "last, end",
    [
        (_entry(501, LONG), b"\n"),  # the change being committed when the writer died: beyond the state
        (_entry(501, LONG), b""),  # torn
        (_entry(500, LONG)[:-1] + b"\0" * 10 + b"}", b"\n"),  # a zero-filled piece: damage, kept
        (b"p" * LONG, b"\n"),  # not an entry: damage, kept
    ],
)
def test_a_long_last_line_that_is_not_committed_is_recovered_as_a_whole_reading_does(tmp_path, last, end):
    path = tmp_path / "journal.jsonl"
    raw = _journal(path, [_entry(n) for n in range(1, 501)] + [last], end)
    wanted = journal.scan(raw, 500).wanted(raw)
    journal.recover(path, 500)
    assert path.read_bytes() == wanted


@settings(derandomize=True)
@given(
    st.lists(st.integers(0, 300), min_size=1, max_size=8),
    st.integers(0, 9),
    st.sampled_from([1, 7, 64, 65536]),
    st.sampled_from([1, 5, 1 << 23]),
)
def test_recovery_leaves_what_a_whole_reading_leaves(tmp_path_factory, pads, serial, block, piece):
    path = tmp_path_factory.mktemp("j") / "journal.jsonl"
    raw = _journal(path, [_entry(n, pad) for n, pad in enumerate(pads, 1)])
    wanted = journal.scan(raw, serial).wanted(raw)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(journal, "_TAIL", block)
        mp.setattr(journalfile, "PIECE", piece)
        try:
            journal.recover(path, serial)
        except BadStateFile:  # more than one entry beyond the state's serial: refused, nothing written
            assert len(journal.scan(raw, serial).beyond) > 1
            wanted = raw
    assert path.read_bytes() == wanted
