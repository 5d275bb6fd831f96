"""Exceptions that carry their own exit code, so the CLI shell can turn any of them into one line."""

from __future__ import annotations

from collections.abc import Iterable

EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_BAD_INPUT = 2
EXIT_LOCK_TIMEOUT = 3
EXIT_PLAN_HAS_CHANGES = 4
EXIT_INTERNAL = 70


def shown(value: object, limit: int = 60) -> str:
    """repr() of a value for a message, cut short: hostile input must not make the message (or its cost) huge."""
    if isinstance(value, str) and len(value) > 4 * limit:
        value = value[: 4 * limit]  # repr of a huge string costs as much as the string
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def json_found(value: object) -> str:
    """What a decoded JSON value is, for "must be X, not ..." messages: its kind (an array or object is never
    printed: it may be huge), a scalar as JSON writes it.

    >>> json_found([]), json_found(None), json_found([1, 2]), json_found("List"), json_found(True)
    ('an empty JSON array', 'null', 'a JSON array of 2 items', "the string 'List'", 'true')
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return f"a JSON array of {len(value)} item{'' if len(value) == 1 else 's'}" if value else "an empty JSON array"
    if isinstance(value, dict):
        return "a JSON object"
    if isinstance(value, str):
        return f"the string {shown(value)}"
    if isinstance(value, int | float):
        return f"the number {shown(value)}"
    return f"a {type(value).__name__}"  # not from JSON: a YAML date, say


def refuse_repeats(option: str, values: Iterable[object]) -> None:
    """A list option (`--traffic a,b`, `--cubes 1,2`, `--pod P --pod Q`) names each value once: a repeat is a typo,
    refused (BadInput, exit 2) naming the option and the value, never dropped silently.

    >>> refuse_repeats("--traffic", ["ring", "all-to-all", "ring"])
    Traceback (most recent call last):
    ...
    tpufleet.errors.BadInput: bad option --traffic: 'ring' is given twice
    """
    seen: set[object] = set()
    for value in values:
        if value in seen:
            raise BadInput(f"bad option {option}: {shown(value)} is given twice")
        seen.add(value)


class TpufleetError(Exception):
    """Base class: an expected failure with a one-line message and an exit code."""

    exit_code = EXIT_REFUSED


class Refused(TpufleetError):
    """The operation is valid input but cannot be done (no capacity, failed port, stale plan...)."""

    exit_code = EXIT_REFUSED

    def __init__(self, message: str, details: list[str] | None = None):
        super().__init__(message)
        self.details = details or []


class Unavailable(Refused):
    """The state's store cannot be reached (a database down, or its connection lost): the exit of Refused; a
    server answers 503, to be tried again."""


class BadInput(TpufleetError):
    """Malformed user input: an id, a shape, an option value or a file."""

    exit_code = EXIT_BAD_INPUT


# the value of a problem with the file itself (missing, unreadable): there is no value to show, and "(value None)"
# would read as a field holding null
NO_VALUE = object()


class BadStateFile(BadInput):
    """A state or input file failed validation; names the file, the field path and the value (none with
    NO_VALUE: the file as a whole, which cannot be read)."""

    def __init__(self, file: str, field: str, value: object, problem: str):
        self.file, self.field, self.problem = file, field, problem
        self.value = None if value is NO_VALUE else value
        tail = "" if value is NO_VALUE else f" (value {shown(value)})"
        super().__init__(f"{file}: field {field or '<root>'}: {problem}{tail}")


class LockTimeout(TpufleetError):
    exit_code = EXIT_LOCK_TIMEOUT
