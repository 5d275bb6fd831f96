"""JSON text and decoded documents, checked without touching a file: the pure half of the bounded readers.

`tpufleet.state.inputfiles` reads the files (size caps) and re-exports these; the core uses them on text or bytes
it is given (an event log's lines, a point's document):

* `decode_utf8`: strict UTF-8 (a leading byte-order mark dropped), the error naming the first bad byte's offset.
* `parse_json` / `load_json`: the standard decoder, refusing ``NaN`` / ``Infinity`` / ``-Infinity`` and numbers
  that overflow to infinity (``1e400``), nesting deeper than `MAX_DEPTH`, and integers too long to parse.
  `parse_json_line` is the event logs' hot path; `parse_json_state` keeps floats floats for the state schema.
* `check_finite`: no NaN or infinite float anywhere in a loaded document.
* `dumps_indented`: the standard encoder's indented text, made by its C encoder and msgspec's formatter.

Limits (documented in the README's "Safety" section): `MAX_SPEC_BYTES` for YAML/JSON specifications (fault
scenarios, workloads, fault rates, saved plans), `MAX_STATE_BYTES` for ``state.json``, `MAX_LOG_BYTES` for each
goodput event log, `MAX_DEPTH` levels of nesting in any YAML or JSON document.

>>> parse_json('{"a": [1, 2.5]}')
{'a': [1, 2.5]}
>>> nested_deeper_than("[[[]]]", 2)
True
"""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any

from tpufleet.constants import MiB
from tpufleet.errors import NO_VALUE, BadStateFile, shown

__all__ = [
    "BOM",
    "MAX_DEPTH",
    "MAX_LOG_BYTES",
    "MAX_SPEC_BYTES",
    "MAX_STATE_BYTES",
    "JsonProblem",
    "check_finite",
    "decode_utf8",
    "dumps_indented",
    "load_json",
    "nested_deeper_than",
    "parse_json",
    "parse_json_line",
    "parse_json_state",
]

MAX_SPEC_BYTES = 1 * MiB  # scenario, workload, fault-rate and plan files (YAML parses at 1-3 s per MiB)
MAX_STATE_BYTES = 64 * MiB  # state.json
MAX_LOG_BYTES = 256 * MiB  # each goodput event log (1 M native events are about 96 MB)
MAX_DEPTH = 64  # levels of nesting (lists and mappings) in any YAML or JSON document

BOM = b"\xef\xbb\xbf"


class JsonProblem(ValueError):
    """Why a JSON text was refused (`parse_json`); the caller names the file, line and field."""

    def __init__(self, problem: str, value: object = NO_VALUE) -> None:
        super().__init__(problem)
        self.problem, self.value = problem, value


def decode_utf8(data: bytes, file: str) -> str:
    """Strict UTF-8 (a leading byte-order mark dropped); BadStateFile naming the offset of the first bad byte."""
    skip = len(BOM) if data.startswith(BOM) else 0
    try:
        return data[skip:].decode("utf-8") if skip else data.decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = exc.start + skip
        raise BadStateFile(
            file, "", data[offset : offset + 4], f"not UTF-8 text: invalid byte at offset {offset}"
        ) from None


# ---- JSON ---------------------------------------------------------------------------------------------------
_STRINGS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')  # a JSON string, escapes and all
_ONLY_BRACKETS = {c: None for c in range(128) if chr(c) not in "[]{}"}  # str.translate table
_INNERMOST = re.compile(r"\[\]|\{\}")


def nested_deeper_than(text: str, limit: int) -> bool:
    """Whether the JSON text nests lists and objects more than `limit` deep (brackets in strings do not count).

    Each pass of a regular expression removes the innermost pairs, so `limit` passes leave a pair only if the
    text nests deeper: a few milliseconds for a 4-pod state file. Unbalanced brackets give False (the decoder
    then says what is wrong).
    """
    brackets = _STRINGS.sub("", text).translate(_ONLY_BRACKETS)
    for _ in range(limit):
        if not brackets:
            return False
        fewer = _INNERMOST.sub("", brackets)
        if fewer == brackets:
            return False
        brackets = fewer
    return _INNERMOST.search(brackets) is not None


def _plain(exc: BaseException) -> str:
    """A short reason for a ValueError of the decoders (the long one Python gives for a huge integer)."""
    text = str(exc)
    if "integer string conversion" in text:
        return "an integer with more than 4,300 digits"
    return " ".join(text.split())[:120] or type(exc).__name__


