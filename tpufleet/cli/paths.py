"""File names on the command line: an empty one is refused, for every file option and argument of every command, and
so is a file's name ending in '/' or '/.' (a directory's name).

Typer reads an empty value of a `Path` parameter as `Path("")`, which is `.`, the current directory: an operator
whose shell variable was empty (`--from "$FAULTS"`) was told `.: ... Is a directory`. As with the numbers
(`tpufleet.cli.numbers`), the command tree is walked once at start-up (`tpufleet.cli.paramchecks`) and each
parameter that takes a file is given the check below: a `Path` parameter, and a text one whose metavar names a FILE
(`FILE|-`, `FILE|shipped`). One mechanism, which also covers parameters added later.

Typer makes `Path(value)` of the text, which drops a trailing '/' or '/.': `report --out r.html/` wrote the file
r.html. The check sees the text as typed. A parameter that names a directory (`sweep --out DIR`) keeps taking one.
Click gives an option the next word as its value whatever it is: `report --out --debug` wrote a file named --debug.
"""

from __future__ import annotations

from typing import Any

from tpufleet.cli.paramchecks import ParamCheck

_PATH_TYPES = {"Path", "TyperPath"}


class _FileName:
    """Mixed in before Click's own type: refuses an empty value, and a file's name that names a directory (BadInput,
    exit 2), naming the option or argument and the value."""

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        if isinstance(value, str):
            check_file_name(value, param)
        return super().convert(value, param, ctx)  # type: ignore[misc]


def check_file_name(value: str, param: Any) -> None:
    """BadInput when `value` is empty, ends in '/' or '/.' while `param` takes a file rather than a directory, or
    is given to an option and starts with '-' (but for '-', standard input where an option takes it)."""
    from tpufleet.errors import BadInput, shown

    if value == "":
        raise BadInput(f"bad {named(param)}: empty {'directory' if _takes_a_directory(param) else 'file'} name")
    if value.endswith(("/", "/.")) and not _takes_a_directory(param):  # Path would drop it: `x.png/` is x.png
        raise BadInput(
            f"bad {named(param)} {shown(value)}: it ends in '/' or '/.', naming a directory; give a file name"
        )
    if value.startswith("-") and value != "-" and getattr(param, "param_type_name", "") == "option":
        # the option's value left out: `report --out --debug` wrote a file named --debug
        raise BadInput(
            f"bad {named(param)} {shown(value)}: a file name, not an option (for a file named so: ./{value})"
        )


def _takes_a_directory(param: Any) -> bool:
    """A DIR parameter (`sweep --out`): its metavar says so, or its type takes no file."""
    return str(param.metavar or "").split("|")[0] == "DIR" or not getattr(param.type, "file_okay", True)


def named(param: Any) -> str:
    """`option --from` or `argument PLAN`, as the command's help names it."""
    if getattr(param, "param_type_name", "") == "argument":
        return f"argument {str(param.metavar or str(param.name).upper()).strip('[]').removesuffix('...')}"
    return f"option {max(param.opts, key=len)}"


def _takes_a_file(param: Any) -> bool:
    if type(param.type).__name__ in _PATH_TYPES:
        return True
    return type(param.type).__name__ == "StringParamType" and str(param.metavar or "").split("|")[0] == "FILE"


FILE_NAME = ParamCheck(applies_to=_takes_a_file, mixin=_FileName)
"""Every parameter that takes a file: the checks on its name above."""


def is_checked(param_type: object) -> bool:
    """Whether a parameter type has the check (for the test that walks every command)."""
    return isinstance(param_type, _FileName)
