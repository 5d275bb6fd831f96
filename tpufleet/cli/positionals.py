"""Negative numbers as arguments: `tpufleet diff -1` reaches the argument SERIAL, which says what it takes.

Click reads every word that starts with '-' as an option, so `diff -1` was refused as `No such option '-1'`, naming
neither the argument nor what it takes. No command has an option that starts as a number does, so a word that does
(`-1`, `-0.5`, `-1e3`, and the shape `-4x4x4`, which was refused as `No such option '-4'`) is an argument's value,
as argparse reads a negative number, and the argument says what it takes. As with the numbers and the file names
(`tpufleet.cli.numbers`, `tpufleet.cli.paths`), the command tree is walked once at start-up and each command that
takes arguments is given this reading: one mechanism, which also covers commands added later.
"""

from __future__ import annotations

import re
from typing import Any

STARTS_AS_A_NUMBER = re.compile(r"-\.?\d.*", re.DOTALL)


def negative_numbers_as_arguments(command: Any) -> None:
    """Give every command with arguments in the tree the reading above (idempotent)."""
    for sub in getattr(command, "commands", {}).values():
        negative_numbers_as_arguments(sub)
    takes_arguments = any(getattr(p, "param_type_name", "") == "argument" for p in getattr(command, "params", []))
    if takes_arguments and not getattr(command, "_negative_numbers", False):
        command.make_parser = _reading_negative_numbers(command.make_parser)
        command._negative_numbers = True


def _reading_negative_numbers(make_parser: Any) -> Any:
    def make(ctx: Any) -> Any:
        parser = make_parser(ctx)
        process_option = parser._process_opts

        def process(arg: str, state: Any) -> None:
            known = arg in parser._short_opt or arg in parser._long_opt
            if STARTS_AS_A_NUMBER.fullmatch(arg) and not known:
                state.largs.append(arg)  # where the parser puts an argument (every command takes them interspersed)
                return
            process_option(arg, state)

        parser._process_opts = process
        return parser

    return make


def reads_negative_numbers(command: object) -> bool:
    """Whether a command has the reading (for the test that walks every command)."""
    return bool(getattr(command, "_negative_numbers", False))
