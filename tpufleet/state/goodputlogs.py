"""Goodput event logs and --exclude files, read: the goodput report's only file access (its core,
`tpufleet.goodput`, takes the decoded records).

A log is a file or ``-`` (standard input), plain or gzip-compressed (known by its first two bytes, as `sweep
--keep-events` and the demo write them); every size limit counts the bytes as decompressed. A native log named
``*.csv`` or ``*.csv.gz`` is CSV, any other (standard input too) JSON lines (`is_csv`). Native JSONL is
streamed a piece of whole lines at a time (each line checked against MAX_LINE_BYTES before it is decoded); with
a large input and an idle CPU, pieces are decoded ahead in worker processes forked from a fork server
(`goodputpool`, sized from ``/proc/stat``), with the same answers as one process gives.

This module holds what the logs say (records, limits, repeated logs); opening them is `goodputstreams`, the cutting
into whole lines `goodputpieces`, the worker processes `goodputpool`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, NamedTuple

from tpufleet.constants import MiB
from tpufleet.errors import NO_VALUE, BadInput, BadStateFile, shown
from tpufleet.goodput import eventlines, events, fastread, mlfast, mlgoodput
from tpufleet.goodput.times import BadRecord
from tpufleet.goodput.windows import Exclusion, parse_exclusions
from tpufleet.state import crcjoin, goodputpool
from tpufleet.state.generations import StepProfiles
from tpufleet.state.goodputpieces import (
    LongLine,
    _json_array,
    _last_line_end,
    _pieces,
    _text_lines,
    _without_unfinished,
)
from tpufleet.state.goodputpool import _decoded, _fork_pool, _loop_threads
from tpufleet.state.goodputstreams import NOT_READ_AGAIN, STDIN, _open, _read_whole, _size, shown_name
from tpufleet.state.inputfiles import MAX_LOG_BYTES, MAX_SPEC_BYTES, decode_utf8, load_json_file

if TYPE_CHECKING:
    from concurrent.futures import Executor as Pool

__all__ = ["STDIN", "load", "load_exclusions", "shown_name"]

# The compiled loop's pieces: smaller than the others, as five are read ahead while its threads read them
# (`goodputpool._ahead`); 10 M events read as fast at 2 MiB as at 8, with 70 MiB less held at the peak.
LOOP_PIECE_BYTES = 2 * MiB
MAX_TOTAL_LOG_BYTES = 8 * MAX_LOG_BYTES  # all the files of one report together: about 20 M native events
CSV_NAMES = (".csv", ".csv.gz")  # how a native CSV log's name ends (`is_csv`)


def is_csv(path: Path) -> bool:
    """Whether a native log is CSV: its name ends in ``.csv``, or ``.csv.gz`` (gzip-compressed). Anything else is
    JSON lines, standard input included (it has no name to tell)."""
    return str(path).lower().endswith(CSV_NAMES)


def log_path(log: str | Path) -> Path:
    """The path of a log named `log`: ``-`` is standard input, but a file so named given as typed text (`./-`),
    whose Path would read ``-``, is made absolute so it is read as the file."""
    path = Path(log)
    return path.absolute() if str(path) == STDIN and str(log) != STDIN else path


def refuse_standard_input(paths: Sequence[Path]) -> None:
    """BadStateFile when a log read again as it changes is ``-``: standard input reads once, however often it is
    given (checked before `refuse_repeated`, which would call ``-`` twice a log counted twice)."""
    if any(str(path) == STDIN for path in paths):
        raise BadStateFile(shown_name(Path(STDIN)), "", NO_VALUE, NOT_READ_AGAIN)


def refuse_repeated(logs: Sequence[str | Path]) -> None:
    """BadInput when one log is given twice (the same name, another name of the same file, or ``-`` twice): its
    events would count twice. A log given as text is named as typed (`./a.jsonl` after `a.jsonl`: a Path drops the
    `./`). A log that cannot be read is left to the reading to name."""
    seen: dict[object, str] = {}
    for log in logs:
        path, name = log_path(log), shown_name(Path(log)) if str(log) == STDIN else str(log)
        key: object = STDIN if str(path) == STDIN else path.resolve()
        if key != STDIN:
            try:
                st = path.stat()
                key = (st.st_dev, st.st_ino)
            except OSError:
                pass
        if key in seen:
            raise BadInput(
                f"bad goodput logs: {name} is given twice (also as {seen[key]}): its events would count twice"
            )
        seen[key] = name


class Content(NamedTuple):
    """What a log held, to know a copy of it: its bytes (decompressed) and their CRC-32."""

    size: int
    crc: int


def refuse_same_content(seen: dict[Content, str], content: Content, name: str, records: int) -> None:
    """BadInput when log `name` holds, byte for byte, what an earlier one held (`seen`, added to): a copy, its
    gzip, or the same on standard input, whose events would count twice (exact repeats of an event are dropped
    only where they follow each other, and two logs' events at one instant interleave). Logs that hold no record
    (empty, a CSV header alone: an idle hour's rotated log) are alike and count nothing."""
    if not content.size or not records:
        return
    if content in seen:
        raise BadInput(
            f"bad goodput logs: {name} holds the same bytes as {seen[content]}: its events would count twice"
        )
    seen[content] = name


def _after_cut(fh: BinaryIO, name: str, line: int, reading: _Reading, log: events.Log) -> None:
    """A gzip stream cut off before its end (`goodputstreams._Gunzipped`) at `line`, the first line not read whole:
    an error naming it, or with `skip_bad` one bad line, counted and named (`Log.cut_off`). A log still being written
    (`whole_lines`) is a cut stream until its writer closes it: its whole lines are read, as a plain one's are."""
    if not getattr(fh, "cut_short", False) or reading.whole_lines:
        return
    if not reading.skip_bad:
        raise BadRecord(name, line, "<line>", NO_VALUE, _CUT_SHORT)
    log.skipped += 1
    log.cut_off.append((STDIN if name == shown_name(Path(STDIN)) else name, line))  # as `input.files` names it


_CUT_SHORT = "the gzip stream is cut off here, before its end (the file is truncated: a copy or upload stopped)"


def _read_native_file(
    fh: BinaryIO, name: str, limit: int, log: events.Log, reading: _Reading, pool: Pool | None
) -> Content:
    """Each piece by msgspec when it can vouch for all of it, else by the standard reader (same answers); with
    a pool, pieces are decoded ahead in its worker processes and added here in file order. What was read."""
    pieces = _pieces(
        fh, name, limit, reading.skip_bad, reading.whole_lines, LOOP_PIECE_BYTES if reading.compiled else None
    )
    line = read = crc = ended = 0
    try:
        for piece, offset, decoded, piece_crc, ends in _decoded(pieces, pool, reading.compiled):
            read, crc, ended = offset + len(piece), crcjoin.joined(crc, piece_crc, len(piece)), ended + ends
            line += _add_piece(piece, offset, decoded, name, line, log, reading.skip_bad)
    except LongLine as exc:
        raise exc.numbered(name, ended) from None
    _after_cut(fh, name, line + 1, reading, log)
    return Content(read, crc)


def _add_piece(
    piece: bytes, offset: int, decoded: fastread.Decoded | None, name: str, line: int, log: events.Log, skip_bad: bool
) -> int:
    """A piece's records into `log` (`line`: the lines before it); how many lines it held."""
    fast = 0 if decoded is None else fastread.add_decoded(decoded, line + 1, name, log)
    if fast:
        return fast
    lines, bad = _text_lines(piece, name, offset, line, skip_bad, log)
    eventlines.read_native_lines(enumerate(lines, start=line + 1), name, log, skip_bad)
    if bad is not None:
        raise bad
    return len(lines)


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False  # decode_utf8 names the byte
    return True


@dataclass(frozen=True)
class _Reading:
    """How the logs are read: malformed records skipped (and counted), or an error; with `whole_lines`, a last
    line without a line break that is no whole record yet left out (`tpufleet serve` reads logs being written)."""

    skip_bad: bool
    whole_lines: bool = False
    compiled: bool = False  # event lines by the compiled loop first (`goodputpool.compiled_for`)


def load(
    paths: list[Path],
    fmt: str,
    skip_bad: bool,
    job_limit: int | None = None,
    whole_lines: bool = False,
    files_only: bool = False,
) -> events.Log:
    """Every log into one Log: native JSONL is streamed (read and parsed a piece at a time); CSV and the
    ml-goodput forms are read whole (each at most MAX_LOG_BYTES decompressed). More than `job_limit` jobs is
    BadInput naming the log where the one too many is. With `whole_lines`, each log's last line is read only
    once finished: a JSON object, or ended by a line break (a writer may be partway through it). With
    `files_only`, a log that is not a regular file is BadStateFile, never read (a FIFO would wait for a writer)."""
    log = events.Log(job_limit=events.MAX_JOBS if job_limit is None else job_limit, step_profiles=StepProfiles())
    budget = MAX_TOTAL_LOG_BYTES
    native = [p for p in paths if fmt == "native" and not is_csv(p)]
    native_bytes = sum(_size(p) for p in native)
    reading = _Reading(skip_bad, whole_lines, goodputpool.compiled_for(native_bytes))
    seen: dict[Content, str] = {}
    # Worker processes lose to the compiled loop (10 M events, quiet machine: 18.9 s with them, 16.3 s without),
    # which runs in threads instead: one or other.
    parallel = native_bytes >= goodputpool.PARALLEL_MIN_BYTES
    with _fork_pool(parallel and not reading.compiled) as processes, _loop_threads(reading.compiled) as threads:
        pool = processes or threads
        for path in paths:
            name = shown_name(path)
            with _open(path, files_only) as fh:
                records = log.records
                try:
                    content = _load_one(fh, name, fmt, path in native, min(MAX_LOG_BYTES, budget), log, reading, pool)
                except events.TooManyJobs as exc:
                    raise BadInput(
                        f"{name}: field job: more than {exc.limit:,} jobs in one report; report on fewer logs "
                        f"(value {shown(exc.job)})"
                    ) from None
            budget -= content.size
            refuse_same_content(seen, content, name, log.records - records)
    return log


def _load_one(
    fh: BinaryIO, name: str, fmt: str, native: bool, limit: int, log: events.Log, reading: _Reading, pool: Pool | None
) -> Content:
    """One log into `log`; what it held (decompressed)."""
    if native:
        return _read_native_file(fh, name, limit, log, reading, pool)
    data = _read_whole(fh, name, limit)
    content = Content(len(data), crcjoin.crc32(data))
    if getattr(fh, "cut_short", False):
        data = data[: _last_line_end(data)]  # the line the cut runs through is not read (`_after_cut`)
    elif reading.whole_lines:
        data = _without_unfinished(data)
    cut_short = getattr(fh, "cut_short", False)
    # the line a cut runs through, named only for a cut stream: three passes over the log (0.15 s at 80 MB) else
    cut_at = data.count(b"\n") + data.count(b"\r") - data.count(b"\r\n") + 1 if cut_short else 0
    if cut_short and not reading.whole_lines and _json_array(data):
        raise BadRecord(name, cut_at, "<line>", NO_VALUE, f"{_CUT_SHORT}; a JSON array of entries is read whole")
    _read_whole_log(data, name, fmt, log, reading.skip_bad)
    _after_cut(fh, name, cut_at, reading, log)
    return content


def _read_whole_log(data: bytes, name: str, fmt: str, log: events.Log, skip_bad: bool) -> None:
    """A CSV or ml-goodput log read whole into `log`."""
    if fmt == "ml-goodput" and (data.isascii() or _is_utf8(data)) and mlfast.read(data, name, log):
        return  # decoded and checked on columns: the same answers as the importer's, entry by entry
    text = decode_utf8(data, name)
    del data
    if fmt == "ml-goodput":
        mlgoodput.read(text, name, log, skip_bad)
    else:
        eventlines.read_native(text, name, log, skip_bad, csv_format=True)


def load_exclusions(path: Path) -> list[Exclusion]:
    """An --exclude file: a JSON list of {start, end, reason}."""
    return parse_exclusions(load_json_file(path, "exclusions file", MAX_SPEC_BYTES), str(path))


def load_part(path: Path, fmt: str, skip_bad: bool, compiled: bool | None = None) -> tuple[events.Log, Content]:
    """One log read alone, in this process (a Dask worker's or a forked process's share of a report): its records
    and the bytes it held (decompressed), each log at most MAX_LOG_BYTES and MAX_JOBS jobs; the caller checks the
    limits of all the logs together (`load` is the reference: it says which log goes over). `compiled`: whether
    native event lines go to the compiled loop (None: as the log's own size says; the logs of one report are read
    with it when all of them together are large, and it is loaded then)."""
    log = events.Log(job_limit=events.MAX_JOBS, step_profiles=StepProfiles())
    native = fmt == "native" and not is_csv(path)
    name = shown_name(path)
    with _open(path) as fh:
        try:
            loop = (
                goodputpool.compiled_for(_size(path)) if compiled is None else compiled and goodputpool.loop_available()
            )
            reading = _Reading(skip_bad, compiled=native and loop)
            content = _load_one(fh, name, fmt, native, MAX_LOG_BYTES, log, reading, None)
        except events.TooManyJobs as exc:
            raise BadInput(
                f"{name}: field job: more than {exc.limit:,} jobs in one log (value {shown(exc.job)})"
            ) from None
    return log, content
