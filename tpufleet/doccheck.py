"""Checking a decoded document against a JSON Schema: the first problem as one line naming the file, the field
path (dotted, list positions as numbers) and the value. Pure (documents in, `BadStateFile` out): the state layer's
schema (`tpufleet.state.schema`) and the core's input documents (workloads, fault rates, sweep specs) share it.

>>> check({"type": "object", "properties": {"days": {"type": "number"}}}, {"days": 2}, "spec.yaml")
>>> check({"type": "object", "properties": {"days": {"type": "number"}}}, {"days": "x"}, "spec.yaml")
Traceback (most recent call last):
...
tpufleet.errors.BadStateFile: spec.yaml: field days: must be a number (value 'x')
>>> check({"type": "object", "required": ["days"]}, {"seed": 1}, "spec.yaml")
Traceback (most recent call last):
...
tpufleet.errors.BadStateFile: spec.yaml: field days: is required
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tpufleet.errors import NO_VALUE, BadStateFile
from tpufleet.text import PLAIN_NUMBER

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


def check(schema: Schema, doc: object, file: str, prefix: str = "", validator: Validator | None = None) -> None:
    """Validate `doc` against `schema` (with `validator`, one already made from it, if given); BadStateFile naming
    file, field path and value on the first problem."""
    import fastjsonschema

    try:
        (validator or compiled(schema))(doc)
    except fastjsonschema.JsonSchemaValueException as exc:
        parts = [_printable(str(p)) for p in (exc.path or [])][1:]  # drop the leading "data"
        missing = _missing_key(exc)
        if missing is not None:  # named as the field itself, which has no value ("it must contain [...] properties")
            field = ".".join([prefix, *parts, missing] if prefix else [*parts, missing])
            raise BadStateFile(file, field, NO_VALUE, "is required") from None
        field = ".".join([prefix, *parts] if prefix else parts)
        _check_unknown_key(exc, file, field)
        if exc.rule == "anyOf" and isinstance(exc.rule_definition, list):
            _check_alternatives(exc.rule_definition, exc.value, file, field)
        problem = _problem(exc.message, exc.name, exc.value, file.endswith((".yaml", ".yml")))
        if exc.rule == "propertyNames" and isinstance(exc.value, dict):
            problem = _bad_key(exc.rule_definition, exc.value) or problem
        raise BadStateFile(file, field, exc.value, problem[:160]) from None


def _check_unknown_key(exc: Any, file: str, field: str) -> None:
    """A key the mapping's schema does not know, named as its field with the keys it takes; the validator's own
    words (`it must not contain {'x'} properties`) name no field and leave a Python set in the message."""
    definition = exc.definition if isinstance(exc.definition, dict) else {}
    known = definition.get("properties")
    if exc.rule != "additionalProperties" or exc.rule_definition is not False or not isinstance(exc.value, dict):
        return
    if not isinstance(known, dict) or definition.get("patternProperties"):
        return
    extra = next((k for k in exc.value if k not in known), None)
    if extra is not None:
        name = ".".join(p for p in (field, _printable(str(extra))) if p)
        raise BadStateFile(file, name, exc.value[extra], f"is not a field here (it takes {', '.join(known)})")


def _check_alternatives(branches: list[Schema], value: object, file: str, field: str) -> None:
    """A value that none of a field's forms takes (a factor or a mapping of factors), explained by the form of its
    own type (`fault_scale: -1`: the number's minimum), or by naming the types the field takes; the validator's
    own words ("cannot be validated by any definition") tell the operator nothing."""
    same_type = [b for b in branches if _is_type(value, b.get("type"))]
    if same_type:
        check(same_type[0], value, file, prefix=field)
    types = [_TYPES.get(b.get("type", ""), "") for b in branches]
    if all(types):
        raise BadStateFile(file, field, value, "must be " + " or ".join(types))


def _is_type(value: object, kind: object) -> bool:
    """Whether `value` is of the JSON Schema type `kind` (a bool is no number, as the validator has it)."""
    if isinstance(value, bool):
        return kind == "boolean"
    checks: dict[object, Callable[[object], bool]] = {
        "number": lambda v: isinstance(v, int | float),
        "integer": lambda v: isinstance(v, int) or (isinstance(v, float) and v.is_integer()),
        "string": lambda v: isinstance(v, str),
        "object": lambda v: isinstance(v, dict),
        "array": lambda v: isinstance(v, list),
        "null": lambda v: v is None,
    }
    return kind in checks and checks[kind](value)


def _bad_key(names: object, mapping: dict[Any, object]) -> str | None:
    """The first key of `mapping` its `propertyNames` rule refuses, and why ("it must be one of [...]"): the
    validator only says some key is wrong."""
    import fastjsonschema

    if not isinstance(names, dict):
        return None
    for key in mapping:
        try:
            compiled(names)(key)
        except fastjsonschema.JsonSchemaValueException as exc:
            return f"key {_printable(str(key))!r} is not accepted: " + _problem(exc.message, exc.name, key, False)
    return None


def _missing_key(exc: Any) -> str | None:
    """The first key a `required` rule names that the mapping lacks (None for another rule)."""
    if exc.rule != "required" or not isinstance(exc.value, dict) or not isinstance(exc.rule_definition, list):
        return None
    return next((_printable(str(k)) for k in exc.rule_definition if k not in exc.value), None)


_TYPES = {"number": "a number", "integer": "an integer", "string": "a string", "object": "a mapping"}
_TYPES |= {"array": "a list", "boolean": "true or false", "null": "null"}


def _problem(message: str | None, name: str | None, value: object, yaml: bool) -> str:
    """The validator's message in plain words: "must be a number", and for a number a YAML file gave as text
    because YAML 1.1 wants a point and a signed exponent (1e-30, 1.0e30), how to write it."""
    if not message:
        return "invalid"
    problem = message.replace(name or "data", "it", 1)
    kind = problem.removeprefix("it must be ")
    if not set(kind.split(" or ")) <= _TYPES.keys():
        return problem
    plain = "must be " + " or ".join(_TYPES[k] for k in kind.split(" or "))  # a list of types: "string or null"
    # a plain number with an exponent that YAML 1.1 (PyYAML) read as text: no point, or no sign in the exponent
    if yaml and kind == "number" and isinstance(value, str) and PLAIN_NUMBER.fullmatch(value) and "e" in value.lower():
        return f"{plain} (YAML read this as text: write a number with a point and a signed exponent, as 1.0e-30)"
    return plain


def _printable(key: str, limit: int = 80) -> str:
    """A key of the document as it goes into a message: control characters escaped (a key holding a newline must
    not break the one-line error), cut short like values are."""
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in key[: 4 * limit])
    return text if len(text) <= limit else text[: limit - 3] + "..."
