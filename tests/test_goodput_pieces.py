"""A native goodput log read in pieces gives what it gives read in one: the same records, skipped lines, cut-off
lines and the same first error, whatever the pieces' size and wherever a line end falls (LF, CR LF, a lone CR,
a CR LF cut between two pieces), with lines over the line limit (lowered here to 300 bytes), lines not UTF-8, a
byte-order mark, a gzip stream (whole or cut short) and a last line a writer has not finished."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import read_in_blocks
from tpufleet.errors import BadInput
from tpufleet.goodput import columnar, events, fastread
from tpufleet.state import goodputlogs, goodputpool

LIMIT = 300  # the line limit here: lines over it are a few hundred bytes, not a mebibyte
_HEAD = b'{"type":"job","job":"e","chips":4,"notes":"'
GOOD = [
    b'{"type":"event","job":"a","time":1767571200.0,"event":"job_start"}',
    b'{"type":"event","job":"a","time":1767571210.5,"event":"step_start","step":1}',
    b'{"type":"event","job":"b","time":1767571211.0,"event":"allocation","chips":64}',
    b'{"type":"job","job":"a","accelerator":"tpu-v4","chips":256,"ideal_step_s":1.5}',
    b'{"type":"capacity","time":"2026-01-05T00:00:00Z","accelerator":"tpu-v4","chips":4096}',
    b'{"type":"event","job":"\xc3\xa9","time":1767571200.0,"event":"job_end"}',
    b"",
    _HEAD + b"w" * (LIMIT - len(_HEAD) - 2) + b'"}',  # exactly the limit
]
BAD = [
    b'{"type":"job","job":"b","chips":64}\n{"type":"job","job":"b","chips":32}',  # refused even with --skip-bad
    b'{"type":"event","job":"a","time":"x","event":"job_end"}',
    b'{"type":"event","job":"a\xff","time":1767571200.0,"event":"job_end"}',
    b"[1]",
    _HEAD + b"y" * LIMIT + b'"}',
    _HEAD + b"z" * (3 * LIMIT) + b'"}',
]
NEWLINES = [b"\n", b"\r\n", b"\r"]


@st.composite
def logs(draw: Any) -> bytes:
    lines = draw(st.lists(st.sampled_from(GOOD + BAD), min_size=1, max_size=25))
    newline = draw(st.sampled_from(NEWLINES))
    data = b"".join(line + (draw(st.sampled_from(NEWLINES)) if draw(st.booleans()) else newline) for line in lines)
    if draw(st.booleans()):
        data = data.rstrip(b"\r\n") + draw(st.sampled_from([b"", b'{"type":"event","job":"a","ti']))
    return (b"\xef\xbb\xbf" if draw(st.booleans()) else b"") + data


def snapshot(path: Path, chunk: int | None, reader: str, skip_bad: bool, whole_lines: bool) -> tuple[Any, Any]:
    """(what one reader makes of the log, or ("error", message); the blocks it was read in): `chunk` bytes at a
    time, or in one piece (None)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(events, "MAX_LINE_BYTES", LIMIT)
        mp.setattr(goodputpool, "PARALLEL_MIN_BYTES", 1 << 62)
        blocks = read_in_blocks(mp, chunk or 1 << 20)
        if reader != "msgspec":
            mp.setattr(fastread, "_DECODER", None)
        if reader != "columns":
            mp.setattr(columnar, "pa", None)
        try:
            log = goodputlogs.load([path], "native", skip_bad, whole_lines=whole_lines)
        except BadInput as exc:
            return ("error", str(exc)), blocks
    by_job = {job: list(columns) for job, columns in log.events.items()}
    jobs = {k: vars(v) for k, v in log.jobs.items()}
    return (by_job, jobs, log.capacity, log.records, log.skipped, log.cut_off), blocks


@settings(max_examples=120, derandomize=True, deadline=None)
@given(
    logs(),
    st.sampled_from([1, 2, 7, 64, LIMIT + 1, LIMIT + 2]),
    st.sampled_from(["lines", "msgspec", "columns"]),
    st.booleans(),
    st.booleans(),
    st.sampled_from(["plain", "gzip", "gzip cut short"]),
)
def test_a_log_read_in_pieces_gives_what_it_gives_read_in_one(
    tmp_path_factory, data, chunk, reader, skip_bad, whole_lines, form
):
    path = tmp_path_factory.mktemp("log") / "log.jsonl"
    stored = data if form == "plain" else gzip.compress(data, mtime=0)
    path.write_bytes(stored[: max(10, len(stored) * 2 // 3)] if form == "gzip cut short" else stored)
    whole, _ = snapshot(path, None, reader, skip_bad, whole_lines)
    pieces, blocks = snapshot(path, chunk, reader, skip_bad, whole_lines)
    assert pieces == whole
    assert blocks.as_asked() and len(blocks.reads) == 1
    if form == "plain" and whole[0] != "error":  # (an error ends the reading at its piece)
        assert len(blocks.reads[0]) == -(-len(data) // chunk)


@given(st.binary(max_size=40).map(lambda raw: bytes(b"ab\r\n"[byte % 4] for byte in raw)))
def test_a_read_is_cut_after_its_last_line_end(data: bytes) -> None:
    """The whole lines of a read end at its last line feed, or at a later CR that is not its last byte (that one
    may be half a CR LF): the rest is a line still to come."""
    from tpufleet.state.goodputpieces import _split_at_line_end

    ends = [i + 1 for i, byte in enumerate(data) if byte == 10 or (byte == 13 and i < len(data) - 1)]
    cut = max(ends, default=0)
    assert _split_at_line_end(data) == (data[:cut], data[cut:])
