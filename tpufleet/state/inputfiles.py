"""One bounded reader for every file the tool reads: size caps, strict UTF-8, YAML without anchors, JSON depth.

Every function here turns what is wrong with a file into `BadStateFile` (exit 2, one line naming the file, the
field and the value); none of them lets a hostile file cost more than its size cap in memory or time:

* `read_bytes` / `read_text`: at most `limit` bytes are ever read (one byte more tells a file is too large);
  text must be UTF-8 (a UTF-8 byte-order mark is dropped) and the error names the byte offset of the first
  invalid byte.
* `load_yaml`: the safe loader, refusing anchors and aliases outright (no input of this tool needs them, and
  they are what makes a "billion laughs" file of a few hundred bytes expand to gigabytes), nesting deeper than
  `MAX_DEPTH`, integers too long for Python to parse, and the floats ``.nan`` and ``.inf``. A time stays text, as
  in JSON: the reader checks it as its field (YAML's own would fail the whole file on 2026-02-30T13:00:00Z).
* `load_json_file` (and, from `tpufleet.jsontext`, `parse_json` / `load_json`): the standard decoder, refusing ``NaN`` / ``Infinity`` /
  ``-Infinity`` and numbers that overflow to infinity (``1e400``), nesting deeper than `MAX_DEPTH`, and integers
  too long to parse. `parse_json_line` is the event logs' hot path (see there).

Limits (documented in the README's "Safety" section): `MAX_SPEC_BYTES` for YAML/JSON specifications (fault
scenarios, workloads, fault rates, saved plans), `MAX_STATE_BYTES` for ``state.json``, `MAX_LOG_BYTES` for each
goodput event log, `MAX_DEPTH` levels of nesting in any YAML or JSON document.
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path
from typing import Any, BinaryIO, cast

from tpufleet.constants import MiB
from tpufleet.errors import NO_VALUE, BadStateFile, shown

# The pure half (text and documents, no file) lives in the core (`tpufleet.jsontext`); re-exported here.
from tpufleet.jsontext import (
    BOM,
    MAX_DEPTH,
    MAX_LOG_BYTES,
    MAX_SPEC_BYTES,
    MAX_STATE_BYTES,
    JsonProblem,
    _plain,
    check_finite,
    decode_utf8,
    load_json,
    nested_deeper_than,
    parse_json,
    parse_json_line,
    parse_json_state,
)

__all__ = [
    "MAX_DEPTH",
    "MAX_LOG_BYTES",
    "MAX_SPEC_BYTES",
    "MAX_STATE_BYTES",
    "JsonProblem",
    "MissingFile",
    "check_finite",
    "decode_utf8",
    "load_json",
    "load_json_file",
    "load_yaml",
    "nested_deeper_than",
    "open_input",
    "parse_json",
    "parse_json_line",
    "parse_json_state",
    "parse_yaml",
    "read_bytes",
    "read_text",
]


class MissingFile(BadStateFile):
    """The file does not exist (a BadStateFile, so exit 2; the state store turns it into its own message)."""


def size_text(n: int) -> str:
    """A byte limit as people read it: 16 MiB, or 1,000 bytes."""
    return f"{n // MiB} MiB" if n % MiB == 0 else f"{n:,} bytes"


FIFO_WRITER_WAIT_S = 2.0  # how long a FIFO nothing holds open for writing is given for its writer to come


class _Started:
    """A stream with the bytes already read from it put back in front (what showed a FIFO's writer was there)."""

    def __init__(self, head: bytes, rest: BinaryIO) -> None:
        self.head, self.rest = head, rest

    def read(self, size: int = -1, /) -> bytes:
        if size is None or size < 0:
            out, self.head = self.head + self.rest.read(), b""
            return out
        out, self.head = self.head[:size], self.head[size:]
        return out if len(out) == size else out + self.rest.read(size - len(out))

    def fileno(self) -> int:
        return self.rest.fileno()

    def close(self) -> None:
        self.rest.close()

    def __enter__(self) -> _Started:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _until_a_writer(fd: int, name: str) -> bytes:
    """What a FIFO holds already, once a process holds it open for writing (its later bytes are read as they
    come); BadStateFile when nothing has written to it within FIFO_WRITER_WAIT_S."""
    deadline = time.monotonic() + FIFO_WRITER_WAIT_S
    while True:
        try:
            data = os.read(fd, 64 * 1024)
        except BlockingIOError:
            return b""  # a writer holds it open and has written nothing yet: the reads wait for it
        if data or time.monotonic() >= deadline:
            break
        time.sleep(0.05)
    if not data:
        raise BadStateFile(
            name, "", NO_VALUE, f"cannot be read: a FIFO that nothing wrote to within {FIFO_WRITER_WAIT_S:g} seconds"
        )
    return data


def open_input(path: Path | str) -> BinaryIO:
    """The file opened to read. A FIFO is opened without waiting for a writer (a plain open would hang the command
    for good when none comes) and given FIFO_WRITER_WAIT_S for one; a pipe whose writer is there
    (``<(kubectl get nodes -o json)``, ``mkfifo f; kubectl ... > f &``) is read whole, as any file."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        head = _until_a_writer(fd, str(path)) if stat.S_ISFIFO(os.fstat(fd).st_mode) else b""
        os.set_blocking(fd, True)
        fh = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    return cast(BinaryIO, _Started(head, fh)) if head else fh


NEAR_FILES_READ = 10_000  # names of a missing file's directory compared with it, at most


def near_file(name: str) -> str:
    """`; did you mean plan.json?` for a missing input file whose directory holds a file of a name close to its
    (`plan.jsn`, `Nodes.json`); else ''."""
    import shlex

    from tpufleet.text import closest

    path = Path(name)
    try:
        with os.scandir(path.parent) as entries:
            names = [e.name for _, e in zip(range(NEAR_FILES_READ), entries, strict=False) if e.is_file()]
    except OSError:
        return ""
    near = closest(path.name, names, cutoff=0.8)  # a typo in a name, not another file
    if near is None or near == path.name:
        return ""
    return f"; did you mean {shlex.quote(str(path.parent / near))}?"


def read_bytes(path: Path | str, what: str, limit: int) -> bytes:
    """The file's bytes, at most `limit` of them; BadStateFile if it cannot be read or is larger."""
    name = str(path)
    try:
        with open_input(path) as fh:
            data = fh.read(limit + 1)
    except FileNotFoundError:
        if name == "-":  # the commands that read standard input take '-' before this; "no such file" misled
            raise MissingFile(name, "", NO_VALUE, f"'-' is not standard input here; give the {what}'s name") from None
        raise MissingFile(name, "", NO_VALUE, f"cannot be read: no such {what}{near_file(name)}") from None
    except OSError as exc:
        raise BadStateFile(name, "", NO_VALUE, f"cannot be read: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise BadStateFile(name, "", NO_VALUE, f"larger than the {size_text(limit)} allowed for a {what}")
    return data


def read_file_or_stdin(source: str, what: str, limit: int, too_big: str) -> tuple[bytes, str]:
    """The bytes of FILE, or of standard input for "-", at most `limit` of them (beyond, BadStateFile ending with
    the hint `too_big`); and the name the input is given in messages."""
    import sys

    name = "<stdin>" if source == "-" else source
    data = sys.stdin.buffer.read(limit + 1) if source == "-" else read_bytes(source, what, limit)
    if len(data) > limit:
        raise BadStateFile(name, "", NO_VALUE, f"larger than the {size_text(limit)} allowed: {too_big}")
    refuse_empty(data, name)
    return data, name


def refuse_empty(data: bytes, name: str) -> None:
    """BadStateFile when the input holds nothing but white space. A parser's own words for it ("not valid JSON at
    line 1 column 1", "must be a mapping (value None)") do not tell the operator that what came was nothing: a
    `kubectl ... | tpufleet import k8s -` whose kubectl failed, a file truncated by a full disk."""
    if data.removeprefix(BOM).strip():
        return
    where = "standard input" if name == "<stdin>" else "the file"
    raise BadStateFile(name, "", NO_VALUE, f"{where} is empty" + (" (only white space)" if data else ""))


def read_text(path: Path | str, what: str, limit: int = MAX_SPEC_BYTES) -> str:
    """The file as UTF-8 text, at most `limit` bytes."""
    return decode_utf8(read_bytes(path, what, limit), str(path))


def load_json_file(path: Path | str, what: str, limit: int = MAX_SPEC_BYTES, written_by_us: bool = False) -> Any:
    """A JSON file, bounded: ``load_json_file(path, "state file", MAX_STATE_BYTES)`` for ``state.json``.
    `written_by_us`: a file tpufleet wrote (a saved plan): a number written with a point is no integer there.

    A missing file raises `MissingFile` (a BadStateFile), which a caller may turn into its own message.
    """
    data = read_bytes(path, what, limit)
    refuse_empty(data, str(path))
    return load_json(decode_utf8(data, str(path)), str(path), written_by_us)


# ---- YAML ---------------------------------------------------------------------------------------------------
def _times_as_text() -> dict[Any, list[tuple[str, Any]]]:
    """PyYAML's implicit resolvers without its timestamp: a time stays text, as in JSON, for the reader's own check
    of its field. YAML would otherwise make a datetime of it, and fail the whole file, naming no field, on one
    outside the calendar (2026-02-30T13:00:00Z)."""
    from yaml.resolver import Resolver

    return {
        first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in Resolver.yaml_implicit_resolvers.items()
    }


def _mapping_with_keys_once(loader: Any, node: Any, deep: bool = False) -> Any:
    """The loader's mapping, whose keys are all different: a key given twice is ambiguous (YAML forbids it; PyYAML
    keeps the last), so it is refused rather than guessed at."""
    import yaml
    from yaml.constructor import SafeConstructor

    seen: set[Any] = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: {...}`: its keys may be overridden, as YAML has it
            continue
        key = loader.construct_object(key_node, deep=deep)
        try:
            again = key in seen
        except TypeError:  # an unhashable key: the constructor says so
            continue
        if again:
            raise yaml.constructor.ConstructorError(
                None, None, f"key {shown(key)} is given twice in one mapping", key_node.start_mark
            )
        seen.add(key)
    return SafeConstructor.construct_mapping(loader, node, deep)


def _loader_class() -> type[Any]:
    """The safe loader, composing in Python (to see every anchor and alias, and the depth) over libyaml's
    events when PyYAML has libyaml (about 6 times faster than the pure-Python parser), else over PyYAML's own."""
    import yaml
    from yaml.composer import Composer
    from yaml.constructor import SafeConstructor
    from yaml.resolver import Resolver

    class Checks(Composer):
        depth = 0

        construct_mapping = _mapping_with_keys_once

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
            yaml_implicit_resolvers = _times_as_text()

            def __init__(self, stream: str) -> None:
                yaml.reader.Reader.__init__(self, stream)
                yaml.scanner.Scanner.__init__(self)
                yaml.parser.Parser.__init__(self)
                Checks.__init__(self)
                SafeConstructor.__init__(self)
                Resolver.__init__(self)

        return PureLoader

    class FastLoader(CParser, Checks, SafeConstructor, Resolver):
        yaml_implicit_resolvers = _times_as_text()

        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            Checks.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)

        # libyaml's own composer would run in C, where no alias or depth can be seen: compose in Python (one
        # document, or a stream of them one at a time)
        get_single_node, compose_document = Checks.get_single_node, Checks.compose_document
        check_node, get_node = Checks.check_node, Checks.get_node

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


def parse_yaml(text: str, file: str, finite: bool = True, stream: bool = False) -> Any:
    """The YAML (or JSON) document in `text`, safe-loaded and bounded; BadStateFile naming the file if not.
    `finite=False` leaves NaN and infinities for the caller's schema to refuse (a text field then says so);
    `stream=True`: the list of the documents of a stream (`---` between them), as `kubectl apply -f` reads it."""
    global _LOADER
    import yaml

    if _LOADER is None:
        _LOADER = _loader_class()
    # Flow-style nesting ([[[...]]]) is measured here, before the parser: libyaml's own depth limit would
    # otherwise answer first, in its words, for some depths and not others.
    if text.count("[") + text.count("{") > MAX_DEPTH and nested_deeper_than(text, MAX_DEPTH):
        raise BadStateFile(file, "", NO_VALUE, f"nested more than {MAX_DEPTH} levels deep")
    loader = None
    try:
        loader = _LOADER(text)
        data = _documents(loader) if stream else loader.get_single_data()
    except yaml.YAMLError as exc:
        raise BadStateFile(file, "", NO_VALUE, f"not valid YAML/JSON ({_problem(exc)})") from None
    except (ValueError, OverflowError, RecursionError) as exc:  # e.g. an integer of more than 4,300 digits
        raise BadStateFile(file, "", NO_VALUE, f"not valid YAML/JSON ({_plain(exc)})") from None
    finally:
        if loader is not None:
            loader.dispose()
    if finite:
        check_finite(data, file, "")
    return data


def _documents(loader: Any) -> list[Any]:
    out = []
    while loader.check_data():
        out.append(loader.get_data())
    return out


def load_yaml(path: Path | str, what: str, limit: int = MAX_SPEC_BYTES, finite: bool = True) -> Any:
    """A YAML (or JSON) file: at most `limit` bytes of UTF-8, no anchors or aliases, at most MAX_DEPTH deep,
    no NaN or infinite floats (unless `finite=False`: the caller's schema then refuses them in its words)."""
    data = read_bytes(path, what, limit)
    refuse_empty(data, str(path))
    return parse_yaml(decode_utf8(data, str(path)), str(path), finite)
