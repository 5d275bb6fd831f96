"""Serials as operators type them: one grammar for every place that takes one (`diff SERIAL [SERIAL]`,
`history --since SERIAL`, serve's `?since=SERIAL`).

A serial is written in the digits 0-9 alone, as the journal writes it: leading zeros and surrounding spaces are
ignored, and `-0` is 0 (as every other number reads it). A sign (`+1`), digit groups (`1_000`), another script's
digits and a negative serial are refused, each with the same message wherever it is given, as is a serial past the
18 digits the journal (and PostgreSQL's bigint) counts. Each place once read these its own way: `diff +1` read
serial 1 while `history --since +1` was "not a date".

>>> parse_serial(" 007", "argument SERIAL"), parse_serial("-0", "argument SERIAL")
(7, 0)
>>> parse_serial("+1", "argument SERIAL")
Traceback (most recent call last):
...
tpufleet.errors.BadInput: bad argument SERIAL '+1': a serial is written in the digits 0-9 alone (no sign, no '_')
"""

from __future__ import annotations

import re

from tpufleet.errors import BadInput, shown

MAX_SERIAL_DIGITS = 18  # past any serial a journal holds (and PostgreSQL's bigint)
SERIAL_DIGITS = "a serial is written in the digits 0-9 alone (no sign, no '_')"
# What was meant as a serial, well written or not: a sign, digits of any script and digit groups, nothing else
_SERIAL_LIKE = re.compile(r"[+-]?[\d_]*\d[\d_]*")


def looks_like_serial(text: str) -> bool:
    """Whether `text` was meant as a serial (an option that also takes a time tells the two apart by this)."""
    return bool(_SERIAL_LIKE.fullmatch(text.strip()))


def parse_serial(text: str, where: str, tail: str = "") -> int:
    """The serial `text` names; BadInput `bad {where} {text!r}: ...` otherwise, ending with `tail` (what else
    the place takes, or where serials are listed) when the value was not written as a serial."""
    digits = text.strip()
    if digits[:1] == "-" and digits[1:].isascii() and digits[1:].isdigit():
        if digits[1:].strip("0"):  # `diff -1` is not "one back": serials are the journal's own numbers
            raise BadInput(f"bad {where} {shown(text)}: serials count up from 0{tail}")
        digits = digits[1:]  # -0 is 0
    if not (digits.isascii() and digits.isdigit()):
        raise BadInput(f"bad {where} {shown(text)}: {SERIAL_DIGITS}{tail}")
    significant = digits.lstrip("0") or "0"
    if len(significant) > MAX_SERIAL_DIGITS:
        raise BadInput(f"bad {where} {shown(text)}: past the last serial tpufleet counts ({MAX_SERIAL_DIGITS} digits)")
    return int(significant)


def not_past(serial: int, text: str, where: str, current: int) -> int:
    """`serial` (read from `text`) when it is not past `current`, the state's serial; BadInput naming `where` and
    the value as typed otherwise (`diff`, `history --since` and serve's `?since=` refuse it alike)."""
    if serial > current:
        raise BadInput(f"bad {where} {shown(text)}: need SERIAL <= {current} (the current serial)")
    return serial
