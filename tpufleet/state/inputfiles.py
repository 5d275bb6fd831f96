"""One bounded reader for every file the tool reads: size caps, strict UTF-8, YAML without anchors, JSON depth.

Every function here turns what is wrong with a file into `BadStateFile` (exit 2, one line naming the file, the
field and the value); none of them lets a hostile file cost more than its size cap in memory or time:

* `read_bytes` / `read_text`: at most `limit` bytes are ever read (one byte more tells a file is too large);
  text must be UTF-8 (a UTF-8 byte-order mark is dropped) and the error names the byte offset of the first
  invalid byte.
* `load_yaml`: the safe loader, refusing anchors and aliases outright (no input of this tool needs them, and
  they are what makes a "billion laughs" file of a few hundred bytes expand to gigabytes), nesting deeper than
  `MAX_DEPTH`, integers too long for Python to parse, and the floats ``.nan`` and ``.inf``.
* `parse_json` / `load_json` / `load_json_file`: the standard decoder, refusing ``NaN`` / ``Infinity`` /
  ``-Infinity`` and numbers that overflow to infinity (``1e400``), nesting deeper than `MAX_DEPTH`, and integers
  too long to parse. `parse_json_line` is the event logs' hot path (see there).

Limits (documented in the README's "Safety" section): `MAX_SPEC_BYTES` for YAML/JSON specifications (fault
scenarios, workloads, fault rates, saved plans), `MAX_STATE_BYTES` for ``state.json``, `MAX_LOG_BYTES` for each
goodput event log, `MAX_DEPTH` levels of nesting in any YAML or JSON document.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from tpufleet.errors import BadStateFile

MiB = 1024 * 1024
MAX_SPEC_BYTES = 1 * MiB  # scenario, workload, fault-rate and plan files (YAML parses at 1-3 s per MiB)
MAX_STATE_BYTES = 64 * MiB  # state.json
MAX_LOG_BYTES = 256 * MiB  # each goodput event log (1 M native events are about 96 MB)
MAX_DEPTH = 64  # levels of nesting (lists and mappings) in any YAML or JSON document

_BOM = b"\xef\xbb\xbf"


class MissingFile(BadStateFile):
    """The file does not exist (a BadStateFile, so exit 2; the state store turns it into its own message)."""


class JsonProblem(ValueError):
    """Why a JSON text was refused (`parse_json`); the caller names the file, line and field."""

    def __init__(self, problem: str, value: object = None) -> None:
        super().__init__(problem)
        self.problem, self.value = problem, value


def _size(n: int) -> str:
    return f"{n // MiB} MiB" if n % MiB == 0 else f"{n:,} bytes"


def read_bytes(path: Path | str, what: str, limit: int) -> bytes:
    """The file's bytes, at most `limit` of them; BadStateFile if it cannot be read or is larger."""
    name = str(path)
    try:
        with open(path, "rb") as fh:
            data = fh.read(limit + 1)
    except FileNotFoundError:
        raise MissingFile(name, "", None, f"cannot be read: no such {what}") from None
    except OSError as exc:
        raise BadStateFile(name, "", None, f"cannot be read: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise BadStateFile(name, "", None, f"larger than the {_size(limit)} allowed for a {what}")
    return data


def decode_utf8(data: bytes, file: str) -> str:
    """Strict UTF-8 (a leading byte-order mark dropped); BadStateFile naming the offset of the first bad byte."""
    skip = len(_BOM) if data.startswith(_BOM) else 0
    try:
        return data[skip:].decode("utf-8") if skip else data.decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = exc.start + skip
        raise BadStateFile(
            file, "", data[offset : offset + 4], f"not UTF-8 text: invalid byte at offset {offset}"
        ) from None


def read_text(path: Path | str, what: str, limit: int = MAX_SPEC_BYTES) -> str:
    """The file as UTF-8 text, at most `limit` bytes."""
    return decode_utf8(read_bytes(path, what, limit), str(path))


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


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_finite_float)
_FAST_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)


def parse_json(text: str) -> Any:
    """The JSON value of `text`; JsonProblem (a ValueError) saying what is wrong if it is not acceptable."""
    if text.count("[") + text.count("{") > MAX_DEPTH and nested_deeper_than(text, MAX_DEPTH):
        raise JsonProblem(f"nested more than {MAX_DEPTH} levels deep")
    try:
        return _DECODER.decode(text)
    except JsonProblem:
        raise
    except json.JSONDecodeError as exc:
        raise JsonProblem(f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except (ValueError, RecursionError) as exc:  # an integer too long to parse; nesting (the scan bounds it)
        raise JsonProblem(f"not valid JSON ({_plain(exc)})") from None


def parse_json_line(text: str) -> Any:
    """One line of an event log (the hot path: a million lines a report): `parse_json` without the nesting
    pre-scan or the overflow check. The decoder's own recursion guard still bounds nesting (refused here as a
    JsonProblem), and the readers accept no nested value in any field and range-check every number they use."""
    try:
        return _FAST_DECODER.decode(text)
    except JsonProblem:
        raise
    except json.JSONDecodeError as exc:
        raise JsonProblem(f"not valid JSON ({exc.msg} at column {exc.colno})") from None
    except RecursionError:
        raise JsonProblem("nested too deeply") from None
    except ValueError as exc:  # an integer too long to parse
        raise JsonProblem(f"not valid JSON ({_plain(exc)})") from None


class _WrittenAsFloat(float):
    """A number written with a point or an exponent. JSON Schema (and so the validator) calls 6.0 an integer;
    a state file is written by tpufleet, which writes integers as integers, so here 6.0 is not one."""

    def is_integer(self) -> bool:
        return False


_STATE_DECODER = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_WrittenAsFloat)


