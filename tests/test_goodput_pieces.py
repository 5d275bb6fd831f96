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


def _cut(
    data: bytes, chunk: int, most: int | None, skip_bad: bool, file: Path | None = None, limit: int = 1 << 30
) -> tuple[bytes, Any]:
    """The pieces `_pieces` cuts `data` into, read `chunk` bytes at a time in pieces of about `most`, checked to
    follow each other (each at the offset the one before ended, each but the last empty or ended by a line end), joined;
    and the over-long line it stopped at, as (its first bytes, the lines ended before it), or the error that ended
    it (a log over `limit`), or None. From `file` (a regular file, whose pieces are read by offset), which `data`
    is written to, else from a stream of `data` in memory."""
    import io

    from tpufleet.state import goodputpieces, goodputstreams

    pieces: list[bytes] = []
    stopped: Any = None
    if file is not None:
        file.write_bytes(data)
    with pytest.MonkeyPatch.context() as mp, io.BytesIO(data) if file is None else file.open("rb") as fh:
        mp.setattr(events, "MAX_LINE_BYTES", LIMIT)
        mp.setattr(goodputstreams, "CHUNK_BYTES", chunk)
        try:
            for piece, offset in goodputpieces._pieces(fh, "log", limit, skip_bad, False, most):
                assert offset == sum(map(len, pieces))
                pieces.append(piece)
        except goodputpieces.LongLine as exc:
            stopped = (exc.text, sum(goodputpieces._line_ends(p) for p in pieces))
        except BadInput as exc:
            stopped = str(exc)
    assert all(p.endswith((b"\n", b"\r")) for p in pieces[:-1] if p)  # (a read with no line end gives an empty one)
    return b"".join(pieces), stopped


@settings(max_examples=150, derandomize=True, deadline=None)
@given(
    logs(),
    st.sampled_from([1, 2, 7, 64, LIMIT + 1, 4 * LIMIT]),
    st.sampled_from([None, 1, 40, LIMIT]),
    st.booleans(),
)
def test_a_log_is_cut_into_the_same_lines_whatever_the_reads_and_pieces(data, chunk, most, skip_bad):
    """Read a few bytes at a time in pieces of any size, or in one read in one piece: the same bytes in the same
    order (an over-long line put as one bad line with --skip-bad), and without it the same over-long line, after
    the same lines. Lines in one read are cut without joining or copying the read (`_whole_lines`) where no line
    can be over the limit, joined and scanned where one may be: both ways here."""
    whole = _cut(data, len(data) + 1, None, skip_bad)
    assert _cut(data, chunk, most, skip_bad) == whole
    if whole[1] is None and not skip_bad:
        assert whole[0] == data