def _refuse_constant(name: str) -> float:
    raise JsonProblem(f"{name} is not a number JSON allows", name)


def _finite_float(text: str) -> float:
    number = float(text)
    if math.isinf(number):
        raise JsonProblem("number too large", text[:40])
    return number


def _keys_once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object whose keys are all different: a key given twice is ambiguous (Python's decoder keeps the last, other
    readers the first), so it is refused rather than guessed at."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(f"key {shown(key)} is given twice in one object", key)
            seen.add(key)
    return out


class _DuplicateKey(JsonProblem):
    """A key given twice in one object; the decoder's hook cannot say where, `_second_key_line` can."""


_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[{}\[\]:,]')  # a string (unrolled: linear), or a bracket


def _second_key_line(text: str) -> int | None:
    """The line of the key given a second time in the first object (in the order objects close, as the decoder
    meets them) that holds one, in the valid JSON `text` (a scan of its strings and brackets, run only to place
    the error)."""
    stack: list[tuple[set[str], list[int]] | None] = []  # per open bracket: an object's keys and repeat, or None
    expect_key = False
    for token in _TOKENS.finditer(text):
        lexeme = token.group()
        if lexeme in "{[":
            stack.append((set(), []) if lexeme == "{" else None)
            expect_key = lexeme == "{"
        elif lexeme in "}]":
            top = stack.pop()
            if top is not None and top[1]:
                return top[1][0]
            expect_key = False
        elif lexeme == ",":
            expect_key = bool(stack) and stack[-1] is not None
        elif lexeme == ":":
            expect_key = False
        elif expect_key:
            top, key = stack[-1], json.loads(lexeme)
            assert top is not None
            if key in top[0] and not top[1]:
                top[1].append(text.count("\n", 0, token.start()) + 1)
            top[0].add(key)
            expect_key = False
    return None


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_finite_float, object_pairs_hook=_keys_once)


class _WrittenAsFloat(float):
    """A number written with a point or an exponent. JSON Schema (and so the validator) calls 6.0 an integer;
    a state file is written by tpufleet, which writes integers as integers, so here 6.0 is not one."""

    def is_integer(self) -> bool:
        return False


def _finite_written_float(text: str) -> float:
    return _WrittenAsFloat(_finite_float(text))


_WRITTEN_DECODER = json.JSONDecoder(
    parse_constant=_refuse_constant, parse_float=_finite_written_float, object_pairs_hook=_keys_once
)
_FAST_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)


def parse_json(text: str, written_by_us: bool = False) -> Any:
    """The JSON value of `text`; JsonProblem (a ValueError) saying what is wrong if it is not acceptable.
    `written_by_us`: a file tpufleet wrote (a saved plan), whose integers are written as integers: there 6.0 is
    no integer for the schema."""
    if text.count("[") + text.count("{") > MAX_DEPTH and nested_deeper_than(text, MAX_DEPTH):
        raise JsonProblem(f"nested more than {MAX_DEPTH} levels deep")
    decoder = _WRITTEN_DECODER if written_by_us else _DECODER
    try:
        return _text_only(decoder.decode(text), text)
    except _DuplicateKey as exc:
        line = _second_key_line(text)
        raise JsonProblem(exc.problem + (f" (line {line})" if line else ""), exc.value) from None
    except JsonProblem:
        raise
    except json.JSONDecodeError as exc:
        raise JsonProblem(f"not valid JSON ({_said(exc)} at line {exc.lineno} column {exc.colno})") from None
    except (ValueError, RecursionError) as exc:  # an integer too long to parse; nesting (the scan bounds it)
        raise JsonProblem(f"not valid JSON ({_plain(exc)})") from None


def _said(exc: json.JSONDecodeError) -> str:
    """The decoder's problem, without the "at" some end with (a raw control character in a string: "Invalid
    control character at", which read "... at at column 23" before the place)."""
    return exc.msg.removesuffix(" at")


def _text_only(value: Any, text: str) -> Any:
    """`value`, unless an escape in `text` made a lone UTF-16 surrogate (``"\\ud800"``): Python's decoder takes it,
    but it is no text, and writing it out (a report, a table) would fail. The state file keeps its own reader."""
    if "\\u" in text:
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise JsonProblem("not valid JSON (a lone UTF-16 surrogate escape is not text)") from None
    return value


