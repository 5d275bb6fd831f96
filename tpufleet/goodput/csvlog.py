"""Native goodput records as CSV (pure): one row a record, columns named like the keys (`events` has the
schema). The header is checked before any row: a column named twice, an unnamed column before the last named
one, or a field's name with spaces around it or in capitals would drop cells unseen, so each is refused naming
the column. A row is read as the record its named cells make; an empty cell is a field left out."""

from __future__ import annotations

import csv
import io

from tpufleet.errors import NO_VALUE
from tpufleet.goodput.eventrecords import NAMED_DEFAULTS, add_guarded
from tpufleet.goodput.events import MAX_LINE_BYTES, RECORD_FIELDS, Log
from tpufleet.goodput.times import BadRecord

# the fields a native record is read for: a CSV column naming one but for spaces or case would be dropped unseen
_CSV_FIELDS = frozenset(
    {"type", "job", "time", "event", "step", "chips", "slice", "label", "version", *RECORD_FIELDS}
    | {"flops_per_step", "peak_flops_per_chip", "model_flops_per_step", "gradient_bytes"}
    | {"active_slices", "total_slices", "available_slices"}
)


def _refuse_unreadable_header(header: list[str], file: str) -> None:
    """A column named twice in the header (its rows would give one of two values and drop the other unseen: a
    second ``time`` column made every row's time its own), or an unnamed column before the last named one (its
    cells would be dropped unseen: ``type,,job`` read no record's second cell)."""
    named = _named_columns(header)
    seen: set[str] = set()
    for position, name in enumerate(header[:named], start=1):
        if not name.strip():
            blank = " (it is blank)" if name else ""
            problem = f"column {position} has no name{blank}, so its cells would be dropped"
            raise BadRecord(file, 1, "<header>", name, problem)
        if name in seen:
            raise BadRecord(file, 1, "<header>", name, "names a column twice")
        _refuse_misspelt_field(name, position, file)
        seen.add(name)


def _named_columns(header: list[str]) -> int:
    """The columns up to the header's last named one: the cells past it (a spreadsheet's trailing commas, or cells
    of spaces alone) name no column, and a row may stop before them."""
    named = len(header)
    while named and not header[named - 1].strip():
        named -= 1
    return named


def _refuse_misspelt_field(name: str, position: int, file: str) -> None:
    """A header naming a field with spaces around it (``type, job``: a space after each comma) or in another
    case (``Type``, ``Ideal_Step_S``, as a spreadsheet capitalises): its cells would be read as no field, dropped
    unseen (an ideal step time left out makes PG an estimate) or refused row by row as missing."""
    field_name = name.strip().lower()
    if name == field_name or field_name not in _CSV_FIELDS:
        return
    how = "has spaces around its name" if name.strip() != name else "names a field in capitals (names are lower case)"
    raise BadRecord(file, 1, "<header>", name, f"column {position} {how}, so its cells are not read as {field_name}")


def read_csv(text: str, file: str, log: Log, skip_bad: bool) -> Log:
    """CSV rows as records; a field longer than MAX_LINE_BYTES makes its row bad."""
    limit = csv.field_size_limit()
    csv.field_size_limit(MAX_LINE_BYTES)  # a longer field is a bad row (not valid CSV), not a huge string
    try:
        reader = csv.reader(io.StringIO(text, newline=""))  # rows end at LF, CR LF or a lone CR, as JSONL lines
        try:
            header = next(reader, None)
        except csv.Error as exc:
            raise BadRecord(file, 1, "<header>", NO_VALUE, f"not valid CSV ({exc})") from None
        if header is None:
            return log
        _refuse_unreadable_header(header, file)
        names = header
        named = _named_columns(header)  # a row may stop after the last named column
        line = reader.line_num
        while True:
            start = line + 1
            try:
                row = next(reader, None)
            except csv.Error as exc:
                line = reader.line_num
                if not skip_bad:
                    raise BadRecord(file, start, "<row>", NO_VALUE, f"not valid CSV ({exc})") from None
                log.skipped += 1
                continue
            if row is None:
                return log
            line = reader.line_num
            if not row:
                continue
            if len(row) < named or any(row[named:]):  # a cut row, or a filled cell of no column
                _refuse_row(log, skip_bad, file, start, row, named)
                continue
            record = dict(zip(names[:named], row, strict=False))
            for key in NAMED_DEFAULTS:  # an empty cell is no field (a JSON record's "" is refused)
                if record.get(key) == "":
                    del record[key]
            add_guarded(log, skip_bad, record, file, start)
    finally:
        csv.field_size_limit(limit)


def _refuse_row(log: Log, skip_bad: bool, file: str, line: int, row: list[str], named: int) -> None:
    """A CSV row with fewer fields than its header's named columns (cut short: a missing cell is not an empty one),
    or a filled one past them (whose column is unknown, also under the unnamed columns a header ending in commas
    has): BadRecord naming the row's cells, or with `skip_bad` one bad row skipped and counted."""
    if not skip_bad:
        if len(row) < named:
            cells = ",".join(row)
            raise BadRecord(file, line, "<row>", cells, f"{len(row)} fields, fewer than the header's {named} columns")
        extra = ",".join(row[named:])
        raise BadRecord(
            file, line, "<row>", extra, f"{len(row)} fields, a filled one past the header's {named} named columns"
        )
    log.skipped += 1
