"""File names on the command line: an empty one is refused, for every file option and argument of every command.

Typer reads an empty value of a `Path` parameter as `Path("")`, which is `.`, the current directory: an operator
whose shell variable was empty (`--from "$FAULTS"`) was told `.: ... Is a directory`. As with the numbers
(`tpufleet.cli.numbers`), the command tree is walked once at start-up and each parameter that takes a file is given
the check below: a `Path` parameter, and a text one whose metavar names a FILE (`FILE|-`, `FILE|shipped`). One
mechanism, which also covers parameters added later.
"""

from __future__ import annotations

from typing import Any

_PATH_TYPES = {"Path", "TyperPath"}
_checked_classes: dict[type, type] = {}


class _FileName:
    """Mixed in before Click's own type: refuses an empty value (BadInput, exit 2) naming the option or argument."""

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        if isinstance(value, str) and value == "":
            from tpufleet.errors import BadInput

            raise BadInput(f"bad {named(param)}: empty file name")
        return super().convert(value, param, ctx)  # type: ignore[misc]


def named(param: Any) -> str:
    """`option --from` or `argument PLAN`, as the command's help names it."""
    if getattr(param, "param_type_name", "") == "argument":
        return f"argument {param.metavar or str(param.name).upper()}"
    return f"option {max(param.opts, key=len)}"


def _takes_a_file(param: Any) -> bool:
    if type(param.type).__name__ in _PATH_TYPES:
        return True
    return type(param.type).__name__ == "StringParamType" and str(param.metavar or "").split("|")[0] == "FILE"


def _checked_class(cls: type) -> type:
    if cls not in _checked_classes:
        _checked_classes[cls] = type(cls.__name__, (_FileName, cls), {})
    return _checked_classes[cls]


def file_names(command: object) -> None:
    """Give every parameter in the command tree that takes a file the empty-name check (idempotent)."""
    for sub in getattr(command, "commands", {}).values():
        file_names(sub)
    for param in getattr(command, "params", []):
        if _takes_a_file(param) and not isinstance(param.type, _FileName):
            # a new object (never a shared one such as click.STRING) with the same settings
            checked: Any = object.__new__(_checked_class(type(param.type)))
            checked.__dict__.update(vars(param.type))
            param.type = checked


def is_checked(param_type: object) -> bool:
    """Whether a parameter type has the check (for the test that walks every command)."""
    return isinstance(param_type, _FileName)