def parse_json_line(text: str) -> Any:
    """One line of an event log (the hot path: a million lines a report): `parse_json` without the nesting
    pre-scan or the overflow check. The decoder's own recursion guard still bounds nesting (refused here as a
    JsonProblem), and the readers accept no nested value in any field and range-check every number they use."""
    return _text_only(_decode(_FAST_DECODER, text, one_line=True), text)


_STATE_DECODER = json.JSONDecoder(
    parse_constant=_refuse_constant, parse_float=_WrittenAsFloat, object_pairs_hook=_keys_once
)


def parse_json_state(text: str) -> Any:
    """`parse_json_line` for the state file: numbers written as floats stay floats for the schema's integer check
    (`"serial": 6.0` is refused, not read as 6), and a key given twice in one object (a slice added by hand under a
    name already used, which would silently drop the other) is refused as in every input file (the hook costs
    about 1% of the parse)."""
    try:
        return _decode(_STATE_DECODER, text, one_line=False)
    except _DuplicateKey as exc:
        line = _second_key_line(text)
        raise JsonProblem(exc.problem + (f" (line {line})" if line else ""), exc.value) from None


def _decode(decoder: json.JSONDecoder, text: str, one_line: bool) -> Any:
    """The decoder's value of `text`, without the nesting pre-scan; JsonProblem saying what is wrong (the column,
    and the line unless `text` is one line; nesting beyond the decoder's recursion guard)."""
    try:
        return decoder.decode(text)
    except JsonProblem:
        raise
    except json.JSONDecodeError as exc:
        where = f"column {exc.colno}" if one_line else f"line {exc.lineno} column {exc.colno}"
        raise JsonProblem(f"not valid JSON ({_said(exc)} at {where})") from None
    except RecursionError:
        raise JsonProblem("nested too deeply") from None
    except ValueError as exc:  # an integer too long to parse
        raise JsonProblem(f"not valid JSON ({_plain(exc)})") from None


def load_json(text: str, file: str, written_by_us: bool = False) -> Any:
    """`parse_json`, with BadStateFile naming the file."""
    try:
        return parse_json(text, written_by_us)
    except JsonProblem as exc:
        raise BadStateFile(file, "", exc.value, exc.problem) from None


def check_finite(data: object, file: str, where: str = "") -> None:
    """Refuse NaN and infinite floats anywhere in a loaded document (iterative: depth is already bounded)."""
    stack: list[tuple[object, str]] = [(data, where)]
    while stack:
        value, at = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            raise BadStateFile(file, at, value, "must be a finite number")
        if isinstance(value, dict):
            stack.extend((v, f"{at}.{k}" if at else str(k)) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, f"{at}.{i}" if at else str(i)) for i, v in enumerate(value))


# Below this much compact text, the pure-Python indenting encoder (about 16 KB per ms) is done before msgspec
# would have been imported (20-30 ms), unless it is already.
FORMATTER_MIN_CHARS = 128 * 1024


def dumps_indented(data: Any, indent: int, *, sort_keys: bool = False, ensure_ascii: bool = True) -> str:
    """``json.dumps(data, indent=indent, sort_keys=sort_keys, ensure_ascii=ensure_ascii, allow_nan=False)``, the
    same text, several times faster on large documents.

    Why: with an indent the standard library encodes in pure Python (12 ms for a wired TPU7x superpod's state, on
    every command that changes it), while its C encoder writes compact text only. So the C encoder writes the
    compact text (numbers, escapes and key order as always) and msgspec's formatter adds the newlines and
    indents, copying every token as it is. Small documents, and text with a lone surrogate (a file name's bad
    byte: not UTF-8 unescaped, refused by msgspec escaped), go the standard way. ValueError for NaN and
    infinities, as ``allow_nan=False`` gives.

    >>> dumps_indented({"b": [1e-05, {}], "a": "\u00e9"}, 1, sort_keys=True) == json.dumps(
    ...     {"b": [1e-05, {}], "a": "\u00e9"}, indent=1, sort_keys=True)
    True
    """
    compact = json.dumps(data, sort_keys=sort_keys, ensure_ascii=ensure_ascii, allow_nan=False, separators=(",", ":"))
    if len(compact) >= FORMATTER_MIN_CHARS or "msgspec" in sys.modules:
        import msgspec

        try:
            return msgspec.json.format(compact.encode(), indent=indent).decode()
        except (UnicodeEncodeError, msgspec.DecodeError):
            pass
    return json.dumps(data, indent=indent, sort_keys=sort_keys, ensure_ascii=ensure_ascii, allow_nan=False)