@settings(max_examples=150, derandomize=True, deadline=None)
@given(logs(), st.sampled_from([1, 7, 64, 4 * LIMIT]), st.sampled_from([1, 40, LIMIT, 4 * LIMIT]), st.booleans())
def test_a_regular_file_is_cut_into_the_lines_a_stream_of_it_is(tmp_path_factory, data, chunk, most, skip_bad):
    """A regular file's pieces are read by their offsets where the pieces can be vouched for, and from the stream
    after that: the same bytes in the same order, the same over-long line after the same lines, or the same error
    for a log over its size (refused as a stream is, after the same lines)."""
    file = tmp_path_factory.mktemp("log") / "log.jsonl"
    for limit in (1 << 30, len(data) // 2):
        assert _cut(data, chunk, most, skip_bad, file, limit) == _cut(data, chunk, most, skip_bad, None, limit)


@settings(max_examples=80, derandomize=True, deadline=None)
@given(logs(), st.sampled_from([1, 40, LIMIT]), st.booleans())
def test_a_log_read_by_offset_for_the_compiled_loop_gives_what_it_gives_read_in_one(
    tmp_path_factory, data, most, skip_bad
):
    """The compiled loop's pieces of a regular file, read by offset: the same records, skipped lines and first
    error as the standard reader's of the log in one piece."""
    from tpufleet.goodput import linescan

    if not linescan.available():
        pytest.skip("the compiled loop needs Numba (make sweep-deps)")
    path = tmp_path_factory.mktemp("log") / "log.jsonl"
    path.write_bytes(data)
    whole, _ = snapshot(path, None, "lines", skip_bad, False)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(goodputpool, "COMPILED_MIN_BYTES", 0)
        mp.setattr(goodputlogs, "LOOP_PIECE_BYTES", most)
        assert snapshot(path, None, "msgspec", skip_bad, False)[0] == whole


def _by_offset(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes of the pieces read by offset (`_read_by_offset`), recorded as they are given."""
    from tpufleet.state import goodputpieces

    sizes: list[int] = []
    read = goodputpieces._read_by_offset

    def spied(*args: Any) -> Any:
        for piece, offset in read(*args):
            sizes.append(len(piece))
            yield piece, offset

    monkeypatch.setattr(goodputpieces, "_read_by_offset", spied)
    return sizes


def test_a_regular_file_is_read_a_piece_at_a_time_by_offset_and_its_last_lines_as_a_stream(tmp_path, monkeypatch):
    """Pieces of at least `most` bytes, each to a line feed, read by offset; the lines too near the end for a whole
    piece read as a stream, in one read; what comes out is the file, offsets counted from where the stream stood
    (standard input redirected from a file may stand past its start)."""
    from tpufleet.state import goodputpieces

    data = b"".join(b"%d\n" % (10**k) for k in range(40))  # lines of 2 to 41 bytes
    (tmp_path / "log").write_bytes(data)
    sizes = _by_offset(monkeypatch)
    reads = read_in_blocks(monkeypatch, 1 << 20)
    reads.reads.append([])
    with (tmp_path / "log").open("rb") as fh:
        fh.seek(7)
        pieces = list(goodputpieces._pieces(fh, "log", 1 << 30, False, False, 100))
    assert b"".join(p for p, _ in pieces) == data[7:]
    assert [o for _, o in pieces] == [sum(len(p) for p, _ in pieces[:k]) for k in range(len(pieces))]
    assert sizes == [len(p) for p, _ in pieces[: len(sizes)]] and len(sizes) == len(pieces) - 1
    assert all(size >= 100 and size - 100 < 42 for size in sizes)  # (the first line feed past 100 bytes)
    assert len(pieces[-1][0]) < 100 + 42 and reads.reads == [[len(pieces[-1][0])]]  # the rest: one read


def test_a_file_cut_short_while_read_by_offset_is_read_on_as_a_stream(tmp_path, monkeypatch):
    """A file truncated between two pieces (a log rotated by copy and truncate) ends the reading by offset; the
    stream reads on from there (nothing, here): no piece of bytes that are gone, no error."""
    from tpufleet.state import goodputpieces

    data = b"".join(b'{"n":%d}\n' % k for k in range(100))
    path = tmp_path / "log"
    path.write_bytes(data)
    got = []
    with path.open("rb") as fh:
        for piece, offset in goodputpieces._pieces(fh, "log", 1 << 30, False, False, 50):
            got.append((piece, offset))
            path.write_bytes(data[:40])  # (shorter than the piece after the first)
    assert [p for p, _ in got] == [data[: len(got[0][0])]] and len(got[0][0]) >= 50


def test_a_file_grown_past_its_limit_while_read_by_offset_is_refused_by_the_stream(tmp_path):
    """A file within its size limit when it is opened, written to past the limit while its pieces are read: the
    pieces by offset stop where the file ended when it was opened, and the stream reading on from there refuses
    it, as it refuses any log over its size, after whole lines of what was there."""
    from tpufleet.state import goodputpieces

    data = b"".join(b'{"n":%d}\n' % k for k in range(100))
    path = tmp_path / "log"
    path.write_bytes(data)
    got = []
    with path.open("rb") as fh, pytest.raises(BadInput, match="larger than the"):
        for piece, offset in goodputpieces._pieces(fh, "log", len(data), False, False, 50):
            got.append((piece, offset))
            with path.open("ab") as more:
                more.write(b'{"n":0}\n')
    joined = b"".join(p for p, _ in got)
    assert got and data.startswith(joined) and joined.endswith(b"\n")


def test_a_read_by_offset_that_fails_leaves_the_rest_to_the_stream(tmp_path, monkeypatch):
    """A read by offset that fails (an I/O error, say) ends the reading by offset; the stream reads on from there,
    and its own read names any failure: here it reads, and the pieces are the file."""
    import os

    from tpufleet.state import goodputpieces

    data = b"".join(b'{"n":%d}\n' % k for k in range(100))
    (tmp_path / "log").write_bytes(data)
    reads = []
    read = os.pread

    def pread(fd: int, size: int, offset: int) -> bytes:
        reads.append(offset)
        if len(reads) > 2:  # (a piece's line end looked for, the piece read, then a failure)
            raise OSError(5, "Input/output error")
        return read(fd, size, offset)

    monkeypatch.setattr(os, "pread", pread)
    with (tmp_path / "log").open("rb") as fh:
        pieces = list(goodputpieces._pieces(fh, "log", 1 << 30, False, False, 50))
    assert b"".join(p for p, _ in pieces) == data and len(reads) == 3 and len(pieces[0][0]) < 100


@settings(max_examples=60, derandomize=True, deadline=None)
@given(
    st.lists(st.sampled_from(GOOD[:6]), min_size=1, max_size=40),
    st.sampled_from([1, 7, 64, 1000]),
    st.sampled_from(["one process", "loop threads"]),
)
def test_what_a_log_held_is_its_size_and_crc_whatever_the_pieces(lines, chunk, how):
    """What tells a log from a copy (`Content`): its bytes' size and CRC-32 (zlib's, of them all), with each
    piece's CRC taken where it is decoded and joined in order, whatever the pieces (a copy read otherwise, a gzip
    one say, is cut otherwise)."""
    import io
    import zlib

    from tpufleet.goodput import linescan
    from tpufleet.state import goodputstreams

    data = b"\n".join(lines) + b"\n"
    if how == "loop threads" and not linescan.available():
        pytest.skip("the compiled loop needs Numba (make sweep-deps)")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(goodputstreams, "CHUNK_BYTES", chunk)
        mp.setattr(goodputlogs, "LOOP_PIECE_BYTES", max(1, chunk // 3))
        reading = goodputlogs._Reading(skip_bad=False, compiled=how == "loop threads")
        with goodputpool._loop_threads(reading.compiled) as threads:
            log = events.Log(job_limit=events.MAX_JOBS)
            content = goodputlogs._read_native_file(io.BytesIO(data), "log", 1 << 30, log, reading, threads)
    assert content == (len(data), zlib.crc32(data))
