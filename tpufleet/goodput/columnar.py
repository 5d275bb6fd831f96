"""Native JSON lines a piece at a time as typed columns (Apache Arrow's JSON reader; pure, used when PyArrow is
installed), checked and grouped by job on the columns.

A piece of whole lines is decoded in C into one column per known key with a fixed type (`SCHEMA`); the range
checks (times, steps, chips, names, lengths) run on the columns, and only job, capacity and schema records (a
few per job) go through `eventrecords.add_record`. The result is `fastread.Decoded`, added to the Log exactly as the
msgspec reader's is, so the answers are the standard reader's. Arrow's reader is strict where the others
measured are lenient: a value of another type (a step given as ``true``, ``5.0`` or ``"5"``, a job id given as
a number), a repeated key, a lone surrogate, an unknown key or a line that is not one object fails the whole
piece, and so does every range check: then `decode_piece` returns None and the caller reads that piece the
standard way, which names the first problem (file, line, field, value) or accepts the piece as before.
"""

from __future__ import annotations

from typing import Any

from tpufleet.goodput.events import CODE, MAX_CHIPS, MAX_STEP, MAX_TEXT
from tpufleet.goodput.fastread import Batch, Decoded, _odd_breaks, flat_lines  # (a byte-order mark: flat_lines)
from tpufleet.goodput.times import MAX_TIME, SMALLEST_TIME

try:
    import pyarrow as pa  # type: ignore[import-untyped, import-not-found, unused-ignore]
    import pyarrow.compute as pc  # type: ignore[import-untyped, import-not-found, unused-ignore]
    import pyarrow.json as pj  # type: ignore[import-untyped, import-not-found, unused-ignore]
except ImportError:  # optional: the msgspec and standard readers give the same answers, slower
    pa = pc = pj = None

__all__ = ["available", "decode_piece"]

# The keys of an event and the one JSON type this reader takes for each (an int where a float is wanted is the
# same number to both readers); an event with any other key or type is read the standard way.
_OTHER_KINDS = ("job", "capacity", "schema")
_MARKS = tuple(f'"type":{sep}"{k}"'.encode() for k in _OTHER_KINDS for sep in ("", " "))  # tpufleet's, json.dumps'

_SLICE_COUNTS = CODE["slice_counts"]

if pa is not None:
    SCHEMA: Any = pa.schema(
        [(k, pa.string()) for k in ("type", "job", "event", "label")]
        + [("time", pa.float64()), ("step", pa.int64()), ("chips", pa.int64())]
    )
    _PARSE: Any = pj.ParseOptions(explicit_schema=SCHEMA, unexpected_field_behavior="error", newlines_in_values=False)
else:
    SCHEMA = _PARSE = None


def available() -> bool:
    return pa is not None


def decode_piece(piece: bytes) -> Decoded | None:
    """A piece of whole lines decoded and its plain events checked, on columns; None if it must be read the
    standard way (anything this reader does not vouch for).

    The few job, capacity and schema lines (found by how they are written) are cut out and decoded by the
    standard decoder; the rest must then be events, one a line, all of them typed as SCHEMA says."""
    if pa is None or not piece or _odd_breaks(piece):
        return None
    lines = flat_lines(piece)
    if lines is None or not _only_objects(piece):
        return None
    others, rest = _cut_others(piece, lines)
    if others is None:
        return None
    table = (
        _table(rest)
        if rest
        else pa.table({k: pa.array([], t) for k, t in zip(SCHEMA.names, SCHEMA.types, strict=True)})
    )
    if table is None or table.num_rows != lines - len(others):  # a blank line: numbering would drift
        return None
    kinds = table.column("type")
    if kinds.null_count or (len(kinds) and not pc.all(pc.equal(kinds, "event")).as_py()):
        return None
    batch = _batch(table)
    return None if batch is None else Decoded(lines, batch, others)


def _only_objects(piece: bytes) -> bool:
    r"""Nothing but spaces and tabs outside each line's object (`flat_lines` has checked the braces): Arrow's reader
    crashed the process on a value before an object or after the last line (``null{}``, a last line ``null``).

    >>> _only_objects(b' {"a":1}\t\n{"b":2}'), _only_objects(b'null{}\n'), _only_objects(b'{}\nnull')
    (True, False, False)
    """
    compact = piece.translate(None, b" \t")
    breaks = compact.count(b"\n")
    ended = compact.endswith(b"\n")
    return (
        compact.startswith(b"{")
        and (ended or compact.endswith(b"}"))
        and compact.count(b"}\n") == breaks
        and compact.count(b"\n{") == breaks - ended
    )