def parse_json_state(text: str) -> Any:
    """`parse_json_line` for the state file: numbers written as floats stay floats for the schema's integer check
    (`"serial": 6.0` is refused, not read as 6)."""
    try:
        return _STATE_DECODER.decode(text)
    except JsonProblem:
        raise
    except json.JSONDecodeError as exc:
        raise JsonProblem(f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except RecursionError:
        raise JsonProblem("nested too deeply") from None
    except ValueError as exc:  # an integer too long to parse
        raise JsonProblem(f"not valid JSON ({_plain(exc)})") from None


def load_json(text: str, file: str) -> Any:
    """`parse_json`, with BadStateFile naming the file."""
    try:
        return parse_json(text)
    except JsonProblem as exc:
        raise BadStateFile(file, "", exc.value, exc.problem) from None


def load_json_file(path: Path | str, what: str, limit: int = MAX_SPEC_BYTES) -> Any:
    """A JSON file, bounded: ``load_json_file(path, "state file", MAX_STATE_BYTES)`` for ``state.json``.

    A missing file raises `MissingFile` (a BadStateFile), which a caller may turn into its own message.
    """
    return load_json(read_text(path, what, limit), str(path))


# ---- YAML ---------------------------------------------------------------------------------------------------
def _loader_class() -> type[Any]:
    """The safe loader, composing in Python (to see every anchor and alias, and the depth) over libyaml's
    events when PyYAML has libyaml (about 6 times faster than the pure-Python parser), else over PyYAML's own."""
    import yaml
    from yaml.composer import Composer
    from yaml.constructor import SafeConstructor
    from yaml.resolver import Resolver

    class Checks(Composer):
        depth = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            event = self.peek_event()  # type: ignore[attr-defined]  # the parser class provides it
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
                raise yaml.composer.ComposerError(
                    None, None, "anchors and aliases (& and *) are not accepted", event.start_mark
                )
            self.depth += 1
            try:
                if self.depth > MAX_DEPTH:
                    raise yaml.composer.ComposerError(
                        None, None, f"nested more than {MAX_DEPTH} levels deep", event.start_mark
                    )
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1

    try:
        from yaml._yaml import CParser
    except ImportError:

        class PureLoader(
            yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser, Checks, SafeConstructor, Resolver
        ):
            def __init__(self, stream: str) -> None:
                yaml.reader.Reader.__init__(self, stream)
                yaml.scanner.Scanner.__init__(self)
                yaml.parser.Parser.__init__(self)
                Checks.__init__(self)
                SafeConstructor.__init__(self)
                Resolver.__init__(self)

        return PureLoader

    class FastLoader(CParser, Checks, SafeConstructor, Resolver):
        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            Checks.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)

        # libyaml's own composer would run in C, where no alias or depth can be seen: compose in Python.
        get_single_node = Checks.get_single_node
        compose_document = Checks.compose_document

    return FastLoader


_LOADER: type[Any] | None = None


def _problem(exc: BaseException) -> str:
    """What a YAML error says, and where, on one short line."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or getattr(exc, "context", None)
    if problem and mark is not None:
        text = f"{problem} at line {mark.line + 1} column {mark.column + 1}"
    else:
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        text = lines[0] if lines else type(exc).__name__
    return " ".join(text.split())[:160]


def parse_yaml(text: str, file: str) -> Any:
    """The YAML (or JSON) document in `text`, safe-loaded and bounded; BadStateFile naming the file if not."""
    global _LOADER
    import yaml

    if _LOADER is None:
        _LOADER = _loader_class()
    # Flow-style nesting ([[[...]]]) is measured here, before the parser: libyaml's own depth limit would
    # otherwise answer first, in its words, for some depths and not others.
    if text.count("[") + text.count("{") > MAX_DEPTH and nested_deeper_than(text, MAX_DEPTH):
        raise BadStateFile(file, "", None, f"nested more than {MAX_DEPTH} levels deep")
    loader = None
    try:
        loader = _LOADER(text)
        data = loader.get_single_data()
    except yaml.YAMLError as exc:
        raise BadStateFile(file, "", None, f"not valid YAML/JSON ({_problem(exc)})") from None
    except (ValueError, OverflowError, RecursionError) as exc:  # e.g. an integer of more than 4,300 digits
        raise BadStateFile(file, "", None, f"not valid YAML/JSON ({_plain(exc)})") from None
    finally:
        if loader is not None:
            loader.dispose()
    check_finite(data, file, "")
    return data


def load_yaml(path: Path | str, what: str, limit: int = MAX_SPEC_BYTES) -> Any:
    """A YAML (or JSON) file: at most `limit` bytes of UTF-8, no anchors or aliases, at most MAX_DEPTH deep,
    no NaN or infinite floats."""
    return parse_yaml(read_text(path, what, limit), str(path))


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
