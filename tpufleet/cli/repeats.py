"""Options given twice: an option that takes one value (or a flag) given more than once is refused, for every
command.

Click keeps the last of them without a word: `allocate a --shape 4x4x4 ... --shape 4x4x8` (a script that appends
its defaults) reserved a slice twice the size asked for, `--state A ... --state B` acted on the second fleet, and
`--fault-tolerant-routing --no-fault-tolerant-routing` took the second. Which one the operator meant is not for
the tool to guess: as a value given twice in a list option, it is bad input (exit 2) naming the option. An option
given once before the command and once after it (`tpufleet -o json status -o yaml`) is two options, one of the
tool and one of the command, and the command's wins as documented. As with the numbers and the file names
(`tpufleet.cli.numbers`, `tpufleet.cli.paths`), the command tree is walked once at start-up: one mechanism, which
also covers options added later.

Flags that act at once and end the command (`-h/--help`, `--version`) are not values: `status -h -h` asks for the
same help twice, and shows it.
"""

from __future__ import annotations

from typing import Any

_WRAPPED = "_tpufleet_options_once"


def _spellings(option: Any) -> str:
    return "/".join([*option.opts, *option.secondary_opts])


def refuse_repeats(order: list[Any]) -> None:
    """BadInput naming the first single-value option (or flag) that `order`, the parser's record of the options in
    the order given, holds more than once."""
    import click

    seen: set[int] = set()
    for param in order:
        if not isinstance(param, click.Option) or param.multiple or param.count:
            continue
        if param.is_eager and param.is_flag:  # help, version: shown and done, nothing to choose between
            continue
        if id(param) in seen:
            from tpufleet.errors import BadInput

            raise BadInput(f"bad option {_spellings(param)}: given more than once; give it once")
        seen.add(id(param))


def _checked_parser(make_parser: Any) -> Any:
    def make(ctx: Any) -> Any:
        parser = make_parser(ctx)
        parse = parser.parse_args

        def parse_args(args: list[str]) -> Any:
            opts, rest, order = parse(args=args)
            if not ctx.resilient_parsing:  # shell completion reads a half-typed line
                refuse_repeats(order)
            return opts, rest, order

        parser.parse_args = parse_args
        return parser

    return make


def options_once(command: Any) -> None:
    """Give every command in the tree the check that no single-value option is given twice (idempotent)."""
    for sub in getattr(command, "commands", {}).values():
        options_once(sub)
    if not getattr(command, _WRAPPED, False):
        command.make_parser = _checked_parser(command.make_parser)
        setattr(command, _WRAPPED, True)