def _cut_others(piece: bytes, lines: int) -> tuple[list[tuple[int, str, dict[str, Any]]] | None, bytes]:
    """(row, record type, its other fields) of the job, capacity and schema lines, decoded the standard way,
    and the piece without them; None if one of them is not such a record."""
    import numpy as np

    from tpufleet.jsontext import parse_json_line

    found = [i for mark in _MARKS for i in _find_all(piece, mark)]
    if not found:
        return [], piece
    ends = np.flatnonzero(np.frombuffer(piece, dtype=np.uint8) == ord("\n"))
    if len(ends) < lines:
        ends = np.append(ends, len(piece))
    rows = sorted(set(np.searchsorted(ends, np.array(found)).tolist()))
    out: list[tuple[int, str, dict[str, Any]]] = []
    kept, done = [], 0
    for row in rows:
        start, end = (int(ends[row - 1]) + 1 if row else 0), int(ends[row]) + 1
        try:
            record = parse_json_line(piece[start:end].decode("utf-8"))
        except (ValueError, RecursionError):
            return None, b""
        if type(record) is not dict or record.get("type") not in _OTHER_KINDS:
            return None, b""
        out.append((row, record.pop("type"), record))
        kept.append(piece[done:start])
        done = end
    kept.append(piece[done:])
    return out, b"".join(kept)


def _find_all(data: bytes, mark: bytes) -> list[int]:
    out, i = [], data.find(mark)
    while i >= 0:
        out.append(i)
        i = data.find(mark, i + 1)
    return out


def _table(piece: bytes) -> Any:
    """The events as an Arrow table of SCHEMA's columns; None if Arrow refuses any of it."""
    options = pj.ReadOptions(use_threads=False, block_size=len(piece) + 1)
    try:
        return pj.read_json(pa.py_buffer(piece), read_options=options, parse_options=_PARSE)
    except (pa.ArrowException, ValueError, OverflowError):
        return None


def _batch(t: Any) -> Batch | None:
    """The event rows as a Batch in job order; None if one fails a check the standard reader makes."""
    import numpy as np

    n = len(t)
    job, name, time = t.column("job"), t.column("event"), t.column("time")
    if job.null_count or name.null_count or time.null_count:
        return None
    if n and _outside(pc.utf8_length(job), 1, MAX_TEXT):
        return None
    codes = _codes(name)
    if codes is None:
        return None
    seconds = time.to_numpy()
    if n and not ((seconds >= SMALLEST_TIME) & (seconds <= MAX_TIME)).all():  # NaN fails too
        return None
    step = _counts(t.column("step"), MAX_STEP, codes == CODE["step_start"])
    chips = _counts(t.column("chips"), MAX_CHIPS, codes == CODE["allocation"])
    if step is None or chips is None:
        return None
    labels = _labels(t.column("label"))
    if labels is None:
        return None
    jobs, order, bounds = _grouped(job)
    if order is not None:
        seconds, codes, step, chips = seconds[order], codes[order], step[order], chips[order]
        if labels:
            row = np.empty(n, dtype=np.int64)
            row[order] = np.arange(n)
            labels = {int(row[i]): label for i, label in labels.items()}
    return Batch(jobs, bounds, np.ascontiguousarray(seconds, dtype=np.float64), codes, step, chips, labels)


def _outside(values: Any, low: int, high: int) -> bool:
    bounds = pc.min_max(values)
    return bool(bounds["min"].as_py() < low or bounds["max"].as_py() > high)


def _codes(name: Any) -> Any:
    """Event codes (int8) from the names; None if a name is unknown or slice_counts (the standard reader's)."""
    import numpy as np

    encoded = name.combine_chunks().dictionary_encode() if len(name) else None
    if encoded is None:
        return np.zeros(0, dtype=np.int8)
    table = [CODE.get(n, -1) for n in encoded.dictionary.to_pylist()]
    if -1 in table or _SLICE_COUNTS in table:
        return None
    return np.array(table, dtype=np.int8)[encoded.indices.to_numpy()]


def _counts(column: Any, limit: int, required: Any) -> Any:
    """A step or chip count column: -1 where absent; None if one is out of 0..limit or absent where required."""
    import numpy as np

    if len(column) > column.null_count and _outside(column, 0, limit):
        return None
    if not column.null_count:
        return column.to_numpy()
    if (column.is_null().to_numpy(zero_copy_only=False) & required).any():
        return None
    values = column.fill_null(-1).to_numpy()
    return np.ascontiguousarray(values, dtype=np.int64)


def _labels(column: Any) -> dict[int, str] | None:
    """Row -> label of the rows with one (few: custom badput); None if one is longer than MAX_TEXT."""
    import numpy as np

    if column.null_count == len(column):
        return {}
    lengths = pc.utf8_length(column).fill_null(0).to_numpy()
    if lengths.max() > MAX_TEXT:
        return None
    rows = np.flatnonzero(lengths > 0)
    if not len(rows):
        return {}
    taken = column.take(pa.array(rows)).to_pylist()
    return dict(zip(rows.tolist(), taken, strict=True))


def _grouped(job: Any) -> tuple[list[str], Any, Any]:
    """The distinct jobs (first seen first), the rows in job order (log order within a job; None: as they are)
    and each job's bounds in that order."""
    import numpy as np

    if not len(job):
        return [], None, np.array([0])
    encoded = job.combine_chunks().dictionary_encode()
    jobs = encoded.dictionary.to_pylist()
    ids = encoded.indices.to_numpy()
    if len(jobs) == 1:
        return jobs, None, np.array([0, len(ids)])
    order = np.argsort(ids, kind="stable")
    return jobs, order, np.searchsorted(ids[order], np.arange(len(jobs) + 1))
