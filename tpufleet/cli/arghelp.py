"""Each argument's help in its command's --help.

Typer sets an argument's help on the object before it calls Click's constructor, and Click (from 8.5, which takes a
help for arguments too) sets it again, to None: every argument's help was left out of --help (`import k8s --help`
showed `FILE|-  [required]` and not what the file is). As with the numbers and the file names, the command tree is
walked once at start-up and each argument without help is given the one its declaration says: one mechanism,
which also covers commands added later, and leaves alone a Typer that keeps the help itself. Typer lists the
arguments under "Arguments" itself; Click's own "Positional arguments" list, shown once an argument has help,
would list them a second time, and is left out.
"""

from __future__ import annotations

from typing import Any


def argument_help(command: Any) -> None:
    """Give every argument in the tree the help its declaration has (idempotent)."""
    for sub in getattr(command, "commands", {}).values():
        argument_help(sub)
    if hasattr(command, "format_arguments"):  # (Click from 8.5)
        command.format_arguments = _listed_by_typer
    arguments = [p for p in getattr(command, "params", []) if getattr(p, "param_type_name", "") == "argument"]
    if not arguments or all(getattr(p, "help", None) for p in arguments):
        return
    declared = _declared_help(getattr(command, "callback", None))
    for param in arguments:
        if not getattr(param, "help", None) and declared.get(param.name):
            param.help = declared[param.name]


def _listed_by_typer(ctx: Any, formatter: Any) -> None:
    """Click's list of the arguments, left out: Typer's "Arguments" in the options' part lists them."""


def _declared_help(callback: Any) -> dict[str, str]:
    """Parameter name -> the help of its `typer.Argument(...)`, read from the function Typer wrapped."""
    from typer.models import ArgumentInfo
    from typer.utils import get_params_from_function

    function = getattr(callback, "__wrapped__", None)
    if function is None:
        return {}
    return {
        name: meta.default.help
        for name, meta in get_params_from_function(function).items()
        if isinstance(meta.default, ArgumentInfo) and meta.default.help
    }
