"""Checking a decoded document against a JSON Schema: the first problem as one line naming the file, the field
path (dotted, list positions as numbers) and the value. Pure (documents in, `BadStateFile` out): the state layer's
schema (`tpufleet.state.schema`) and the core's input documents (workloads, fault rates, sweep specs) share it.

>>> check({"type": "object", "properties": {"days": {"type": "number"}}}, {"days": 2}, "spec.yaml")
>>> check({"type": "object", "properties": {"days": {"type": "number"}}}, {"days": "x"}, "spec.yaml")
Traceback (most recent call last):
...
tpufleet.errors.BadStateFile: spec.yaml: field days: it must be number (value 'x')
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tpufleet.errors import BadStateFile

__all__ = ["Schema", "Validator", "check", "compiled"]

Schema = dict[str, Any]
Validator = Callable[[object], object]
_validators: dict[int, Validator] = {}


def compiled(schema: Schema) -> Validator:
    """A validator compiled to Python once per process (fastjsonschema: ~50x faster than interpreting)."""
    import fastjsonschema

    key = id(schema)
    if key not in _validators:
        _validators[key] = fastjsonschema.compile(schema)
    return _validators[key]


def check(schema: Schema, doc: object, file: str, prefix: str = "") -> None:
    """Validate `doc` against `schema`; BadStateFile naming file, field path and value on the first problem."""
    import fastjsonschema

    try:
        compiled(schema)(doc)
    except fastjsonschema.JsonSchemaValueException as exc:
        parts = [_printable(str(p)) for p in (exc.path or [])][1:]  # drop the leading "data"
        field = ".".join([prefix, *parts] if prefix else parts)
        problem = exc.message.replace(exc.name or "data", "it", 1) if exc.message else "invalid"
        raise BadStateFile(file, field, exc.value, problem[:160]) from None


def _printable(key: str, limit: int = 80) -> str:
    """A key of the document as it goes into a message: control characters escaped (a key holding a newline must
    not break the one-line error), cut short like values are."""
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in key[: 4 * limit])
    return text if len(text) <= limit else text[: limit - 3] + "..."
